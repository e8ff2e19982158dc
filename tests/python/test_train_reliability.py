"""Training never mistakes a failure for a result (issue 23, items 2 and 9):

* a validation candidate whose compile of a module failed (timeout, crash,
  lost worker) is rejected with the reason -- the module's -Oz size never
  stands in for its unknown size;
* a damaged rollout-cache entry (empty, truncated, a flipped byte) is
  detected, named in a warning and recomputed, and writers sharing a cache
  folder never write the same temporary file.

No compiler and no Ray here: the pool is a stand-in that returns what a
:class:`~mlbridge.train.cluster.WorkerPool` returns.
"""

import logging
import os

import numpy as np
import pytest

from mlbridge.train.cache import RolloutCache
from mlbridge.train.cluster import TaskFailed
from mlbridge.train.inliner import MODEL_FEATURES, InlinePolicy
from mlbridge.train.inliner.policy import NUM_CHANNELS
from mlbridge.train.inliner.trainer import _Module, _Run, evaluate_policy
from mlbridge.train.selection import best, sweep
from mlbridge.train.phase_order.trainer import select_threshold
from mlbridge.train.results import TrainingError


class FakePool:
    """Answers each task with ``answer(task)`` (a dict or a TaskFailed)."""

    def __init__(self, answer):
        self.answer = answer
        self.tasks = []

    def map(self, tasks, progress=None):
        self.tasks += tasks
        out = []
        for t in tasks:
            out.append(self.answer(t))
            if progress:
                progress()
        return out


def _module(tmp_path, key, default_text, n=4):
    """A module whose LLVM trajectory has n requests, none inlined."""
    ir = tmp_path / f"{key}.bc"
    ir.write_bytes(key.encode() * 8)
    m = _Module(key, ir, "lib")
    m.default_text = default_text
    m.X = np.ones((n, len(MODEL_FEATURES)))
    m.defaults = np.zeros(n, dtype=np.int64)
    return m


def _policy(bias):
    """A network that inlines everywhere (bias > 0) or nowhere (bias < 0)."""
    nf2 = NUM_CHANNELS
    return InlinePolicy(np.zeros((1, nf2)), np.zeros(1), np.zeros(1), bias, np.zeros(nf2),
                        np.ones(nf2), meta={"bias": bias})


def _validate(run, candidates, modules):
    measured = sweep(candidates, lambda p: evaluate_policy(run, p, modules, "validation"))
    return measured, best(measured)


@pytest.mark.parametrize("failure", ["timed out after 900 s (3 attempts)",
                                     "worker died (3 attempts)",
                                     "clang-19 crashed: killed by signal 11"])
def test_a_candidate_with_a_failed_validation_compile_is_rejected(tmp_path, failure):
    a, b = _module(tmp_path, "a", 1000), _module(tmp_path, "b", 500)

    def answer(task):  # the candidate makes everything smaller, but fails on b
        if task["key"] == "b":
            return TaskFailed("b", failure, 3)
        return {"key": task["key"], "text": 900, "seconds": 0.1}

    run = _Run(FakePool(answer))
    measured, winner = _validate(run, [("inline", _policy(1.0))], [a, b])
    assert winner is None, "a candidate with a failed compile must not be chosen"
    (cand,) = measured
    assert cand.total is None
    assert "b: " + failure in cand.rejected and "1 of 2 compiles failed" in cand.rejected


def test_a_valid_candidate_still_wins_over_a_rejected_one(tmp_path):
    a = _module(tmp_path, "a", 1000)

    def answer(task):
        if task["policy"]["meta"]["bias"] == 1.0:
            return TaskFailed("a", "timed out", 3)
        return {"key": "a", "text": 990, "seconds": 0.1}

    run = _Run(FakePool(answer))
    measured, winner = _validate(run, [("b2", _policy(2.0)), ("b1", _policy(1.0))], [a])
    assert [c.rejected is None for c in measured] == [True, False]
    assert winner.label == "b2" and winner.total == 990


def test_a_policy_that_keeps_llvms_decisions_is_not_compiled(tmp_path):
    """On LLVM's trajectory it makes LLVM's decisions, so its object is the
    -Oz object: its size is known without a compile."""
    a = _module(tmp_path, "a", 1000)
    pool = FakePool(lambda t: {"key": t["key"], "text": 1, "seconds": 0.1})
    assert evaluate_policy(_Run(pool), _policy(-1.0), [a], "v") == (1000, 0)
    assert pool.tasks == []
    assert evaluate_policy(_Run(pool), _policy(1.0), [a], "v") == (1, 1)


class _Mod:
    def __init__(self, path, name):
        self.path, self.name, self.library = path, name, "lib"

    def ir(self, build_dir=None):
        return self.path


def test_phase_order_threshold_with_a_failed_compile_is_rejected_not_oz(tmp_path):
    from mlbridge.llvm.plugins import NUM_OBSERVATIONS
    from mlbridge.train.phase_order import NUM_PASS_ACTIONS, PhasePolicy
    mods = []
    for name in ("x", "y"):
        p = tmp_path / f"{name}.bc"
        p.write_bytes(name.encode())
        mods.append(_Mod(p, name))

    def answer(task):
        if task["model"] is None:
            return {"text": 100, "seconds": 0.0}
        if task["key"] == "y":
            return TaskFailed("y", "timed out", 3)
        return {"text": 50, "seconds": 0.0}   # looks better than -Oz where it compiled

    rng = np.random.default_rng(0)
    policy = PhasePolicy(rng.normal(size=(4, NUM_OBSERVATIONS)), np.zeros(4),
                         rng.normal(size=(NUM_PASS_ACTIONS, 4)),
                         np.zeros(NUM_PASS_ACTIONS))
    logged = []
    thr, rows = select_threshold(FakePool(answer), mods, policy, plugin="p.so",
                                 candidates=[0.1], log=logged.append)
    assert thr == float("inf")
    assert rows[1]["threshold"] == 0.1 and "y: timed out" in rows[1]["rejected"]
    assert "text" not in rows[1] and logged == [rows[1]]


def test_phase_order_baseline_failure_stops_the_run(tmp_path):
    p = tmp_path / "x.bc"
    p.write_bytes(b"x")
    pool = FakePool(lambda task: TaskFailed("x", "cannot run clang-19", 1))
    with pytest.raises(TrainingError, match="plain -Oz.*x: cannot run clang-19"):
        select_threshold(pool, [_Mod(p, "x")], None, plugin="p.so", candidates=[0.1])


# ---- the rollout cache ----------------------------------------------------------------


def _entry():
    return {"text": np.int64(1234), "X": np.arange(12.0).reshape(3, 4),
            "flip_index": np.array([0, 2]), "flip_text": np.array([1200, 1300])}


def _damage(path, how):
    data = path.read_bytes()
    if how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    else:
        pos = int(how)
        b = bytearray(data)
        b[pos % len(b)] ^= 0x40
        path.write_bytes(bytes(b))


@pytest.mark.parametrize("how", ["empty", "truncated"] + [str(p) for p in range(0, 1400, 97)])
def test_a_damaged_cache_entry_is_named_and_recomputed(tmp_path, caplog, how):
    cache = RolloutCache(tmp_path)
    cache.save("mod-abc", **_entry())
    path = tmp_path / "mod-abc.rollout.npz"
    _damage(path, how)
    with caplog.at_level(logging.WARNING, logger="mlbridge.train"):
        got = cache.load("mod-abc")
    if got is None:   # detected: named, removed, reported missing
        assert str(path) in caplog.text and "damaged" in caplog.text
        assert not path.exists()
        cache.save("mod-abc", **_entry())   # the recomputed entry replaces it
        got = cache.load("mod-abc")
    # Either way, what is returned is the entry as written (a flipped byte
    # that slips through can only be in a part of the file no data depends on).
    for k, v in _entry().items():
        np.testing.assert_array_equal(got[k], v)


def test_writers_sharing_a_cache_never_use_the_same_temporary_file(tmp_path, monkeypatch):
    renamed = []
    real_replace = os.replace

    def spy(src, dst):
        renamed.append((os.fspath(src), os.fspath(dst)))
        real_replace(src, dst)
    monkeypatch.setattr(os, "replace", spy)
    RolloutCache(tmp_path).save("same", **_entry())   # two runs, the same module
    RolloutCache(tmp_path).save("same", **_entry())
    (src1, dst1), (src2, dst2) = renamed
    assert dst1 == dst2 == str(tmp_path / "same.rollout.npz")
    assert src1 != src2 and os.path.dirname(src1) == str(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["same.rollout.npz"]   # no temporary left


def test_default_rollouts_round_trip_and_an_entry_of_another_layout_is_recomputed(
        tmp_path, monkeypatch, caplog):
    import mlbridge.train.inliner.trainer as trainer

    class Tool:
        tag = "0123abcd"
    monkeypatch.setattr(trainer, "toolchain", lambda: Tool)
    rollouts = trainer._DefaultRollouts(tmp_path / "cache", embeddings=False)
    m = _module(tmp_path, "a", 777)
    m.defaults = np.array([1, 0, 1, 1])
    rollouts.save(m)
    fresh = _module(tmp_path, "a", None)
    assert rollouts.load(fresh)
    assert fresh.default_text == 777
    np.testing.assert_array_equal(fresh.defaults, m.defaults)
    np.testing.assert_array_equal(fresh.X, m.X)
    rollouts.cache.save(rollouts._key(m), text=np.int64(1), X=np.zeros((2, 3)))
    with caplog.at_level(logging.WARNING, logger="mlbridge.train"):
        assert not rollouts.load(_module(tmp_path, "a", None))
    assert "another layout" in caplog.text
