"""The Python side of ``MLBridgeLoopDistribution.so`` (docs/loop-distribution.md).

The plugin asks a model, for each innermost loop it handles, for an ordered
partition of the loop's nodes through two agents over one channel
(``integrations/llvm/loop_distribution/Protocol.h`` is the contract; the
constants below are read from its ``LoopDistributionProtocol.def``): ``select`` picks the next node among the
eligible ones, ``merge`` puts it into the current loop (0) or starts a new
loop (1). This module serves the plugin over pipes with a Python policy::

    from mlbridge.llvm.plugins import loop_distribution as ld

    run = ld.compile_with_policy(["clang-19", "-O3", "-c", "k.c", "-o", "k.o"],
                                 ld.RandomPolicy(seed=0))
    run.decisions      # one Decision per model call
    run.loops          # the plugin's log: one dict per innermost loop

A policy is a callable ``Observation -> action`` (an int: a node id for
``select``, 0/1 for ``merge``) or ``-> scores`` (float32 [16]; the plugin
takes the argmax over the legal actions). :class:`ReplayPolicy` applies given
partitions ("0,1|2"), :class:`RandomPolicy` draws valid partitions (seeded)
for fuzzing.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from ...errors import MLBridgeError
from ...kit.actions import masked_argmax
from ...toolchain import ModelServer, compile as compile_cmd
from ._plugins import PluginInfo, PluginNotFound, find_plugins, tool_env
from ._protocol import load as load_protocol

#: The protocol, from LoopDistributionProtocol.def (the file the plugin
#: includes; -mlbridge-ld-describe prints the same).
PROTOCOL = load_protocol("loop_distribution", "LoopDistributionProtocol.def")
#: Fixed number of node slots of every tensor.
MAX_NODES = PROTOCOL.constants["MaxNodes"]
#: IR2Vec's vector dimension (``node_embeddings``).
EMBEDDING_DIM = PROTOCOL.constants["EmbeddingDim"]
#: Columns of ``node_features`` and ``loop_features`` (Protocol.h says what
#: each counts).
NODE_FEATURES = tuple(PROTOCOL.lists["NodeFeature"])
LOOP_FEATURES = tuple(PROTOCOL.lists["LoopFeature"])
#: The features of every request: name -> (dtype, shape).
FEATURES = PROTOCOL.feature_map()
#: The advice: name, dtype, shape.
ADVICE = (PROTOCOL.advice.name, PROTOCOL.advice.dtype, PROTOCOL.advice.shape)
AGENTS = tuple(PROTOCOL.lists["Agent"])
SELECT, MERGE = (AGENTS.index(a) for a in ("select", "merge"))
MERGE_INTO_CURRENT, START_NEW_LOOP = (PROTOCOL.lists["MergeAction"].index(a)
                                      for a in ("merge_into_current", "start_new_loop"))
#: The plugin's environment variables start with this (its options with
#: -mlbridge-ld-).
ENV_PREFIX = "MLBRIDGE_LD_"


class InvalidAction(MLBridgeError):
    """A policy chose an action that is not legal for the request."""


@dataclass
class Observation:
    """One request of the plugin, as numpy arrays of the protocol's shapes.
    ``context``: "<module>:<function>:<loop>" of the loop asked about."""

    features: Dict[str, np.ndarray]
    context: str = ""

    @classmethod
    def of(cls, obs) -> "Observation":
        arrays = {name: np.asarray(obs[name], dtype=dt).reshape(shape)
                  for name, (dt, shape) in FEATURES.items()}
        return cls(arrays, getattr(obs, "context", "") or "")

    def __getitem__(self, name: str) -> np.ndarray:
        return self.features[name]

    @property
    def agent(self) -> int:
        return int(self.features["agent"][0])

    @property
    def loop_id(self) -> int:
        return int(self.features["loop_id"][0])

    @property
    def legal(self) -> List[int]:
        """The legal actions of this request."""
        return [int(i) for i in np.flatnonzero(self.features["eligible"] > 0.5)]

    @property
    def loop(self) -> str:
        """"<function>:<loop>" (the keys of -mlbridge-ld-partition)."""
        parts = self.context.rsplit(":", 2)
        return ":".join(parts[-2:]) if len(parts) >= 2 else self.context


@dataclass
class Decision:
    loop_id: int
    loop: str
    agent: str
    action: int


def scores_for(action, obs: Observation) -> np.ndarray:
    """The advice for a policy's answer: scores pass through; an action
    becomes a one-hot vector after checking that it is legal."""
    arr = np.asarray(action)
    if arr.size == MAX_NODES and arr.dtype.kind == "f":
        return arr.astype(np.float32).reshape(MAX_NODES)
    if arr.size != 1 or arr.dtype.kind not in "iub":
        raise InvalidAction(f"a policy answers an int action or {MAX_NODES} float scores, "
                            f"not {action!r}")
    a = int(arr.reshape(-1)[0])
    if a not in obs.legal:
        raise InvalidAction(f"the {AGENTS[obs.agent]} agent chose {a} for loop "
                            f"{obs.loop or obs.loop_id}; legal: {obs.legal}")
    s = np.zeros(MAX_NODES, np.float32)
    s[a] = 1.0
    return s


def parse_partition(text: str) -> List[List[int]]:
    """"0,1|2" -> [[0, 1], [2]] (syntax only)."""
    if not re.fullmatch(r"\s*\d+(\s*,\s*\d+)*(\s*\|\s*\d+(\s*,\s*\d+)*)*\s*", text):
        raise ValueError(f"not an ordered partition like '0,1|2': {text!r}")
    return [[int(n) for n in part.split(",")] for part in text.replace(" ", "").split("|")]


class ReplayPolicy:
    """Answers so that each loop gets the given ordered partition.

    ``partitions``: one partition for every loop ("0,1|2"), or a mapping
    from "<function>:<loop>" or a loop id (int) to a partition; "*" is the
    default. A loop with no entry is kept whole. Raises
    :class:`InvalidAction` when a partition cannot be walked (a node listed
    before one it depends on, a node missing or unknown)."""

    def __init__(self, partitions: Union[str, Mapping[Union[str, int], str]]):
        if isinstance(partitions, str):
            partitions = {"*": partitions}
        self.partitions = {k: parse_partition(v) for k, v in partitions.items()}

    def _plan(self, obs: Observation) -> Optional[List[List[int]]]:
        for key in (obs.loop, obs.loop_id, "*"):
            if key in self.partitions:
                return self.partitions[key]
        return None

    def __call__(self, obs: Observation) -> int:
        plan = self._plan(obs)
        if plan is None:  # keep the loop whole
            return MERGE_INTO_CURRENT if obs.agent == MERGE else obs.legal[0]
        order = [n for part in plan for n in part]
        placed = set(np.flatnonzero(obs["placed"] > 0.5).tolist())
        if obs.agent == MERGE:
            # The plugin takes forced choices without asking: check that the
            # walk so far is the plan's.
            node = int(np.flatnonzero(obs["candidate"] > 0.5)[0])
            if placed != set(order[:len(placed)]) or order[len(placed):][:1] != [node]:
                raise InvalidAction(f"partition {plan} for {obs.loop}: node {node} had to "
                                    f"be placed after {sorted(placed)} (the dependences "
                                    f"leave no other choice)")
            part = next(i for i, p in enumerate(plan) if node in p)
            return START_NEW_LOOP if plan[part][0] == node and part > 0 else MERGE_INTO_CURRENT
        if placed != set(order[:len(placed)]):
            raise InvalidAction(f"partition {plan} for {obs.loop}: the dependences forced "
                                f"{sorted(placed)} first")
        for n in order[len(placed):len(placed) + 1]:
            if n not in obs.legal:
                raise InvalidAction(f"partition {plan} for {obs.loop}: node {n} cannot "
                                    f"be placed now (eligible: {obs.legal})")
            return n
        raise InvalidAction(f"partition {plan} for {obs.loop} lists too few nodes")


class RandomPolicy:
    """Uniformly random legal actions (so random valid partitions), from a
    seeded generator: the same seed and compile give the same partitions."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def __call__(self, obs: Observation) -> int:
        return int(self.rng.choice(obs.legal))


@dataclass
class LoopDistributionRun:
    """A compile served by :func:`compile_with_policy`: the compile
    (:class:`mlbridge.toolchain.Compiled`), every decision, and the plugin's
    log (one dict per innermost loop: function, loop, nodes, partition,
    result, reason)."""

    compiled: object
    decisions: List[Decision] = field(default_factory=list)
    loops: List[dict] = field(default_factory=list)

    def partitions(self) -> Dict[str, str]:
        """"<function>:<loop>" -> partition of the loops that got decisions."""
        return {f"{r['function']}:{r['loop']}": r["partition"] for r in self.loops
                if r["partition"]}


def plugin(plugins: Optional[PluginInfo] = None) -> Path:
    """MLBridgeLoopDistribution.so of the build (PluginNotFound if absent)."""
    info = plugins or find_plugins()
    if info.loop_distribution is None or not Path(info.loop_distribution).is_file():
        raise PluginNotFound(f"the build has no MLBridgeLoopDistribution.so ({info.source})")
    return Path(info.loop_distribution)


def plugin_settings(*, runner: Optional[str] = None, channel: Optional[str] = None,
                    model: Optional[str] = None, partition: Optional[str] = None,
                    log: Optional[Union[str, os.PathLike]] = None,
                    timeout_ms: Optional[int] = None) -> Dict[str, str]:
    """The plugin's settings as environment variables (clang passes no -mllvm
    option to a plugin loaded with -fpass-plugin)."""
    env = {}
    for key, value in (("RUNNER", runner), ("CHANNEL", channel), ("MODEL", model),
                       ("PARTITION", partition), ("LOG", log), ("TIMEOUT_MS", timeout_ms)):
        if value is not None:
            env[ENV_PREFIX + key] = str(value)
    return env


def read_log(path: Union[str, os.PathLike]) -> List[dict]:
    """The plugin's log lines (one JSON object per innermost loop)."""
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def compile_with_policy(command: Sequence, policy: Callable[[Observation], object], *,
                        plugins: Optional[PluginInfo] = None, timeout: float = 300.0,
                        env: Optional[Dict[str, str]] = None) -> LoopDistributionRun:
    """Runs compiler ``command`` (clang with -fpass-plugin=<plugin> or opt with
    -load-pass-plugin=<plugin>; see :func:`plugin`) and answers every request
    of the plugin over a pipe with ``policy``. Raises
    :class:`mlbridge.toolchain.CompileError` when the compile fails and the
    policy's error (e.g. :class:`InvalidAction`) when it fails."""
    info = plugins or find_plugins()
    decisions: List[Decision] = []
    errors: List[BaseException] = []

    def answer(raw):
        # After a policy error every answer is NaN: the plugin reports it
        # and leaves the loops alone, so the compile ends at once instead of
        # waiting for an answer that never comes.
        if errors:
            return np.full(MAX_NODES, np.nan, np.float32)
        try:
            obs = Observation.of(raw)
            advice = scores_for(policy(obs), obs)
        except Exception as exc:  # noqa: BLE001 - raised after the compile
            errors.append(exc)
            return np.full(MAX_NODES, np.nan, np.float32)
        decisions.append(Decision(obs.loop_id, obs.loop, AGENTS[obs.agent],
                                  masked_argmax(advice, obs["eligible"] > 0.5)))
        return advice

    with tempfile.TemporaryDirectory(prefix="mlbridge-ld-") as tmp:
        log = Path(tmp) / "loops.jsonl"
        with ModelServer(answer, timeout=timeout) as server:
            run_env = tool_env(info, dict(os.environ if env is None else env))
            run_env.update(plugin_settings(runner="pipe", channel=server.endpoint, log=log,
                                           timeout_ms=int(timeout * 1000)))
            compiled = compile_cmd(list(command), env=run_env, timeout=timeout,
                                   measure_text=False)
        if errors:
            raise errors[0]
        return LoopDistributionRun(compiled, decisions, read_log(log))
