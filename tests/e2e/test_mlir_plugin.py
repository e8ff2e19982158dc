"""End to end: the MLIR pass plugin (integrations/mlir) in Debian's stock
mlir-opt-19, on the kernels of integrations/mlir/kernels.

* It loads with --load-pass-plugin and registers mlbridge-affine-unroll.
* With the default policy (no model, runner=default) its output is exactly
  MLIR's own affine-loop-unroll's, on every kernel.
* Each runner asks the model once per innermost loop and applies the answer:
  pipe (bitstream and JSON) and gRPC to a Python policy, ONNX Runtime and
  the compiled-in model (when built) deciding as the same ONNX model does
  in Python.
* Kernels compiled with model decisions print the same checksums (exact
  hex floats) as without the pass.
* A missing channel / model file, a dead or silent peer, an out-of-range
  answer: a warning, factor 4 for the rest, mlir-opt-19 succeeds.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from build_components import require_built

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "models" / "mlir" / "unroll_policy.onnx"
#: Kernels whose lowered builds the result checks compile (a few seconds each).
RESULT_KERNELS = ("matmul", "jacobi2d", "conv2d", "reduce_rows")


@pytest.fixture(scope="module")
def mlir(mlbridge_pkg):
    import mlbridge.mlir as m
    return m, require_built("mlir_plugin", m.find_plugin)


@pytest.fixture(scope="module")
def kernels(mlir, tmp_path_factory):
    m, _ = mlir
    out = tmp_path_factory.mktemp("kernels")
    paths = {}
    for name in m.kernel_names():
        p = out / f"{name}.mlir"
        p.write_text(m.kernel_source(name))
        paths[name] = p
    assert len(paths) >= 8, f"expected the kernel set, found {sorted(paths)}"
    return paths


def run_opt(cmd, timeout=60.0, env=None):
    res = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=timeout,
                         stdin=subprocess.DEVNULL, env=env)
    return res


def log_lines(path: Path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_plugin_loads_and_registers_the_pass(mlir, e2e):
    m, info = mlir
    # The plugin exports only its entry point and links no MLIR/LLVM library.
    e2e.check_mlir_unroll_plugin_loads(m.find_llvm_tool("mlir-opt-19"), info.unroll)
    needed = subprocess.run(["readelf", "-d", str(info.unroll)], capture_output=True,
                            text=True, check=True).stdout
    assert "libMLIR" not in needed and "libLLVM" not in needed


def test_pass_describes_the_python_protocol(mlir, kernels, tmp_path):
    """describe=FILE writes the protocol Python speaks, and changes nothing."""
    m, info = mlir
    src, path = kernels["matmul"], tmp_path / "protocol.json"
    plain, described = tmp_path / "plain.mlir", tmp_path / "described.mlir"
    for out, opts in ((plain, {}), (described, {"describe": path})):
        res = run_opt(m.unroll_command(info, src, out, runner="default", **opts))
        assert res.returncode == 0 and res.stderr == "", res.stderr
    assert described.read_text() == plain.read_text()
    assert json.loads(path.read_text()) == m.description()
    res = run_opt(m.unroll_command(info, src, plain, runner="default",
                                   describe=tmp_path / "no" / "such" / "dir.json"))
    assert res.returncode == 0 and "cannot write the protocol to" in res.stderr, res.stderr


def test_default_policy_is_affine_loop_unroll(mlir, kernels, tmp_path):
    m, info = mlir
    for name, src in kernels.items():
        ours, ref, log = tmp_path / f"{name}.ours", tmp_path / f"{name}.ref", tmp_path / "log"
        res = run_opt(m.unroll_command(info, src, ours, runner="default", log=log))
        assert res.returncode == 0 and res.stdout == "", res.stderr
        res = run_opt([m.find_llvm_tool("mlir-opt-19"), str(src),
                       "--pass-pipeline=builtin.module(func.func(affine-loop-unroll))",
                       "-o", str(ref)])
        assert res.returncode == 0, res.stderr
        assert ours.read_text() == ref.read_text(), f"{name}: differs from affine-loop-unroll"
        assert ours.read_text() != src.read_text(), f"{name}: nothing unrolled"
    entries = log_lines(tmp_path / "log")
    assert len(entries) == len(kernels)
    assert all(e["runner"] == "default" and set(e["factors"]) == {4} for e in entries)


def _policy_by_trip(f):
    # A real decision that depends on the features: small trip counts get
    # factor 2, divisible ones 8, the rest 1.
    if 0 < f["trip_count"] <= 8:
        return 1
    return 3 if f["trip_count"] % 8 == 0 else 0


@pytest.mark.parametrize("transport,serdes", [("pipe", "bitstream"), ("pipe", "json"),
                                              ("grpc", "protobuf")])
def test_model_decides_each_loop(mlir, kernels, tmp_path, transport, serdes):
    m, info = mlir
    if transport == "grpc" and not info.has_runner("grpc"):
        pytest.fail("the gRPC runner is not built into the plugin", pytrace=False)
    src = kernels["matmul"]
    out, log = tmp_path / "out.mlir", tmp_path / "log"
    run = m.serve_unroll(info, src, out, _policy_by_trip, transport=transport,
                         serdes="bitstream" if serdes == "protobuf" else serdes,
                         options={"log": str(log)})
    assert run.stdout == ""
    assert list(run.feature_names) == list(m.FEATURES)
    entry, = log_lines(log)
    assert entry["runner"] == transport and entry["fallbacks"] == 0
    # One request per innermost loop, in the pass's order, answered as told.
    assert len(entry["factors"]) == len(run.decisions) > 3
    assert entry["factors"] == [m.UNROLL_FACTORS[d] for d in run.decisions]
    # matmul: the kernel's loops run 48 times (factor 8), the helpers'
    # loops have no constant trip count (factor 1).
    assert set(entry["factors"]) == {1, 8}
    # The features are the loops': the kernel's innermost loops run 48 times
    # (j) under 40 x 36 or 40 outer iterations.
    kernel_rows = run.features[[c == "kernel" for c in run.contexts]]
    idx = {n: i for i, n in enumerate(run.feature_names)}
    assert sorted(kernel_rows[:, idx["trip_count"]].tolist()) == [48, 48]
    assert sorted(kernel_rows[:, idx["outer_trips"]].tolist()) == [40, 40 * 36]
    assert set(run.contexts) == {"kernel", "fill1", "fill2", "fill3", "check1"}


def test_model_decisions_keep_results(mlir, kernels, tmp_path):
    m, info = mlir
    for name in RESULT_KERNELS:
        src = kernels[name]
        plain = m.run_output(m.build_executable(src, tmp_path / f"{name}-plain"))
        assert plain.strip(), f"{name} printed nothing"
        for label, policy in (("f16", lambda f: 4), ("mixed", _policy_by_trip)):
            out = tmp_path / f"{name}-{label}.mlir"
            m.serve_unroll(info, src, out, policy)
            got = m.run_output(m.build_executable(out, tmp_path / f"{name}-{label}"))
            assert got == plain, f"{name} with {label} unrolling computes other results"


def test_missing_channel_falls_back(mlir, kernels, tmp_path):
    m, info = mlir
    src = kernels["matmul"]
    ours, ref, log = tmp_path / "ours", tmp_path / "ref", tmp_path / "log"
    start = time.monotonic()
    res = run_opt(m.unroll_command(info, src, ours, channel=tmp_path / "nobody", log=log))
    assert time.monotonic() - start < 20
    assert res.returncode == 0 and res.stdout == ""
    assert "no FIFO" in res.stderr and "using factor 4" in res.stderr
    run_opt(m.unroll_command(info, src, ref, runner="default"))
    assert ours.read_text() == ref.read_text()
    assert log_lines(log)[0]["runner"] == "default"


def test_missing_model_file_falls_back(mlir, kernels, tmp_path):
    m, info = mlir
    if not info.has_runner("onnx"):
        pytest.fail("the ONNX runner is not built into the plugin", pytrace=False)
    src = kernels["matmul"]
    ours, ref = tmp_path / "ours", tmp_path / "ref"
    res = run_opt(m.unroll_command(info, src, ours, runner="onnx", model=tmp_path / "no.onnx"))
    assert res.returncode == 0 and res.stdout == ""
    assert "cannot use the model" in res.stderr
    run_opt(m.unroll_command(info, src, ref, runner="default"))
    assert ours.read_text() == ref.read_text()


def _serve_then(mlir, kernels, tmp_path, answer, e2e):
    """Runs the pass over pipes against a peer that answers the first
    request with `answer(iface)` and then misbehaves; returns (proc result,
    log entry, output, reference output)."""
    m, info = mlir
    src = kernels["matmul"]
    out, ref, log = tmp_path / "out", tmp_path / "ref", tmp_path / "log"

    def first_then(iface):
        assert iface.evaluate() is not None
        answer(iface)

    rc, stdout, stderr = e2e.run_against_pipe(
        lambda base: m.unroll_command(info, src, out, channel=base, log=log, timeout_ms=1500),
        first_then)
    run_opt(m.unroll_command(info, src, ref, runner="default"))
    return rc, stdout, stderr, log_lines(log)[0], out, ref


def test_silent_peer_times_out_and_falls_back(mlir, kernels, tmp_path, e2e):
    start = time.monotonic()
    rc, stdout, stderr, entry, out, ref = _serve_then(mlir, kernels, tmp_path, lambda iface: None, e2e)
    assert time.monotonic() - start < 30
    assert rc == 0 and stdout == ""
    assert "timeout" in stderr and "using factor 4 from here on" in stderr
    assert entry["fallbacks"] == 1 and set(entry["factors"]) == {4}
    assert out.read_text() == ref.read_text()


def test_dead_peer_falls_back(mlir, kernels, tmp_path, e2e):
    rc, stdout, stderr, entry, out, ref = _serve_then(mlir, kernels, tmp_path,
                                                      lambda iface: iface.close(), e2e)
    assert rc == 0 and stdout == ""
    assert "using factor 4 from here on" in stderr
    assert entry["fallbacks"] == 1 and out.read_text() == ref.read_text()


def test_out_of_range_answer_falls_back(mlir, kernels, tmp_path, e2e):
    def bad(iface):
        iface.populate_buffer(7)  # no factor has index 7

    rc, stdout, stderr, entry, out, ref = _serve_then(mlir, kernels, tmp_path, bad, e2e)
    assert rc == 0 and stdout == ""
    assert "action 7 out of range" in stderr
    assert entry["fallbacks"] == 1 and out.read_text() == ref.read_text()


def _python_decisions(features, feature_names):
    """The committed policy evaluated by onnxruntime in Python."""
    import onnxruntime as ort
    sess = ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
    out = []
    for row in features.tolist():
        feeds = {n: np.asarray([v], np.float32) for n, v in zip(feature_names, row)}
        out.append(int(np.argmax(sess.run(None, feeds)[0])))
    return out


@pytest.mark.parametrize("runner", ["onnx", "compiled"])
def test_deployed_model_decides_as_in_python(mlir, kernels, tmp_path, runner):
    m, info = mlir
    if not info.has_runner(runner):
        pytest.fail(f"the {runner} runner is not built into the plugin", pytrace=False)
    assert MODEL.is_file(), f"{MODEL} missing (python -m mlbridge.train mlir-unroll train)"
    factors_seen = set()
    for name in ("matmul", "dot_norm", "heat3d", "syrk"):
        src = kernels[name]
        # The features, as the pass sends them, from a pipe run.
        probe = m.serve_unroll(info, src, tmp_path / "probe.mlir", lambda f: m.DEFAULT_ACTION)
        expected = [m.UNROLL_FACTORS[a] for a in _python_decisions(probe.features,
                                                                     probe.feature_names)]
        out, log = tmp_path / f"{name}.mlir", tmp_path / f"{name}.log"
        opts = {"runner": runner, "log": log}
        if runner == "onnx":
            opts["model"] = MODEL
        res = run_opt(m.unroll_command(info, src, out, **opts))
        assert res.returncode == 0 and res.stdout == "" and res.stderr == "", res.stderr
        entry, = log_lines(log)
        assert entry["runner"] == runner and entry["fallbacks"] == 0
        assert entry["factors"] == expected
        factors_seen |= set(expected)
        if name in RESULT_KERNELS + ("dot_norm",):
            plain = m.run_output(m.build_executable(src, tmp_path / f"{name}-plain"))
            assert m.run_output(m.build_executable(out, tmp_path / f"{name}-{runner}")) == plain
    assert len(factors_seen) > 1, "the policy should not answer one factor everywhere"


def test_gym_environment_measures_episodes(mlir):
    import gymnasium as gym
    import mlbridge.mlir.env  # noqa: F401  (registers the environment)
    m, _ = mlir
    env = gym.make("mlbridge/MLIRUnroll-v0", kernels=["prefix_sum"])
    try:
        obs, info = env.reset(seed=0)
        assert info["kernel"] == "prefix_sum" and info["loops"] == 2
        assert obs.shape == (len(m.FEATURES),) and obs[0] == 49  # trip count of j = 1..49
        total, done, steps = 0.0, False, 0
        while not done:
            obs, reward, done, truncated, step_info = env.step(0)  # factor 1 everywhere
            total += reward
            steps += 1
        assert steps == 2 and not truncated
        assert step_info["factors"] == [1, 1]
        base, got = step_info["default_instructions"], step_info["instructions"]
        assert base > 0 and got > 0 and got != base
        assert total == pytest.approx((base - got) / base)
        # The default actions give reward 0 exactly (counts are repeatable).
        env.reset(options={"kernel": "prefix_sum"})
        env.step(m.DEFAULT_ACTION)
        *_, reward, done, _, _ = env.step(m.DEFAULT_ACTION)
        assert done and reward == 0.0
    finally:
        env.close()
