"""Facts about an LLVM command line: which tool, which LLVM version, where
the output goes, and how big the result is.

Nothing here starts a compilation; :func:`llvm_major_version` runs
``<tool> --version`` once per path (cached, bounded by a timeout).
"""

import os
import re
import struct

__all__ = ["tool_kind", "llvm_major_version", "output_path", "elf_text_size",
           "TOOL_KINDS"]

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
    process by :func:`mlbridge.toolchain.toolchain`), or None."""
    from shutil import which
    from ..toolchain import CompileError, toolchain  # toolchain imports this module
    path = which(program) or program
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
