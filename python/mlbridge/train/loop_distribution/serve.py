"""The plugin with a training policy: the Python side of each compile.

:func:`compile_with_plugin` runs one compiler command with
``MLBridgeLoopDistribution.so`` deciding by a policy spec (see
:mod:`.task`): in-process (the compiled-in model, or an ONNX file), or a
Python policy answering over pipes through
:mod:`mlbridge.llvm.plugins.loop_distribution`. Python policies here:

* :class:`Replay` -- makes given ordered partitions of given loops (by
  ``loop_id``) and keeps every other loop whole; it also records every
  loop's graph (features, adjacency) as the plugin sent it;
* :class:`~.policy.GraphPolicy` -- the network (scores).
"""

from __future__ import annotations

import os
import tempfile
from typing import Dict, List, Optional

import numpy as np

from .partitions import decisions, edges_of, format_partition, parse
from .policy import MAX_NODES, GraphPolicy

__all__ = ["Replay", "compile_with_plugin"]


class Replay:
    """A policy over pipes whose scores make given partitions.
    ``partitions``: {loop_id: partition or its text}; other loops stay
    whole. ``loops`` holds what was seen: per loop_id its ``features``
    ``[n, F]``, ``adjacency`` ``[n, n]`` and the ``partition`` made."""

    def __init__(self, partitions: Optional[Dict[int, object]] = None):
        self.want = {int(k): parse(v) if isinstance(v, str) else v
                     for k, v in (partitions or {}).items()}
        self.loops: Dict[int, dict] = {}
        self._moves: Dict[int, list] = {}

    def _loop(self, obs):
        lid = int(np.asarray(obs["loop_id"]).reshape(-1)[0])
        if lid not in self.loops:
            n = int(np.asarray(obs["loop_features"]).reshape(-1)[0])
            x = np.asarray(obs["node_features"], np.float32).reshape(MAX_NODES, -1)[:n]
            a = np.asarray(obs["adjacency"], np.float32).reshape(MAX_NODES, MAX_NODES)[:n, :n]
            parts = self.want.get(lid, [list(range(n))])
            self.loops[lid] = {"features": x.tolist(), "adjacency": a.tolist()}
            # the moves that build the partition; raises on an invalid one
            self._moves[lid] = decisions(parts, edges_of(a))
        return lid

    def __call__(self, obs):
        lid = self._loop(obs)
        agent = int(np.asarray(obs["agent"]).reshape(-1)[0])
        moves = self._moves[lid]
        if agent == 0:   # the next node of the walk: as many placed as moves made
            return _one_hot(moves[int(np.asarray(obs["placed"]).sum())][0])
        cand = int(np.argmax(np.asarray(obs["candidate"]).reshape(-1)))
        return _one_hot(next(m for node, m in moves if node == cand))

    def made(self) -> List[dict]:
        """The loops seen, in loop_id order, with the partition each got."""
        out = []
        for lid in sorted(self.loops):
            rec = dict(self.loops[lid], loop_id=lid)
            rec["partition"] = format_partition(self.want.get(lid, [list(range(len(
                rec["features"])))]))
            out.append(rec)
        return out


class RandomPolicy:
    """Random scores at every step, so a uniformly random legal action
    (deterministic in ``seed``): odd but valid partitions, for correctness
    checks."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)

    def __call__(self, obs):
        return self.rng.random(MAX_NODES).astype(np.float32)


def _one_hot(action):
    s = np.zeros(MAX_NODES, np.float32)
    s[action] = 1.0
    return s


def _env(**settings):
    """The environment of a compile: the plugin's MLBRIDGE_LD_* settings
    of this process removed, ``settings`` added (training only; a user
    sets nothing)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLBRIDGE_LD_")}
    env.update({f"MLBRIDGE_LD_{k.upper()}": str(v) for k, v in settings.items()})
    return env


def _with_plugin(cmd, plugin):
    return [cmd[0], f"-fpass-plugin={plugin}", *cmd[1:]]


def _served(cmd, policy, timeout):
    """``cmd`` with the plugin's pipe runner, every request answered with
    ``policy(observation)`` (scores [16]); the whole run bounded by
    ``timeout``. Returns a :class:`mlbridge.toolchain.Compiled`."""
    import subprocess
    import time
    from ...llvm import process
    from ...pipe import PipeCompilerInterface
    from ...toolchain import CompileError, Compiled
    t0 = time.monotonic()
    with PipeCompilerInterface(timeout=min(timeout, 60.0)) as iface:
        # The channel exists once the interface made its FIFOs: given to the
        # compiler in its environment (the plugin's -mllvm options would
        # need -fplugin as well).
        proc = process.start(["env", f"MLBRIDGE_LD_CHANNEL={iface.base}", *cmd],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=_env(runner="pipe"))
        iface.process = proc
        try:
            iface.serve(policy, timeout=timeout)
            out, err = proc.communicate(timeout=max(1.0, timeout - (time.monotonic() - t0)))
        except BaseException:
            process.kill(proc)
            proc.communicate()
            raise
    err = err.decode(errors="replace")
    if proc.returncode != 0:
        raise CompileError(f"{os.path.basename(cmd[0])} with the plugin over pipes failed "
                           f"(exit status {proc.returncode}): {err[-1500:]}")
    return Compiled(cmd, None, None, process.cpu_seconds(proc) or 0.0,
                    time.monotonic() - t0, err)


def compile_with_plugin(cmd, spec, *, plugin, timeout, record=False):
    """Runs ``cmd`` (a clang command line) with the plugin deciding by
    ``spec``; returns (the :class:`mlbridge.toolchain.Compiled`, the loops
    seen -- only for the replay policy, else []). Raises CompileError
    when the compiler fails or the plugin warns (a model error, an
    invalid partition: the loop was left alone, so the result would not
    be the policy's)."""
    from ...toolchain import CompileError, compile
    kind = spec["kind"]
    cmd = _with_plugin([os.fspath(c) for c in cmd], plugin)
    if kind in ("builtin", "onnx"):
        if kind == "builtin":
            res = compile(cmd, measure_text=False, timeout=timeout, env=_env())
        else:
            with tempfile.TemporaryDirectory(prefix="mlbridge-ld-") as tmp:
                model = os.path.join(tmp, "model.onnx")
                with open(model, "wb") as f:
                    f.write(spec["model"])
                res = compile(cmd, measure_text=False, timeout=timeout,
                              env=_env(runner="onnx", model=model))
        loops = []
    else:
        if kind == "replay":
            policy = Replay({int(k): v for k, v in spec["partitions"].items()})
        elif kind == "graph":
            policy = GraphPolicy.from_dict(spec["policy"])
        elif kind == "random":
            policy = RandomPolicy(spec.get("seed", 0))
        else:
            raise ValueError(f"unknown policy kind {kind!r}")
        res = _served(cmd, policy, timeout)
        loops = policy.made() if isinstance(policy, Replay) else []
    if "mlbridge-loop-distribution" in res.stderr and "warning" in res.stderr:
        raise CompileError(f"the plugin warned: {res.stderr[-1500:]}")
    return res, loops
