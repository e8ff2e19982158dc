"""Register-allocation training (mlbridge.train.regalloc): the score from
greedy's remarks, the eviction trainer's reward on small functions under
high register pressure, and a short training run on Ray (2 workers, 2
iterations) writing its log, curve and policy.

Real parts only: C compiled by clang-19, llc-19's greedy allocator asking
its eviction advisor over pipes, Ray actors as compiler workers.
"""

import json
import subprocess

import numpy as np
import pytest

from conftest import require_llvm_tool

from mlbridge.train.cluster import Workdir
from mlbridge.train.regalloc.evict import (CANDIDATE, GreedyRule, LinearEviction, NUM_PARAMS,
                                           column_matrix)
from mlbridge.train.regalloc.score import remark_scores
from mlbridge.train.regalloc.task import evict_task, run_task
from mlbridge.train.regalloc.train_evict import Item, _reward, train_evict

# Many values live across a loop with a call in it: more than x86-64's
# registers, so greedy evicts, splits and spills.
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
def items(tmp_path_factory):
    clang = require_llvm_tool("clang-19")
    require_llvm_tool("llc-19")
    d = tmp_path_factory.mktemp("regalloc")
    out = []
    for i in range(1, 6):
        src = d / f"p{i}.c"
        src.write_text("".join(PRESSURE % {"i": 10 * i + k} for k in range(i % 3 + 1)))
        bc = d / f"p{i}.bc"
        subprocess.run([clang, "-O2", "-emit-llvm", "-c", str(src), "-o", str(bc)],
                       check=True, timeout=120)
        out.append(Item(f"p{i}", f"lib{i % 2}", bc.read_bytes()))
    return out


def test_remark_score_is_the_mlgo_weights_on_greedys_costs():
    text = """--- !Missed
Pass:            regalloc
Name:            LoopSpillReloadCopies
Function:        f
Args:
  - NumVRCopies:     '2'
  - TotalCopiesCost: '1.000000e+02'
...
--- !Missed
Pass:            regalloc
Name:            SpillReloadCopies
Function:        f
Args:
  - NumSpills:       '2'
  - TotalSpillsCost: '1.5'
  - NumReloads:      '3'
  - TotalReloadsCost: '2.5'
  - NumFoldedReloads: '1'
  - TotalFoldedReloadsCost: '0.25'
  - NumVRCopies:     '4'
  - TotalCopiesCost: '10'
  - String:          generated in function
...
--- !Missed
Pass:            regalloc
Name:            SpillReloadCopies
Function:        '_ZN1a1bEv'
Args:
  - NumVRCopies:     '1'
  - TotalCopiesCost: '5'
...
"""
    # f: 1 * 1.5 (stores) + 4 * (2.5 + 0.25) (loads) + 0.2 * 10 (copies); the
    # loop remark is part of the function's and is not added again.
    assert remark_scores(text) == pytest.approx({"f": 1.5 + 11.0 + 2.0, "_ZN1a1bEv": 1.0})


def test_reward_of_the_eviction_trainer_on_a_tiny_example(items):
    wd = Workdir()
    try:
        it = items[1]   # f20, f21, f22
        greedy = run_task(evict_task(it.ir), wd)
        again = run_task(evict_task(it.ir), wd)
        rule = run_task(evict_task(it.ir, rule="greedy-rule", record=True), wd)
        # a policy that never evicts: every range that finds no free register
        # is split or spilled at once
        never = np.zeros(NUM_PARAMS)
        never[-1] = 100.0
        noevict = run_task(evict_task(it.ir, theta=never), wd)
    finally:
        wd.close()
    assert greedy["requests"] == 0 and set(greedy["scores"]) >= {"f20", "f21", "f22"}
    assert min(greedy["scores"][f] for f in ("f20", "f21", "f22")) > 1.0
    base = {it.name: greedy["total"]}
    assert _reward({it.name: again["total"]}, base) == 0.0    # deterministic
    assert rule["requests"] > 0 and len(rule["actions"]) == rule["requests"]
    assert noevict["requests"] > 0
    r = _reward({it.name: noevict["total"]}, base)
    assert r == pytest.approx(1.0 - noevict["total"] / greedy["total"]) and r != 0.0


def test_linear_policy_imitates_and_masks():
    """The masked argmax never picks an illegal column; GreedyRule evicts a
    lighter range only."""
    from mlbridge.llvm import synthetic
    dens = np.zeros((1, 33), dtype=np.float32)
    dens[0, 3], dens[0, 7], dens[0, CANDIDATE] = 0.2, 0.6, 0.5
    obs = synthetic.evict_observation([3, 7, 32], use_def_density=dens)
    X, mask = column_matrix(obs)
    assert GreedyRule()(obs) == 3
    dens[0, 3] = 0.9
    assert GreedyRule()(synthetic.evict_observation([3, 7, 32], use_def_density=dens)) == 32
    theta = np.full(NUM_PARAMS, -5.0)
    assert LinearEviction(theta).decide(X, mask) in (3, 7, 32)
    assert mask[[3, 7, 32]].all() and mask.sum() == 3


def test_short_ray_training_run_writes_log_curve_and_policy(items, tmp_path):
    out = tmp_path / "run"
    summary = train_evict(items[:3], items[3:], out, workers=2, iterations=2, population=1,
                          batch=2, cache_dir=tmp_path / "cache", progress=False)
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["stage"] for r in log] == ["imitation", "es", "es", "es", "done"]
    assert log[0]["requests"] > 0 and 0.0 <= log[0]["accuracy"] <= 1.0
    assert [r["iteration"] for r in log[1:4]] == [0, 1, 2]
    ratios = [r["validation_mean_ratio"] for r in log[1:4]]
    assert all(r > 0 for r in ratios)
    assert summary["validation_mean_ratio"] == min(ratios)
    assert summary["selected_iteration"] == ratios.index(min(ratios))
    assert (out / "curve.png").stat().st_size > 1000
    policy = LinearEviction.load(out / "evict_policy.json")
    assert policy.theta.tolist() == log[1 + summary["selected_iteration"]]["theta"]
    # the greedy baselines were cached: a second run measures them from disk
    assert len(list((tmp_path / "cache").glob("*.rollout.npz"))) == len(items)
