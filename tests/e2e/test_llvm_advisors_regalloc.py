"""End to end: llc-19's eviction and priority advisors served from Python.

Every served compilation must still produce a correct program: objects
built by ``llc-19 -O2`` under each policy are linked, run, and their output
compared with the ``clang-19 -O2`` build of the same source. Programs: two
hand-written ones with high register pressure (tests/e2e/programs/sha256.c,
mixer.c) and csmith programs generated at test time from fixed seeds.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path
from typing import Dict

import numpy as np
import pytest

RUN_TIMEOUT = 60.0
#: A generated program must print its checksum within this many seconds.
RUN_LIMIT = 10.0

#: csmith 2.3.0 (Debian) settings and seeds: small programs that terminate
#: at once and give llc-19 -O2 eviction decisions (seed: requests seen when
#: they were chosen -- the test only requires some).
CSMITH_OPTIONS = ["--max-funcs", "4", "--max-expr-complexity", "14", "--no-volatiles",
                  "--no-bitfields", "--no-packed-struct"]
CSMITH_SEEDS = {10: 24, 13: 43, 3: 96}

HAND_WRITTEN = ["sha256", "mixer"]


@pytest.fixture(scope="module")
def llvm(mlbridge_pkg):
    import mlbridge.llvm as m
    return m


class Program:
    """A C program, its optimized IR and the output of its reference build."""

    def __init__(self, name, source, ll, expected, cflags):
        self.name, self.source, self.ll = name, source, ll
        self.expected, self.cflags = expected, cflags


def _run_binary(exe: Path) -> str:
    try:
        res = subprocess.run([str(exe)], capture_output=True, timeout=RUN_LIMIT,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{exe} did not finish within {RUN_LIMIT} s", pytrace=False)
    assert res.returncode == 0, f"{exe} exited with {res.returncode}"
    return res.stdout.decode()


def _prepare(e2e, clang, name, source, d: Path, cflags) -> Program:
    ll = d / f"{name}.ll"
    e2e.run_checked([clang, "-O2", "-w", *cflags, "-emit-llvm", "-S", str(source), "-o",
                     str(ll)])
    ref = d / f"{name}.ref"
    e2e.run_checked([clang, "-O2", "-w", *cflags, str(source), "-o", str(ref)])
    return Program(name, source, ll, _run_binary(ref), cflags)


@pytest.fixture(scope="module")
def programs(e2e, clang, csmith, program_sources, tmp_path_factory) -> Dict[str, Program]:
    d = tmp_path_factory.mktemp("regalloc")
    out = {}
    for name in HAND_WRITTEN:
        out[name] = _prepare(e2e, clang, name, program_sources[name], d, [])
    for seed in CSMITH_SEEDS:
        src = d / f"csmith{seed}.c"
        e2e.run_checked([csmith["csmith"], "--seed", str(seed), *CSMITH_OPTIONS, "-o",
                         str(src)])
        p = _prepare(e2e, clang, f"csmith{seed}", src, d, ["-I", csmith["include"]])
        assert p.expected.startswith("checksum = "), p.expected[:200]
        out[p.name] = p
    return out


def _llc_obj(llvm, llc, prog: Program, out: Path, **policies):
    return llvm.run([llc, "-O2", "-relocation-model=pic", "-filetype=obj", str(prog.ll),
                     "-o", str(out)], timeout=RUN_TIMEOUT, **policies).check()


def _link_and_run(e2e, clang, obj: Path) -> str:
    exe = obj.with_suffix(".exe")
    e2e.run_checked([clang, str(obj), "-o", str(exe)])
    return _run_binary(exe)


def _least_reads(llvm):
    """A Python policy over numpy features: evict the legal interfering
    live range that is read least (else nothing)."""
    def policy(obs):
        mask = np.asarray(obs["mask"][0], dtype=bool)
        reads = np.asarray(obs["weighed_reads_by_max"][0], dtype=np.float64)
        cand = np.flatnonzero(mask[:32])
        if mask[32] and (cand.size == 0 or reads[cand].min() > 0.5):
            return 32
        return int(cand[np.argmin(reads[cand])]) if cand.size else 32
    return policy


EVICTION_POLICIES = ["noevict", "first", "last", "random", "least-reads"]


@pytest.mark.parametrize("name", HAND_WRITTEN + [f"csmith{s}" for s in CSMITH_SEEDS])
def test_eviction_policies_keep_programs_correct(llvm, e2e, llc, clang, programs,
                                                 tmp_path, name):
    prog = programs[name]
    objects = {}
    for policy_name in EVICTION_POLICIES:
        policy = _least_reads(llvm) if policy_name == "least-reads" else policy_name
        if policy_name == "random":
            policy = llvm.policies.RandomEviction(seed=1234)
        obj = tmp_path / f"{name}.{policy_name}.o"
        r = _llc_obj(llvm, llc, prog, obj, evict=policy)
        assert r.requests["evict"] > 0 and r.sessions["evict"] >= 1, (policy_name, r)
        assert r.fallbacks["evict"] == 0
        assert _link_and_run(e2e, clang, obj) == prog.expected, \
            f"{name} built with eviction policy {policy_name} computes something else"
        objects[policy_name] = obj.read_bytes()
    # The policies did change the generated code.
    assert len(set(objects.values())) >= 2, f"{name}: every policy gave the same object"


@pytest.mark.parametrize("name", ["sha256", "csmith13"])
def test_priority_advisor_served_with_float_advice(llvm, e2e, llc, clang, programs,
                                                   tmp_path, name):
    prog = programs[name]
    rng = random.Random(7)

    def jitter(obs):  # fractional float32 priorities around the live range size
        return float(obs["li_size"][0]) + rng.random()

    objects = {}
    for policy_name, policy in [("size", "size"), ("weight", "weight"), ("stage", "stage"),
                                ("jitter", jitter)]:
        obj = tmp_path / f"{name}.{policy_name}.o"
        trace = tmp_path / f"{name}.{policy_name}.npz"
        r = _llc_obj(llvm, llc, prog, obj, priority=policy, trace=trace)
        assert r.requests["priority"] > 0
        assert _link_and_run(e2e, clang, obj) == prog.expected, policy_name
        objects[policy_name] = obj.read_bytes()
        t = llvm.load_trace(trace)
        advice = t.advice("priority")
        assert advice.dtype == np.float32 and len(advice) == r.requests["priority"]
        feats = t.features("priority")
        if policy_name == "size":
            np.testing.assert_array_equal(advice, feats["li_size"][:, 0].astype(np.float32))
        if policy_name == "jitter":
            frac = advice - feats["li_size"][:, 0]
            assert ((frac > 0) & (frac < 1.001)).mean() > 0.9  # fractions got through
    assert len(set(objects.values())) >= 2


def test_eviction_and_priority_together_with_random_choices(llvm, e2e, llc, clang,
                                                            programs, tmp_path):
    """Both register-allocation advisors of one llc process, served by two
    threads, with random (legal) evictions and random priorities."""
    prog = programs["mixer"]
    rng = random.Random(3)
    obj = tmp_path / "both.o"
    r = _llc_obj(llvm, llc, prog, obj, evict=llvm.policies.RandomEviction(seed=5),
                 priority=lambda obs: rng.uniform(0, 1e6))
    assert r.requests["evict"] > 0 and r.requests["priority"] > 0
    assert _link_and_run(e2e, clang, obj) == prog.expected


def test_torch_module_as_eviction_policy(llvm, e2e, llc, clang, programs, tmp_path):
    """A PyTorch module scoring the 33 columns: the host takes the best
    legal one. Without PyTorch in the environment: a clear error instead."""
    try:
        import torch
    except ImportError:
        with pytest.raises(ImportError, match="python3-torch"):
            llvm.TorchPolicy(object(), "evict")
        return
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20 * 33 + 1, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 33))
    prog = programs["sha256"]
    obj = tmp_path / "torch.o"
    trace = tmp_path / "torch.npz"
    r = _llc_obj(llvm, llc, prog, obj, evict=model, trace=trace)
    assert r.requests["evict"] > 0 and r.fallbacks["evict"] == 0
    assert _link_and_run(e2e, clang, obj) == prog.expected
    # The answers are what the module prefers among the legal columns.
    t = llvm.load_trace(trace)
    x = torch.from_numpy(t.matrix("evict"))
    with torch.no_grad():
        scores = model(x).numpy()
    mask = t.features("evict")["mask"][:, 0, :].astype(bool)
    np.testing.assert_array_equal(np.where(mask, scores, -np.inf).argmax(axis=1),
                                  t.advice("evict"))
