"""Inlining-for-size training through the bridge, on Ray (mlbridge.train).

Real parts only: csmith programs compiled to -Oz IR, stock clang-19 asking
its interactive inliner (and clang-19 with MLBridgeInlineAdvisor.so for a
policy that reads IR2Vec vectors), Ray actors as compiler workers (a
private local Ray per test). Small on purpose (three modules, two ES
iterations) so that it runs in the default suite; the real training run is
docs/training.md's command.
"""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import require_llvm_tool

from mlbridge import toolchain
from mlbridge.llvm.plugins.corpus import csmith_program, csmith_include_dir
from mlbridge.train.cluster import TaskFailed, WorkerPool
from mlbridge.train.inliner import EMBEDDINGS, MODEL_FEATURES, InlinePolicy, make_task

SEEDS = (11, 12, 13)


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    clang = require_llvm_tool("clang-19")
    d = tmp_path_factory.mktemp("train")
    out = []
    for seed in SEEDS:
        src = csmith_program(seed, d / f"csmith{seed}.c", max_funcs=8)
        ir = d / f"csmith{seed}.bc"
        toolchain.compile([clang, "-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-c",
                           "-w", f"-I{csmith_include_dir()}", str(src), "-o", str(ir)],
                          timeout=120, measure_text=False)
        obj = d / f"csmith{seed}.o"
        oz = toolchain.compile([clang, "-Oz", "-c", "-w", f"-I{csmith_include_dir()}", str(src),
                                "-o", str(obj)], timeout=120)
        out.append({"ir": ir, "oz_text": oz.text})
    return out


@pytest.fixture(scope="module")
def pool():
    """Two compiler workers on a private local Ray (shared by the tests
    here: starting Ray takes seconds)."""
    with WorkerPool(2, task_timeout=120) as p:
        yield p


def test_default_decisions_reproduce_clang_oz(modules, pool):
    """The trainer's starting point is exactly clang-19 -Oz from source."""
    res = pool.map([make_task(m["ir"], record=True) for m in modules])
    for m, r in zip(modules, res):
        assert not isinstance(r, TaskFailed), r
        assert r["requests"] > 0 and r["text"] == m["oz_text"]
        assert r["X"].shape == (r["requests"], len(MODEL_FEATURES))
        np.testing.assert_array_equal(r["decisions"], r["defaults"])
        assert r["inlined"] == int(r["defaults"].sum())


def _onnx_decisions(model, X, E=None, defaults=None):
    import onnxruntime as ort
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    out = []
    for i, x in enumerate(X):
        feeds = {n: np.array([[x[j]]], np.float32) for j, n in enumerate(MODEL_FEATURES)}
        if E is not None:
            feeds.update({n: E[i, k][None].astype(np.float32) for k, n in enumerate(EMBEDDINGS)})
        if defaults is not None:
            feeds["inlining_default"] = np.array([[defaults[i]]], np.float32)
        out.append(int(sess.run(None, feeds)[0][0]))
    return out


@pytest.mark.parametrize("embeddings", [False, True], ids=["features", "ir2vec"])
def test_two_es_iterations_on_two_ray_workers_write_log_curve_and_model(modules, tmp_path,
                                                                         embeddings):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "mlbridge.train", "inliner",
           "--out", str(out), "--workers", "2", "--iterations", "2", "--pairs", "2",
           "--eval-every", "1", "--defer-shares", "0.3", "--quiet",
           "--train-ir", str(modules[0]["ir"]),
           str(modules[1]["ir"]), "--validation-ir", str(modules[2]["ir"])]
    if embeddings:
        cmd.append("--embeddings")
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=540)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [(r["stage"], r["iteration"]) for r in rows[:3]] == [("clone", 0), ("es", 1),
                                                                 ("es", 2)]
    # The best of them, deferring to LLVM on its least confident 30 %.
    best = min(rows[:3], key=lambda r: r["validation_total"])
    assert len(rows) == 4 and rows[3]["stage"] == "margin"
    assert rows[3]["iteration"] == best["iteration"] and rows[3]["margin"] > 0
    assert rows[3]["train_agreement_with_llvm"] >= best.get("train_agreement_with_llvm",
                                                             best.get("train_accuracy"))
    # Cloning LLVM's decisions on these small modules is nearly exact.
    assert rows[0]["train_accuracy"] > 0.9
    assert rows[0]["validation_baseline"] == modules[2]["oz_text"]
    assert all("validation_total" in r for r in rows)
    for r in rows[1:3]:
        assert r["sigma"] > 0 and r["compiles"] >= 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["workers"] == 2 and summary["train_modules"] == 2
    totals = [r["validation_total"] for r in rows]
    assert summary["selected_validation_ratio"] == min(totals) / modules[2]["oz_text"]
    assert (out / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The exported model computes what the Python policy computes.
    policy = InlinePolicy.load(out / "policy.json")
    assert policy.embedding_dim == (300 if embeddings else 0)
    rng = np.random.default_rng(0)
    X = np.abs(rng.normal(0, 50, size=(64, len(MODEL_FEATURES)))).round()
    E = rng.normal(0, 30, size=(64, 2, 300)) if embeddings else None
    assert _onnx_decisions(str(out / "policy.onnx"), X, E) == policy.decide(X, E).tolist()
    # So does a policy with a deferral margin, which reads LLVM's decision:
    # it overrules LLVM only where its score is beyond the margin.
    d = rng.integers(0, 2, size=64)
    f = policy.with_margin(0.0).logits(X, E)
    m = float(np.quantile(np.abs(f), 0.5))
    deferring = policy.with_margin(m)
    got = deferring.decide(X, E, d)
    assert got.tolist() == np.where(np.abs(f) <= m, d, f > 0).tolist()
    assert _onnx_decisions(deferring.to_onnx(), X, E, d) == got.tolist()


def test_training_when_every_compile_fails_says_so_and_writes_nothing(modules, tmp_path):
    """clang missing on the workers: a clear error naming the compiler and
    the modules, and no labels.npz, policy or log that could be taken for a
    result."""
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "mlbridge.train", "inliner", "--out", str(out),
           "--workers", "1", "--iterations", "1", "--pairs", "1", "--quiet",
           "--train-ir", str(modules[0]["ir"]), "--validation-ir", str(modules[1]["ir"])]
    env = dict(os.environ, MLBRIDGE_CLANG="/nonexistent/clang")
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 1, res.stderr[-3000:]
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("mlbridge.train inliner train: error: no training module compiled"), last
    assert "1 of 1 compiles failed" in last and str(modules[0]["ir"]) in last
    assert "/nonexistent/clang" in last, last
    assert "Traceback" not in res.stderr
    assert not out.exists() or list(out.iterdir()) == []


def test_killed_worker_is_replaced_and_its_task_retried(modules, pool):
    tasks = [make_task(m["ir"]) for m in modules] * 3
    pids = pool.worker_pids()
    replaced = pool.replaced
    os.kill(pids[0], signal.SIGKILL)  # before the map (see the frozen-worker test)
    res = pool.map(tasks)
    assert pool.replaced > replaced
    assert pool.worker_pids()[0] not in pids
    for task, r in zip(tasks, res):
        assert not isinstance(r, TaskFailed), r
    by_key = {}
    for r in res:
        by_key.setdefault(r["key"], set()).add(r["text"])
    assert all(len(v) == 1 for v in by_key.values())  # retried tasks give the same size
    assert sorted(min(v) for v in by_key.values()) == sorted(m["oz_text"] for m in modules)


def test_frozen_worker_is_replaced_after_the_task_timeout(modules, pool):
    """A worker that stops responding (SIGSTOP) never hangs the learner: it
    is killed and replaced once a task exceeds the pool's task_timeout."""
    tasks = [make_task(m["ir"]) for m in modules] * 2
    replaced = pool.replaced
    pool.task_timeout = 15  # each task takes well under a second
    try:
        # Stopped before the map, not during it: a map of small modules can
        # finish before a timer fires, and then nothing is replaced.
        os.kill(pool.worker_pids()[1], signal.SIGSTOP)
        t0 = time.monotonic()
        res = pool.map(tasks)
    finally:
        pool.task_timeout = 120
    assert time.monotonic() - t0 < 200
    assert pool.replaced > replaced
    assert all(not isinstance(r, TaskFailed) for r in res), res
