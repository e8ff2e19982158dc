"""End to end: the gymnasium inlining environment over clang-19, and the
training dataset written while serving llc-19."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

RUN_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def llvm(mlbridge_pkg):
    import mlbridge.llvm as m
    return m


@pytest.fixture(scope="module")
def gym():
    try:
        import gymnasium
    except ImportError as e:
        pytest.fail(f"gymnasium is missing ({e}): run scripts/install-deps.sh "
                    f"(python/requirements/llvm.txt)", pytrace=False)
    return gymnasium


def _exec_size(e2e, obj) -> int:
    """Executable section bytes, read with llvm-readelf-19 (independently of
    mlbridge's own ELF reader)."""
    readelf = e2e.require_llvm_tool("llvm-readelf-19")
    out = e2e.run_checked([readelf, "-S", "--wide", str(obj)])
    total = 0
    for line in out.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)\s+"
                     r"[0-9a-f]+\s+([A-Za-z]*)", line)
        if m and "X" in m.group(3):
            total += int(m.group(2), 16)
    return total


@pytest.fixture
def env_factory(llvm, gym, clang, program_sources):
    from mlbridge.llvm.env import InliningEnv
    made = []

    def make(names=("sort", "strings"), **kw):
        env = InliningEnv([program_sources[n] for n in names], compiler=clang, **kw)
        made.append(env)
        return env
    yield make
    for env in made:
        env.close()


def test_environment_passes_gymnasiums_checker(env_factory, gym):
    from gymnasium.utils.env_checker import check_env
    env = env_factory()
    assert env.observation_space.shape == (38,)
    assert env.feature_names[25] == "callee_basic_block_count"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. "no spec": not made through gymnasium.make
        check_env(env)
    # The checker left an episode half-way: closing stops its compiler.
    env.close()


def test_gymnasium_make_builds_the_registered_environment(gym, llvm, clang,
                                                         program_sources):
    from mlbridge.llvm.env import ENV_ID
    env = gym.make(ENV_ID, programs=[program_sources["arith"]], compiler=clang)
    try:
        obs, info = env.reset(seed=0)
        assert obs.shape == (38,) and obs.dtype == np.int64
        assert info["index"] == 0 and info["program"].endswith("arith.c")
    finally:
        env.close()


def _episode(env, act, **reset_kw):
    obs, info = env.reset(**reset_kw)
    steps, total, done = 0, 0.0, info.get("done", False)
    while True:
        obs, reward, terminated, truncated, info = env.step(act(obs))
        assert not truncated and obs in env.observation_space
        total += reward
        if terminated:
            return steps + (0 if done else 1), total, info
        assert reward == 0.0
        steps += 1


def test_episode_reward_is_the_size_difference(env_factory, e2e, clang, program_sources,
                                               tmp_path):
    env = env_factory(names=("strings",), include_default=True)
    assert env.feature_names[-1] == "inlining_default"
    ref = tmp_path / "ref.o"
    e2e.run_checked([clang, "-Oz", "-c", str(program_sources["strings"]), "-o", str(ref)])
    baseline = _exec_size(e2e, ref)
    assert env.baseline_size(env.programs[0]) == baseline
    results = {}
    for name, act in [("always", lambda o: 1), ("never", lambda o: 0),
                      ("default", lambda o: int(o[-1]))]:
        steps, reward, info = _episode(env, act, seed=1)
        assert steps == info["requests"] > 0
        assert info["baseline_size"] == baseline
        assert reward == baseline - info["size"]
        results[name] = (reward, info["size"])
    # LLVM's own decision, answered step by step, is the baseline exactly.
    assert results["default"] == (0.0, baseline)
    assert results["never"][1] != results["always"][1]


def test_relative_reward_and_program_choice(env_factory):
    env = env_factory(names=("sort", "strings"), reward="relative")
    first = [env.reset(seed=s)[1]["program"] for s in range(6)]
    assert len(set(first)) == 2  # the seed chooses the program
    assert env.reset(seed=3)[1]["program"] == first[3]
    _, reward, info = _episode(env, lambda o: 0, options={"program": 0})
    assert info["program"].endswith("sort.c")
    assert reward == pytest.approx((info["baseline_size"] - info["size"]) /
                                   info["baseline_size"])
    with pytest.raises(Exception, match="call reset"):
        env.step(0)


def test_eviction_trace_loads_with_numpy_and_torch(llvm, e2e, llc, clang,
                                                   program_sources, tmp_path):
    """Every (context, index, features, advice) of a served llc-19 run, and
    its outcome, in one .npz that numpy loads without pickle."""
    ll = tmp_path / "sha256.ll"
    e2e.run_checked([clang, "-O2", "-emit-llvm", "-S", str(program_sources["sha256"]),
                     "-o", str(ll)])
    obj = tmp_path / "sha256.o"
    path = tmp_path / "evict.npz"
    tracer = llvm.Tracer()
    r1 = llvm.run([llc, "-O2", "-filetype=obj", str(ll), "-o", str(obj)],
                  evict="first", priority="size", trace=tracer, timeout=RUN_TIMEOUT,
                  outcome=lambda res: {"evictions": res.requests["evict"]})
    r1.check()
    r2 = llvm.run([llc, "-O2", "-filetype=obj", str(ll), "-o", str(obj)],
                  evict="noevict", trace=tracer, timeout=RUN_TIMEOUT).check()
    tracer.save(path)
    n1, n2 = r1.requests["evict"], r2.requests["evict"]
    with np.load(path, allow_pickle=False) as z:
        mask = z["evict.features.mask"]
        advice = z["evict.advice"]
        run = z["evict.run"]
        assert mask.shape == (n1 + n2, 1, 33) and advice.shape == (n1 + n2,)
        assert run.tolist() == [0] * n1 + [1] * n2
        # Every recorded answer is a legal column of its own request.
        assert mask[np.arange(len(advice)), 0, advice].all()
        assert (advice[:n1] < 32).all()                      # "first" always evicts
        assert ((advice[n1:] == 32) | (mask[n1:, 0, 32] == 0)).all()  # "noevict"
        assert z["priority.advice"].shape == (r1.requests["priority"],)
        assert z["priority.run"].tolist() == [0] * r1.requests["priority"]
        contexts = z["contexts"]
        names = {contexts[i] for i in z["evict.context"]}
        assert names <= {"compress", "sha256", "main"} and names
        # The global step interleaves the two advisors of run 0.
        steps = np.concatenate([z["evict.step"][:n1], z["priority.step"]])
        assert sorted(steps.tolist()) == list(range(n1 + r1.requests["priority"]))
        assert z["runs.returncode"].tolist() == [0, 0]
        assert z["runs.requests"].tolist() == [r1.total_requests, r2.total_requests]
        assert z["runs.text_bytes"][1] == _exec_size(e2e, obj)
        assert z["runs.output_bytes"][1] == obj.stat().st_size
        assert z["runs.evictions"].tolist() == [n1, -1]  # a user outcome, run 0 only
    trace = llvm.load_trace(path)
    assert trace.matrix("evict").shape == (n1 + n2, 20 * 33 + 1)
    try:
        import torch
    except ImportError:
        return
    from torch.utils.data import DataLoader
    x, y = next(iter(DataLoader(llvm.TraceDataset(trace, "evict"), batch_size=8)))
    assert tuple(x.shape) == (8, 20 * 33 + 1) and y.dtype == torch.int64
    assert torch.equal(y, torch.from_numpy(trace.advice("evict")[:8]))
