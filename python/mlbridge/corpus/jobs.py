"""Per-unit work (build, measure, check) run in a small process pool."""

from __future__ import annotations

import contextlib
import json
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Callable, List, Sequence

from . import compile as cc
from .manifest import Module

#: Compiler processes at once by default (the machine has 2 cores).
DEFAULT_JOBS = 2


@contextlib.contextmanager
def pool(executor_class, jobs: int):
    """``executor_class(max_workers=jobs)`` (a concurrent.futures executor)
    that, left by an exception (Ctrl-C), starts none of the queued tasks:
    only those already running are waited for."""
    ex = executor_class(max_workers=jobs)
    try:
        yield ex
    except BaseException:
        ex.shutdown(wait=True, cancel_futures=True)
        raise
    ex.shutdown(wait=True)


def run_parallel(fn: Callable, items: Sequence, *, jobs: int = DEFAULT_JOBS,
                 desc: str = "", progress: bool = True) -> List:
    """``[fn(item) for item in items]``, ``jobs`` processes at once, with a
    progress bar; results in the order of ``items``."""
    from tqdm import tqdm
    results: List = [None] * len(items)
    with tqdm(total=len(items), desc=desc, unit="TU", disable=not progress) as bar:
        if jobs <= 1:
            for i, item in enumerate(items):
                results[i] = fn(item)
                bar.update(1)
            return results
        with pool(ProcessPoolExecutor, jobs) as ex:
            futures = {ex.submit(fn, item): i for i, item in enumerate(items)}
            for fut in as_completed(futures):
                results[futures[fut]] = fut.result()
                bar.update(1)
    return results


def build_ir(module: Module):
    """(name, path or None, error or None)."""
    try:
        return module.name, str(module.ir()), None
    except cc.CompileError as e:
        return module.name, None, str(e)


def baseline(module: Module):
    """(name, .text or None, error or None)."""
    try:
        return module.name, module.baseline_text(), None
    except cc.CompileError as e:
        return module.name, None, str(e)


def measure(module: Module) -> dict:
    """Baseline from source, bitcode, ``.text`` from the bitcode and the
    ``-Oz`` attribute check of one unit (see :func:`compile.measure_unit`);
    fills the module's caches on the way."""
    ir_path = module._out(None, ".bc")
    result = cc.measure_unit(module.source, module.flags, ir_path)
    if "error" not in result:
        key = module._key()
        ir_path.with_name(ir_path.name + ".key").write_text(key)
        module._out(None, ".baseline.json").write_text(
            json.dumps({"key": key, "text": result["text"]}))
    result["name"] = module.name
    return result
