"""The compiles of register-allocation training, as tasks for the Ray
workers (plain dicts; :func:`run_task` runs one on a worker).

The machine-function corpus: each corpus unit's bitcode (taken before any
LLVM pass, with ``-Oz``'s attributes; docs/corpus.md) optimised with
``opt-19 -passes='default<Oz>'`` -- the IR clang's ``-Oz`` hands to the
code generator -- then allocated by ``llc-19 -O2``
(:func:`mlbridge.llvm.plugins.regalloc.allocate`). Every allocation is
scored by the one score implementation, the plugin's ``mlbridge-ra-score``
pass (MLGO's RegAllocScore; docs/register-allocation.md, "Score").

* an *eviction* task (:func:`evict_task`): LLVM's ``greedy`` with its
  eviction advisor answered over LLVM's interactive channel by ``theta`` of
  a :class:`~.evict.LinearEviction` or ``"greedy-rule"`` (None: LLVM's
  default advisor, no channel);
* an *allocation* task (:func:`alloc_task`): any allocator; for ours
  (``mlbridge``) a built-in policy (``"heuristic"``, ``"random"``), an
  :class:`~.allocator.AllocatorPolicy` answering over pipes from Python
  (``theta``, or ``"heuristic-rule"``), or an ONNX model run in-process.

Result: ``scores`` (``{function: score}``), ``total``, ``cpu_seconds``,
``requests`` (Python answers) and, with ``record``, the answers' data.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...llvm.plugins import find_plugins, tool_env
from ...llvm.plugins import regalloc as ra
from ...toolchain import compile, run_tool, toolchain
from . import allocator as alloc
from .evict import GreedyRule, LinearEviction
from .evict import Recorder as EvictRecorder

__all__ = ["PROBLEM", "machine_ir", "evict_task", "alloc_task", "time_task", "run_task"]

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


def evict_task(ir, *, theta=None, rule=None, record=False, key=None, timeout=600.0):
    """A task: allocate bitcode ``ir`` (bytes) with greedy and eviction
    policy ``theta`` or ``rule="greedy-rule"``; both None: LLVM's own."""
    return {"problem": PROBLEM, "kind": "evict", "ir": bytes(ir), "key": key,
            "theta": None if theta is None else [float(t) for t in theta], "rule": rule,
            "record": bool(record), "timeout": float(timeout)}


def alloc_task(ir, *, allocator="mlbridge", policy=None, theta=None, onnx=None, seed=None,
               record=False, key=None, timeout=600.0):
    """A task: allocate bitcode ``ir`` with ``allocator``; for ours, one of
    ``policy`` (``"heuristic"``, ``"random"``, ``"heuristic-rule"``: the
    heuristic answered from Python over pipes), ``theta`` (an
    AllocatorPolicy over pipes) or ``onnx`` (model bytes, in-process)."""
    return {"problem": PROBLEM, "kind": "alloc", "ir": bytes(ir), "key": key,
            "allocator": allocator, "policy": policy,
            "theta": None if theta is None else [float(t) for t in theta],
            "onnx": None if onnx is None else bytes(onnx), "seed": seed,
            "record": bool(record), "timeout": float(timeout)}


def time_task(ir, *, allocator="mlbridge", policy=None, key=None, timeout=600.0):
    """A task: the CPU seconds of the whole ``llc-19 -O2 -filetype=obj`` of
    ``ir`` with ``allocator`` (ours: the built-in ``policy`` or, None, the
    built-in model), as a user runs it."""
    return {"problem": PROBLEM, "kind": "time", "ir": bytes(ir), "key": key,
            "allocator": allocator, "policy": policy, "timeout": float(timeout)}


def _time(path, task):
    plugins = find_plugins(llvm=19)
    env = tool_env(plugins)
    if task["policy"] is not None:
        env["MLBRIDGE_RA_POLICY"] = task["policy"]
    obj = path + ".o"
    try:
        res = compile(ra.llc_command(path, obj, task["allocator"], plugins=plugins, verify=False,
                                     extra=["-filetype=obj"]), env=env, timeout=task["timeout"])
    finally:
        if os.path.exists(obj):
            os.unlink(obj)
    return {"key": task.get("key"), "cpu_seconds": res.cpu_seconds, "text": res.text}


def run_task(task, workdir):
    """Runs one task in a worker's :class:`~mlbridge.train.cluster.Workdir`."""
    path = workdir.file(task["ir"], ".bc")
    if task["kind"] == "time":
        return _time(path, task)
    recorder = None
    if task["kind"] == "evict":
        policy = None
        if task["theta"] is not None:
            policy = LinearEviction(task["theta"])
        elif task["rule"] == "greedy-rule":
            policy = GreedyRule()
        elif task["rule"] is not None:
            raise ValueError(f"unknown eviction rule {task['rule']!r}")
        if policy is not None:
            recorder = EvictRecorder(policy, keep=task["record"])
        res = ra.allocate(path, "greedy", verify=False, workdir=workdir.path,
                          timeout=task["timeout"],
                          advisors={"evict": recorder} if recorder else None)
    elif task["kind"] == "alloc":
        policy = task["policy"]
        if task["theta"] is not None:
            policy = alloc.AllocatorPolicy(task["theta"])
        elif policy == "heuristic-rule":
            policy = alloc.HeuristicRule()
        elif task["onnx"] is not None:
            policy = workdir.file(task["onnx"], ".onnx")
        if callable(policy):
            policy = recorder = alloc.Recorder(policy, keep=task["record"])
        res = ra.allocate(path, task["allocator"], policy=policy, seed=task["seed"],
                          verify=False, workdir=workdir.path, timeout=task["timeout"])
    else:
        raise ValueError(f"unknown regalloc task kind {task['kind']!r}")
    scores = {f: s.score for f, s in res.scores.items()}
    out = {"key": task.get("key"), "scores": scores, "total": float(sum(scores.values())),
           "cpu_seconds": res.cpu_seconds,
           "requests": recorder.requests if recorder is not None else 0,
           "illegal": sum(int(r.get("illegal", 0)) for r in res.log),
           "model_failures": sum(int(r.get("model_failures", 0)) for r in res.log),
           "traces": {r["function"]: r.get("trace") for r in res.log if "function" in r}}
    if recorder is not None and task["record"]:
        out["data"] = recorder.arrays()
    return out
