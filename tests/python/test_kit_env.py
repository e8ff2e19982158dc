"""mlbridge.kit.PluginEnv without a compiler: what it refuses, and that
gymnasium.make finds it (the real runs are tests/e2e/test_kit_env.py)."""

import gymnasium as gym
import pytest

from mlbridge import MLBridgeError, TensorSpec
from mlbridge.kit import ENV_ID, PluginEnv
from mlbridge.toolchain import CompileError


def test_a_command_that_asks_nothing_cannot_teach_the_protocol():
    with pytest.raises(MLBridgeError, match="made no request"):
        PluginEnv(["true", "{channel}"], timeout=10)


def test_a_run_that_asks_nothing_is_an_episode_of_no_step_and_failures_are_errors():
    specs = dict(feature_specs=[TensorSpec("x", "float", (2,))],
                 advice_spec=TensorSpec("y", "int64_t", (1,)))
    env = gym.make(ENV_ID, command=["sh", "-c", 'test -p "$CH.in"', "sh"],
                   channel_env={"CH": "{channel}"}, reward=lambda ep: 1.5, **specs)
    obs, info = env.reset()
    assert info["done"] and obs["x"].shape == (2,)
    _, reward, done, _, info = env.step(0)
    assert done and reward == 1.5 and info["episode"].steps == []
    env.close()
    with PluginEnv(["sh", "-c", "echo broken >&2; exit 3"], **specs) as env:
        with pytest.raises(CompileError, match=r"broken \(sh, exit status 3\)"):
            env.run()
    with pytest.raises(ValueError, match="transport"):
        PluginEnv(["true"], transport="carrier pigeon", **specs)
