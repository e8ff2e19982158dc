"""mlbridge.kit.rllib (docs/gym.md, "RLlib"): RLlib PPO over PluginEnv with
the inline advisor plugin in clang-19 -Oz.

* the env runners' adapter (default suite, a few seconds): the flat float32
  observation of the plugin's features, round robin over the programs from
  the runner's index, the reward from the compiled object's .text against
  the -Oz baseline, the counts the trainer's curve reads;
* a real RLlib run (35-50 s on a 2-core machine, most of it Ray's and
  RLlib's start-up before the first compile): two PPO
  iterations with two env runners, each a separate process that compiled
  and sampled steps, every reward the .text of an object it compiled.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from gymnasium import spaces

from mlbridge.kit.rllib import RLlibEnv, flatten
from mlbridge.kit.rewards import text_size
from mlbridge.toolchain import compile as run_compile
from mlbridge.train.inliner.rllib import inliner_programs

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs", "plugins")
FILES = [os.path.join(PROGRAMS, f) for f in ("interp.c", "bitops.c")]


class _Context(dict):
    """What RLlib passes an environment: env_config with the runner's index."""

    def __init__(self, config, worker_index):
        super().__init__(config)
        self.worker_index = worker_index


def _episode(env, action):
    obs, info = env.reset()
    first, done, steps = obs, False, 0
    while not done:
        assert env.observation_space.contains(obs)
        obs, reward, done, _, _ = env.step(action)
        steps += 1
    return first, info["program"], reward, steps


def test_adapter_spaces_round_robin_and_rewards(plugins, tmp_path):
    programs = inliner_programs(FILES, plugins.inline_advisor)
    for f, p in zip(FILES, programs):   # the baseline: the same file at -Oz, no plugin
        assert "{output}" in p["command"] and "{channel}" in p["channel_env"].values()
        assert p["baseline"] == run_compile(["clang-19", "-Oz", "-c", f, "-o",
                                             tmp_path / "oz.o"]).text
    env = RLlibEnv(_Context({"programs": programs}, worker_index=1))
    try:
        assert env.action_space == spaces.Discrete(2)
        assert env.observation_space.shape == (38,) and env.observation_space.dtype == np.float32
        assert set(env.keys) == {s.name for s in env.envs[0].feature_specs}

        runs = [_episode(env, a) for a in (1, 0, 0)]
        # Runner 1 starts at the second program, then goes round.
        assert [r[1] for r in runs] == ["bitops.c", "interp.c", "bitops.c"]
        # The observation is the plugin's request, squashed.
        raw = env.envs[1].episode.steps[0].features
        x = np.array([raw[k][0] for k in env.keys], dtype=np.float64)
        np.testing.assert_allclose(runs[2][0], np.sign(x) * np.log1p(np.abs(x)), rtol=1e-6)
        np.testing.assert_array_equal(runs[2][0], flatten(raw, env.keys))
        # The reward: the object's .text against the -Oz baseline.
        for k, (_, name, reward, steps) in zip((1, 0, 1), runs):
            assert name == programs[k]["name"] and steps == len(env.envs[k].episode.steps)
        always, never = runs[0][2], runs[2][2]
        size = text_size(env.envs[1].output)
        assert never == (programs[1]["baseline"] - size) / programs[1]["baseline"]
        assert never != always   # the answers reach the compiler

        stats = env.drain()
        assert stats["compiles"] == 3 and stats["steps"] == sum(r[3] for r in runs)
        assert [(e["program"], e["reward"]) for e in stats["episodes"]] == \
            [(r[1], r[2]) for r in runs]
        assert stats["episodes"][-1]["text"] == size
        assert stats["episodes"][-1]["assignment"] == \
            {n: int(a[0]) for n, a in env.envs[1].episode.assignment().items()}
        assert env.drain()["episodes"] == [] and env.stats["steps"] == 0
    finally:
        env.close()


def test_ppo_with_two_env_runners_trains_on_compiles(plugins):
    from mlbridge.kit.rllib import train
    programs = inliner_programs(FILES, plugins.inline_advisor)
    baseline = {p["name"]: p["baseline"] for p in programs}
    result = train(programs, 2, env_runners=2, batch=64, minibatch=32, epochs=2)
    curve = result["curve"]
    assert [row["iteration"] for row in curve] == [1, 2]
    for row in curve:
        runners = row["runners"]
        # Two env runner processes, not this one, each compiling and stepping.
        assert len({r["pid"] for r in runners}) == 2 and os.getpid() not in \
            {r["pid"] for r in runners}
        assert sorted(r["worker_index"] for r in runners) == [1, 2]
        assert all(r["steps"] > 0 and r["compiles"] > 0 for r in runners)
        assert sum(r["steps"] for r in runners) >= 64
    finished = [e for row in curve for e in row["finished"]]
    assert finished and {e["program"] for e in finished} == set(baseline)
    for e in finished:   # each reward is the .text of the object that runner compiled
        b = baseline[e["program"]]
        assert e["text"] > 0 and e["reward"] == pytest.approx((b - e["text"]) / b)
    # The trained module, run greedily here, compiles every program; the
    # smallest sampled compile of each, replayed by name, gives its size again.
    for row in result["evaluation"]:
        assert row["calls"] > 0 and row["ratio"] == row["text"] / baseline[row["program"]]
        assert row["best_replayed"] == result["best"][row["program"]]["text"]
