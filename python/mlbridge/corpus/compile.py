"""The compiler commands of the corpus, and what they measure.

* IR for training: ``clang-19 -Oz -Xclang -disable-llvm-passes -emit-llvm -c``
  (bitcode before any LLVM pass, with the ``minsize``/``optsize`` attributes
  that ``-Oz`` puts on every function).
* Baseline: ``clang-19 -Oz -c`` of the source with the same flags; the size is
  the object's ``.text`` (all executable sections), never an IR estimate.
* IR to object: ``clang-19 -Oz -c <file.bc>``, the command training starts
  from; :func:`measure_unit` checks that it gives the baseline's ``.text``.

``clang-19`` stands for the toolchain's compiler (``$MLBRIDGE_CLANG``, see
:mod:`mlbridge.toolchain`): the same one training and evaluation measure with.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path
from typing import List, Optional, Sequence

from ..toolchain import CompileError, compile, run_tool, toolchain

__all__ = ["CompileError", "clang_version", "ir_command", "object_command", "object_text",
           "build_ir", "functions_without_size_attributes", "measure_unit",
           "SLOW_UNIT_SECONDS"]

#: A unit whose ``-Oz`` compile takes more CPU seconds than this is left out.
SLOW_UNIT_SECONDS = 60.0


def clang_version(clang: Optional[str] = None) -> str:
    """First line of ``clang --version`` (part of every cache key)."""
    return toolchain(clang).version


def ir_command(source, flags: Sequence[str], output, clang: Optional[str] = None) -> List[str]:
    return [toolchain(clang).clang, "-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm",
            "-c", str(source), *flags, "-o", str(output)]


def object_command(source, flags: Sequence[str], output,
                   clang: Optional[str] = None) -> List[str]:
    return [toolchain(clang).clang, "-Oz", "-c", str(source), *flags, "-o", str(output)]


def object_text(source, flags: Sequence[str], clang: Optional[str] = None):
    """(``.text`` bytes, CPU seconds) of ``clang -Oz -c source flags``."""
    with tempfile.TemporaryDirectory(prefix="mlbridge-corpus-") as tmp:
        res = compile(object_command(source, flags, Path(tmp, "unit.o"), clang))
        return res.text, res.cpu_seconds


def build_ir(source, flags: Sequence[str], output, clang: Optional[str] = None) -> float:
    """Writes the bitcode of ``source`` to ``output`` (atomically); CPU seconds."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        seconds = compile(ir_command(source, flags, tmp, clang), measure_text=False).cpu_seconds
        os.replace(tmp, output)
    finally:
        tmp.unlink(missing_ok=True)
    return seconds


_DEFINE_RE = re.compile(r"^define [^@]*@(\"[^\"]+\"|[\w.$]+)\(.*\)[^#{]*(#\d+)?", re.M)
_ATTRS_RE = re.compile(r"^attributes (#\d+) = \{(.*)\}", re.M)


def functions_without_size_attributes(bitcode, llvm_dis: Optional[str] = None) -> List[str]:
    """Defined functions of ``bitcode`` that lack ``minsize`` or ``optsize``
    (empty when the IR was made at ``-Oz`` before any pass), not counting
    ``alwaysinline`` ones. ``llvm_dis``: default, the toolchain's."""
    text = run_tool([llvm_dis or toolchain().tool("llvm-dis"), str(bitcode), "-o", "-"],
                    timeout=120)
    groups = {m.group(1): m.group(2).split() for m in _ATTRS_RE.finditer(text)}
    missing = []
    for m in _DEFINE_RE.finditer(text):
        attrs = groups.get(m.group(2), []) if m.group(2) else []
        # alwaysinline functions are inlined whatever the size settings; clang
        # makes C++20 coroutine await-suspend wrappers so, without minsize/optsize.
        if "alwaysinline" in attrs:
            continue
        if "minsize" not in attrs or "optsize" not in attrs:
            missing.append(m.group(1))
    return missing


def measure_unit(source, flags: Sequence[str], ir_path, clang: Optional[str] = None,
                 slow_seconds: float = SLOW_UNIT_SECONDS) -> dict:
    """Everything the manifest records about one unit: the baseline ``.text``
    from source, the bitcode (written to ``ir_path``), the ``.text`` of
    ``clang -Oz -c`` on that bitcode, and the functions missing the ``-Oz``
    attributes. ``error`` is set (and the rest may be missing) when the unit
    does not compile or is too slow."""
    out: dict = {}
    started = time.monotonic()
    try:
        text, seconds = object_text(source, flags, clang)
        out.update(text=text, seconds=round(seconds, 2))
        if seconds > slow_seconds:
            out["error"] = f"too slow: {seconds:.0f} CPU s at -Oz (limit {slow_seconds:g} s)"
            return out
        build_ir(source, flags, ir_path, clang)
        out["ir_text"], _ = object_text(ir_path, [], clang)
        out["missing_size_attributes"] = functions_without_size_attributes(ir_path)
    except CompileError as e:
        out["error"] = str(e)
    out["wall_seconds"] = round(time.monotonic() - started, 2)
    return out
