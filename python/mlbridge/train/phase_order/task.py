"""The compiles of phase-ordering training, as tasks for the Ray workers
(plain dicts; :func:`run_task` runs one on a worker).

* an *oracle episode* (:func:`oracle_task`): the plugin reports, at every
  state, the ``.text`` after each action (``lookahead``); the oracle takes
  the action that shrinks ``.text`` most and stops when none does;
* a *compile* (:func:`compile_task`): ``clang-19 -Oz`` with the plugin
  running a policy (ONNX bytes), or plain ``-Oz``; result ``text``.
"""

import os
import time

import numpy as np

from ...toolchain.measure import elf_text_size
from ...toolchain import CompileError, compile, toolchain
from .policy import STOP

__all__ = ["oracle_task", "compile_task", "plugin_env", "run_task", "PROBLEM"]

#: The registry name that routes these tasks to :func:`run_task` on a worker.
PROBLEM = "phase-order"


def _plugin_fields(plugin):
    """What a worker needs to run the plugin: its path and, for a sanitized
    build, how to preload the sanitizer runtime into the host (tool_env)."""
    if isinstance(plugin, (str, os.PathLike)):
        return {"plugin": os.fspath(plugin), "sanitize": "", "cxx": ""}
    return {"plugin": os.fspath(plugin.phase_order), "sanitize": plugin.sanitize,
            "cxx": plugin.cxx_compiler}


def _plugin_info(task):
    from ...llvm.plugins import PluginInfo
    return PluginInfo(inline_advisor=None, phase_order=task["plugin"],
                      sanitize=task["sanitize"], cxx_compiler=task["cxx"])


def oracle_task(ir, *, plugin, max_steps=3, start=(), key=None, timeout=900.0):
    """A task: one greedy oracle episode on bitcode ``ir`` (bytes).
    ``plugin``: MLBridgePhaseOrder.so's path, or a PluginInfo (also for
    :func:`compile_task`); ``start``: the stock size flags the episode
    starts from (:func:`plugin_env`)."""
    return {"problem": PROBLEM, "kind": "oracle", "ir": bytes(ir), "key": key,
            **_plugin_fields(plugin), "max_steps": int(max_steps), "start": list(start),
            "timeout": float(timeout)}


def compile_task(ir, *, plugin, model=None, max_steps=3, start=(), key=None, timeout=900.0):
    """A task: compile ``ir`` with ``clang-19 -Oz`` and the plugin's policy
    ``model`` (ONNX bytes; None: no plugin, plain ``-Oz``) starting from the
    flags ``start``; result ``text``."""
    return {"problem": PROBLEM, "kind": "compile", "ir": bytes(ir), "key": key,
            **_plugin_fields(plugin), "model": None if model is None else bytes(model),
            "max_steps": int(max_steps), "start": list(start), "timeout": float(timeout)}


def plugin_env(model_path, max_steps, base=None, start=()):
    """The environment that makes ``clang-19 -Oz -fpass-plugin=...`` run the
    phase-ordering episode with an ONNX policy (or the compiled-in one when
    ``model_path`` is None), starting from the stock size flags ``start``
    (names of :data:`mlbridge.train.baselines.FLAGS`; none: where -Oz ends)."""
    env = dict(os.environ if base is None else base)
    env.update(MLBRIDGE_PO_ENABLE="1", MLBRIDGE_PO_MAX_STEPS=str(max_steps))
    if start:
        env.update(MLBRIDGE_PO_START=",".join(start))
    if model_path:
        env.update(MLBRIDGE_PO_RUNNER="onnx", MLBRIDGE_PO_MODEL=os.fspath(model_path))
    else:
        env.update(MLBRIDGE_PO_RUNNER="compiled")
    return env


def run_task(task, workdir):
    """Runs one task in a worker's :class:`~mlbridge.train.cluster.Workdir`."""
    path = workdir.file(task["ir"], ".bc")
    if task["kind"] == "oracle":
        out, seconds = _oracle(path, task)
    else:
        out, seconds = _compile(path, task, workdir)
    out.update(key=task.get("key"), seconds=seconds)
    return out


def _oracle(path, task):
    from ...llvm.plugins import PhaseOrderEnv
    t0 = time.monotonic()
    states, looks, sizes, actions = [], [], [], []
    with PhaseOrderEnv([path], max_steps=task["max_steps"], lookahead=True,
                       start=task.get("start", ()),
                       plugins=_plugin_info(task), timeout=task["timeout"]) as env:
        obs, info = env.reset()
        while True:
            la = np.asarray(info["lookahead"], dtype=np.int64)
            states.append(np.asarray(obs, dtype=np.float32))
            looks.append(la)
            sizes.append(info["code_size"])
            ok = np.where(la >= 0, la, np.iinfo(np.int64).max)
            a = int(np.argmin(ok))
            if ok[a] >= info["code_size"]:
                a = STOP
            actions.append(a)
            obs, _, term, trunc, info = env.step(a)
            if term or trunc:
                break
        final = elf_text_size(env.output_path)
    return {"states": np.stack(states), "lookahead": np.stack(looks),
            "sizes": np.asarray(sizes, dtype=np.int64), "actions": actions,
            "final_text": int(final), "reported_text": int(info["code_size"])}, \
        time.monotonic() - t0


def _compile(path, task, workdir):
    from ...llvm.plugins import tool_env
    obj = path + ".o"
    env = None
    cmd = [toolchain().clang, "-Oz", "-c", path, "-o", obj]
    if task["model"] is not None:
        model = workdir.file(task["model"], ".onnx")
        cmd.insert(3, f"-fpass-plugin={task['plugin']}")
        env = tool_env(_plugin_info(task), plugin_env(model, task["max_steps"],
                                                      start=task.get("start", ())))
    try:
        res = compile(cmd, env=env, timeout=task["timeout"])
    finally:
        if os.path.exists(obj):
            os.unlink(obj)
    if "warning" in res.stderr and "mlbridge-phase-order" in res.stderr:
        raise CompileError(f"the plugin warned: {res.stderr[-1500:]}")
    return {"text": res.text}, res.wall_seconds
