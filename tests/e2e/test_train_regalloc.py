"""Register-allocation training (mlbridge.train.regalloc): rewards from the
plugin's score pass, the Python policies over pipes against the plugin's
in-process decisions, and a short training run on Ray (2 workers, 2
iterations) writing its log, curve and model.

Real parts only: C compiled by clang-19, llc-19 with MLBridgeRegAlloc.so
(and LLVM's greedy asking its eviction advisor over pipes), ONNX Runtime in
the plugin, Ray actors as compiler workers.
"""

import json

import numpy as np
import pytest

from conftest import require_llvm_tool

from mlbridge import toolchain
from mlbridge.train.cluster import Workdir
from mlbridge.train.regalloc.allocator import AllocatorPolicy
from mlbridge.train.regalloc.evict import (CANDIDATE, COLUMN_FEATURES, GreedyRule,
                                           LinearEviction, NUM_FEATURES, NUM_PARAMS,
                                           column_matrix)
from mlbridge.train.regalloc.task import alloc_task, evict_task, run_task
from mlbridge.train.regalloc.trainer import Item, _reward, train

# Many values live across a loop with a call in it: more than x86-64's
# registers, so the allocators evict, split and spill.
PRESSURE = r"""
extern int g(int);
int f%(i)d(int *a, int n) {
  int s0 = a[0], s1 = a[1], s2 = a[2], s3 = a[3], s4 = a[4], s5 = a[5], s6 = a[6];
  int s7 = a[7], s8 = a[8], s9 = a[9], s10 = a[10], s11 = a[11], s12 = a[12];
  int s13 = a[13], s14 = a[14], s15 = a[15], s16 = a[16], s17 = a[17];
  for (int i = 0; i < n; ++i) {
    s0 += g(s1 ^ i); s1 *= s2 + %(i)d; s2 -= s3 * s4; s3 ^= s5 + s6; s4 += s7 * s8;
    s5 -= s9 ^ s10; s6 += s11 * s12; s7 ^= s13 - s14; s8 += g(s15 + s16); s9 -= s17;
    s10 += s0 * s1; s11 ^= s2 + s3; s12 -= s4 * s5; s13 += s6 ^ s7; s14 -= s8 + s9;
    s15 ^= s10 * s11; s16 += s12 - s13; s17 -= s14 ^ s15 ^ s16;
  }
  return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8 + s9 + s10 + s11 + s12 + s13 + s14
         + s15 + s16 + s17;
}
int leaf%(i)d(int x) { return x * %(i)d + 1; }
"""


@pytest.fixture(scope="module")
def items(plugins, tmp_path_factory):
    clang = require_llvm_tool("clang-19")
    require_llvm_tool("llc-19")
    d = tmp_path_factory.mktemp("regalloc")
    out = []
    for i in range(1, 6):
        src = d / f"p{i}.c"
        src.write_text("".join(PRESSURE % {"i": 10 * i + k} for k in range(i % 3 + 1)))
        bc = d / f"p{i}.bc"
        toolchain.compile([clang, "-O2", "-emit-llvm", "-c", str(src), "-o", str(bc)],
                          timeout=120, measure_text=False)
        out.append(Item(f"p{i}", f"lib{i % 2}", bc.read_bytes()))
    return out


@pytest.fixture(scope="module")
def pool():
    """Two compiler workers on a private local Ray, shared by the training
    tests (starting Ray takes seconds)."""
    from mlbridge.train.cluster import WorkerPool
    with WorkerPool(2, task_timeout=300) as p:
        yield p


@pytest.fixture
def workdir():
    wd = Workdir()
    yield wd
    wd.close()


def test_eviction_reward_on_a_tiny_example(items, workdir):
    it = items[1]   # f20, f21, f22
    greedy = run_task(evict_task(it.ir), workdir)
    again = run_task(evict_task(it.ir), workdir)
    rule = run_task(evict_task(it.ir, rule="greedy-rule", record=True), workdir)
    never = np.zeros(NUM_PARAMS)   # a policy that never evicts: split or spill at once
    never[-1] = 100.0
    noevict = run_task(evict_task(it.ir, theta=never), workdir)
    assert greedy["requests"] == 0 and set(greedy["scores"]) >= {"f20", "f21", "f22"}
    assert min(greedy["scores"][f] for f in ("f20", "f21", "f22")) > 1.0
    base = {it.name: greedy["total"]}
    assert _reward({it.name: again["total"]}, base) == 0.0    # deterministic
    assert rule["requests"] > 0 and len(rule["data"][2]) == rule["requests"]
    assert noevict["requests"] > 0
    r = _reward({it.name: noevict["total"]}, base)
    assert r == pytest.approx(1.0 - noevict["total"] / greedy["total"]) and r != 0.0


def test_the_greedy_rule_as_weights_allocates_as_the_rule(items, workdir):
    """The warm start of eviction training: GreedyRule's own weights, served
    over pipes, answer every request as the rule does (same score), and the
    rule is close to LLVM's default advisor."""
    it = items[2]
    greedy = run_task(evict_task(it.ir), workdir)
    rule = run_task(evict_task(it.ir, rule="greedy-rule"), workdir)
    linear = run_task(evict_task(it.ir, theta=GreedyRule.theta()), workdir)
    assert rule["requests"] > 0 and linear["requests"] == rule["requests"]
    assert linear["scores"] == rule["scores"]
    assert rule["total"] == pytest.approx(greedy["total"], rel=0.02)


def test_first_format_eviction_policy_loads_with_shared_weights():
    w = list(np.arange(NUM_FEATURES, dtype=float))
    p = LinearEviction.from_dict({"features": list(COLUMN_FEATURES), "theta": w + [0.5]})
    assert p.theta.tolist() == w + w + [0.5]
    with pytest.raises(ValueError, match="other features"):
        LinearEviction.from_dict({"features": ["x"], "theta": [0.0]})


def test_eviction_policies_mask_and_compare_weights():
    from mlbridge.llvm import synthetic
    dens = np.zeros((1, 33), dtype=np.float32)
    dens[0, 3], dens[0, 7], dens[0, CANDIDATE] = 0.2, 0.6, 0.5
    obs = synthetic.evict_observation([3, 7, 32], use_def_density=dens)
    X, mask = column_matrix(obs)
    assert GreedyRule()(obs) == 3                # lighter than the range: evicted
    dens[0, 3] = 0.9
    assert GreedyRule()(synthetic.evict_observation([3, 7, 32], use_def_density=dens)) == 32
    assert LinearEviction(np.full(NUM_PARAMS, -5.0)).decide(X, mask) in (3, 7, 32)
    assert LinearEviction(GreedyRule.theta()).decide(X, mask) == 3


def test_python_over_pipes_decides_as_the_plugin_in_process(items, workdir):
    """The heuristic rebuilt in Python = the plugin's heuristic, and an
    AllocatorPolicy over pipes = its ONNX export run by ONNX Runtime in
    llc: the same decision trace in every function."""
    it = items[4]
    builtin = run_task(alloc_task(it.ir, policy="heuristic"), workdir)
    rule = run_task(alloc_task(it.ir, policy="heuristic-rule"), workdir)
    assert rule["requests"] > 0 and rule["illegal"] == 0
    assert rule["traces"] == builtin["traces"] and rule["total"] == builtin["total"]
    theta = np.random.default_rng(3).normal(size=AllocatorPolicy.size)
    piped = run_task(alloc_task(it.ir, theta=theta), workdir)
    onnx = run_task(alloc_task(it.ir, onnx=AllocatorPolicy(theta).to_onnx()), workdir)
    assert piped["requests"] > 0 and piped["illegal"] == 0 and onnx["model_failures"] == 0
    assert piped["traces"] == onnx["traces"] and piped["traces"] != builtin["traces"]
    assert piped["total"] == onnx["total"]


def _check_run(out, summary, names):
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["stage"] for r in log] == ["imitation", "es", "es", "es", "done"]
    assert [r["iteration"] for r in log[1:4]] == [0, 1, 2]
    ratios = [r["validation_mean_ratio"] for r in log[1:4]]
    assert all(r > 0 for r in ratios)
    assert summary["validation_mean_ratio"] == min(ratios)
    assert summary["selected_iteration"] == ratios.index(min(ratios))
    assert (out / "curve.png").stat().st_size > 1000
    for n in names:
        assert (out / n).stat().st_size > 0
    return log


def test_short_ray_training_of_the_allocator_writes_log_curve_and_model(items, pool, tmp_path):
    import onnxruntime as ort
    out = tmp_path / "run"
    summary = train(items[:3], items[3:], out, mode="alloc", iterations=2, population=1,
                    batch=2, cache_dir=tmp_path / "cache", progress=False, pool=pool)
    log = _check_run(out, summary, ["regalloc_policy.json", "regalloc_policy.onnx"])
    assert log[0]["select_requests"] > 0 and log[0]["action_accuracy"] > 0.5
    policy = AllocatorPolicy.load(out / "regalloc_policy.json")
    assert policy.theta.tolist() == log[1 + summary["selected_iteration"]]["theta"]
    sess = ort.InferenceSession(str(out / "regalloc_policy.onnx"))
    assert [i.shape for i in sess.get_inputs()][1] == [1, 64, 12]
    assert [o.shape for o in sess.get_outputs()] == [[1, 64]]
    # greedy's scores were cached: the next run measures them from disk
    assert len(list((tmp_path / "cache").glob("*.rollout.npz"))) == len(items)


def test_short_ray_training_of_the_eviction_advisor(items, pool, tmp_path):
    out = tmp_path / "run"
    summary = train(items[:3], items[3:], out, mode="evict", iterations=2, population=1,
                    batch=2, progress=False, pool=pool)
    log = _check_run(out, summary, ["evict_policy.json"])
    # the warm start is the greedy rule's own weights: it answers as the rule
    assert log[0]["requests"] > 0 and log[0]["accuracy"] == 1.0
    assert log[1]["theta"] == GreedyRule.theta().tolist()
    assert log[2]["theta"] != log[1]["theta"]      # ES moved it
    assert LinearEviction.load(out / "evict_policy.json").theta.tolist() == \
        log[1 + summary["selected_iteration"]]["theta"]


def test_function_losses_add_up(items):
    """``python -m mlbridge.train regalloc losses``: per function, ours minus
    greedy; the differences add up to the difference of the totals, and the
    weighted components to the differences of the scores."""
    from mlbridge.train.regalloc.commands import function_losses
    rows, parts = function_losses(items[:2])
    names = {(name, g.function) for _, name, g, _ in rows}
    assert ("p1", "f10") in names and ("p2", "leaf20") in names
    assert [abs(r[0]) for r in rows] == sorted((abs(r[0]) for r in rows), reverse=True)
    for d, _, g, o in rows:
        assert d == pytest.approx(o.score - g.score)
    total = sum(r[0] for r in rows)
    assert sum(parts.values()) == pytest.approx(total, rel=1e-6, abs=1e-6)
    assert any(r[0] != 0 for r in rows)  # the pressure functions differ from greedy
