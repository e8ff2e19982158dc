"""mlbridge.kit.PluginEnv without a compiler: what it refuses, and that
gymnasium.make finds it (the real runs are tests/e2e/test_kit_env.py)."""

import os
import sys

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


PEER = """
import sys
sys.path.insert(0, {here!r})
from compiler_peer import CompilerPeer
from mlbridge import TensorSpec
peer = CompilerPeer(sys.argv[1], sys.argv[2]).open()
got = []
for i, name in enumerate(["f:loop0", "g:loop1", "f:loop0"]):
    peer.header([TensorSpec("decision", "string", (len(name),)),
                 TensorSpec("x", "float", (2,))], TensorSpec("unroll", "int64_t", (1,)))
    got.append(int(peer.observe([name, [i, 0.5]])[0]))
peer.close()
print(got)
"""


@pytest.mark.parametrize("serdes", ["bitstream", "json"])
def test_a_decision_feature_names_the_requests(tmp_path, serdes):
    script = tmp_path / "peer.py"
    script.write_text(PEER.format(here=os.path.dirname(os.path.abspath(__file__))))
    with PluginEnv([sys.executable, script, "{channel}", serdes], serdes=serdes,
                   timeout=20) as env:
        assert list(env.observation_space.keys()) == ["x"]   # strings are not observed
        assert [s.decision for s in env.probe.steps] == ["f:loop0", "g:loop1", "f:loop0#1"]
        obs, info = env.reset(options={"assignment": {"g:loop1": 8}})
        assert info["decision"] == "f:loop0" and info["strings"] == {"decision": "f:loop0"}
        assert obs["x"].tolist() == [0.0, 0.5]
        obs, _, done, _, info = env.step(4)
        assert not done and info["decision"] == "f:loop0#1" and obs["x"][0] == 2.0
        _, _, done, _, info = env.step(2)
        assert done and info["episode"].stdout.strip() == "[4, 8, 2]"
        assert [s.by for s in info["episode"].steps] == ["agent", "assignment", "agent"]
