"""End to end: the deployed configuration is the measured configuration
(issue 37, item 1), on LLVM 19 and 22.

* The phase-ordering plugin loaded as docs/llvm-plugins.md says (``clang -Oz
  -fpass-plugin=MLBridgePhaseOrder.so`` with ``MLBRIDGE_PO_ENABLE=1`` and no
  other setting) runs its built-in model with the settings the model was
  trained and measured with -- the start flags and step budget its
  ``policy.json`` records -- and says so in its log line; its object is
  byte for byte the one of the configuration the training harness measured
  (those settings given explicitly).
* An explicit setting still overrides the model's (environment and
  command-line option), and the log line says where each came from.
* ``mlbridge.train.evaluate``'s shipped-model configurations are the
  documented command exactly, and it refuses to measure a plugin
  configuration with settings the documented command does not have unless
  the caller names it an experiment.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import plugins_of_each_llvm

E2E = Path(__file__).resolve().parent
REPO = E2E.parents[1]
POLICY_JSON = REPO / "models" / "plugins" / "phase_order_policy.json"
#: A unit on which the shipped policy's start flags change the object (the
#: machine outliner shrinks its repeated call sequences).
UNIT = E2E / "programs" / "sizes" / "repeated_calls.c"
TIMEOUT = 120.0


plugins = plugins_of_each_llvm()


@pytest.fixture(scope="module")
def harness_plugins(mlbridge_pkg):
    """The plugins of the compiler mlbridge.train measures with
    ($MLBRIDGE_CLANG, LLVM 19 by default)."""
    from build_components import require_built
    from mlbridge.llvm.plugins import find_plugins
    from mlbridge.toolchain import toolchain
    major = toolchain().major
    return require_built("llvm_plugins" if major == 19 else f"llvm_plugins_llvm{major}",
                         find_plugins)


@pytest.fixture(scope="module")
def policy():
    return json.loads(POLICY_JSON.read_text())


def user_env(**settings):
    """A user's environment: none of this process's plugin settings, only
    ``settings``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLBRIDGE_")}
    env.update(settings)
    return env


def clang_po(plugins, clang, out: Path, env, extra=()):
    """``clang -Oz -fpass-plugin=MLBridgePhaseOrder.so -c UNIT`` (the
    documented command) in ``env``; returns (object bytes, .text, log line)."""
    from mlbridge.llvm.plugins import tool_env
    from mlbridge.toolchain.measure import elf_text_size
    log = out.with_suffix(".log")
    env = dict(env, MLBRIDGE_PO_LOG=str(log))   # a log changes no object
    res = subprocess.run([clang, "-Oz", f"-fpass-plugin={plugins.phase_order}", *extra,
                          "-c", str(UNIT), "-o", str(out)], capture_output=True, text=True,
                         timeout=TIMEOUT, env=tool_env(plugins, env), stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    assert "warning" not in res.stderr, res.stderr
    (line,) = [json.loads(x) for x in log.read_text().splitlines()]
    return out.read_bytes(), elf_text_size(out), line


def test_documented_command_is_the_measured_configuration(plugins, clang, policy, tmp_path):
    from mlbridge.train.phase_order import plugin_env
    if not plugins.has_runner("compiled"):
        pytest.fail("the plugin has no compiled-in model (mlbridge-model-compiler)")
    start = ",".join(policy["start"])
    assert start, "the shipped policy records its start flags"
    obj, text, line = clang_po(plugins, clang, tmp_path / "documented.o",
                               user_env(MLBRIDGE_PO_ENABLE="1"))
    assert line["runner"] == "compiled"
    assert line["start"] == start, line
    assert line["start_from"] == "model", line
    assert line["max_steps"] == policy["max_steps"] and line["max_steps_from"] == "model", line
    # What the results tables were measured with: the harness's settings for
    # the shipped model, given explicitly.
    measured_env = plugin_env(None, policy["max_steps"], base=user_env(),
                              start=policy["start"])
    m_obj, m_text, m_line = clang_po(plugins, clang, tmp_path / "measured.o", measured_env)
    assert m_line["start"] == start and m_line["start_from"] == "environment"
    assert line["actions"] == m_line["actions"]
    assert text == m_text
    assert obj == m_obj, "the documented command's object differs from the measured one"
    # The unit is one the start flags matter on.
    _, plain_text, plain_line = clang_po(plugins, clang, tmp_path / "plain.o",
                                         user_env(MLBRIDGE_PO_ENABLE="1",
                                                  MLBRIDGE_PO_START="none"))
    assert plain_line["start"] == "" and plain_line["start_from"] == "environment"
    assert text < plain_text


def test_an_explicit_setting_overrides_the_models(plugins, clang, opt, policy, tmp_path):
    if not plugins.has_runner("compiled"):
        pytest.fail("the plugin has no compiled-in model (mlbridge-model-compiler)")
    _, _, line = clang_po(plugins, clang, tmp_path / "env.o",
                          user_env(MLBRIDGE_PO_ENABLE="1", MLBRIDGE_PO_START="mergefunc",
                                   MLBRIDGE_PO_MAX_STEPS="1"))
    assert line["start"] == "mergefunc" and line["start_from"] == "environment", line
    assert line["max_steps"] == 1 and line["max_steps_from"] == "environment", line
    assert len([a for a in line["actions"] if a != 21]) <= 1
    # The command-line option wins over the environment (opt takes -mllvm
    # options directly).
    from mlbridge.llvm.plugins import tool_env
    ll = tmp_path / "unit.ll"
    subprocess.run([clang, "-Oz", "-Xclang", "-disable-llvm-passes", "-S", "-emit-llvm",
                    str(UNIT), "-o", str(ll)], check=True, timeout=TIMEOUT)
    log = tmp_path / "opt.log"
    res = subprocess.run([opt, f"-load-pass-plugin={plugins.phase_order}",
                          "-mlbridge-po-start=machine-outliner", "-passes=mlbridge-phase-order",
                          str(ll), "-o", str(tmp_path / "out.bc")],
                         capture_output=True, text=True, timeout=TIMEOUT,
                         env=tool_env(plugins, user_env(MLBRIDGE_PO_START="mergefunc",
                                                        MLBRIDGE_PO_LOG=str(log))),
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    (line,) = [json.loads(x) for x in log.read_text().splitlines()]
    assert line["start"] == "machine-outliner" and line["start_from"] == "option", line
    assert line["max_steps"] == policy["max_steps"] and line["max_steps_from"] == "model"


# ---- the measurement harness ---------------------------------------------------------------


def test_harness_shipped_configurations_are_the_documented_command(harness_plugins,
                                                                  monkeypatch):
    """What mlbridge.train.evaluate adds to the compiler's environment for
    the shipped models: exactly the documented MLBRIDGE_PO_ENABLE=1."""
    from mlbridge.train import baselines, evaluate
    for k in [k for k in os.environ if k.startswith("MLBRIDGE_")]:
        monkeypatch.delenv(k)
    shipped = (evaluate.INLINER, evaluate.PHASE_ORDER, baselines.combined_config())
    for cfg in shipped:
        env = cfg.env(harness_plugins)
        added = {k: v for k, v in env.items() if k.startswith("MLBRIDGE_")}
        want = {"MLBRIDGE_PO_ENABLE": "1"} if "phase-order" in cfg.plugins else {}
        assert added == want, (cfg.name, added)
    for cfg in shipped:
        loaded = [p for name, p in (("inliner", harness_plugins.inline_advisor),
                                    ("phase-order", harness_plugins.phase_order))
                  if name in cfg.plugins]
        assert cfg.args(harness_plugins) == [f"-fpass-plugin={p}" for p in loaded]
        assert not cfg.experiment and not cfg.undocumented()


def test_harness_refuses_what_a_user_could_not_reproduce(harness_plugins, monkeypatch):
    import dataclasses
    from types import SimpleNamespace
    from mlbridge.train import evaluate
    unit = SimpleNamespace(name="tiny/repeated_calls.c", library="tiny", source=UNIT,
                           flags=[], content_key="")
    for k in [k for k in os.environ if k.startswith("MLBRIDGE_")]:
        monkeypatch.delenv(k)
    steps = dataclasses.replace(evaluate.PHASE_ORDER, name="po 5 steps", phase_order_steps=5)
    with pytest.raises(evaluate.NotReproducible, match="MLBRIDGE_PO_MAX_STEPS"):
        evaluate.measure([unit], [evaluate.PLAIN, steps], plugins=harness_plugins, cache=None)
    # A setting in the caller's environment would reach the compiler too.
    monkeypatch.setenv("MLBRIDGE_PO_IR_OUTLINER_RUNS", "1")
    with pytest.raises(evaluate.NotReproducible, match="MLBRIDGE_PO_IR_OUTLINER_RUNS"):
        evaluate.measure([unit], [evaluate.PLAIN, evaluate.PHASE_ORDER], plugins=harness_plugins,
                         cache=None)
    monkeypatch.delenv("MLBRIDGE_PO_IR_OUTLINER_RUNS")
    # Named as an experiment it is measured, and says so.
    exp = steps.as_experiment()
    assert exp.experiment and exp.name.endswith("(experiment)")
    rows = evaluate.measure([unit], [evaluate.PLAIN, exp], plugins=harness_plugins, cache=None)
    assert "error" not in rows[0]["results"][exp.name], rows
    summary = evaluate.summarize(rows, [evaluate.PLAIN.name, exp.name])
    assert "(experiment)" in evaluate.markdown_table(summary)


def test_the_other_harnesses_measure_their_shipped_models_as_documented(monkeypatch):
    """Loop distribution and register allocation: the harnesses compile
    with the built-in model by giving the plugin no setting at all (their
    documented commands: clang -O3 -fpass-plugin=MLBridgeLoopDistribution.so;
    -regalloc=mlbridge), and a caller's own settings never reach the
    compiler."""
    from mlbridge.llvm.plugins import regalloc
    from mlbridge.train.loop_distribution import serve
    monkeypatch.setenv("MLBRIDGE_LD_RUNNER", "default")
    assert not [k for k in serve._env() if k.startswith("MLBRIDGE_LD_")]
    assert regalloc._policy_env(None, None) == {}
