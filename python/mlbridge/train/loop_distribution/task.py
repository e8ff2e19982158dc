"""One measurement of loop-distribution training, as a task for the Ray
workers (a plain dict; :func:`run_task` runs it on a worker).

A task compiles one kernel source (a family file, or one kernel alone:
:func:`mlbridge.corpus.loops.kernel_source`) to an object with ``flags``
and, when ``policy`` is given, ``MLBridgeLoopDistribution.so`` deciding
with that policy; links it with the corpus driver (built with the same
flags, without the plugin) and measures every kernel named: callgrind Ir
and the checksums of that same run (:func:`mlbridge.corpus.loops.measure`).

``policy`` (the :mod:`.serve` spec): ``{"kind": "builtin"}`` (the plugin's
compiled-in model, loaded with no option: what a user gets), ``{"kind":
"heuristic"}`` (the plugin's hand-written policy), ``{"kind":
"onnx", "model": bytes}`` (ONNX Runtime in the plugin), ``{"kind":
"replay", "partitions": {loop index: "0,1|2"}}``, ``{"kind": "graph",
"policy": GraphPolicy dict}`` (the network in Python over pipes),
``{"kind": "random", "seed": s}``; None: no plugin. ``record``: the
result also holds every loop the plugin asked about (its graph and the
decisions made), in order.

Result: ``{"key", "ir": {kernel: Ir}, "out": {kernel: checksums},
"compile_cpu": seconds of the kernel compile, "loops": [...]}``.

A *compile-cost* task (:func:`compile_ir_task`) compiles the source with
plain ``-O3`` and with the plugin deciding by ``policy``, each under
callgrind, and returns the instructions the whole compiler process executed
(``{"O3": Ir, "plugin": Ir}``): deterministic, unlike CPU seconds on a
shared machine, and it counts loading the plugin too.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...corpus import loops as corpus
from ...toolchain import compile, toolchain

__all__ = ["PROBLEM", "measure_task", "compile_ir_task", "run_task"]

#: The registry name that routes these tasks to :func:`run_task`.
PROBLEM = "loop-distribution"


def measure_task(source_text, name, kernels, *, flags=("-O3",), policy=None, record=False,
                 plugin=None, key=None, timeout=600.0):
    """A task: build ``source_text`` (file stem ``name``) and measure
    ``kernels``; see the module docstring."""
    return {"problem": PROBLEM, "kind": "measure", "source": source_text, "name": name,
            "kernels": list(kernels), "flags": list(flags), "policy": policy,
            "record": bool(record), "plugin": None if plugin is None else os.fspath(plugin),
            "key": key or name, "timeout": float(timeout)}


def compile_ir_task(source_text, name, *, policy, plugin, flags=("-O3",), key=None,
                    timeout=1800.0):
    """A task: callgrind Ir of the whole compile of ``source_text`` with and
    without the plugin (``policy``)."""
    return {"problem": PROBLEM, "kind": "compile_ir", "source": source_text, "name": name,
            "flags": list(flags), "policy": policy, "plugin": os.fspath(plugin),
            "key": key or name, "timeout": float(timeout)}


def _compile_ir(task, workdir):
    from ...toolchain import callgrind
    from . import serve
    if task["policy"]["kind"] not in ("builtin", "heuristic"):
        raise ValueError("compile cost is measured with the plugin's own model or policy")
    src = workdir.file(task["source"].encode(), ".c")
    obj = f"{src}.{os.getpid()}.o"
    cmd = [toolchain().clang, *task["flags"], "-I", str(corpus.ROOT), "-c", src, "-o", obj]
    runs = {"O3": (cmd, None),
            "plugin": ([cmd[0], f"-fpass-plugin={task['plugin']}", *cmd[1:]],
                       serve._env(runner="default") if task["policy"]["kind"] == "heuristic"
                       else serve._env())}
    irs = {}
    try:
        for name, (c, env) in runs.items():
            irs[name] = callgrind(c, timeout=task["timeout"], env=env).ir
    finally:
        if os.path.exists(obj):
            os.unlink(obj)
    return {"key": task["key"], **irs}


def _driver(workdir, flags, timeout):
    """The driver object for ``flags`` (built once per worker)."""
    obj = os.path.join(workdir.path, "driver-" + "_".join(f.strip("-") for f in flags) + ".o")
    if not os.path.exists(obj):
        compile([toolchain().clang, *flags, "-I", str(corpus.ROOT), "-c",
                 str(corpus.ROOT / "driver.c"), "-o", obj], measure_text=False,
                timeout=timeout)
    return obj


def run_task(task, workdir):
    """Runs one task in a worker's :class:`~mlbridge.train.cluster.Workdir`."""
    from . import serve
    if task["kind"] == "compile_ir":
        return _compile_ir(task, workdir)
    flags, timeout = task["flags"], task["timeout"]
    src = Path(workdir.file(task["source"].encode(), ".c"))
    stem = src.with_suffix("")
    obj, exe = f"{stem}.{os.getpid()}.o", f"{stem}.{os.getpid()}.exe"
    cmd = [toolchain().clang, *flags, "-I", str(corpus.ROOT), "-c", str(src), "-o", obj]
    try:
        if task["policy"] is None:
            res, loops = compile(cmd, measure_text=False, timeout=timeout), []
        else:
            res, loops = serve.compile_with_plugin(cmd, task["policy"], plugin=task["plugin"],
                                                   timeout=timeout, record=task["record"])
        compile([toolchain().clang, *flags, "-rdynamic", _driver(workdir, flags, timeout), obj,
                 "-o", exe], measure_text=False, timeout=timeout)
        ir, out = {}, {}
        for k in task["kernels"]:
            ir[k], out[k] = corpus.measure(Path(exe), k)
    finally:
        for f in (obj, exe):
            if os.path.exists(f):
                os.unlink(f)
    return {"key": task["key"], "ir": ir, "out": out, "compile_cpu": res.cpu_seconds,
            "loops": loops}
