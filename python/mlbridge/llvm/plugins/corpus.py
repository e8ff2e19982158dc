"""Programs to train and test on: C files to LLVM IR, csmith programs with
fixed seeds, multi-file programs linked into one module."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Optional, Sequence

from ...errors import MLBridgeError
from ...toolchain import run_tool
from ...toolchain import toolchain
from ._plugins import compile_to_ir

#: Where Debian's libcsmith-dev installs csmith.h (generated programs include it).
CSMITH_INCLUDE_DIRS = ("/usr/include/csmith", "/usr/local/include/csmith")


def csmith_include_dir() -> str:
    for d in CSMITH_INCLUDE_DIRS:
        if Path(d, "csmith.h").is_file():
            return d
    raise MLBridgeError("csmith.h not found in " + ", ".join(CSMITH_INCLUDE_DIRS) +
                        " (Debian: apt-get install libcsmith-dev)")


def csmith_program(seed: int, path, *, max_funcs: int = 10, timeout: float = 60.0) -> Path:
    """Writes the csmith program of ``seed`` to ``path`` (same seed, same
    program, for a given csmith version)."""
    exe = shutil.which("csmith")
    if exe is None:
        raise MLBridgeError("csmith not found on PATH (Debian: apt-get install csmith)")
    with open(path, "w") as f:
        subprocess.run([exe, "--seed", str(seed), "--max-funcs", str(max_funcs)], stdout=f,
                       stderr=subprocess.PIPE, check=True, timeout=timeout)
    return Path(path)


def csmith_ir(seed: int, out_dir, *, max_funcs: int = 10, clang: Optional[str] = None) -> Path:
    """csmith program ``seed`` as LLVM IR (``csmith<seed>.ll``) next to its C
    source (``csmith<seed>.c``) in out_dir."""
    out_dir = Path(out_dir)
    src = csmith_program(seed, out_dir / f"csmith{seed}.c", max_funcs=max_funcs)
    return compile_to_ir(src, out_dir / f"csmith{seed}.ll", clang=clang,
                         flags=["-w", f"-I{csmith_include_dir()}"])


def linked_ir(sources: Sequence, output, *, clang: Optional[str] = None,
              flags: Sequence[str] = ()) -> Path:
    """Several C files compiled to IR and linked (the llvm-link of ``clang``'s
    LLVM) into one
    module: a whole program for opt."""
    output = Path(output)
    parts = [compile_to_ir(src, output.with_name(f"{output.stem}.{Path(src).stem}.ll"),
                           clang=clang, flags=flags) for src in sources]
    run_tool([toolchain(clang).tool("llvm-link"), "-S", *map(str, parts), "-o", str(output)],
             timeout=60)
    return output
