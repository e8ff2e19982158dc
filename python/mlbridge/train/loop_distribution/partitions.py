"""Ordered partitions of a loop's dependence graph: the search space of the
loop-distribution oracle.

A loop's graph has ``n`` nodes (pi-blocks already collapsed, so it is a
DAG) and edges ``(src, dst)``: ``src`` must run no later than ``dst``. An
*ordered partition* is a list of parts (lists of nodes), the loops of the
distribution in program order; it is valid when every node is in exactly
one part and no edge goes from a later part to an earlier one. Written as
text, parts are separated by ``|`` and nodes by ``,`` (``"0,1|2"``), the
notation of the plugin's replay policy.

Every valid ordered partition is a topological order cut into contiguous
pieces, so :func:`enumerate_partitions` walks topological orders and cut
points, fewest loops first, up to a bound.
"""

from __future__ import annotations

import itertools
import random
from typing import Iterable, List, Optional, Sequence, Tuple

__all__ = ["Partition", "parse", "format_partition", "canonical", "is_valid",
           "topological_orders", "enumerate_partitions", "decisions", "correct_choices",
           "edges_of"]

Partition = List[List[int]]


def parse(text: str) -> Partition:
    """``"0,1|2"`` -> ``[[0, 1], [2]]``."""
    try:
        return [[int(x) for x in part.split(",")] for part in text.split("|")]
    except ValueError:
        raise ValueError(f"not an ordered partition: {text!r} (e.g. '0,1|2')") from None


def format_partition(parts: Partition) -> str:
    return "|".join(",".join(str(x) for x in part) for part in parts)


def canonical(parts: Partition) -> Tuple[Tuple[int, ...], ...]:
    """The partition with each part's nodes sorted (the order inside a
    loop is the original program order, whatever order they were named in)."""
    return tuple(tuple(sorted(p)) for p in parts)


def edges_of(adjacency) -> List[Tuple[int, int]]:
    """Edges ``(i, j)`` of an adjacency matrix (``adjacency[i][j]`` nonzero:
    ``i`` before ``j``), self loops left out."""
    return [(i, j) for i, row in enumerate(adjacency) for j, v in enumerate(row)
            if v and i != j]


def is_valid(parts: Partition, n: int, edges: Iterable[Tuple[int, int]]) -> bool:
    """Every node 0..n-1 in exactly one part, no part empty, and no edge
    from a later part to an earlier one."""
    where = {}
    for k, part in enumerate(parts):
        if not part:
            return False
        for x in part:
            if x in where or not 0 <= x < n:
                return False
            where[x] = k
    return len(where) == n and all(where[s] <= where[d] for s, d in edges)


def _preds(n, edges):
    preds = [set() for _ in range(n)]
    for s, d in edges:
        if s != d:
            preds[d].add(s)
    return preds


def topological_orders(n: int, edges: Iterable[Tuple[int, int]], *, limit: int = 64,
                       seed: int = 0) -> List[Tuple[int, ...]]:
    """Up to ``limit`` distinct topological orders: all of them when there
    are few, else the smallest-index-first order and random ones
    (deterministic in ``seed``). Empty when the graph has a cycle."""
    preds = _preds(n, list(edges))
    out: List[Tuple[int, ...]] = []

    def walk(order, placed):
        if len(out) >= limit:
            return
        if len(order) == n:
            out.append(tuple(order))
            return
        for x in range(n):
            if x not in placed and preds[x] <= placed:
                order.append(x)
                placed.add(x)
                walk(order, placed)
                placed.discard(x)
                order.pop()

    walk([], set())
    if len(out) < limit or n <= 1:
        return out
    # Many orders: the exhaustive walk only saw those sharing a long prefix;
    # add random ones so the cut points see other neighbourhoods.
    rng = random.Random(seed)
    seen = set(out[: limit // 2])
    orders = list(out[: limit // 2])
    for _ in range(limit * 8):
        if len(orders) >= limit:
            break
        placed, order = set(), []
        while len(order) < n:
            x = rng.choice([y for y in range(n) if y not in placed and preds[y] <= placed])
            order.append(x)
            placed.add(x)
        if tuple(order) not in seen:
            seen.add(tuple(order))
            orders.append(tuple(order))
    return orders


def enumerate_partitions(n: int, edges: Iterable[Tuple[int, int]], *, limit: int = 12,
                         max_orders: int = 64, seed: int = 0) -> List[Partition]:
    """Distinct valid ordered partitions, at most ``limit``: the single loop
    (no distribution) first, then by number of loops (fewest first), each
    from a topological order cut at some points. Parts are sorted inside."""
    edges = list(edges)
    if n <= 0:
        return []
    found = {((tuple(range(n))),): None}
    orders = topological_orders(n, edges, limit=max_orders, seed=seed)
    for loops in range(2, n + 1):
        for order in orders:
            for cuts in itertools.combinations(range(1, n), loops - 1):
                bounds = (0, *cuts, n)
                parts = canonical([order[a:b] for a, b in zip(bounds, bounds[1:])])
                if parts not in found:
                    found[parts] = None
                    if len(found) >= limit:
                        return [list(map(list, p)) for p in found]
    return [list(map(list, p)) for p in found]


def decisions(parts: Partition, edges: Iterable[Tuple[int, int]]
              ) -> List[Tuple[int, Optional[int]]]:
    """The two agents' moves that build ``parts``: ``(node, merge)`` per
    step, in a topological walk part by part (inside a part, smallest
    eligible node first); ``merge`` is None for the first node, 0 to join
    the current loop, 1 to start a new one. Raises ValueError when the
    partition is not valid."""
    n = sum(len(p) for p in parts)
    edges = list(edges)
    if not is_valid(parts, n, edges):
        raise ValueError(f"invalid ordered partition {format_partition(parts)}")
    preds = _preds(n, edges)
    placed, out = set(), []
    for k, part in enumerate(parts):
        todo = set(part)
        first = True
        while todo:
            x = min(y for y in todo if preds[y] <= placed)
            out.append((x, None if not out else (1 if first else 0)))
            first = False
            todo.discard(x)
            placed.add(x)
    return out


def correct_choices(parts: Partition, edges, placed: Sequence[int], current: int
                    ) -> Tuple[List[int], int]:
    """For imitation: after ``placed`` (in order; the current loop is part
    ``current`` of ``parts``), the eligible nodes that keep to ``parts``
    and the merge decision that follows choosing any of them."""
    n = sum(len(p) for p in parts)
    preds = _preds(n, list(edges))
    done = set(placed)
    where = {x: k for k, p in enumerate(parts) for x in p}
    left_here = [x for x in parts[current] if x not in done] if current < len(parts) else []
    target = current if left_here else current + 1
    ok = [x for x in parts[target] if x not in done and preds[x] <= done]
    assert all(where[x] == target for x in ok)
    return ok, (0 if target == current else 1)
