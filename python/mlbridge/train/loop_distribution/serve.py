"""The plugin with a training policy: the Python side of each compile.

:func:`compile_with_plugin` runs one compiler command with
``MLBridgeLoopDistribution.so`` deciding by a policy spec (see
:mod:`.task`): in-process (the compiled-in model, or an ONNX file through
ONNX Runtime), or a Python policy answering over pipes through
:func:`mlbridge.llvm.plugins.loop_distribution.compile_with_policy`
(``replay``: given partitions by loop id, every other loop whole, each
loop's graph recorded; ``graph``: the network's scores; ``random``).
"""

from __future__ import annotations

import os
import tempfile
from typing import Dict

from .partitions import decisions, parse

__all__ = ["Recorder", "walk_text", "compile_with_plugin"]


def walk_text(parts, edges) -> str:
    """``parts`` as the replay policy walks it: each loop's nodes in an
    order that respects the dependences (the replay places them as listed)."""
    out, cur = [], None
    for node, merge in decisions(parts, edges):
        if merge in (None, 1):
            cur = []
            out.append(cur)
        cur.append(str(node))
    return "|".join(",".join(p) for p in out)


class Recorder:
    """Wraps a policy and keeps, per loop id, the graph the plugin sent
    (``features`` [n, F], ``adjacency`` [n, n], ``embeddings`` [n, 300]:
    IR2Vec) and its ``"<function>:<loop>"``."""

    def __init__(self, policy):
        self.policy = policy
        self.loops: Dict[int, dict] = {}

    def __call__(self, obs):
        if obs.loop_id not in self.loops:
            n = int(obs["loop_features"][0])
            self.loops[obs.loop_id] = {
                "loop_id": obs.loop_id, "loop": obs.loop,
                "features": obs["node_features"][:n].tolist(),
                "adjacency": obs["adjacency"][:n, :n].tolist(),
                "embeddings": obs["node_embeddings"][:n].tolist()}
        return self.policy(obs)


def _env(base=None, **settings):
    """The compile's environment: this process's MLBRIDGE_LD_* settings
    removed (a user sets none), ``settings`` added."""
    from ...llvm.plugins import loop_distribution as ld
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.startswith(ld.ENV_PREFIX)}
    env.update(ld.plugin_settings(**settings))
    return env


def compile_with_plugin(cmd, spec, *, plugin, timeout, record=False):
    """Runs ``cmd`` (a clang command line) with the plugin deciding by
    ``spec``; returns (the :class:`mlbridge.toolchain.Compiled`, the loops
    asked about -- recorded by the replay policy, else []). Raises
    CompileError when the compiler fails or the plugin warns (a model
    error, an invalid partition: the loop was left alone, so the result
    would not be the policy's), and ValueError when a replayed partition
    is not what the plugin made."""
    from ...llvm.plugins import loop_distribution as ld
    from ...toolchain import CompileError, compile
    from .policy import GraphPolicy
    kind = spec["kind"]
    cmd = [os.fspath(cmd[0]), f"-fpass-plugin={os.fspath(plugin)}",
           *map(os.fspath, cmd[1:])]
    loops = []
    if kind in ("builtin", "heuristic"):   # the compiled-in model; the hand-written policy
        res = compile(cmd, measure_text=False, timeout=timeout,
                      env=_env(runner="default") if kind == "heuristic" else _env())
    elif kind == "onnx":
        with tempfile.TemporaryDirectory(prefix="mlbridge-ld-") as tmp:
            model = os.path.join(tmp, "model.onnx")
            with open(model, "wb") as f:
                f.write(spec["model"])
            res = compile(cmd, measure_text=False, timeout=timeout,
                          env=_env(runner="onnx", model=model))
    else:
        if kind == "replay":
            want = {int(k): v for k, v in spec["partitions"].items()}
            policy = Recorder(ld.ReplayPolicy(want))
        elif kind == "graph":
            policy = GraphPolicy.from_dict(spec["policy"])
        elif kind == "random":
            policy = ld.RandomPolicy(spec.get("seed", 0))
        else:
            raise ValueError(f"unknown policy kind {kind!r}")
        run = ld.compile_with_policy(cmd, policy, timeout=timeout, env=_env())
        res = run.compiled
        if kind == "replay":
            made = {r["loop_id"]: r for r in run.loops if r.get("loop_id", -1) >= 0}
            for lid, rec in sorted(policy.loops.items()):
                got = made.get(lid, {}).get("partition", "")
                asked = want.get(lid, ",".join(str(i) for i in range(len(rec["features"]))))
                if [sorted(q) for q in parse(got)] != [sorted(q) for q in parse(asked)]:
                    raise ValueError(f"loop {lid} ({rec['loop']}): the plugin made "
                                     f"{got!r}, the replay asked for {asked!r}")
                rec["partition"] = got
                loops.append(rec)
    if "warning:" in res.stderr and "mlbridge-loop-distribution" in res.stderr:
        raise CompileError(f"the plugin warned: {res.stderr[-1500:]}")
    return res, loops

