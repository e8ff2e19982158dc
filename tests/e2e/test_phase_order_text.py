"""Phase ordering measured on real .text, on real library code (bzip2 from
the corpus: pinned download, real clang-19).

* The environment's reward is the object's .text: the first observation's
  size is what plain ``clang-19 -Oz -c <source>`` writes (measured apart
  with llvm-size-19), the rewards add up to the change, and the episode's
  object file has exactly the last size.
* A short Ray training run (oracle episodes, fit with and without IR2Vec,
  validation selection) writes a policy that plain -Oz never beats on its
  validation modules.
* bzip2 built with ``make`` and the plugin in clang-19 -Oz (the shipped
  policy compiled in, an eager variant through ONNX Runtime that really
  reorders, and a fixed sequence through both outliners and function
  merging) passes bzip2's own ``make test``.
"""

import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import REPO_ROOT

MODELS = REPO_ROOT / "models" / "plugins"
LIBRARY = "bzip2"


@pytest.fixture(scope="module")
def corpus(bzip2_corpus):
    return bzip2_corpus


@pytest.fixture(scope="module")
def units(corpus):
    mods = {m.name.rsplit("/", 1)[-1]: m for m in corpus.modules(libraries=[LIBRARY])}
    assert {"bzlib.c", "compress.c", "decompress.c", "blocksort.c"} <= set(mods), sorted(mods)
    return mods


def llvm_size_text(obj):
    """.text bytes by llvm-size-19, independent of the package's ELF reader."""
    out = subprocess.run(["llvm-size-19", "-A", str(obj)], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return sum(int(m.group(1)) for m in re.finditer(r"^\.text\S*\s+(\d+)", out, re.M))


def test_reward_is_the_measured_text_difference(plugins, clang19, units, tmp_path):
    from mlbridge.llvm.plugins import STOP_ACTION, PhaseOrderEnv
    m = units["compress.c"]
    plain = tmp_path / "plain.o"
    subprocess.run([clang19, "-Oz", "-c", *m.flags, str(m.source), "-o", str(plain)],
                   check=True, timeout=120)
    with PhaseOrderEnv([m.ir()], max_steps=3, plugins=plugins, clang=clang19,
                       lookahead=True, workdir=tmp_path) as env:
        obs, info = env.reset()
        assert info["code_size"] == llvm_size_text(plain) > 0
        assert info["lookahead"].shape == (STOP_ACTION,) and (info["lookahead"] > 0).all()
        total = 0.0
        for action in (7, 16, 15):   # loop-rotate-licm, mergefunc, oz
            obs, reward, terminated, truncated, info = env.step(action)
            total += reward
            if terminated or truncated:
                break
        if not (terminated or truncated):
            obs, reward, terminated, truncated, info = env.step(STOP_ACTION)
        assert terminated or truncated
        final = llvm_size_text(env.output_path)
        assert final == info["code_size"] == env.code_sizes[-1]
        assert total == env.code_sizes[0] - final
        assert len(env.code_sizes) >= 2


def test_short_ray_training_run_selects_on_validation(plugins, units, tmp_path, monkeypatch):
    from mlbridge.train.phase_order import PhasePolicy, train
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    train_mods = [units[n] for n in ("compress.c", "blocksort.c", "huffman.c")]
    val_mods = [units[n] for n in ("bzlib.c", "decompress.c")]
    out = tmp_path / "run"
    summary = train(train_mods, val_mods, plugin=plugins, out_dir=out,
                    workers=2, max_steps=2, thresholds=(0.05,), hidden=8,
                    progress_bars=False)
    stages = [json.loads(line)["stage"] for line in (out / "log.jsonl").read_text().splitlines()]
    assert stages[:3] == ["oracle", "validation-baselines", "fit"] and stages[-1] == "done"
    oracle = json.loads((out / "log.jsonl").read_text().splitlines()[0])
    assert oracle["episodes"] == 3 and oracle["oracle_text"] <= oracle["start_text"]
    # Both observations (counts; counts and IR2Vec) compared on validation.
    assert set(summary["validation"]) == {"counts", "counts+ir2vec"}
    rows = {(v, str(r["threshold"])): r["text"] for v, rs in summary["validation"].items()
            for r in rs}
    assert {t for _, t in rows} == {"inf", "0.05"}
    chosen = rows[summary["variant"],
                  "inf" if summary["threshold"] == float("inf") else "0.05"]
    assert chosen == min(rows.values())   # never worse than -Oz on validation
    policy = PhasePolicy.from_dict(json.loads((out / "policy.json").read_text()))
    assert policy.threshold == summary["threshold"]
    assert policy.uses_embedding == (summary["variant"] == "counts+ir2vec")
    assert (out / "policy.onnx").stat().st_size > 0 and (out / "oracle.npz").is_file()


def test_es_fine_tuning_of_the_shipped_policy_selects_the_validated_smallest(
        plugins, units, tmp_path, monkeypatch):
    """The ES stage (--warm-start): two iterations, one antithetic pair, two
    small training modules, every iterate validated."""
    import numpy as np
    from mlbridge.train.phase_order import PhasePolicy, train
    from mlbridge.train.phase_order.finetune import ESConfig, head
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    d = json.loads((MODELS / "phase_order_policy.json").read_text())
    warm = PhasePolicy.from_dict(d)
    out = tmp_path / "run"
    summary = train([units[n] for n in ("huffman.c", "blocksort.c")],
                    [units[n] for n in ("crctable.c", "huffman.c")], plugin=plugins,
                    out_dir=out, workers=2, max_steps=d["max_steps"], start=d["start"],
                    progress_bars=False, warm_start=warm,
                    es=ESConfig(iterations=2, pairs=1, modules_per_iteration=2,
                                change=0.3, eval_every=1))
    rows = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["stage"] for r in rows] == ["oracle", "validation-baselines", "es-warm-start",
                                          "es", "es", "done"]
    es_rows = rows[3:5]
    assert [r["iteration"] for r in es_rows] == [1, 2]
    for r in es_rows:
        assert r["sigma"] > 0 and len(r["modules"]) == 2 and "validation_text" in r
        assert -1 < r["train_reward"] < 1
    # The iterate moved away from the warm start.
    last = PhasePolicy.from_dict(json.loads((out / "candidate-it2.json").read_text()))
    assert not np.allclose(head(last), head(warm))
    # Selection: the smallest validated total, the warm start among the candidates.
    totals = {int(k): v for k, v in summary["validation_candidates"].items()}
    assert set(totals) == {0, 1, 2} and totals[0] == rows[2]["validation_text"]
    assert summary["validation_text"] == min(totals.values())
    assert totals[summary["selected_iteration"]] == summary["validation_text"]
    chosen = PhasePolicy.from_dict(json.loads((out / "policy.json").read_text()))
    assert np.allclose(head(chosen), head(PhasePolicy.from_dict(json.loads(
        (out / f"candidate-it{summary['selected_iteration']}.json").read_text()))))
    assert json.loads((out / "policy.json").read_text())["start"] == d["start"]


@pytest.mark.parametrize("which", ["shipped", "eager", "outline"])
def test_bzip2_built_with_the_plugin_passes_its_tests(plugins, clang19, corpus, tmp_path,
                                                      e2e, which):
    if shutil.which("make") is None:
        pytest.fail("make not found (scripts/deps/plugins.apt installs it)", pytrace=False)
    from mlbridge.train.phase_order import PhasePolicy
    lib = corpus.libraries[LIBRARY]
    src = tmp_path / "bzip2"
    shutil.copytree(corpus.source_dir(lib) / "bzip2-1.0.8", src)
    log = tmp_path / "po.log"
    env = dict(os.environ, MLBRIDGE_PO_ENABLE="1", MLBRIDGE_PO_LOG=str(log),
               MLBRIDGE_PO_MAX_STEPS="3")
    if which == "shipped":   # from the flags it was trained to start from
        from mlbridge.train.phase_order import shipped_start
        runner = "compiled" if plugins.has_runner("compiled") else "onnx"
        env.update(MLBRIDGE_PO_RUNNER=runner, MLBRIDGE_PO_START=",".join(shipped_start()),
                   MLBRIDGE_PO_MODEL=str(MODELS / "phase_order_policy.onnx"))
    elif which == "eager":
        runner = "onnx"
        shipped = PhasePolicy.from_dict(
            json.loads((MODELS / "phase_order_policy.json").read_text()))
        shipped.with_threshold(-1.0).to_onnx(tmp_path / "eager.onnx")
        env.update(MLBRIDGE_PO_RUNNER="onnx", MLBRIDGE_PO_MODEL=str(tmp_path / "eager.onnx"))
    else:   # every file through both outliners and function merging
        from mlbridge.llvm.plugins import ACTIONS
        runner = "onnx"
        PhasePolicy.scripted([ACTIONS.index(a) for a in (
            "machine-outliner", "nooutline-small", "iroutliner", "mergefunc")]).to_onnx(
                tmp_path / "outline.onnx")
        env.update(MLBRIDGE_PO_RUNNER="onnx", MLBRIDGE_PO_MODEL=str(tmp_path / "outline.onnx"))
    from mlbridge.llvm.plugins import tool_env
    make = ["make", "-C", str(src), f"CC={clang19}",
            f"CFLAGS=-Oz -w -D_FILE_OFFSET_BITS=64 -fpass-plugin={plugins.phase_order}"]
    res = subprocess.run([*make, "-j2", "bzip2"], capture_output=True, text=True,
                         timeout=400, env=tool_env(plugins, env))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "warning: mlbridge-phase-order" not in res.stderr, res.stderr
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(os.path.basename(e["module"]) for e in entries) == sorted(
        f"{n}.c" for n in ("blocksort", "huffman", "crctable", "randtable", "compress",
                           "decompress", "bzlib", "bzip2"))
    assert all(e["runner"] == runner and not e["error"] for e in entries)
    if which == "eager":   # the network really reorders bzip2's code
        assert sum(len(e["actions"]) > 1 for e in entries) >= 3, entries
    if which == "outline":
        assert all(e["actions"][0] == 18 for e in entries), entries
    res = subprocess.run([*make, "test"], capture_output=True, text=True, timeout=300,
                         env=tool_env(plugins, env))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "cmp" in res.stdout and "differ" not in res.stdout + res.stderr


def test_a_compiler_with_a_lot_to_say_does_not_block_the_episode(plugins, clang19, tmp_path):
    """Hundreds of KB of warnings on stderr (more than a pipe holds) while
    the compiler waits for actions: the episode runs, the warnings are kept."""
    from mlbridge.llvm.plugins import PhaseOrderEnv
    src = tmp_path / "noisy.c"
    body = "".join(f"  int unused{i};\n" for i in range(3000))
    src.write_text(f"int f(int x) {{\n{body}  return x * 3;\n}}\n")
    with PhaseOrderEnv([src], max_steps=2, plugins=plugins, clang=clang19, timeout=60,
                       compile_flags=["-Wunused-variable"], workdir=tmp_path) as env:
        env.reset()
        _, _, terminated, truncated, info = env.step(17)
        assert terminated and info["code_size"] > 0
    assert env.stderr.count("warning: unused variable") == 3000
