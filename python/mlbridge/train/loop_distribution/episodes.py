"""The two agents' walk over one loop's graph, in Python: the observations
the plugin sends at each step (for imitation), and the greedy walk of a
:class:`~.policy.GraphPolicy` (the partition the deployed model makes).

A loop is a :class:`Graph` (``n`` nodes, features ``[n, F]``, adjacency
``[n, n]``). A walk places one node per step: *select* among the eligible
nodes (unplaced, every predecessor placed), then, from the second node on,
*merge* (0: into the current loop, 1: start a new loop). Padded to
``MAX_NODES`` and masked as the plugin does (Protocol.h): at a merge step
``eligible`` is ``[1, 1, 0, ...]`` and ``candidate`` the node just
selected, not yet in ``current``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

from .partitions import Partition, correct_choices, edges_of
from .policy import EMBEDDING_DIM, MAX_NODES

__all__ = ["Graph", "Step", "imitation_steps", "walk"]


@dataclass
class Graph:
    features: np.ndarray    # [n, F]
    adjacency: np.ndarray   # [n, n]
    embeddings: Optional[np.ndarray] = None   # [n, 300]: IR2Vec, if recorded

    @property
    def n(self) -> int:
        return int(self.features.shape[0])

    @property
    def edges(self):
        return edges_of(self.adjacency)

    def padded(self):
        """(features, adjacency, embeddings) padded to MAX_NODES (embeddings
        0 when not recorded)."""
        x = np.zeros((MAX_NODES, self.features.shape[1]), np.float32)
        a = np.zeros((MAX_NODES, MAX_NODES), np.float32)
        e = np.zeros((MAX_NODES, EMBEDDING_DIM), np.float32)
        x[: self.n] = self.features
        a[: self.n, : self.n] = self.adjacency
        if self.embeddings is not None:
            e[: self.n] = self.embeddings
        return x, a, e

    def eligible(self, placed: Sequence[int]) -> np.ndarray:
        done = set(placed)
        m = np.zeros(MAX_NODES, np.float32)
        for j in range(self.n):
            if j not in done and all(i in done for i in range(self.n)
                                     if self.adjacency[i][j] and i != j):
                m[j] = 1.0
        return m


#: ``eligible`` of a merge step: both actions legal.
MERGE_ELIGIBLE = np.zeros(MAX_NODES, np.float32)
MERGE_ELIGIBLE[:2] = 1.0


def _mask(nodes) -> np.ndarray:
    m = np.zeros(MAX_NODES, np.float32)
    m[list(nodes)] = 1.0
    return m


@dataclass
class Step:
    """One observation: ``eligible``, ``current`` (the current loop's nodes),
    ``candidate`` (one-hot; zero at a select step) and the labels: ``ok``
    (select: the nodes that keep to the target partition) or ``merge``."""
    graph_index: int
    eligible: np.ndarray
    current: np.ndarray
    candidate: np.ndarray
    ok: np.ndarray = None
    merge: int = -1


def imitation_steps(graph: Graph, parts: Partition, index: int) -> List[Step]:
    """The observations of a walk that builds ``parts``, labelled."""
    steps, placed, current, part = [], [], [], 0
    edges = graph.edges
    for _ in range(graph.n):
        ok, merge = correct_choices(parts, edges, placed, part)
        elig = graph.eligible(placed)
        steps.append(Step(index, elig, _mask(current), np.zeros(MAX_NODES, np.float32),
                          ok=_mask(ok)))
        x = min(ok)
        if placed:
            steps.append(Step(index, MERGE_ELIGIBLE, _mask(current), _mask([x]), merge=merge))
            if merge:
                part += 1
                current = []
        placed.append(x)
        current.append(x)
    return steps


def walk(policy, graph: Graph) -> Partition:
    """The ordered partition the policy's greedy walk makes of ``graph``."""
    x, a, e = graph.padded()
    parts: Partition = []
    placed: List[int] = []
    zero = np.zeros(MAX_NODES, np.float32)
    for _ in range(graph.n):
        elig = graph.eligible(placed)
        cur = _mask(parts[-1]) if parts else zero
        sel, _ = policy.scores(x, a, elig, cur, zero, e)
        v = int(np.argmax(sel))
        if not parts:
            parts.append([v])
        else:
            _, merge = policy.scores(x, a, MERGE_ELIGIBLE, cur, _mask([v]), e)
            if int(np.argmax(merge)) == 1:
                parts.append([v])
            else:
                parts[-1].append(v)
        placed.append(v)
    return parts
