"""The learning side of loop distribution without the plugin: the oracle's
partition enumeration, the agents' walks, the network's ONNX export."""

import itertools
import json

import numpy as np
import pytest

from mlbridge.train.loop_distribution.episodes import Graph, imitation_steps, walk
from mlbridge.train.loop_distribution.partitions import (
    decisions, enumerate_partitions, format_partition, is_valid, parse)
from mlbridge.train.loop_distribution.policy import EMBEDDING_DIM, MAX_NODES, GraphPolicy, fit


def _dag(rng, n, p=0.35):
    a = np.triu((rng.random((n, n)) < p).astype(np.float32), 1)
    perm = rng.permutation(n)          # node ids not in topological order
    return a[np.ix_(perm, perm)]


def _all_ordered_partitions(n):
    """Every ordered set partition of range(n) (brute force)."""
    for labels in itertools.product(range(n), repeat=n):
        k = max(labels) + 1
        if set(labels) == set(range(k)):
            yield [[x for x in range(n) if labels[x] == part] for part in range(k)]


def test_parse_and_format():
    assert parse("0,1|2") == [[0, 1], [2]]
    assert format_partition([[2, 0], [1]]) == "2,0|1"
    with pytest.raises(ValueError, match="not an ordered partition"):
        parse("0,|x")


def test_validity():
    edges = [(0, 1), (1, 2)]
    assert is_valid([[0, 1, 2]], 3, edges)
    assert is_valid([[0], [1], [2]], 3, edges)
    assert not is_valid([[1], [0], [2]], 3, edges)       # edge 0->1 backwards
    assert not is_valid([[0, 1]], 3, edges)              # node 2 missing
    assert not is_valid([[0, 1], [1, 2]], 3, edges)      # node 1 twice
    assert not is_valid([[0, 1, 2], []], 3, edges)       # empty loop


@pytest.mark.parametrize("seed", range(6))
def test_enumeration_is_every_valid_partition(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    g = Graph(np.ones((n, 3), np.float32), _dag(rng, n))
    want = {tuple(map(tuple, map(sorted, p))) for p in _all_ordered_partitions(n)
            if is_valid(p, n, g.edges)}
    got = enumerate_partitions(n, g.edges, limit=10_000)
    assert all(is_valid(p, n, g.edges) for p in got)
    assert len({tuple(map(tuple, p)) for p in got}) == len(got)      # no duplicates
    assert {tuple(map(tuple, p)) for p in got} == want
    assert got[0] == [list(range(n))]                                 # whole loop first
    assert [len(p) for p in got] == sorted(len(p) for p in got)       # fewest loops first


def test_enumeration_bound_and_cycle():
    n = 12
    got = enumerate_partitions(n, [], limit=20)
    assert len(got) == 20 and all(is_valid(p, n, []) for p in got)
    # a cycle has no topological order: only the whole loop is offered
    assert enumerate_partitions(2, [(0, 1), (1, 0)]) == [[[0, 1]]]


@pytest.mark.parametrize("seed", range(4))
def test_decisions_and_imitation_steps_rebuild_the_partition(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    g = Graph(rng.random((n, 4)).astype(np.float32) + 0.1, _dag(rng, n))
    for parts in enumerate_partitions(n, g.edges, limit=30):
        moves = decisions(parts, g.edges)
        rebuilt, placed = [], []
        for node, merge in moves:
            assert g.eligible(placed)[node] == 1.0          # only eligible nodes chosen
            if merge in (None, 1):
                rebuilt.append([])
            rebuilt[-1].append(node)
            placed.append(node)
        assert [sorted(p) for p in rebuilt] == [sorted(p) for p in parts]
        steps = imitation_steps(g, parts, 0)
        assert sum(s.ok is not None for s in steps) == n
        assert sum(s.merge >= 0 for s in steps) == n - 1
        for s in steps:
            if s.ok is not None:   # a select label is a subset of the eligible nodes
                assert s.ok.sum() >= 1 and np.all(s.ok <= s.eligible)
    with pytest.raises(ValueError, match="invalid"):
        decisions([[1], [0]], [(0, 1)])


def _obs(rng, n, merge, F):
    x = np.zeros((MAX_NODES, F), np.float32)
    x[:n] = rng.integers(0, 6, size=(n, F))
    a = np.zeros((MAX_NODES, MAX_NODES), np.float32)
    a[:n, :n] = _dag(rng, n)
    elig, cur, cand = (np.zeros(MAX_NODES, np.float32) for _ in range(3))
    cur[:n] = rng.random(n) < 0.5
    if merge:
        elig[:2] = 1
        cand[int(rng.integers(n))] = 1
    else:
        elig[:n] = rng.random(n) < 0.6
        elig[0] = 1
    return dict(node_features=x, adjacency=a, eligible=elig, current=cur, candidate=cand)


def test_onnx_export_equals_the_python_policy():
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(3)
    pol = GraphPolicy.init(20, hidden=12, seed=2, mu=np.full(20, 1.0),
                           sd=np.full(20, 2.0)).with_bias(-0.7)
    sess = ort.InferenceSession(pol.to_onnx())
    assert [i.shape for i in sess.get_inputs()] == [[16, 20], [16, 16], [16], [16], [16]]
    assert [(o.name, o.shape) for o in sess.get_outputs()] == [("scores", [16])]
    for n in (1, 2, 5, 16):
        for merge in (False, True):
            obs = _obs(rng, n, merge, 20)
            onnx_scores = sess.run(None, obs)[0]
            py = pol(obs)
            assert np.allclose(onnx_scores, py, atol=1e-4)
            legal = np.flatnonzero(obs["eligible"])
            assert int(legal[np.argmax(onnx_scores[legal])]) == \
                int(legal[np.argmax(py[legal])])
            if not merge:   # a node that is not eligible never wins
                assert obs["eligible"][int(np.argmax(py))] == 1


def test_imitation_learns_a_rule():
    """The fit reproduces labels that depend on the graph: loops whose
    first node has feature 1 > 0 are split fully, others kept whole."""
    rng = np.random.default_rng(0)
    graphs, targets, steps = [], [], []
    for i in range(30):
        n = int(rng.integers(2, 5))
        x = rng.normal(size=(n, 5)).astype(np.float32)
        x[:, 0] = 1.0
        x[:, 1] = np.sign(x[0, 1])
        g = Graph(x, _dag(rng, n))
        parts = enumerate_partitions(n, g.edges, limit=1000)
        t = parts[-1] if x[0, 1] > 0 else parts[0]
        graphs.append(g)
        targets.append(t)
        steps += imitation_steps(g, t, i)
    pol, losses = fit(graphs, steps, hidden=12, epochs=150)
    walks = [walk(pol, g) for g in graphs]
    assert all(is_valid(w, g.n, g.edges) for w, g in zip(walks, graphs))
    same = sum(len(w) == len(t) for w, t in zip(walks, targets))
    assert same >= 27, (same, losses)
    # a large negative bias on "new loop" keeps every loop whole
    assert all(len(walk(pol.with_bias(-1e4), g)) == 1 for g in graphs)


def test_onnx_export_with_node_embeddings_equals_the_python_policy():
    """A network that reads node_embeddings takes them as a sixth input,
    and the ONNX model answers what the Python policy answers."""
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(4)
    pol = GraphPolicy.init(20, hidden=12, seed=3, embedding_dim=6,
                           mu_e=np.full(EMBEDDING_DIM, 0.5),
                           sd_e=np.full(EMBEDDING_DIM, 3.0)).with_bias(0.3)
    assert pol.features == 20 and pol.embedding_dim == 6
    sess = ort.InferenceSession(pol.to_onnx())
    assert [i.name for i in sess.get_inputs()][-1] == "node_embeddings"
    assert sess.get_inputs()[-1].shape == [16, EMBEDDING_DIM]
    changed = 0
    for n in (1, 3, 16):
        for merge in (False, True):
            obs = _obs(rng, n, merge, 20)
            emb = np.zeros((16, EMBEDDING_DIM), np.float32)
            emb[:n] = rng.normal(size=(n, EMBEDDING_DIM)) * 4
            obs["node_embeddings"] = emb
            py = pol(obs)
            assert np.allclose(sess.run(None, obs)[0], py, atol=1e-4)
            changed += not np.allclose(py, pol({**obs, "node_embeddings": 0 * emb}))
    assert changed >= 4, "the embeddings change the scores"
    again = GraphPolicy.from_dict(json.loads(json.dumps(pol.to_dict())))
    assert again.embedding_dim == 6 and np.allclose(again(obs), pol(obs))


def test_imitation_learns_a_rule_seen_only_in_the_embeddings():
    """Labels that depend on one embedding dimension (the count features
    are the same for every graph): a network that reads node embeddings
    learns them, one that reads the counts only cannot tell the graphs
    apart (it can guess from the graph's shape alone)."""
    rng = np.random.default_rng(1)
    graphs, targets, steps = [], [], []
    for i in range(30):
        n = int(rng.integers(2, 5))
        x = np.ones((n, 5), np.float32)
        e = rng.normal(size=(n, EMBEDDING_DIM)).astype(np.float32)
        e[:, 7] = 3.0 if i % 2 else -3.0
        g = Graph(x, _dag(rng, n), e)
        parts = enumerate_partitions(n, g.edges, limit=1000)
        t = parts[-1] if i % 2 else parts[0]
        graphs.append(g)
        targets.append(t)
        steps += imitation_steps(g, t, i)
    pol, losses = fit(graphs, steps, hidden=12, epochs=150, embedding_dim=4)
    same = sum(len(walk(pol, g)) == len(t) for g, t in zip(graphs, targets))
    assert same >= 27, (same, losses)
    counts_only, _ = fit(graphs, steps, hidden=12, epochs=150)
    blind = sum(len(walk(counts_only, g)) == len(t) for g, t in zip(graphs, targets))
    assert blind < same, (blind, same)
