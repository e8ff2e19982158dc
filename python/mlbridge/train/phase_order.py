"""Phase ordering for code size, trained on real ``.text``.

The episode (``MLBridgePhaseOrder.so`` in ``clang-19 -Oz``) starts where
clang's ``-Oz`` pipeline ends, so STOP at once is exactly ``clang -Oz``;
each action runs one of 17 pass sequences (sub-sequences of ``-Oz``, the
whole ``-Oz`` module pipeline again, ``mergefunc``) and the reward is the
change of the object's ``.text``. docs/training.md describes the method.

1. **Oracle episodes** (Ray workers, :class:`PhaseOrderWorker`): on each
   training module the plugin reports, at every state, the ``.text`` after
   each action (``lookahead``); the oracle takes the action that shrinks
   ``.text`` most and stops when none does.
2. **A regression network** learns, from the observation alone (26 counts,
   ``log(1 + x)``), the ``.text`` change of every action in percent, on
   every state the oracle visited (all 17 actions are labelled there).
3. **The deployed policy** is that network plus one constant score for
   STOP, ``threshold``: it acts only where it predicts a gain above the
   threshold. The threshold is chosen on the validation libraries by
   compiling them with the plugin and the candidate model (infinity, i.e.
   plain ``-Oz``, is always a candidate).

    python -m mlbridge.train phase-order --out runs/phase-order
"""

import json
import logging
import os
import subprocess
import tempfile
import time

import numpy as np

from ..llvm.plugins._plugins import NUM_OBSERVATIONS, STOP_ACTION as STOP
from ..llvm.tools import elf_text_size
from .cluster import CompileWorker
from .compile import CLANG

__all__ = ["PhaseOrderWorker", "PhasePolicy", "oracle_task", "compile_task",
           "collect", "labels", "select_threshold", "NUM_PASS_ACTIONS", "STOP"]

_log = logging.getLogger("mlbridge.train")

NUM_PASS_ACTIONS = STOP   # the plugin's actions before STOP
#: A predicted change is clipped to this many percent of .text (a few
#: actions double a small module; their exact size does not matter).
CLIP_PCT = 5.0


def _plugin_fields(plugin):
    """What a worker needs to run the plugin: its path and, for a sanitized
    build, how to preload the sanitizer runtime into the host (tool_env)."""
    if isinstance(plugin, (str, os.PathLike)):
        return {"plugin": os.fspath(plugin), "sanitize": "", "cxx": ""}
    return {"plugin": os.fspath(plugin.phase_order), "sanitize": plugin.sanitize,
            "cxx": plugin.cxx_compiler}


def _plugin_info(task):
    from ..llvm.plugins import PluginInfo
    return PluginInfo(inline_advisor=None, phase_order=task["plugin"],
                      sanitize=task["sanitize"], cxx_compiler=task["cxx"])


def oracle_task(ir, *, plugin, max_steps=3, key=None, timeout=900.0):
    """A task: one greedy oracle episode on bitcode ``ir`` (bytes).
    ``plugin``: MLBridgePhaseOrder.so's path, or a PluginInfo (also for
    :func:`compile_task`, :func:`collect`, :func:`train`)."""
    return {"kind": "oracle", "ir": bytes(ir), "key": key, **_plugin_fields(plugin),
            "max_steps": int(max_steps), "timeout": float(timeout)}


def compile_task(ir, *, plugin, model=None, max_steps=3, key=None, timeout=900.0):
    """A task: compile ``ir`` with ``clang-19 -Oz`` and the plugin's policy
    ``model`` (ONNX bytes; None: no plugin, plain ``-Oz``); result ``text``."""
    return {"kind": "compile", "ir": bytes(ir), "key": key, **_plugin_fields(plugin),
            "model": None if model is None else bytes(model), "max_steps": int(max_steps),
            "timeout": float(timeout)}


def plugin_env(model_path, max_steps, base=None):
    """The environment that makes ``clang-19 -Oz -fpass-plugin=...`` run the
    phase-ordering episode with an ONNX policy (or the compiled-in one when
    ``model_path`` is None)."""
    env = dict(os.environ if base is None else base)
    env.update(MLBRIDGE_PO_ENABLE="1", MLBRIDGE_PO_MAX_STEPS=str(max_steps))
    if model_path:
        env.update(MLBRIDGE_PO_RUNNER="onnx", MLBRIDGE_PO_MODEL=os.fspath(model_path))
    else:
        env.update(MLBRIDGE_PO_RUNNER="compiled")
    return env


class PhaseOrderWorker(CompileWorker):
    """The body of a Ray worker actor (see
    :class:`~mlbridge.train.cluster.WorkerPool`) for phase-ordering tasks."""

    def run(self, task):
        t0 = time.monotonic()
        path = self.workdir.file(task["ir"], ".bc")
        out = _oracle(path, task) if task["kind"] == "oracle" else _compile(path, task, self.workdir)
        out.update(key=task.get("key"), seconds=time.monotonic() - t0)
        return out


def _oracle(path, task):
    from ..llvm.plugins import PhaseOrderEnv
    plugins = _plugin_info(task)
    states, looks, sizes, actions = [], [], [], []
    with PhaseOrderEnv([path], max_steps=task["max_steps"], lookahead=True,
                       plugins=plugins, timeout=task["timeout"]) as env:
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
            "final_text": int(final), "reported_text": int(info["code_size"])}


def _compile(path, task, workdir):
    from ..llvm.plugins import tool_env
    obj = path + ".o"
    env = None
    cmd = [CLANG, "-Oz", "-c", path, "-o", obj]
    if task["model"] is not None:
        model = workdir.file(task["model"], ".onnx")
        cmd.insert(3, f"-fpass-plugin={task['plugin']}")
        env = tool_env(_plugin_info(task), plugin_env(model, task["max_steps"]))
    proc = subprocess.run(cmd, env=env, capture_output=True, timeout=task["timeout"])
    if proc.returncode != 0:
        raise RuntimeError(f"clang failed ({proc.returncode}): {proc.stderr.decode()[-1500:]}")
    if b"warning" in proc.stderr and b"mlbridge-phase-order" in proc.stderr:
        raise RuntimeError(f"the plugin warned: {proc.stderr.decode()[-1500:]}")
    text = elf_text_size(obj)
    os.unlink(obj)
    return {"text": int(text)}


def collect(pool, modules, *, plugin, max_steps=3, progress=None):
    """Oracle episodes on ``modules`` (objects with ``ir()`` and ``name``),
    one task each; failed tasks are logged and left out."""
    tasks = []
    for m in modules:
        with open(m.ir(), "rb") as f:
            tasks.append(oracle_task(f.read(), plugin=plugin, max_steps=max_steps, key=m.name))
    out = []
    for m, r in zip(modules, pool.map(tasks, progress=progress)):
        if isinstance(r, dict):
            r["module"], r["library"] = m.name, m.library
            out.append(r)
        else:
            _log.warning("oracle episode failed: %s", r)
    return out


def labels(episodes):
    """(X, Y): every visited state's observation and the change of .text of
    each action from it, in percent (negative = smaller), clipped."""
    X, Y = [], []
    for e in episodes:
        for s, la, size in zip(e["states"], e["lookahead"], e["sizes"]):
            if size <= 0:
                continue
            change = np.where(la >= 0, 100.0 * (la - size) / size, CLIP_PCT)
            X.append(s)
            Y.append(np.clip(change, -CLIP_PCT, CLIP_PCT))
    return (np.asarray(X, dtype=np.float32).reshape(-1, NUM_OBSERVATIONS),
            np.asarray(Y, dtype=np.float32).reshape(-1, NUM_PASS_ACTIONS))


class PhasePolicy:
    """``gain(x) = W2 tanh(W1 log(1 + x) + b1) + b2`` (percent of .text each
    action removes); the policy's scores are ``[gain, threshold]`` and the
    plugin takes their argmax, so it acts only where a predicted gain
    exceeds ``threshold`` (STOP otherwise)."""

    def __init__(self, W1, b1, W2, b2, threshold=float("inf")):
        self.W1, self.b1, self.W2, self.b2 = (np.asarray(a, dtype=np.float32)
                                              for a in (W1, b1, W2, b2))
        self.threshold = float(threshold)

    def gains(self, X):
        h = np.tanh(np.log1p(np.maximum(np.asarray(X, dtype=np.float32), 0)) @ self.W1.T
                    + self.b1)
        return h @ self.W2.T + self.b2

    def act(self, obs):
        g = self.gains(np.asarray(obs).reshape(1, -1))[0]
        a = int(np.argmax(g))
        return a if g[a] > self.threshold else STOP

    @classmethod
    def fit(cls, X, Y, *, hidden=32, epochs=600, lr=0.01, l2=1e-4, seed=0):
        """Least squares on the gains (``-Y``), full batch Adam (PyTorch)."""
        import torch
        torch.manual_seed(seed)
        x = torch.log1p(torch.as_tensor(np.maximum(X, 0), dtype=torch.float32))
        y = -torch.as_tensor(Y, dtype=torch.float32)
        lin1 = torch.nn.Linear(x.shape[1], hidden)
        lin2 = torch.nn.Linear(hidden, y.shape[1])
        params = list(lin1.parameters()) + list(lin2.parameters())
        opt = torch.optim.Adam(params, lr=lr, weight_decay=l2)
        for _ in range(epochs):
            opt.zero_grad()
            loss = torch.mean((lin2(torch.tanh(lin1(x))) - y) ** 2)
            loss.backward()
            opt.step()
        with torch.no_grad():
            return cls(lin1.weight.numpy(), lin1.bias.numpy(), lin2.weight.numpy(),
                       lin2.bias.numpy())

    def with_threshold(self, threshold):
        return PhasePolicy(self.W1, self.b1, self.W2, self.b2, threshold)

    def to_dict(self):
        return {"W1": self.W1.tolist(), "b1": self.b1.tolist(), "W2": self.W2.tolist(),
                "b2": self.b2.tolist(), "threshold": self.threshold}

    @classmethod
    def from_dict(cls, d):
        return cls(d["W1"], d["b1"], d["W2"], d["b2"], d["threshold"])

    def to_onnx(self, path=None):
        """The ONNX model the plugin runs: input ``observation`` float32
        [1, 26], output ``scores`` float32 [1, 18] (argmax = the action).
        Only Add, Log, Gemm, Tanh, Concat: the compiled-model generator
        supports them, so the same file is also built into the plugin.
        Returns the serialized bytes (and writes ``path`` if given)."""
        import onnx
        from onnx import TensorProto, helper, numpy_helper
        thr = self.threshold if np.isfinite(self.threshold) else 3.0e38

        def const(name, arr):
            return numpy_helper.from_array(np.asarray(arr, dtype=np.float32), name)
        nodes = [
            helper.make_node("Add", ["observation", "one"], ["x1"]),
            helper.make_node("Log", ["x1"], ["lx"]),
            helper.make_node("Gemm", ["lx", "W1", "b1"], ["h0"], transB=1),
            helper.make_node("Tanh", ["h0"], ["h"]),
            helper.make_node("Gemm", ["h", "W2", "b2"], ["gain"], transB=1),
            helper.make_node("Concat", ["gain", "stop"], ["scores"], axis=1),
        ]
        graph = helper.make_graph(
            nodes, "mlbridge_phase_order",
            [helper.make_tensor_value_info("observation", TensorProto.FLOAT,
                                           [1, NUM_OBSERVATIONS])],
            [helper.make_tensor_value_info("scores", TensorProto.FLOAT,
                                           [1, NUM_PASS_ACTIONS + 1])],
            [const("one", np.ones((1, NUM_OBSERVATIONS))), const("W1", self.W1),
             const("b1", self.b1), const("W2", self.W2), const("b2", self.b2),
             const("stop", [[thr]])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                  producer_name="mlbridge.train.phase_order")
        model.ir_version = 8
        onnx.checker.check_model(model)
        data = model.SerializeToString()
        if path is not None:
            with open(path, "wb") as f:
                f.write(data)
        return data


def compile_all(pool, modules, *, plugin, model=None, max_steps=3, progress=None):
    """``{module name: .text}`` of compiling each module's bitcode with
    ``clang-19 -Oz`` and the plugin's policy (``model`` ONNX bytes; None:
    plain -Oz). A failed compile raises: a policy that breaks a compile is
    not a candidate."""
    tasks = []
    for m in modules:
        with open(m.ir(), "rb") as f:
            tasks.append(compile_task(f.read(), plugin=plugin, model=model,
                                      max_steps=max_steps, key=m.name))
    out = {}
    for m, r in zip(modules, pool.map(tasks, progress=progress)):
        if not isinstance(r, dict):
            raise RuntimeError(f"{m.name}: {r}")
        out[m.name] = r["text"]
    return out


def select_threshold(pool, modules, policy, *, plugin, candidates, max_steps=3,
                     progress=None, log=None):
    """Compiles ``modules`` (validation) with the policy at each threshold
    and returns (best threshold, rows). Infinity (plain -Oz) is always
    measured; a threshold must beat it to be chosen."""
    rows = []
    base = compile_all(pool, modules, plugin=plugin, model=None, progress=progress)
    base_total = sum(base.values())
    best = (base_total, float("inf"))
    rows.append({"threshold": "inf", "text": base_total, "ratio": 1.0})
    for thr in candidates:
        model = policy.with_threshold(thr).to_onnx()
        sizes = compile_all(pool, modules, plugin=plugin, model=model, max_steps=max_steps,
                            progress=progress)
        total = sum(sizes.values())
        row = {"threshold": thr, "text": total, "ratio": total / base_total}
        rows.append(row)
        if log:
            log(row)
        if total < best[0]:
            best = (total, thr)
    return best[1], rows


def _write_npz(path, episodes):
    np.savez_compressed(
        path, **{f"{i}_{k}": np.asarray(e[k]) for i, e in enumerate(episodes)
                 for k in ("states", "lookahead", "sizes", "actions")},
        names=np.asarray([e["module"] for e in episodes]),
        libraries=np.asarray([e["library"] for e in episodes]))


def _read_npz(path):
    d = np.load(path)
    eps = []
    for i, (name, lib) in enumerate(zip(d["names"], d["libraries"])):
        eps.append({k: d[f"{i}_{k}"] for k in ("states", "lookahead", "sizes", "actions")}
                   | {"module": str(name), "library": str(lib)})
    return eps


def train(train_modules, validation_modules, *, plugin, out_dir, workers=2, address=None,
          max_steps=3, data_from=None, thresholds=(0.05, 0.1, 0.2, 0.4, 0.8), hidden=32,
          seed=0, progress_bars=True):
    """The whole run (see the module docstring); writes into ``out_dir``:
    ``oracle.npz`` (the episodes), ``policy.json``, ``policy.onnx``,
    ``log.jsonl``, and returns the summary dict."""
    from .cluster import WorkerPool
    os.makedirs(out_dir, exist_ok=True)
    logf = open(os.path.join(out_dir, "log.jsonl"), "a")

    def log(rec):
        rec = dict(rec, time=time.strftime("%Y-%m-%dT%H:%M:%S"))
        logf.write(json.dumps(rec) + "\n")
        logf.flush()
        _log.info("%s", rec)

    def bar(n, desc):
        if not progress_bars:
            return None
        from tqdm import tqdm
        return tqdm(total=n, desc=desc, leave=False)
    t0 = time.monotonic()
    with WorkerPool(workers, address=address, worker_cls=PhaseOrderWorker) as pool:
        if data_from:
            episodes = _read_npz(data_from)
        else:
            b = bar(len(train_modules), "oracle episodes")
            episodes = collect(pool, train_modules, plugin=plugin, max_steps=max_steps,
                               progress=b.update if b else None)
            if b:
                b.close()
        _write_npz(os.path.join(out_dir, "oracle.npz"), episodes)
        base = sum(int(e["sizes"][0]) for e in episodes)
        final = sum(int(e["final_text"]) for e in episodes if "final_text" in e)
        log({"stage": "oracle", "episodes": len(episodes), "oz_text": base,
             "oracle_text": final if final else None,
             "seconds": round(time.monotonic() - t0, 1)})
        X, Y = labels(episodes)
        policy = PhasePolicy.fit(X, Y, hidden=hidden, seed=seed)
        pred = -policy.gains(X)
        log({"stage": "fit", "states": int(len(X)),
             "mse_pct2": float(np.mean((pred - Y) ** 2)),
             "mse_zero_pct2": float(np.mean(Y ** 2))})
        b = bar(len(validation_modules) * (len(thresholds) + 1), "validation")
        thr, rows = select_threshold(
            pool, validation_modules, policy, plugin=plugin, candidates=thresholds,
            max_steps=max_steps, progress=b.update if b else None,
            log=lambda r: log(dict(stage="validation", **r)))
        if b:
            b.close()
    policy = policy.with_threshold(thr)
    with open(os.path.join(out_dir, "policy.json"), "w") as f:
        json.dump(dict(policy.to_dict(), max_steps=max_steps), f)
    policy.to_onnx(os.path.join(out_dir, "policy.onnx"))
    summary = {"stage": "done", "threshold": thr, "validation": rows,
               "train_modules": len(train_modules),
               "validation_modules": len(validation_modules),
               "seconds": round(time.monotonic() - t0, 1)}
    log(summary)
    logf.close()
    return summary
