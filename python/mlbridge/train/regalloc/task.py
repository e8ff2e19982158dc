"""The compiles of register-allocation training, as tasks for the Ray
workers (plain dicts; :func:`run_task` runs one on a worker).

The machine-function corpus: each corpus unit's bitcode (taken before any
LLVM pass, with ``-Oz``'s attributes; docs/corpus.md) optimised with
``opt-19 -passes='default<Oz>'`` -- the IR clang's ``-Oz`` hands to the
code generator -- then compiled by ``llc-19 -O2`` (the code generator level
clang uses for ``-Oz``).

An *eviction* task (:func:`evict_task`) compiles one module with greedy and
an eviction policy answered over LLVM's interactive channel (``theta`` of a
:class:`~.evict.LinearEviction`, ``"greedy-rule"``, or None: LLVM's default
advisor, no channel) and returns ``scores`` (``{function: score}``,
:mod:`.score`), ``total`` and, with ``record``, the requests and answers.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...toolchain import compile, run_tool, toolchain
from .evict import GreedyRule, LinearEviction, Recorder
from .score import remark_flags, remark_scores

__all__ = ["PROBLEM", "machine_ir", "evict_task", "run_task", "llc_command"]

#: The registry name that routes these tasks to :func:`run_task` on a worker.
PROBLEM = "regalloc"


def machine_ir(unit_bc) -> Path:
    """The optimised bitcode of a corpus unit (``<unit>.bc`` ->
    ``<unit>.Oz.bc`` next to it, rebuilt when older than the unit)."""
    unit_bc = Path(unit_bc)
    out = unit_bc.with_suffix(".Oz.bc")
    if not out.exists() or out.stat().st_mtime < unit_bc.stat().st_mtime:
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        run_tool([toolchain().tool("opt"), "-passes=default<Oz>", str(unit_bc), "-o", str(tmp)],
                 timeout=600)
        os.replace(tmp, out)
    return out


def llc_command(ir, obj, *extra):
    """``llc-19 -O2`` of bitcode ``ir`` into object ``obj``."""
    return [toolchain().tool("llc"), "-O2", "-filetype=obj", *extra, os.fspath(ir),
            "-o", os.fspath(obj)]


def evict_task(ir, *, theta=None, rule=None, record=False, key=None, timeout=600.0):
    """A task: compile bitcode ``ir`` (bytes) with greedy and eviction policy
    ``theta`` (a LinearEviction's weights) or ``rule="greedy-rule"``; both
    None: LLVM's default advisor."""
    return {"problem": PROBLEM, "kind": "evict", "ir": bytes(ir), "key": key,
            "theta": None if theta is None else [float(t) for t in theta], "rule": rule,
            "record": bool(record), "timeout": float(timeout)}


def run_task(task, workdir):
    """Runs one task in a worker's :class:`~mlbridge.train.cluster.Workdir`."""
    if task["kind"] != "evict":
        raise ValueError(f"unknown regalloc task kind {task['kind']!r}")
    path = workdir.file(task["ir"], ".bc")
    policy = None
    if task["theta"] is not None:
        policy = LinearEviction(task["theta"])
    elif task["rule"] == "greedy-rule":
        policy = GreedyRule()
    elif task["rule"] is not None:
        raise ValueError(f"unknown eviction rule {task['rule']!r}")
    recorder = Recorder(policy) if task["record"] and policy is not None else None
    remarks, obj = path + ".remarks.yaml", path + ".o"
    try:
        res = compile(llc_command(path, obj, *remark_flags(remarks)), timeout=task["timeout"],
                      advisors={"evict": recorder or policy} if policy is not None else None)
        with open(remarks) as f:
            scores = remark_scores(f.read())
    finally:
        for p in (remarks, obj):
            if os.path.exists(p):
                os.unlink(p)
    out = {"key": task.get("key"), "scores": scores, "total": float(sum(scores.values())),
           "cpu_seconds": res.cpu_seconds, "seconds": res.wall_seconds,
           "requests": res.run.requests.get("evict", 0) if res.run is not None else 0}
    if recorder is not None:
        out["X"], out["masks"], out["actions"] = recorder.arrays()
    return out

