"""The compiler-process layer: which LLVM, how a compiler is started, served
and measured. Every Python caller that runs a compiler goes through here
(the corpus tool, training rewards, baselines, evaluation, benchmarks), so
they all use the same compiler and the same measures.

* :func:`toolchain` finds the tools once: ``$MLBRIDGE_CLANG`` (default
  ``clang-19``) and ``opt``, ``llc``, ``llvm-dis``, ... of the same LLVM
  major version; its ``--version`` is read once (:attr:`Toolchain.version`,
  :attr:`Toolchain.tag` for cache keys).
* :func:`compile` runs one compiler command under the process supervisor
  (:mod:`mlbridge.llvm.process`), optionally answering LLVM's interactive
  advisors from Python policies (through :class:`mlbridge.llvm.Compilation`),
  and returns a :class:`Compiled`: the object, its ``.text`` bytes, the
  compiler's CPU seconds (user + system of exactly that child, from
  ``wait4``) and wall seconds. Failure, a crash, a timeout or a missing
  object raise :class:`CompileError` saying which.
* :func:`serve_compiler` runs a compiler whose model requests arrive over a
  pipe, shared-memory or gRPC endpoint it is given (the project's plugins
  and C tool, any program using the runners) and answers each one with a
  policy; :class:`ModelServer` answers such an
  endpoint from a thread while compilers are run one after the other
  (benchmarks, builds).
* :func:`callgrind` runs a program under valgrind's callgrind and returns
  its instruction count (Ir; of one function and its callees if asked):
  the project's one reader of callgrind's output.
* Every process started here that loads a plugin of a sanitized build
  (``-fpass-plugin=``, ``-load-pass-plugin``, ``-load``, ``-fplugin=``; the
  build manifest next to the plugin says ``sanitize``) gets the sanitizer
  runtime preloaded (:func:`plugin_env`): the stock, uninstrumented
  ``clang``/``opt``/``llc`` cannot load such a plugin otherwise.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from . import build_manifest
from .errors import MLBridgeError, TimeoutError
from .llvm import process
from .llvm.tools import elf_text_size, output_path

__all__ = ["Toolchain", "toolchain", "compile", "Compiled", "CompileError",
           "serve_compiler", "ServedRun", "ModelServer", "open_interface", "TRANSPORTS",
           "run_tool", "run_command",
           "plugin_env", "sanitizer_env", "loaded_plugins", "first_error", "callgrind",
           "Callgrind", "DEFAULT_CLANG", "COMPILE_TIMEOUT"]

#: The compiler when ``$MLBRIDGE_CLANG`` is not set.
DEFAULT_CLANG = "clang-19"
#: Wall-clock limit of one compiler run unless the caller gives one.
COMPILE_TIMEOUT = 600.0
#: How much of a failed compiler's stderr an error keeps (its end).
STDERR_TAIL = 64 * 1024

_VERSION_RE = re.compile(r"version (\d+)\.")


class CompileError(MLBridgeError):
    """A compiler could not be run, failed, timed out or wrote no object."""


@dataclass(frozen=True)
class Toolchain:
    """One LLVM installation: ``clang`` and the tools of its major version."""

    clang: str
    #: Full ``clang --version`` output.
    version_text: str
    major: Optional[int]

    @property
    def version(self) -> str:
        """First line of ``clang --version``."""
        return self.version_text.splitlines()[0] if self.version_text else self.clang

    @property
    def tag(self) -> str:
        """Eight hex digits naming this compiler in cache keys."""
        return hashlib.sha256(self.version_text.encode()).hexdigest()[:8]

    def tool(self, name: str) -> str:
        """Path of LLVM tool ``name`` ("opt", "llc", "llvm-dis", ...) of this
        clang's major version: next to clang, then ``name-<major>`` on
        PATH, then ``/usr/lib/llvm-<major>/bin``."""
        versioned = f"{name}-{self.major}" if self.major else name
        clang_path = shutil.which(self.clang) or self.clang
        here = os.path.dirname(clang_path)
        candidates = [os.path.join(here, n) for n in (versioned, name)] if here else []
        candidates += [shutil.which(versioned) or ""]
        if self.major:
            candidates.append(f"/usr/lib/llvm-{self.major}/bin/{name}")
        for c in candidates:
            if c and os.path.isfile(c) and os.access(c, os.X_OK):
                return c
        raise CompileError(f"{versioned} not found next to {clang_path}, on PATH or in "
                           f"/usr/lib/llvm-{self.major}/bin (the LLVM of {self.clang})")


@functools.lru_cache(maxsize=8)
def _toolchain(clang: str) -> Toolchain:
    try:
        res = subprocess.run([clang, "--version"], stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CompileError(f"cannot run the compiler {clang!r} ($MLBRIDGE_CLANG): "
                           f"{e}") from None
    if res.returncode != 0:
        raise CompileError(f"{clang} --version failed ({res.returncode}): {res.stderr[-400:]}")
    m = _VERSION_RE.search(res.stdout)
    return Toolchain(clang, res.stdout, int(m.group(1)) if m else None)


def toolchain(clang: Optional[str] = None) -> Toolchain:
    """The toolchain of ``clang`` (default: ``$MLBRIDGE_CLANG`` or
    ``clang-19``); its version is read once per process."""
    return _toolchain(clang or os.environ.get("MLBRIDGE_CLANG") or DEFAULT_CLANG)


@dataclass
class Compiled:
    """One finished compile. ``text``: ``.text`` bytes of ``output`` (None
    when no output was measured); ``cpu_seconds``: user + system of the
    compiler process; ``run``: the :class:`mlbridge.llvm.RunResult` when
    advisors were served (requests, sessions)."""

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


def _describe(cmd):
    text = " ".join(cmd)
    return text if len(text) < 300 else text[:300] + " ..."


def compile(cmd: Sequence, *, output=None, timeout: float = COMPILE_TIMEOUT,
            env: Optional[Dict[str, str]] = None, cwd=None, advisors=None,
            include_default=None, measure_text: bool = True) -> Compiled:
    """Runs compiler command ``cmd`` and measures it (see :class:`Compiled`).

    ``output``: the object to measure (default: the command's ``-o``).
    ``advisors``: ``{"inline"|"evict"|"priority": policy}`` answered from
    Python over LLVM's interactive channels (``include_default`` as for
    :func:`mlbridge.llvm.run`). Raises :class:`CompileError`."""
    cmd = [os.fspath(c) for c in cmd]
    if output is None:
        output = output_path(cmd[1:])
    if output is not None and cwd is not None:
        output = os.path.join(cwd, output)
    t0 = time.monotonic()
    if advisors:
        returncode, cpu, stderr, run = _served(cmd, advisors, timeout, env, cwd,
                                               include_default)
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
            raise CompileError(f"{_describe(cmd)} wrote no ELF object at {output}")
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
        raise CompileError(f"timed out after {timeout:g} s: {_describe(cmd)} (killed)") from None
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


def _served(cmd, advisors, timeout, env, cwd, include_default):
    from .llvm.host import Compilation
    try:
        comp = Compilation(cmd, advisors, timeout=timeout, include_default=include_default,
                           env=plugin_env(cmd, env, cwd), cwd=cwd)
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
        raise CompileError(f"timed out after {timeout:g} s: {_describe(cmd)}")
    if res.returncode != 0:   # the compiler's own error first, the host's after it
        host = f"; the host: {res.error}" if res.error else ""
        raise CompileError(_failure(cmd, res.returncode, stderr) + host)
    if res.error is not None:
        raise CompileError(f"{_describe(cmd)}: {res.error}")
    return res.returncode, process.cpu_seconds(comp.proc) or 0.0, stderr, res


# ---- callgrind ------------------------------------------------------------------------

_CALLGRIND_TOTALS_RE = re.compile(r"^totals: (\d+)", re.M)


@dataclass
class Callgrind:
    """One program run under callgrind: ``ir``, the instructions executed
    (of ``function`` and its callees when one was named), and what the
    program printed."""

    ir: int
    stdout: str
    stderr: str


def callgrind(cmd: Sequence, *, function: Optional[str] = None,
              timeout: float = COMPILE_TIMEOUT, env: Optional[Dict[str, str]] = None,
              cwd=None) -> Callgrind:
    """Runs ``cmd`` under ``valgrind --tool=callgrind`` and reads the Ir
    total of its output file. ``function``: count only while it is on the
    stack (``--toggle-collect``). Exact and repeatable, unlike time on a
    shared machine. CompileError when valgrind is missing, the program
    fails, or nothing was counted (e.g. ``function`` never ran)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise CompileError("valgrind is not installed (scripts/deps/loops.apt)")
    cmd = [os.fspath(c) for c in cmd]
    with tempfile.TemporaryDirectory(prefix="mlbridge-cg-") as tmp:
        out_file = os.path.join(tmp, "callgrind.out")
        vg = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out_file}"]
        if function is not None:
            vg += ["--collect-atstart=no", f"--toggle-collect={function}"]
        stdout, stderr = run_tool(vg + cmd, timeout=timeout, stderr=True, env=env, cwd=cwd)
        try:
            with open(out_file) as f:
                m = _CALLGRIND_TOTALS_RE.search(f.read())
        except OSError as e:
            raise CompileError(f"callgrind wrote no output for {_describe(cmd)}: {e}") from None
    if m is None or int(m.group(1)) == 0:
        where = f" in {function}" if function else ""
        raise CompileError(f"callgrind counted no instruction{where}: {_describe(cmd)}")
    return Callgrind(int(m.group(1)), stdout, stderr)


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


# ---- compilers that ask the project's runners over an endpoint ------------------------


@dataclass
class ServedRun:
    """What :func:`serve_compiler` saw: one row of features and one decision
    per request (columns ``feature_names``), the request contexts, the
    compiler's exit status and output."""

    returncode: int
    stdout: str
    stderr: str
    feature_names: List[str] = field(default_factory=list)
    features: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    decisions: np.ndarray = field(default_factory=lambda: np.zeros((0,), np.int64))
    sessions: int = 0
    contexts: List[str] = field(default_factory=list)
    cpu_seconds: float = 0.0


#: The model-side transports a compiler can be served over.
TRANSPORTS = ("pipe", "shm", "grpc")


def open_interface(transport: str, serdes: str = "bitstream", timeout: float = 60.0):
    """(interface, endpoint) of a new private channel: a FIFO pair (the
    endpoint is its base path), a shared-memory socket (its path) or a
    loopback gRPC server (``host:port``; ``serdes`` is protobuf's own)."""
    if transport == "pipe":
        from .pipe import PipeCompilerInterface
        iface = PipeCompilerInterface(serdes=serdes, timeout=timeout)
        return iface, iface.base
    if transport == "shm":
        from .shm import ShmCompilerInterface
        iface = ShmCompilerInterface(serdes=serdes, timeout=timeout)
        return iface, iface.path
    if transport == "grpc":
        from .grpc import GrpcCompilerInterface
        iface = GrpcCompilerInterface("127.0.0.1:0", timeout=timeout)
        return iface, iface.address
    raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}")


def serve_compiler(command: Callable[[str], Sequence[str]], policy, *, advisor: str = "inline",
                   timeout: float = 120.0, env: Optional[Dict[str, str]] = None,
                   serdes: str = "bitstream", transport: str = "pipe",
                   cwd=None) -> ServedRun:
    """Runs ``command(endpoint)`` and answers every request with ``policy``
    until the process exits; the whole run is bounded by ``timeout``
    seconds (the process is killed and TimeoutError raised).

    ``transport="pipe"``: ``endpoint`` is a FIFO base path (the plugins'
    ``-mlbridge-inline-channel``, the MLIR plugin's and the C tool's
    channel, or LLVM's own ``-inliner-interactive-channel-base``).
    ``transport="shm"``: the Unix socket of a shared-memory channel
    (``mlbridge::ShmModelRunner``). ``transport="grpc"``: the
    ``host:port`` served here. ``policy``: what
    :func:`mlbridge.llvm.policies.resolve` accepts for ``advisor`` -- a
    built-in name or a callable ``observation -> int``."""
    from .llvm.policies import resolve
    decide = resolve(policy, advisor)
    rows: List[List[int]] = []
    decisions: List[int] = []
    names: List[str] = []
    contexts: List[str] = []
    sessions = 0
    deadline = time.monotonic() + timeout
    iface, endpoint = open_interface(transport, serdes, min(timeout, 60.0))
    with iface:
        argv = list(map(str, command(endpoint)))
        proc = _start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
        if transport != "grpc":
            iface.process = proc
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{argv[0]} did not finish within {timeout:.0f} s")
                try:
                    # gRPC learns of a dead compiler only from the process.
                    wait = min(left, 0.5 if transport == "grpc" else 30.0)
                    obs = iface.evaluate(timeout=wait)
                except TimeoutError:
                    if proc.poll() is not None:
                        break
                    continue
                if obs is None:
                    if proc.poll() is not None:
                        break
                    continue
                if not names:
                    names = list(obs.keys())
                if obs.index == 0:  # requests are numbered per session
                    sessions += 1
                d = int(np.asarray(decide(obs)).reshape(-1)[0])
                iface.populate_buffer(d)
                rows.append([int(np.asarray(obs[k]).reshape(-1)[0]) for k in names])
                decisions.append(d)
                contexts.append(obs.context)
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except BaseException:
            process.kill(proc)
            proc.communicate()
            raise
    return ServedRun(proc.returncode, out.decode(errors="replace"),
                     err.decode(errors="replace"), names,
                     np.asarray(rows, dtype=np.int64).reshape(len(rows), len(names)),
                     np.asarray(decisions, dtype=np.int64), sessions, contexts,
                     process.cpu_seconds(proc) or 0.0)


class ModelServer:
    """Answers every request arriving at a pipe, shared-memory or gRPC
    endpoint with ``policy(observation) -> int`` in a thread of this
    process, for compilers started meanwhile with :func:`compile` (one at a
    time on a pipe; concurrently over gRPC). ``endpoint`` is what the compiler is
    given; :meth:`close` stops the thread and raises the first error it
    met."""

    def __init__(self, policy, *, transport: str = "pipe", serdes: str = "bitstream",
                 timeout: float = 600.0):
        self.policy = policy
        self.iface, self.endpoint = open_interface(transport, serdes, timeout)
        self._stop = False
        self.error = None
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name="mlbridge-model-server")
        self._thread.start()

    def _loop(self):
        while not self._stop:
            try:
                obs = self.iface.evaluate(timeout=0.5)
                if obs is not None:
                    self.iface.populate_buffer(self.policy(obs))
            except TimeoutError:
                continue
            except Exception as e:  # noqa: BLE001 - raised by close()
                if not self._stop:
                    self.error = e
                return

    def close(self):
        self._stop = True
        self._thread.join(timeout=5)
        self.iface.close()
        if self.error is not None:
            raise self.error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
