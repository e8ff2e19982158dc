"""End to end: a register-allocation model that fails, in clang -fplugin
(issue 34 item 11), on every LLVM version the build has plugins for.

One warning per runner and compile, then quiet, and the built-in heuristic
decides the rest: a Python peer over pipes that dies after a few answers
(EOF), one that stops answering (every request would wait for the
timeout), and the compile stays short. A model that never answers legally
-- a Python peer answering an index past every choice (1000), an ONNX model
whose scores are all NaN -- is reported once as broken. The programs print
what their -O0 builds print; nothing goes to stdout.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from conftest import plugins_of_each_llvm

from mlbridge.llvm.plugins.regalloc import settings_env

E2E = Path(__file__).resolve().parent
PRESSURE = E2E / "programs" / "regalloc" / "pressure.c"
RUN_TIMEOUT = 120.0


plugins = plugins_of_each_llvm("regalloc")


@pytest.fixture(scope="module")
def ra(mlbridge_pkg):
    from mlbridge.llvm.plugins import regalloc
    return regalloc


@pytest.fixture(scope="module")
def want(plugins, tmp_path_factory, e2e):
    ref = tmp_path_factory.mktemp("ra-ref") / "ref"
    e2e.run_checked([plugins.tool("clang"), "-O0", str(PRESSURE), "-o", str(ref)])
    return e2e.run_checked([str(ref)], timeout=60)


def warnings(stderr: str):
    return [line for line in stderr.splitlines() if re.search(r"\bwarning:", line)]


def clang_cmd(plugins, exe: Path):
    return [plugins.tool("clang"), "-O2", f"-fplugin={plugins.regalloc}", "-mllvm",
            "-regalloc=mlbridge", "-mllvm", "-verify-machineinstrs", str(PRESSURE), "-o", str(exe)]


def check_output(e2e, exe: Path, want: str):
    assert e2e.run_checked([str(exe)], timeout=60) == want


def answers_then(ra, answers: int, close: bool):
    """A peer answering `answers` requests like first_legal, then closing
    its end (dead) or keeping it open without answering (stopped)."""
    def peer(iface):
        done = 0
        while done < answers:
            obs = iface.evaluate(timeout=30)
            if obs is not None:
                iface.populate_buffer(ra.first_legal(obs))
                done += 1
        if close:
            iface.close()
    return peer


@pytest.mark.parametrize("close", [True, False], ids=["dead", "stopped"])
def test_failing_peer_one_warning(plugins, ra, want, e2e, close, tmp_path):
    exe = tmp_path / "prog"
    log = tmp_path / "ra.jsonl"
    env = settings_env(plugins, MLBRIDGE_RA_POLICY="model", MLBRIDGE_RA_RUNNER="pipe",
                   MLBRIDGE_RA_TIMEOUT_MS=1500, MLBRIDGE_RA_LOG=log)

    def cmd(base):
        env["MLBRIDGE_RA_CHANNEL"] = base
        return clang_cmd(plugins, exe)

    t0 = time.monotonic()
    rc, stdout, stderr = e2e.run_against_pipe(cmd, answers_then(ra, 5, close),
                                              timeout=RUN_TIMEOUT, env=env)
    seconds = time.monotonic() - t0
    assert rc == 0, stderr
    assert stdout == ""
    w = warnings(stderr)
    assert len(w) == 1, stderr
    assert "mlbridge-regalloc:" in w[0] and "heuristic decides the rest of the compile" in w[0], w
    # One failed request, not one per decision (each would wait 1.5 s).
    assert seconds < 20, seconds
    import json
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert sum(x["model_failures"] for x in lines) == 1, lines
    assert len(lines) >= 4 and lines[-1]["runner"] == "heuristic", lines
    check_output(e2e, exe, want)


def nan_scores_onnx(path: Path):
    """A model whose scores are all NaN (0 / 0), whichever agent asks."""
    import onnx
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Sub", ["node_mask", "node_mask"], ["zero"]),
             helper.make_node("Div", ["zero", "zero"], ["scores"])]
    graph = helper.make_graph(
        nodes, "nan_scores",
        [helper.make_tensor_value_info("node_mask", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 64])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def check_broken_once(stderr: str, stdout: str, log: Path):
    import json
    assert stdout == ""
    w = warnings(stderr)
    assert len(w) == 1, stderr
    assert "mlbridge-regalloc" in w[0] and "no legal answer" in w[0] and "broken" in w[0], w
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert lines and all(x["illegal"] == x["asked"] > 0 for x in lines), lines


def test_illegal_peer_reported_broken_once(plugins, ra, want, e2e, tmp_path):
    from mlbridge.toolchain import ModelServer, run_command
    exe = tmp_path / "prog"
    log = tmp_path / "ra.jsonl"
    with ModelServer(lambda obs: 1000, timeout=RUN_TIMEOUT) as server:
        env = settings_env(plugins, MLBRIDGE_RA_POLICY="model", MLBRIDGE_RA_RUNNER="pipe",
                       MLBRIDGE_RA_CHANNEL=server.endpoint, MLBRIDGE_RA_TIMEOUT_MS=30000,
                       MLBRIDGE_RA_LOG=log)
        r = run_command(clang_cmd(plugins, exe), timeout=RUN_TIMEOUT, env=env)
    assert r.returncode == 0, r.stderr
    check_broken_once(r.stderr, r.stdout, log)
    check_output(e2e, exe, want)


def test_nan_model_reported_broken_once(plugins, want, e2e, tmp_path):
    from mlbridge.toolchain import run_command
    if not plugins.has_runner("onnx"):
        pytest.fail("the plugins were built without the ONNX runner")
    exe = tmp_path / "prog"
    log = tmp_path / "ra.jsonl"
    env = settings_env(plugins, MLBRIDGE_RA_POLICY="model", MLBRIDGE_RA_RUNNER="onnx",
                   MLBRIDGE_RA_MODEL=nan_scores_onnx(tmp_path / "nan.onnx"), MLBRIDGE_RA_LOG=log)
    r = run_command(clang_cmd(plugins, exe), timeout=RUN_TIMEOUT, env=env)
    assert r.returncode == 0, r.stderr
    check_broken_once(r.stderr, r.stdout, log)
    check_output(e2e, exe, want)
