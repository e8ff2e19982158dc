"""Running a compiler or a tool to its end under the process supervisor
(:mod:`mlbridge.toolchain.process`) and measuring it: :func:`compile`,
:func:`run_tool`, :func:`run_command`; and the environment a command that
loads a plugin of a sanitized build needs (:func:`plugin_env`).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from .. import build_manifest
from . import process
from .measure import elf_text_size
from .tools import COMPILE_TIMEOUT, CompileError, describe, output_path

__all__ = ["compile", "Compiled", "run_tool", "run_command", "plugin_env", "sanitizer_env",
           "loaded_plugins", "first_error"]

#: How much of a failed compiler's stderr an error keeps (its end).
STDERR_TAIL = 64 * 1024

@dataclass
class Compiled:
    """One finished compile. ``text``: ``.text`` bytes of ``output`` (None
    when no output was measured); ``cpu_seconds``: user + system of the
    compiler process; ``run``: what the ``host`` served returned (for
    :func:`mlbridge.llvm.host.advisor_host`, an :class:`mlbridge.llvm.RunResult`:
    requests, sessions)."""

    command: List[str]
    output: Optional[str]
    text: Optional[int]
    cpu_seconds: float
    wall_seconds: float
    stderr: str
    run: object = None


def first_error(stderr: str) -> str:
    """The first ``error:`` line of a compiler's stderr (else its last line)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if "error:" in ln:
            return ln[-400:]
    return lines[-1][-400:] if lines else ""


def compile(cmd: Sequence, *, output=None, timeout: float = COMPILE_TIMEOUT,
            env: Optional[Dict[str, str]] = None, cwd=None, host=None,
            measure_text: bool = True) -> Compiled:
    """Runs compiler command ``cmd`` and measures it (see :class:`Compiled`).

    ``output``: the object to measure (default: the command's ``-o``).
    ``host``: a model side that answers the compiler while it runs, a
    callable ``host(cmd, timeout=, env=, cwd=)`` returning the served
    compile (``start()``, ``serve()`` -> result with ``returncode``,
    ``stderr``, ``timed_out``, ``error``; ``proc``; ``close()``) -- such as
    :func:`mlbridge.llvm.host.advisor_host` for LLVM's own interactive
    advisors. Raises :class:`CompileError`."""
    cmd = [os.fspath(c) for c in cmd]
    if output is None:
        output = output_path(cmd[1:])
    if output is not None and cwd is not None:
        output = os.path.join(cwd, output)
    t0 = time.monotonic()
    if host is not None:
        returncode, cpu, stderr, run = _served(cmd, host, timeout, env, cwd)
    else:
        returncode, cpu, stderr = _plain(cmd, timeout, env, cwd)
        run = None
    wall = time.monotonic() - t0
    if returncode != 0:
        raise CompileError(_failure(cmd, returncode, stderr))
    text = None
    if measure_text and output is not None:
        text = elf_text_size(output)
        if text is None:
            raise CompileError(f"{describe(cmd)} wrote no ELF object at {output}")
    return Compiled(cmd, None if output is None else os.fspath(output), text, cpu, wall,
                    stderr, run)


def _failure(cmd, returncode, stderr):
    why = f"killed by signal {-returncode}" if returncode < 0 else f"exit status {returncode}"
    return f"{first_error(stderr) or 'no error message'} ({os.path.basename(cmd[0])}, {why})"


def run_tool(cmd: Sequence, *, timeout: float = COMPILE_TIMEOUT, stderr: bool = False,
             env: Optional[Dict[str, str]] = None, cwd=None):
    """Standard output (text) of a tool that reads and reports, such as
    ``llvm-dis``, ``clang -print-file-name``, ``mlir-opt`` or ``valgrind``
    (with ``stderr=True``: the pair (stdout, stderr)); CompileError naming
    the tool's first error if it fails, or if it runs past ``timeout`` (it is
    killed)."""
    res = run_command(cmd, timeout=timeout, env=env, cwd=cwd)
    if res.returncode != 0:
        raise CompileError(_failure(res.args, res.returncode, res.stderr))
    return (res.stdout, res.stderr) if stderr else res.stdout


def run_command(cmd: Sequence, *, timeout: float = COMPILE_TIMEOUT,
                env: Optional[Dict[str, str]] = None,
                cwd=None) -> subprocess.CompletedProcess:
    """Runs ``cmd`` to its end and returns its exit status and output (text)
    whatever the status: for callers that inspect a failure (a refusal, a
    diagnostic) or run a build (``make``). CompileError only if it cannot be
    started or runs past ``timeout`` (it is killed)."""
    cmd = [os.fspath(c) for c in cmd]
    proc, (out, err) = _bounded(cmd, timeout, lambda p: p.communicate(timeout=timeout),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
    return subprocess.CompletedProcess(cmd, proc.returncode, out.decode(errors="replace"),
                                       err.decode(errors="replace"))


def _bounded(cmd, timeout, finish, **popen_kwargs):
    """(process, finish(process)) for ``cmd`` started under the supervisor;
    ``finish`` waits at most ``timeout``. A timeout, or anything else that
    interrupts the wait, kills the compiler."""
    try:
        proc = _start(cmd, **popen_kwargs)
    except OSError as e:
        raise CompileError(f"cannot run {cmd[0]}: {e}") from None
    try:
        return proc, finish(proc)
    except subprocess.TimeoutExpired:
        process.kill(proc, wait=10)
        raise CompileError(f"timed out after {timeout:g} s: {describe(cmd)} (killed)") from None
    except BaseException:
        process.kill(proc, wait=10)
        raise


def _start(cmd, *, env=None, cwd=None, **popen_kwargs):
    """process.start with the environment :func:`plugin_env` gives ``cmd``."""
    return process.start(cmd, env=plugin_env(cmd, env, cwd), cwd=cwd, **popen_kwargs)


def _plain(cmd, timeout, env, cwd):
    """(returncode, CPU seconds, stderr tail) of one unserved run."""
    with tempfile.TemporaryFile() as err:
        proc, _ = _bounded(cmd, timeout, lambda p: p.wait(timeout=timeout),
                           stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=cwd)
        size = err.seek(0, os.SEEK_END)
        err.seek(max(0, size - STDERR_TAIL))
        stderr = err.read().decode(errors="replace")
    return proc.returncode, process.cpu_seconds(proc) or 0.0, stderr


def _served(cmd, host, timeout, env, cwd):
    try:
        comp = host(cmd, timeout=timeout, env=plugin_env(cmd, env, cwd), cwd=cwd)
    except (OSError, ValueError) as e:
        raise CompileError(f"cannot serve {cmd[0]}: {e}") from None
    try:
        try:
            comp.start()
        except OSError as e:
            raise CompileError(f"cannot run {cmd[0]}: {e}") from None
        res = comp.serve()
    finally:
        comp.close()
    stderr = res.stderr if isinstance(res.stderr, str) else ""
    if res.timed_out:
        raise CompileError(f"timed out after {timeout:g} s: {describe(cmd)}")
    if res.returncode != 0:   # the compiler's own error first, the host's after it
        host = f"; the host: {res.error}" if res.error else ""
        raise CompileError(_failure(cmd, res.returncode, stderr) + host)
    if res.error is not None:
        raise CompileError(f"{describe(cmd)}: {res.error}")
    return res.returncode, process.cpu_seconds(comp.proc) or 0.0, stderr, res


# ---- plugins of a sanitized build ------------------------------------------------------

#: An option loading a plugin with its file after "=", as an argument or
#: inside one (make's ``CFLAGS=... -fpass-plugin=...``).
_PLUGIN_OPTION_RE = re.compile(
    r"(?:^|[\s=,])--?(?:fpass-plugin|fplugin|load-pass-plugin|load)=([^\s,]+)")
#: The same options with the file as the next argument (after -Xclang in
#: ``clang -Xclang -load -Xclang <file>``).
_PLUGIN_OPTIONS = frozenset({"-load", "--load", "-load-pass-plugin", "--load-pass-plugin"})


def loaded_plugins(cmd: Sequence) -> List[str]:
    """The plugin files command ``cmd`` loads into clang, opt or llc, or
    through the clang driver into lld (``-Wl,--load-pass-plugin=<file>``)."""
    args = [os.fspath(c) for c in cmd]
    found: List[str] = []
    for i, arg in enumerate(args):
        found += _PLUGIN_OPTION_RE.findall(arg)
        if arg in _PLUGIN_OPTIONS:
            rest = args[i + 1:i + 3]
            if rest[:1] == ["-Xclang"]:
                rest = rest[1:]
            found += rest[:1]
    return found


def plugin_env(cmd: Sequence, env: Optional[Dict[str, str]] = None,
               cwd=None) -> Optional[Dict[str, str]]:
    """The environment to run ``cmd`` in: ``env`` (None: this process's),
    with the sanitizer runtime preloaded (:func:`sanitizer_env`) when
    ``cmd`` loads a plugin from a sanitized build (the manifest of the build
    the plugin lies in says ``sanitize``). Otherwise ``env`` unchanged."""
    for plugin in loaded_plugins(cmd):
        path = os.path.join(os.fspath(cwd), plugin) if cwd is not None else plugin
        manifest = build_manifest.containing(path)
        if manifest is not None and manifest.sanitize:
            return sanitizer_env(manifest.sanitize, manifest.cxx_compiler, env)
    return env


def sanitizer_env(sanitize: str, cxx_compiler: str = "",
                  base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """``base`` (default: this process's environment) made fit to load code
    built with the sanitizers ``sanitize`` ("address,undefined") by
    ``cxx_compiler`` into an uninstrumented host tool.

    AddressSanitizer must be loaded first in the process: LD_PRELOAD its
    runtime, and the UBSan runtime with it. Two ASan options:
    ``detect_leaks=0``: the host tool is not ours and LLVM deliberately
    leaks at exit. ``allow_user_poisoning=0``: LLVM's allocators
    (BumpPtrAllocator, Recycler) poison and unpoison their memory by hand
    in code inlined from LLVM's headers, so the plugin poisons a slab that
    the uninstrumented libLLVM then hands out without unpoisoning (a false
    use-after-poison report, e.g. in SlotIndexes under the register
    allocator); every other check stays on. Applying it twice changes
    nothing. CompileError when the compiler has no such runtime."""
    env = dict(os.environ if base is None else base)
    if "address" not in sanitize:
        return env
    cxx = cxx_compiler or "c++"
    names = ["libasan.so"] + (["libubsan.so"] if "undefined" in sanitize else [])
    libs = [_runtime_library(cxx, n) for n in names]
    missing = [n for n, lib in zip(names, libs) if lib is None]
    if missing:
        raise CompileError(f"{cxx} -print-file-name finds no {' or '.join(missing)}: cannot "
                           f"preload the runtime a plugin built with -fsanitize={sanitize} "
                           f"needs in a stock LLVM tool")
    preload = [p for p in env.get("LD_PRELOAD", "").split(":") if p]
    env["LD_PRELOAD"] = ":".join(libs + [p for p in preload if p not in libs])
    opts = [o for o in env.get("ASAN_OPTIONS", "").split(":") if o]
    env["ASAN_OPTIONS"] = ":".join(
        opts + [o for o in ("detect_leaks=0", "allow_user_poisoning=0") if o not in opts])
    return env


@functools.lru_cache(maxsize=16)
def _runtime_library(compiler: str, name: str) -> Optional[str]:
    """Path of ``compiler``'s runtime library ``name`` (``-print-file-name``)."""
    try:
        out = run_tool([compiler, f"-print-file-name={name}"], timeout=30).strip()
    except CompileError:
        return None
    if out and out != name and os.path.exists(out):
        return os.path.realpath(out)
    return None


