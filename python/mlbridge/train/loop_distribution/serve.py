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

from typing import Dict, List, Optional

import numpy as np

from .partitions import decisions, edges_of, format_partition, parse
from .policy import MAX_NODES, GraphPolicy

__all__ = ["Replay", "compile_with_plugin"]


class Replay:
    """A policy over pipes answering each request with an action.
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
            return moves[int(np.asarray(obs["placed"]).sum())][0]
        cand = int(np.argmax(np.asarray(obs["candidate"]).reshape(-1)))
        merge = next(m for node, m in moves if node == cand)
        return int(merge)

    def made(self) -> List[dict]:
        """The loops seen, in loop_id order, with the partition each got."""
        out = []
        for lid in sorted(self.loops):
            rec = dict(self.loops[lid], loop_id=lid)
            rec["partition"] = format_partition(self.want.get(lid, [list(range(len(
                rec["features"])))]))
            out.append(rec)
        return out


def compile_with_plugin(cmd, spec, *, plugin, timeout, record=False):
    """Runs ``cmd`` (a clang command line) with the plugin deciding by
    ``spec``; returns (the :class:`mlbridge.toolchain.Compiled`, the loops
    seen -- only for Python policies, else [])."""
    from ...llvm.plugins import loop_distribution as ld
    from ...toolchain import compile
    kind = spec["kind"]
    if kind == "builtin":
        return compile(ld.plugin_command(cmd, plugin), measure_text=False,
                       timeout=timeout), []
    if kind == "onnx":
        import os
        import tempfile
        with tempfile.NamedTemporaryFile(suffix=".onnx", delete=False) as f:
            f.write(spec["model"])
        try:
            return compile(ld.plugin_command(cmd, plugin, model=f.name), measure_text=False,
                           timeout=timeout), []
        finally:
            os.unlink(f.name)
    if kind == "replay":
        policy = Replay({int(k): v for k, v in spec["partitions"].items()})
    elif kind == "graph":
        policy = GraphPolicy.from_dict(spec["policy"])
    elif kind == "random":
        policy = ld.RandomPolicy(seed=spec.get("seed", 0))
    else:
        raise ValueError(f"unknown policy kind {kind!r}")
    res = ld.compile_served(cmd, policy, plugin=plugin, timeout=timeout)
    return res, (policy.made() if isinstance(policy, Replay) else [])
