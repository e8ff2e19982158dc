"""The measures: ``.text`` bytes of an object (:func:`elf_text_size`) and
the instructions a program executes under callgrind (:func:`callgrind`, the
project's one reader of callgrind's output).
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import tempfile
from dataclasses import dataclass
from typing import Dict, Optional, Sequence

from .tools import COMPILE_TIMEOUT, CompileError, describe

__all__ = ["elf_text_size", "callgrind", "Callgrind"]


def elf_text_size(path):
    """Total size of the executable sections (``SHF_EXECINSTR``) of an ELF
    file -- the code size a size-minimizing policy is judged on -- or None
    when ``path`` is not a readable 64/32-bit little-endian ELF file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if len(data) < 52 or data[:4] != b"\x7fELF" or data[5] != 1:
        return None
    try:
        if data[4] == 2:  # ELFCLASS64
            shoff, = struct.unpack_from("<Q", data, 0x28)
            shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
            flags_fmt, size_fmt, flags_at, size_at = "<Q", "<Q", 8, 32
        elif data[4] == 1:  # ELFCLASS32
            shoff, = struct.unpack_from("<I", data, 0x20)
            shentsize, shnum = struct.unpack_from("<HH", data, 0x2E)
            flags_fmt, size_fmt, flags_at, size_at = "<I", "<I", 8, 20
        else:
            return None
        total = 0
        for i in range(shnum):
            base = shoff + i * shentsize
            flags, = struct.unpack_from(flags_fmt, data, base + flags_at)
            if flags & 0x4:  # SHF_EXECINSTR
                total += struct.unpack_from(size_fmt, data, base + size_at)[0]
        return total
    except struct.error:
        return None


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
    from .run import run_tool  # run measures objects with this module
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
            raise CompileError(f"callgrind wrote no output for {describe(cmd)}: {e}") from None
    if m is None or int(m.group(1)) == 0:
        where = f" in {function}" if function else ""
        raise CompileError(f"callgrind counted no instruction{where}: {describe(cmd)}")
    return Callgrind(int(m.group(1)), stdout, stderr)
