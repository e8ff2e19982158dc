"""End to end: the phase-ordering plugin (integrations/llvm/phase_order, pass
"mlbridge-phase-order") in a real opt / clang of each LLVM version the build has plugins for (19, 22) on real C programs.

* The plugin's observation and action table are what the Python package
  documents (-mlbridge-po-describe).
* Every action runs and the optimized programs still print the reference
  output.
* One episode in clang -Oz, three agents: the shipped policy as a Python
  agent over pipes (PhaseOrderEnv), the same policy in-process through ONNX
  Runtime (MLBRIDGE_PO_MODEL), and compiled into the plugin: identical
  action sequences, .text sizes and object files. Over gRPC too when built.
* PhaseOrderEnv is a real gymnasium.Env (gymnasium's env checker); rewards
  add up to the .text change; STOP, an action that changes nothing, a
  second IR outliner and the step budget end episodes.
* A missing or failing agent: a warning, the module kept, a successful
  compile.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import plugins_of_each_llvm

E2E = Path(__file__).resolve().parent
REPO = E2E.parents[1]
PROGRAMS = E2E / "programs" / "plugins"
MODELS = REPO / "models" / "plugins"
POLICY_ONNX = MODELS / "phase_order_policy.onnx"
POLICY_JSON = MODELS / "phase_order_policy.json"

RUN_TIMEOUT = 60.0

# This file runs on every LLVM version the build has plugins for, with that
# version's opt and clang (conftest: opt, clang, plugin_corpus).
plugins = plugins_of_each_llvm()



@pytest.fixture(scope="module")
def shipped_policy(mlbridge_pkg):
    assert POLICY_JSON.is_file() and POLICY_ONNX.is_file(), \
        "models/plugins/phase_order_policy.{json,onnx} missing (docs/training.md)"
    from mlbridge.train.phase_order import PhasePolicy
    return PhasePolicy.from_dict(json.loads(POLICY_JSON.read_text()))


@pytest.fixture(scope="module")
def agent(shipped_policy):
    """The shipped network with a threshold low enough that it acts on the
    small test programs (the shipped threshold mostly says STOP there)."""
    return shipped_policy.with_threshold(-1.0).act


def run_tool(cmd, plugins, timeout=RUN_TIMEOUT, env=None):
    from mlbridge.llvm.plugins import tool_env
    return subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=timeout,
                          env=tool_env(plugins, env), stdin=subprocess.DEVNULL)


def run_ir(e2e, clang, ll: Path, flags, tmp: Path) -> str:
    exe = tmp / (ll.stem + ".exe")
    e2e.run_checked([clang, "-O0", *flags, str(ll), "-o", str(exe)])
    return e2e.run_checked([str(exe)], timeout=RUN_TIMEOUT)


def python_episode(env, agent, program: int):
    obs, info = env.reset(options={"program": program})
    done, total = False, 0.0
    while not done:
        obs, reward, terminated, truncated, info = env.step(agent(obs))
        total += reward
        done = terminated or truncated
    return total, info


# ---- what the plugin speaks ----------------------------------------------------------------


def test_plugin_description_matches_the_python_package(plugins, opt, tmp_path):
    from mlbridge.llvm.plugins import ACTIONS, OBSERVATION_NAMES, STOP_ACTION
    empty = tmp_path / "empty.ll"
    empty.write_text("")
    desc = tmp_path / "describe.json"
    res = run_tool([opt, f"-load-pass-plugin={plugins.phase_order}",
                    "-passes=mlbridge-phase-order", "-mlbridge-po-runner=default",
                    f"-mlbridge-po-describe={desc}", empty, "-o", os.devnull], plugins)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    d = json.loads(desc.read_text())
    assert tuple(d["observation"]) == OBSERVATION_NAMES
    assert tuple(a["name"] for a in d["actions"]) == ACTIONS
    assert d["stop"] == STOP_ACTION == 21
    assert all(a["pipeline"] for a in d["actions"][:STOP_ACTION])


def test_every_action_runs_and_programs_stay_correct(plugins, opt, clang, plugin_corpus,
                                                     plugin_reference_outputs, tmp_path, e2e):
    """A scripted Python agent applies all 21 actions, in order and then in
    reverse (an action that changes nothing ends the episode, so each order
    is replayed from where it stopped); the IR stays valid (opt verifies
    it) and the programs print the reference output (the outlining
    actions' effect on machine code: the clang tests below)."""
    from mlbridge.llvm.plugins import STOP_ACTION, PhaseOrderEnv
    names = list(plugin_corpus)
    orders = {"forward": list(range(STOP_ACTION)),
              "reverse": list(range(STOP_ACTION - 1, -1, -1))}
    with PhaseOrderEnv([plugin_corpus[n]["ir"] for n in names], max_steps=STOP_ACTION,
                       plugins=plugins,
                       compiler="opt", opt=opt, workdir=tmp_path) as env:
        for i, name in enumerate(names):
            for tag, order in orders.items():
                obs, info = env.reset(options={"program": i})
                for step, action in enumerate(order):
                    obs, reward, terminated, truncated, info = env.step(action)
                    if terminated:  # a no-op: the module is as it was
                        assert reward == 0.0 and step < len(order) - 1
                        break
                    assert truncated == (step == len(order) - 1)
                # Sizes may grow (inlining, unrolling).
                assert len(env.code_sizes) >= 2 and min(env.code_sizes) > 0
                out = Path(info["output"])
                kept = tmp_path / f"{name}.{tag}.ll"
                out.rename(kept)
                assert run_ir(e2e, clang, kept, plugin_corpus[name]["flags"], tmp_path) == \
                    plugin_reference_outputs[name], f"{name} after the {tag} sequence"


# ---- the outlining actions in clang ----------------------------------------------------------


def test_outlining_actions_in_clang_match_the_flag_and_keep_programs_correct(
        plugins, clang, plugin_corpus, plugin_reference_outputs, tmp_path, e2e):
    """In clang -Oz, the machine-outliner action gives the object of
    `-mllvm -enable-machine-outliner=always` byte for byte (the plugin sets
    the option for the module's code generation); with nooutline-small and
    the IR outliner too, the programs still print the reference output."""
    from mlbridge.train.phase_order import PhasePolicy
    from mlbridge.llvm.plugins import ACTIONS
    models = {}
    for tag, seq in {"machine": ["machine-outliner"],
                     "all": ["machine-outliner", "nooutline-small", "iroutliner"]}.items():
        models[tag] = tmp_path / f"{tag}.onnx"
        PhasePolicy.scripted([ACTIONS.index(a) for a in seq]).to_onnx(models[tag])
    for name, p in plugin_corpus.items():
        flag = tmp_path / f"{name}.flag.o"
        e2e.run_checked([clang, "-Oz", "-c", "-mllvm", "-enable-machine-outliner=always",
                         str(p["ir"]), "-o", str(flag)])
        for tag, model in models.items():
            out, log = tmp_path / f"{name}.{tag}.o", tmp_path / f"{name}.{tag}.log"
            res, entry = clang_episode(plugins, clang, p["ir"], out, log, "onnx", model,
                                       max_steps=3)
            assert "warning" not in res.stderr, res.stderr
            assert entry["actions"][0] == ACTIONS.index("machine-outliner"), entry
            if tag == "machine":
                assert out.read_bytes() == flag.read_bytes(), name
            else:
                exe = tmp_path / f"{name}.{tag}.exe"
                e2e.run_checked([clang, str(out), *p["flags"], "-o", str(exe)])
                assert e2e.run_checked([str(exe)], timeout=RUN_TIMEOUT) == \
                    plugin_reference_outputs[name], f"{name}: {entry['actions']}"


@pytest.mark.parametrize("without", [None, "ir-outliner"])
def test_start_from_the_best_flags_reproduces_their_object(plugins, clang, plugin_corpus,
                                                          shipped_policy, tmp_path, e2e, without):
    """-mlbridge-po-start with the best flags chosen on validation (and with
    them but the IR outliner, which the policy then runs as an action): STOP
    at once gives the object of `clang -Oz` with those flags byte for byte,
    and machine-outliner-off after the start that of the flags without the
    machine outliner (on code the outliners shrink, so the flags matter)."""
    from mlbridge.llvm.plugins import ACTIONS
    from mlbridge.train.baselines import FLAGS, load_best_flags
    from mlbridge.train.phase_order import PhasePolicy
    best = load_best_flags(19)   # (chosen for LLVM 19; the same flags on LLVM 22)
    assert "machine-outliner" in best and (without is None or without in best), best
    best = [n for n in best if n != without]
    stop, off = tmp_path / "stop.onnx", tmp_path / "off.onnx"
    shipped_policy.with_threshold(float("inf")).to_onnx(stop)
    PhasePolicy.scripted([ACTIONS.index("machine-outliner-off")]).to_onnx(off)
    sources = {n: p["ir"] for n, p in plugin_corpus.items()}
    sources["repeated_calls"] = E2E / "programs" / "sizes" / "repeated_calls.c"

    def flags(names):
        return [f for n in names for f in FLAGS[n]]
    grew = 0
    for name, src in sources.items():
        objs = {}
        for tag, extra in {"oz": [], "best": flags(best),
                           "no-mo": flags(n for n in best if n != "machine-outliner")}.items():
            objs[tag] = tmp_path / f"{name}.{tag}.o"
            e2e.run_checked([clang, "-Oz", "-c", *extra, str(src), "-o", str(objs[tag])])
        for tag, model in {"stop": stop, "off": off}.items():
            out, log = tmp_path / f"{name}.{tag}.o", tmp_path / f"{name}.{tag}.log"
            res, entry = clang_episode(plugins, clang, src, out, log, "onnx", model,
                                       start=best)
            assert "warning" not in res.stderr, res.stderr
            assert entry["start"] == ",".join(best), entry
            expected = objs["best"] if tag == "stop" else objs["no-mo"]
            assert out.read_bytes() == expected.read_bytes(), f"{name}: {tag} {entry}"
        grew += objs["best"].read_bytes() != objs["oz"].read_bytes()
    assert grew, "the best flags changed none of the objects: nothing was compared"
    if without == "ir-outliner":   # the IR outliner as the policy's action shrinks code
        from mlbridge.toolchain.measure import elf_text_size
        iro = tmp_path / "iro.onnx"
        PhasePolicy.scripted([ACTIONS.index("iroutliner")]).to_onnx(iro)
        out, log = tmp_path / "iro.o", tmp_path / "iro.log"
        res, entry = clang_episode(plugins, clang, sources["repeated_calls"], out, log, "onnx",
                                   iro, start=best)
        assert entry["actions"][0] == ACTIONS.index("iroutliner"), entry
        assert entry["code_size"][1] < entry["code_size"][0], entry
        assert elf_text_size(out) == entry["code_size"][-1]
    # An unknown flag name: a clear warning, no start, plain -Oz's object.
    out, log = tmp_path / "bogus.o", tmp_path / "bogus.log"
    res, entry = clang_episode(plugins, clang, sources["repeated_calls"], out, log, "onnx", stop,
                               start=["mergefunc", "bogus"])
    assert "unknown flag 'bogus'" in res.stderr and "left as it is" in res.stderr, res.stderr
    assert out.read_bytes() == (tmp_path / "repeated_calls.oz.o").read_bytes()


def test_missing_vocabulary_warns_and_the_agent_gets_counts_only(plugins, clang, plugin_corpus,
                                                                 tmp_path):
    """An agent that takes the embedding, without IR2Vec's vocabulary: a
    clear warning, the episode runs on the counts, the compile succeeds."""
    from mlbridge.llvm.plugins import NUM_OBSERVATIONS, EMBEDDING_DIM
    from mlbridge.train.phase_order import NUM_PASS_ACTIONS, PhasePolicy
    rng = np.random.default_rng(0)
    policy = PhasePolicy(rng.normal(size=(4, NUM_OBSERVATIONS)), np.zeros(4),
                         rng.normal(size=(NUM_PASS_ACTIONS, 4)), np.zeros(NUM_PASS_ACTIONS),
                         threshold=0.0, We=rng.normal(size=(4, EMBEDDING_DIM)))
    policy.to_onnx(tmp_path / "emb.onnx")
    p = plugin_corpus["minicalc"]
    env = dict(os.environ, MLBRIDGE_PO_ENABLE="1", MLBRIDGE_PO_MODEL=str(tmp_path / "emb.onnx"),
               MLBRIDGE_PO_VOCAB=str(tmp_path / "no-such-vocab.txt"),
               MLBRIDGE_PO_LOG=str(tmp_path / "log"))
    res = run_tool([clang, "-Oz", "-c", f"-fpass-plugin={plugins.phase_order}", p["ir"],
                    "-o", tmp_path / "o.o"], plugins, env=env)
    assert res.returncode == 0, res.stderr
    assert "warning: mlbridge-phase-order: IR2Vec vocabulary" in res.stderr, res.stderr
    assert "no-such-vocab.txt" in res.stderr and "counts only" in res.stderr, res.stderr
    entry = json.loads((tmp_path / "log").read_text().splitlines()[-1])
    assert entry["actions"] and entry["error"] == ""


# ---- the same episode, Python agent over pipes vs in-process agents ------------------------


def clang_episode(plugins, clang, ir, out, log, runner, model=None, max_steps=3, start=()):
    """One clang -Oz episode with an in-process agent, starting from the
    stock size flags ``start``; returns the log entry."""
    env = dict(os.environ, MLBRIDGE_PO_ENABLE="1", MLBRIDGE_PO_RUNNER=runner,
               MLBRIDGE_PO_LOG=str(log), MLBRIDGE_PO_SIZE="text",
               MLBRIDGE_PO_MAX_STEPS=str(max_steps), MLBRIDGE_PO_START=",".join(start))
    if model:
        env["MLBRIDGE_PO_MODEL"] = str(model)
    res = run_tool([clang, "-Oz", "-c", f"-fpass-plugin={plugins.phase_order}", ir,
                    "-o", out], plugins, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""
    return res, json.loads(log.read_text().splitlines()[-1])


@pytest.mark.parametrize("which", ["shipped", "eager"])
def test_python_agent_and_in_process_agents_take_identical_actions(
        plugins, clang, plugin_corpus, shipped_policy, agent, tmp_path, which):
    """The shipped policy (Python, ONNX, compiled in; from the flags it was
    trained to start from), and an eager variant of its network that acts
    on these programs (Python, ONNX): the same actions, the same .text after
    every step, byte-identical objects."""
    from mlbridge.llvm.plugins import STOP_ACTION, PhaseOrderEnv
    from mlbridge.train.phase_order import shipped_start
    names = list(plugin_corpus)
    start = ()
    if which == "shipped":
        act, model, runners = shipped_policy.act, POLICY_ONNX, ("onnx", "compiled")
        start = shipped_start()
    else:
        act, model, runners = agent, tmp_path / "eager.onnx", ("onnx",)
        shipped_policy.with_threshold(-1.0).to_onnx(model)
    distinct = set()
    with PhaseOrderEnv([plugin_corpus[n]["ir"] for n in names], max_steps=3, plugins=plugins,
                       clang=clang, workdir=tmp_path / "env", start=start) as env:
        for i, name in enumerate(names):
            total, info = python_episode(env, act, i)
            py_actions, py_sizes = list(env.actions), list(env.code_sizes)
            py_obj = Path(info["output"]).read_bytes()
            assert total == py_sizes[0] - py_sizes[-1]
            distinct.update(py_actions)
            for runner in runners:
                out = tmp_path / f"{name}.{runner}.o"
                log = tmp_path / f"{runner}.log"
                res, entry = clang_episode(plugins, clang, plugin_corpus[name]["ir"], out, log,
                                           runner, model if runner == "onnx" else None,
                                           start=start)
                if not plugins.has_runner(runner):
                    assert f"'{runner}' runner is not built" in res.stderr
                    continue
                assert "warning" not in res.stderr, res.stderr
                assert entry["runner"] == runner
                assert entry["actions"] == py_actions, (name, runner)
                assert entry["code_size"] == py_sizes, (name, runner)
                assert entry["fallbacks"] == 0 and entry["error"] == ""
                assert out.read_bytes() == py_obj, f"{name}: {runner} object differs"
    if which == "eager":  # several different actions were really taken
        assert len(distinct - {STOP_ACTION}) >= 2, distinct


def test_grpc_agent_takes_the_same_actions(plugins, opt, plugin_corpus, agent, tmp_path):
    """The Python agent over gRPC (mlbridge.grpc) when the plugin has the
    gRPC runner; otherwise asking for it is a clear diagnostic."""
    from mlbridge.llvm.plugins import PhaseOrderEnv
    p = plugin_corpus["minicalc"]
    if not plugins.has_runner("grpc"):
        res = run_tool([opt, f"-load-pass-plugin={plugins.phase_order}",
                        "-passes=mlbridge-phase-order", "-mlbridge-po-server=127.0.0.1:1",
                        p["ir"], "-S", "-o", tmp_path / "o.ll"], plugins)
        assert res.returncode == 0 and "'grpc' runner is not built" in res.stderr
        return
    seqs = {}
    for transport in ("pipe", "grpc"):
        with PhaseOrderEnv([p["ir"]], max_steps=3, plugins=plugins, compiler="opt", opt=opt,
                           transport=transport, workdir=tmp_path / transport) as env:
            python_episode(env, agent, 0)
            seqs[transport] = (list(env.actions), list(env.code_sizes))
    assert seqs["grpc"] == seqs["pipe"]


# ---- the gymnasium environment ------------------------------------------------------------------


def test_phase_order_env_passes_gymnasium_env_checker(plugins, opt, plugin_corpus, tmp_path):
    import gymnasium
    from gymnasium.utils.env_checker import check_env
    from mlbridge.llvm.plugins.phase_order import ENV_ID
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = gymnasium.make(ENV_ID, programs=[plugin_corpus["interp"]["ir"], plugin_corpus["csmith7"]["ir"]],
                             max_steps=4, plugins=plugins, compiler="opt", opt=opt,
                             render_mode="ansi",
                             workdir=tmp_path)
        try:
            check_env(env.unwrapped)
        finally:
            env.close()
    assert not [str(w.message) for w in caught if "gymnasium" in str(w.filename)]


def test_episode_semantics_stop_budget_and_rewards(plugins, opt, plugin_corpus, tmp_path, e2e):
    from mlbridge.llvm.plugins import OBSERVATION_NAMES, STOP_ACTION
    from mlbridge.llvm.plugins import PhaseOrderEnv
    from mlbridge.llvm.plugins.phase_order import OBSERVATION_SIZE
    p = plugin_corpus["minicalc"]
    with PhaseOrderEnv([p["ir"]], max_steps=3, plugins=plugins, compiler="opt", opt=opt,
                       workdir=tmp_path, render_mode="ansi") as env:
        # The step budget truncates.
        obs, info = env.reset(seed=1)
        assert obs.shape == (OBSERVATION_SIZE,) and obs.dtype.name == "float32"
        # IR2Vec's module vector follows the counts (the build's vocabulary).
        assert np.abs(obs[len(OBSERVATION_NAMES):]).sum() > 0
        assert obs[OBSERVATION_NAMES.index("tti_code_size")] > 0 and info["code_size"] > 0
        assert obs[OBSERVATION_NAMES.index("step")] == 0
        size0, total = info["code_size"], 0.0
        for k, action in enumerate((2, 0, 4)):
            obs, r, term, trunc, info = env.step(action)
            total += r
            assert obs[OBSERVATION_NAMES.index("step")] == k + 1
            assert term is False and trunc == (k == 2)
        assert total == size0 - info["code_size"] > 0
        assert "mem2reg-combine" in env.render()
        with pytest.raises(RuntimeError, match="reset"):
            env.step(0)
        # STOP at once: terminated, zero reward, the module as it came in.
        obs, info = env.reset()
        obs, r, term, trunc, info = env.step(STOP_ACTION)
        assert (term, trunc, r) == (True, False, 0.0)
        plain = tmp_path / "roundtrip.ll"
        e2e.run_checked([opt, str(p["ir"]), "-S", "-o", str(plain)])
        # (but for the module's machine-outliner decision, off as without
        # the flag, written as "nooutline" on its functions)
        assert Path(info["output"]).read_text().replace(' "nooutline"', "") == \
            plain.read_text()
        # An action outside the space is refused before it reaches opt.
        env.reset()
        with pytest.raises(ValueError):
            env.step(STOP_ACTION + 1)
        obs, r, term, trunc, info = env.step(STOP_ACTION)  # the episode goes on
        assert term


@pytest.mark.parametrize("runs", [1, None])
def test_the_ir_outliner_runs_a_limited_number_of_times(plugins, clang, tmp_path, e2e,
                                                        monkeypatch, runs):
    """From the v4 start (mergefunc + machine outliner), in clang -Oz: the IR
    outliner shrinks the module; with one run allowed, the lookahead then
    offers it no more (-1) and asking for it again ends the episode with
    the module kept; by default (two runs) it is offered again."""
    from mlbridge.llvm.plugins import ACTIONS, PhaseOrderEnv
    if runs is not None:
        monkeypatch.setenv("MLBRIDGE_PO_IR_OUTLINER_RUNS", str(runs))
    iro = ACTIONS.index("iroutliner")
    bc = tmp_path / "repeated_calls.bc"
    e2e.run_checked([clang, "-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-c",
                     str(E2E / "programs" / "sizes" / "repeated_calls.c"), "-o", str(bc)])
    with PhaseOrderEnv([bc], max_steps=4, plugins=plugins, clang=clang, lookahead=True,
                       start=["mergefunc", "machine-outliner"], workdir=tmp_path) as env:
        obs, info = env.reset()
        assert 0 <= info["lookahead"][iro] < info["code_size"], info["lookahead"]
        obs, r, term, trunc, info = env.step(iro)
        assert r > 0 and not (term or trunc)
        if runs is None:   # a second run is still offered (here it would change nothing)
            assert info["lookahead"][iro] >= 0, info["lookahead"]
            return
        assert info["lookahead"][iro] == -1, info["lookahead"]
        assert min(x for x in info["lookahead"] if x >= 0) > 0
        size = info["code_size"]
        obs, r, term, trunc, info = env.step(iro)
        assert (term, trunc, r) == (True, False, 0.0)
        assert info["code_size"] == size


# ---- fallback ------------------------------------------------------------------------------------


@pytest.mark.parametrize("args,message", [
    (["-mlbridge-po-model=/nonexistent/policy.onnx"], "cannot use the agent"),
    (["-mlbridge-po-channel=/nonexistent/chan"], "no FIFO"),
    (["-mlbridge-po-runner=banana"], "unknown runner 'banana'"),
    (["-mlbridge-po-model=" + str(REPO / "models" / "plugins" / "inliner_policy.onnx")],
     "does not fit the pass"),
])
def test_unusable_agent_leaves_the_module_and_warns(plugins, opt, plugin_corpus, tmp_path, e2e,
                                                    args, message):
    p = plugin_corpus["bitops"]
    out = tmp_path / "out.ll"
    res = run_tool([opt, f"-load-pass-plugin={plugins.phase_order}",
                    "-passes=mlbridge-phase-order", *args, p["ir"], "-S", "-o", out], plugins)
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""
    assert "warning: mlbridge-phase-order:" in res.stderr and message in res.stderr, res.stderr
    plain = tmp_path / "plain.ll"
    e2e.run_checked([opt, str(p["ir"]), "-S", "-o", str(plain)])
    # Left as it is but for the module's machine-outliner decision (off, as
    # without the flag), written as "nooutline" on its functions.
    text = out.read_text()
    assert text.replace(' "nooutline"', "") == plain.read_text()


def test_agent_that_misbehaves_mid_episode(plugins, opt, clang, plugin_corpus, plugin_reference_outputs,
                                           tmp_path, e2e):
    """An illegal action, then an agent that disappears: warnings, the
    actions applied so far are kept, the compile succeeds."""
    from mlbridge.llvm.plugins import tool_env
    p = plugin_corpus["interp"]
    for case in ("illegal", "dies"):
        out = tmp_path / f"{case}.ll"

        def one_action_then(iface):
            assert iface.evaluate(timeout=20) is not None
            iface.populate_buffer(2)  # mem2reg-combine
            assert iface.evaluate(timeout=20) is not None
            if case == "illegal":
                iface.populate_buffer(99)
                final = iface.evaluate(timeout=20)  # the done report
                assert final is not None and int(final["done"][0]) == 1
                iface.populate_buffer(0)
            iface.close()

        rc, stdout, stderr = e2e.run_against_pipe(
            lambda base: [opt, f"-load-pass-plugin={plugins.phase_order}",
                          "-passes=mlbridge-phase-order", f"-mlbridge-po-channel={base}",
                          p["ir"], "-S", "-o", out],
            one_action_then, timeout=RUN_TIMEOUT, env=tool_env(plugins))
        assert rc == 0, stderr
        assert stdout == ""
        expected = "action 99 is not one of the 22 actions" if case == "illegal" else \
            "the episode ends, the module keeps the actions applied so far"
        assert "warning: mlbridge-phase-order:" in stderr and expected in stderr, stderr
        if case == "dies":  # one warning for the runner, then quiet
            assert stderr.count("warning:") == 1, stderr
        assert run_ir(e2e, clang, out, p["flags"], tmp_path) == plugin_reference_outputs["interp"]


# ---- clang ----------------------------------------------------------------------------------------


def test_clang_fpass_plugin_make_j2_with_in_process_agent(plugins, clang, tmp_path, e2e,
                                                           plugin_reference_outputs):
    """clang -fpass-plugin runs the pass at the end of its pipeline
    (MLBRIDGE_PO_ENABLE) with the ONNX agent, on a multi-file make -j2."""
    if shutil.which("make") is None:
        pytest.fail("make not found (scripts/deps/plugins.apt installs it)", pytrace=False)
    src = tmp_path / "minicalc"
    shutil.copytree(PROGRAMS / "minicalc", src)
    log = tmp_path / "po.log"
    env = dict(os.environ, MLBRIDGE_PO_ENABLE="1", MLBRIDGE_PO_MODEL=str(POLICY_ONNX),
               MLBRIDGE_PO_LOG=str(log))
    res = run_tool(["make", "-j2", "-C", str(src), f"CC={clang}",
                    f"CFLAGS=-O1 -fpass-plugin={plugins.phase_order}"], plugins, timeout=240,
                   env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "warning" not in res.stderr, res.stderr
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(Path(e["module"]).name for e in entries) == \
        ["main.c", "matrix.c", "rpn.c", "strutil.c", "vec.c"]
    assert all(e["runner"] == "onnx" and e["actions"] and not e["error"] for e in entries)
    assert e2e.run_checked([str(src / "minicalc")]) == plugin_reference_outputs["minicalc"]
