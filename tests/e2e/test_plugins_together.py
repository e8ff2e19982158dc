"""End to end: both LLVM plugins (MLBridgeInlineAdvisor.so and
MLBridgePhaseOrder.so) loaded into ONE opt and ONE clang (of each LLVM version built) process, each
doing its job.

Both plugins contain the gRPC component; its generated protobuf code lives
in one shared library (libmlbridge_proto.so, src/grpc/CMakeLists.txt) so
that mlbridge.proto is registered once per process. Before that, loading
both aborted at start-up ("File already exists in database: mlbridge.proto").

* opt, phase-ordering plugin loaded first: LLVM's inliner wrapper
  (which asks the ML inline advisor's in-process model) runs before a
  scripted episode driven by a Python agent (over gRPC when built, so the
  protobuf code is in use): the advisor's log shows model decisions, the
  episode ends as scripted, the program still prints its reference output.
* opt, inline advisor loaded first, both with in-process models:
  default<Oz> then an episode; both logs, the reference output.
* clang -fpass-plugin twice on a multi-file program (make-like, one
  process per file): the inline advisor and the phase-ordering pass
  (OptimizerLast) each log their work for every file, no warnings, and the
  linked program prints its reference output.

A test of an in-process runner (compiled-in model or ONNX Runtime) is
skipped only when the build says that component is off.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import plugins_of_each_llvm

from build_components import require_component

E2E = Path(__file__).resolve().parent
REPO = E2E.parents[1]
PROGRAMS = E2E / "programs" / "plugins"
MODELS = REPO / "models" / "plugins"
RUN_TIMEOUT = 60.0

#: mem2reg-combine, scalar-cleanup, gvn-sccp, STOP: each changes the module
#: (an action that does not ends the episode). The inline advisor is asked
#: by the inliner wrapper of the pipeline prefix below (the "inline" action
#: runs LLVM's InlinerPass on its own, with LLVM's default advisor).
SCRIPTED_NAMES = ("mem2reg-combine", "scalar-cleanup", "gvn-sccp", "stop")


#: The build component each in-process runner of the plugins comes from.
RUNNER_COMPONENT = {"compiled": "compiled_model", "onnx": "onnx"}

# This file runs on every LLVM version the build has plugins for, with that
# version's opt and clang (conftest: opt, clang, plugin_corpus).
plugins = plugins_of_each_llvm()



def in_process_runner(plugins, runner):
    """Skipped only when the build says the runner's component is off."""
    require_component(RUNNER_COMPONENT[runner])
    assert plugins.has_runner(runner), \
        f"the build has {RUNNER_COMPONENT[runner]} but {plugins.source} says the plugins lack it"
    return runner


def reference_output(e2e, clang, sources, tmp: Path) -> str:
    exe = tmp / "reference.exe"
    e2e.run_checked([clang, "-O0", *map(str, sources), "-o", str(exe)])
    return e2e.run_checked([str(exe)], timeout=RUN_TIMEOUT)


def log_entries(path: Path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def inline_options(runner, log: Path):
    opts = [f"-mlbridge-inline-runner={runner}", f"-mlbridge-inline-log={log}"]
    if runner == "onnx":
        opts.append(f"-mlbridge-inline-model={MODELS / 'inliner_policy.onnx'}")
    return opts


def check_inline_log(log: Path, runner: str):
    entries = log_entries(log)
    assert entries, "the inline advisor was never used"
    assert all(e["runner"] == runner and e["fallbacks"] == 0 for e in entries), entries
    assert sum(e["model_decisions"] for e in entries) > 0, entries


@pytest.mark.parametrize("runner", ["compiled", "onnx"])
def test_opt_ml_inliner_then_a_python_phase_ordering_agent(plugins, opt, clang, e2e,
                                                        tmp_path, runner):
    """MLBridgePhaseOrder.so loaded first (by PhaseOrderEnv), then the inline
    advisor, asked by the inliner wrapper that runs before the episode."""
    from mlbridge.llvm.plugins import ACTIONS, PhaseOrderEnv, compile_to_ir
    in_process_runner(plugins, runner)
    scripted = [ACTIONS.index(a) for a in SCRIPTED_NAMES]
    src = PROGRAMS / "interp.c"
    ll = compile_to_ir(src, tmp_path / "interp.ll", clang=clang)
    inline_log = tmp_path / "inline.log"
    extra = [f"-load-pass-plugin={plugins.inline_advisor}", *inline_options(runner, inline_log)]
    transport = "grpc" if plugins.has_runner("grpc") else "pipe"
    with PhaseOrderEnv([ll], max_steps=len(scripted), plugins=plugins, compiler="opt",
                       opt=opt,
                       transport=transport, extra_args=extra, timeout=RUN_TIMEOUT,
                       pipeline_prefix="inliner-wrapper", workdir=tmp_path / "episode") as env:
        env.reset(options={"program": 0})
        for action in scripted:
            _, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        assert terminated, "the scripted episode ends with STOP"
        assert env.actions == scripted
        assert "warning" not in env.stderr, env.stderr
        exe = tmp_path / "interp.exe"
        e2e.run_checked([clang, "-O0", info["output"], "-o", str(exe)])
        assert e2e.run_checked([str(exe)], timeout=RUN_TIMEOUT) == \
            reference_output(e2e, clang, [src], tmp_path)
    check_inline_log(inline_log, runner)


@pytest.mark.parametrize("runner", ["compiled", "onnx"])
def test_opt_inliner_loaded_first_both_in_process(plugins, opt, clang, e2e, tmp_path,
                                                  runner):
    """The other load order, both plugins with in-process models:
    default<Oz> (the advisor decides) then the phase-ordering episode."""
    from mlbridge.llvm.plugins import compile_to_ir, tool_env
    in_process_runner(plugins, runner)
    src = PROGRAMS / "bitops.c"
    ll = compile_to_ir(src, tmp_path / "bitops.ll", clang=clang)
    inline_log, po_log, out = tmp_path / "inline.log", tmp_path / "po.log", tmp_path / "out.ll"
    cmd = [opt, f"-load-pass-plugin={plugins.inline_advisor}",
           f"-load-pass-plugin={plugins.phase_order}", *inline_options(runner, inline_log),
           f"-mlbridge-po-runner={runner}", f"-mlbridge-po-log={po_log}",
           "-passes=default<Oz>,mlbridge-phase-order", str(ll), "-S", "-o", str(out)]
    if runner == "onnx":
        cmd.insert(3, f"-mlbridge-po-model={MODELS / 'phase_order_policy.onnx'}")
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                         env=tool_env(plugins), stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "" and "warning" not in res.stderr, res.stderr
    check_inline_log(inline_log, runner)
    (episode,) = log_entries(po_log)
    assert episode["runner"] == runner and episode["error"] == "" and episode["actions"]
    exe = tmp_path / "bitops.exe"
    e2e.run_checked([clang, "-O0", str(out), "-o", str(exe)])
    assert e2e.run_checked([str(exe)], timeout=RUN_TIMEOUT) == \
        reference_output(e2e, clang, [src], tmp_path)


@pytest.mark.parametrize("runner", ["compiled", "onnx"])
def test_clang_runs_both_plugins_in_one_process(plugins, clang, e2e, tmp_path, runner):
    from mlbridge.llvm.plugins import tool_env
    in_process_runner(plugins, runner)
    sources = sorted((PROGRAMS / "minicalc").glob("*.c"))
    inline_log, po_log = tmp_path / "inline.log", tmp_path / "po.log"
    env = tool_env(plugins, {
        **os.environ,
        "MLBRIDGE_INLINE_RUNNER": runner, "MLBRIDGE_INLINE_LOG": str(inline_log),
        "MLBRIDGE_PO_ENABLE": "1", "MLBRIDGE_PO_RUNNER": runner,
        "MLBRIDGE_PO_LOG": str(po_log)})
    if runner == "onnx":
        env["MLBRIDGE_INLINE_MODEL"] = str(MODELS / "inliner_policy.onnx")
        env["MLBRIDGE_PO_MODEL"] = str(MODELS / "phase_order_policy.onnx")
    objects = []
    for src in sources:
        obj = tmp_path / (src.stem + ".o")
        res = subprocess.run([clang, "-Oz", f"-fpass-plugin={plugins.inline_advisor}",
                              f"-fpass-plugin={plugins.phase_order}", "-c", str(src),
                              "-o", str(obj)],
                             capture_output=True, text=True, timeout=RUN_TIMEOUT, env=env,
                             stdin=subprocess.DEVNULL)
        assert res.returncode == 0, res.stderr
        assert res.stdout == "" and "warning" not in res.stderr, res.stderr
        objects.append(obj)
    exe = tmp_path / "minicalc.exe"
    e2e.run_checked([clang, *map(str, objects), "-o", str(exe)])
    assert e2e.run_checked([str(exe)], timeout=RUN_TIMEOUT) == \
        reference_output(e2e, clang, sources, tmp_path)

    po = log_entries(po_log)
    # One phase-ordering episode per file; the advisor is created at least
    # once per file and decides with the model.
    assert sorted(Path(e["module"]).name for e in po) == sorted(s.name for s in sources)
    assert all(e["runner"] == runner and e["error"] == "" and e["fallbacks"] == 0
               and e["actions"] for e in po), po
    assert {Path(e["module"]).name for e in log_entries(inline_log)} == \
        {s.name for s in sources}
    check_inline_log(inline_log, runner)
