"""mlbridge.kit.PluginEnv (docs/gym.md) driving real compiler-side programs:

* the library's C++ runners over pipes, shared memory and gRPC (the e2e
  compiler program's "requests" scenario): steps, decision names from the
  contexts, recording, replay by name, a wrong answer failing the episode;
* the inline advisor plugin in clang-19 -Oz over pipes and gRPC: the
  protocol learnt from the first run, episodes by step(), the reward from
  the object's .text, replay of a recorded run giving the same object bytes;
* the loop-distribution plugin in clang-19 -O3 over pipes: names
  "<module>:<function>:<loop>#k", replay (whole and partial) by name giving
  the same executable bytes, a callgrind reward of the linked kernel.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from gymnasium import spaces

from mlbridge import TensorSpec
from mlbridge.corpus import loops
from mlbridge.kit import PluginEnv, rewards
from mlbridge.llvm.plugins import loop_distribution as ld
from mlbridge.llvm.plugins import tool_env
from mlbridge.toolchain import CompileError, callgrind

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs", "plugins")

REQUEST = [TensorSpec("i", "int64_t", (1,))]
TWICE = TensorSpec("twice", "int64_t", (1,))


def requests_command(e2e, transport, count=3):
    if transport == "grpc":
        return [e2e.require_built_program("mlbridge-grpc-e2e-compiler"), "--address",
                "{channel}", "--scenario", "requests", "--count", str(count)]
    return [e2e.require_built_program("mlbridge-e2e-compiler"),
            "--base" if transport == "pipe" else "--shm", "{channel}", "--serdes", "bitstream",
            "--scenario", "requests", "--count", str(count)]


@pytest.mark.parametrize("transport", ["pipe", "shm", "grpc"])
def test_steps_record_and_replay_over_each_transport(e2e, transport):
    with PluginEnv(requests_command(e2e, transport), transport=transport, timeout=30,
                   feature_specs=REQUEST, advice_spec=TWICE) as env:
        assert env.probe is None   # the protocol was given
        assert list(env.observation_space.keys()) == ["i"]
        obs, info = env.reset()
        seen = []
        done = False
        while not done:
            seen.append((info["decision"], int(obs["i"][0])))
            obs, reward, done, truncated, info = env.step(2 * obs["i"])
        ep = info["episode"]
        assert seen == [("request0", 0), ("request1", 1), ("request2", 2)]
        assert ep.returncode == 0 and '"ok":true' in ep.stdout
        assert [(s.decision, int(s.action[0]), s.by) for s in ep.steps] == \
            [("request0", 0, "agent"), ("request1", 2, "agent"), ("request2", 4, "agent")]
        # The recorded run replayed by name: the agent is never asked.
        obs, info = env.reset(options={"assignment": ep.assignment()})
        assert info.get("done") is True
        _, _, done, _, info = env.step(None)
        assert done and [s.by for s in info["episode"].steps] == ["assignment"] * 3
        assert info["episode"].stdout == ep.stdout
        # Part by name, the rest by the policy; a wrong answer fails the run.
        part = env.run(policy=lambda o, name: 2 * o["i"], assignment={"request1": 2})
        assert [s.by for s in part.steps] == ["policy", "assignment", "policy"]
        with pytest.raises(CompileError, match="exit status 1"):
            env.run(assignment={"request0": 0, "request1": 3, "request2": 4})


@pytest.mark.parametrize("transport", ["pipe", "grpc"])
def test_inliner_plugin_episodes_reward_and_replay(plugins, tmp_path, transport):
    out = tmp_path / "interp.o"
    var = "MLBRIDGE_INLINE_CHANNEL" if transport == "pipe" else "MLBRIDGE_INLINE_SERVER"
    with PluginEnv(["clang-19", "-Oz", f"-fpass-plugin={plugins.inline_advisor}", "-c",
                    os.path.join(PROGRAMS, "interp.c"), "-o", out],
                   channel_env={var: "{channel}"}, transport=transport, env=tool_env(plugins),
                   action_space=spaces.Discrete(2), reward=rewards.text(), timeout=60) as env:
        # The protocol from the first run's header: LLVM's inliner features.
        assert env.advice_spec.name == "inlining_decision"
        assert len(env.feature_specs) == 38 and "callee_basic_block_count" in \
            env.observation_space.keys()
        calls = len(env.probe.steps)
        assert calls > 5 and env.probe.steps[0].decision == "#0"   # no context: numbered

        rng = np.random.default_rng(7)
        obs, info = env.reset(seed=7)
        steps = 0
        done = False
        while not done:
            assert env.observation_space.contains(obs)
            obs, reward, done, _, info = env.step(int(rng.integers(2)))
            steps += 1
        ep = info["episode"]
        recorded = out.read_bytes()
        assert steps == len(ep.steps) and reward == -rewards.text_size(out) == ep.reward
        assert {int(s.action[0]) for s in ep.steps} == {0, 1}

        replay = env.run(assignment=ep.assignment())
        assert out.read_bytes() == recorded and replay.reward == ep.reward
        assert [s.decision for s in replay.steps] == [s.decision for s in ep.steps]
        never, always = (env.run(policy=lambda o, n, a=a: a).reward for a in (0, 1))
        assert never != always   # the answers reach the compiler


def test_loop_distribution_plugin_named_decisions_replay_and_callgrind(plugins, tmp_path):
    kernel = "mixed_rec_map"
    exe = tmp_path / "mixed"
    cmd = ["clang-19", "-O3", f"-fpass-plugin={ld.plugin(plugins)}", "-I", loops.ROOT,
           "-rdynamic", loops.ROOT / "driver.c", loops.ROOT / "kernels" / "mixed.c", "-o", exe]
    with PluginEnv(cmd, channel_env={"MLBRIDGE_LD_RUNNER": "pipe",
                                     "MLBRIDGE_LD_CHANNEL": "{channel}"},
                   env=tool_env(plugins), timeout=60,
                   reward=rewards.callgrind(lambda ep: [ep.output, kernel],
                                            function=kernel)) as env:
        assert env.advice_spec == TensorSpec("scores", "float", (ld.MAX_NODES,))
        assert isinstance(env.action_space, spaces.Box)
        rng = np.random.default_rng(1)
        ep = env.run(policy=lambda o, name: rng.random(ld.MAX_NODES).astype(np.float32))
        names = [s.decision for s in ep.steps]
        assert len(set(names)) == len(names)
        loops_asked = {n.split("#")[0] for n in names}
        assert any(f":{kernel}" in n for n in loops_asked), loops_asked
        assert all(n.count(":") >= 2 for n in loops_asked)   # <module>:<function>:<loop>
        recorded = exe.read_bytes()
        assert ep.reward == -callgrind([exe, kernel], function=kernel).ir
        assert loops.run(exe, kernel) == loops.run(exe, kernel)   # it runs

        replay = env.run(assignment=ep.assignment())
        assert exe.read_bytes() == recorded and replay.reward == ep.reward
        # One loop's decisions replayed, every other loop left to the default.
        first = names[0].split("#")[0]
        one = {n: a for n, a in ep.assignment().items() if n.split("#")[0] == first}
        part = env.run(assignment=one)
        assert [s.by for s in part.steps if s.decision.split("#")[0] == first] == \
            ["assignment"] * len(one)
        assert {s.by for s in part.steps if s.decision.split("#")[0] != first} <= {"default"}


def test_the_guide_example_runs(plugins, tmp_path, monkeypatch, capsys):
    # docs/gym.md's complete example as written (in a scratch folder).
    guide = (loops.ROOT.parents[1] / "docs" / "gym.md").read_text()
    example = guide.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "docs/gym.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines] == ["0", "1", "2"]
    assert all(int(ln.split()[-1]) > 0 for ln in lines)


@pytest.mark.parametrize("transport", ["pipe", "shm", "grpc"])
def test_serve_compiler_and_model_server_over_each_transport(e2e, transport):
    from mlbridge.toolchain import ModelServer, run_command, serve_compiler
    cmd = requests_command(e2e, transport, count=4)
    run = serve_compiler(lambda channel: [c.replace("{channel}", channel) for c in map(str, cmd)],
                         lambda obs: 2 * int(obs["i"][0]), transport=transport, timeout=30)
    assert run.returncode == 0 and '"ok":true' in run.stdout, run.stderr
    assert run.feature_names == ["i"] and run.decisions.tolist() == [0, 2, 4, 6]
    assert run.contexts == [f"request{k}" for k in range(4)]
    with ModelServer(lambda obs: 2 * int(obs["i"][0]), transport=transport,
                     timeout=30) as server:
        res = run_command([c.replace("{channel}", server.endpoint) for c in map(str, cmd)],
                          timeout=30)
    assert res.returncode == 0 and '"ok":true' in res.stdout, res.stderr
