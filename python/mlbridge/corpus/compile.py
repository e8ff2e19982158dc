"""The compiler commands of the corpus, and what they measure.

* IR for training: ``clang-19 -Oz -Xclang -disable-llvm-passes -emit-llvm -c``
  (bitcode before any LLVM pass, with the ``minsize``/``optsize`` attributes
  that ``-Oz`` puts on every function).
* Baseline: ``clang-19 -Oz -c`` of the source with the same flags; the size is
  the object's ``.text`` (all executable sections), never an IR estimate.
* IR to object: ``clang-19 -Oz -c <file.bc>``, the command training starts
  from; :func:`measure_unit` checks that it gives the baseline's ``.text``.
"""

from __future__ import annotations

import functools
import os
import re
import resource
import subprocess
import tempfile
import time
from pathlib import Path
from typing import List, Sequence

from ..errors import MLBridgeError
from ..llvm.tools import elf_text_size

CLANG = "clang-19"
LLVM_DIS = "llvm-dis-19"

#: A unit whose ``-Oz`` compile takes more CPU seconds than this is left out.
SLOW_UNIT_SECONDS = 60.0
#: Hard wall-clock limit of one compiler run (the machine may be loaded).
COMPILE_TIMEOUT = 600.0


class CompileError(MLBridgeError):
    """A compiler run failed, timed out or produced no usable output."""


@functools.lru_cache(maxsize=4)
def clang_version(clang: str = CLANG) -> str:
    """First line of ``clang --version`` (part of every cache key)."""
    try:
        res = subprocess.run([clang, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CompileError(f"cannot run {clang}: {e}") from None
    return res.stdout.splitlines()[0] if res.stdout else clang


def ir_command(source, flags: Sequence[str], output, clang: str = CLANG) -> List[str]:
    return [clang, "-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-c",
            str(source), *flags, "-o", str(output)]


def object_command(source, flags: Sequence[str], output, clang: str = CLANG) -> List[str]:
    return [clang, "-Oz", "-c", str(source), *flags, "-o", str(output)]


def run_compiler(cmd: Sequence[str], *, timeout: float = COMPILE_TIMEOUT) -> float:
    """Runs one compiler command; returns its CPU seconds (user + system of
    the child processes). Raises CompileError with the end of its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        res = subprocess.run(list(cmd), stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CompileError(f"timed out after {timeout:g} s: {' '.join(cmd)}") from None
    except OSError as e:
        raise CompileError(f"cannot run {cmd[0]}: {e}") from None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise CompileError(first_error(res.stderr) or f"exit status {res.returncode}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def first_error(stderr: str) -> str:
    """The first ``error:`` line of a compiler's stderr (else its last line)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if "error:" in ln:
            return ln[-400:]
    return lines[-1][-400:] if lines else ""


def text_size(obj) -> int:
    size = elf_text_size(obj)
    if size is None:
        raise CompileError(f"{obj}: not an ELF object")
    return size


def object_text(source, flags: Sequence[str], clang: str = CLANG):
    """(``.text`` bytes, CPU seconds) of ``clang -Oz -c source flags``."""
    with tempfile.TemporaryDirectory(prefix="mlbridge-corpus-") as tmp:
        obj = Path(tmp, "unit.o")
        seconds = run_compiler(object_command(source, flags, obj, clang))
        return text_size(obj), seconds


def build_ir(source, flags: Sequence[str], output, clang: str = CLANG) -> float:
    """Writes the bitcode of ``source`` to ``output`` (atomically); CPU seconds."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        seconds = run_compiler(ir_command(source, flags, tmp, clang))
        os.replace(tmp, output)
    finally:
        tmp.unlink(missing_ok=True)
    return seconds


_DEFINE_RE = re.compile(r"^define [^@]*@(\"[^\"]+\"|[\w.$]+)\(.*\)[^#{]*(#\d+)?", re.M)
_ATTRS_RE = re.compile(r"^attributes (#\d+) = \{(.*)\}", re.M)


def functions_without_size_attributes(bitcode, llvm_dis: str = LLVM_DIS) -> List[str]:
    """Defined functions of ``bitcode`` that lack ``minsize`` or ``optsize``
    (empty when the IR was made at ``-Oz`` before any pass), not counting
    ``alwaysinline`` ones."""
    try:
        res = subprocess.run([llvm_dis, str(bitcode), "-o", "-"], capture_output=True,
                             text=True, errors="replace", timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CompileError(f"cannot run {llvm_dis}: {e}") from None
    if res.returncode != 0:
        raise CompileError(f"{llvm_dis} {bitcode}: {first_error(res.stderr)}")
    groups = {m.group(1): m.group(2).split() for m in _ATTRS_RE.finditer(res.stdout)}
    missing = []
    for m in _DEFINE_RE.finditer(res.stdout):
        attrs = groups.get(m.group(2), []) if m.group(2) else []
        # alwaysinline functions are inlined whatever the size settings; clang
        # makes C++20 coroutine await-suspend wrappers so, without minsize/optsize.
        if "alwaysinline" in attrs:
            continue
        if "minsize" not in attrs or "optsize" not in attrs:
            missing.append(m.group(1))
    return missing


def measure_unit(source, flags: Sequence[str], ir_path, clang: str = CLANG,
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
