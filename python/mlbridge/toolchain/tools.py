"""Tool lookup: which LLVM (:func:`toolchain`: ``$MLBRIDGE_CLANG`` and the
``opt``, ``llc``, ``llvm-dis``, ... of its major version), and facts about
an LLVM command line (which tool, which version, where the output goes).

Nothing here starts a compilation; :func:`toolchain` runs
``<clang> --version`` once per path (cached, bounded by a timeout).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Optional

from ..errors import MLBridgeError

__all__ = ["Toolchain", "toolchain", "CompileError", "DEFAULT_CLANG", "COMPILE_TIMEOUT",
           "tool_kind", "llvm_major_version", "output_path", "TOOL_KINDS"]

#: The compiler when ``$MLBRIDGE_CLANG`` is not set.
DEFAULT_CLANG = "clang-19"
#: Wall-clock limit of one compiler run unless the caller gives one.
COMPILE_TIMEOUT = 600.0

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


#: What a command's first word may be: the clang driver (flags to LLVM go
#: through ``-mllvm``), ``opt`` (IR passes: the inliner) or ``llc`` (code
#: generation: the register allocator).
TOOL_KINDS = ("clang", "opt", "llc")



def tool_kind(program):
    """"clang", "opt" or "llc" from a program name or path
    (``clang-19``, ``/usr/lib/llvm-19/bin/clang++``, ``opt-19``, ``llc``).

    Raises ValueError for anything else: pass ``tool=`` explicitly then."""
    base = os.path.basename(os.fspath(program))
    stem = re.sub(r"(-\d+(\.\d+)*)?(\.exe)?$", "", base)
    if stem in ("clang", "clang++", "clang-cl", "clang-cpp"):
        return "clang"
    if stem in ("opt", "llc"):
        return stem
    raise ValueError(f"cannot tell which LLVM tool {program!r} is (expected clang, opt or "
                     f"llc, optionally with a -NN version suffix); pass tool='clang', "
                     f"'opt' or 'llc'")


def llvm_major_version(program):
    """LLVM major version of ``program`` (from its ``--version``, read once per
    process by :func:`toolchain`), or None."""
    path = shutil.which(program) or program
    try:
        return toolchain(os.path.realpath(path) if os.path.exists(path) else path).major
    except CompileError:
        return None


def output_path(args):
    """The file named by ``-o FILE`` / ``-oFILE`` in ``args`` (the last one),
    or None (also for ``-o -``, standard output)."""
    out = None
    it = iter(range(len(args)))
    for i in it:
        a = args[i]
        if a == "-o" and i + 1 < len(args):
            out = args[i + 1]
            next(it, None)
        elif a.startswith("-o") and len(a) > 2 and not a.startswith("-opt"):
            out = a[2:]
        elif a.startswith("--output="):
            out = a[len("--output="):]
    return None if out in (None, "-") else out


def describe(cmd):
    """``cmd`` as one line for an error message (cut at 300 characters)."""
    text = " ".join(cmd)
    return text if len(text) < 300 else text[:300] + " ..."
