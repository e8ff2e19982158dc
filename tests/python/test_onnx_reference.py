"""The in-process ONNX runner computes what PyTorch and the onnxruntime
Python package compute, to 1e-5, for an MLP and a model with several
inputs and outputs of every supported dtype (and the RL agents).

The C++ side is tests/cpp/onnx/onnx_eval_tool.cpp (OnnxModelRunner), fed
random inputs in the text format of models/reference.txt. PyTorch runs the
modules of tools/models/nets.py with the committed .npz weights.
"""
import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

SOURCE = Path(os.environ.get("MLBRIDGE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD = Path(os.environ.get("MLBRIDGE_BUILD_DIR", SOURCE / "build"))
MODELS = SOURCE / "models"
EVAL = BUILD / "tests" / "cpp" / "onnx" / "mlbridge-onnx-eval"
sys.path.insert(0, str(SOURCE / "tools" / "models"))

import torch  # noqa: E402  Debian's python3-torch, through the .venv
import onnxruntime  # noqa: E402

import nets  # noqa: E402
from export import fmt_tensor as fmt  # noqa: E402
from build_components import require_component  # noqa: E402

TOL = 1e-5
DTYPES = {"float": np.float32, "double": np.float64, "int32_t": np.int32,
          "int64_t": np.int64, "bool": np.bool_}


@pytest.fixture
def cpp_runner():
    """The C++ ONNX runner's tests: skipped only when the build says it is off."""
    require_component("onnx")


# ---- the text format of models/reference.txt (written by tools/models/export.py) ----

def parse(text):
    """-> {model: [ {"input": {name: arr}, "output": {name: arr}} ]}"""
    models, model = {}, None
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        kind, *rest = line.split()
        if kind == "model":
            model = models.setdefault(rest[0], [])
        elif kind == "case":
            model.append({"input": {}, "output": {}})
        elif kind in ("input", "output"):
            name, dtype, dims, *vals = rest
            shape = tuple(int(d) for d in dims.split(","))
            t = DTYPES[dtype]
            arr = (np.array([v == "1" for v in vals], dtype=np.bool_) if t is np.bool_
                   else np.array([float(v) if np.dtype(t).kind == "f" else int(v)
                                  for v in vals], dtype=t))
            model[-1][kind][name] = arr.reshape(shape)
    return models


def assert_close(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


# ---- the three implementations --------------------------------------------------

MODEL_SPECS = {
    "mlp_300_64_15": (lambda: nets.MLP(300, 64, 15), ["x"], ["scores"]),
    "multi_io": (nets.MultiIO, ["features", "weights", "counts", "offset", "mask", "seq"],
                 ["scores", "total", "best", "doubled", "any_masked", "seq_stats"]),
    "rl_pass_agent": (lambda: nets.PolicyNet(n_actions=nets.PASS_ACTIONS), ["obs"], ["scores"]),
    "rl_factor_agent": (lambda: nets.PolicyNet(n_actions=nets.FACTOR_ACTIONS), ["obs"], ["scores"]),
}


def torch_run(name, inputs):
    make, in_names, out_names = MODEL_SPECS[name]
    module = nets.load_module(make(), MODELS / f"{name}.npz")
    with torch.no_grad():
        out = module(*[torch.from_numpy(np.array(inputs[n])) for n in in_names])
    out = (out,) if isinstance(out, torch.Tensor) else out
    return {n: o.numpy() for n, o in zip(out_names, out)}


def ort_run(name, inputs):
    sess = onnxruntime.InferenceSession(str(MODELS / f"{name}.onnx"),
                                        providers=["CPUExecutionProvider"])
    out_names = [o.name for o in sess.get_outputs()]
    return dict(zip(out_names, sess.run(out_names, inputs)))


def cpp_run(name, cases):
    assert EVAL.exists(), f"{EVAL} not built; build the project first (scripts/build.sh)"
    lines = [f"model {name}.onnx"]
    for inputs in cases:
        lines.append("case")
        lines += [fmt("input", n, v) for n, v in inputs.items()]
        lines.append("end")
    res = subprocess.run([str(EVAL), str(MODELS / f"{name}.onnx")],
                         input="\n".join(lines) + "\n", capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    return [c["output"] for c in parse(res.stdout)[f"{name}.onnx"]]


def random_cases(name, rng):
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    if name == "mlp_300_64_15":
        return [{"x": f32(b, 300) * 3} for b in (1, 1, 2, 5)]
    if name == "multi_io":
        return [{"features": f32(b, 4), "weights": rng.standard_normal(3),
                 "counts": rng.integers(-9, 10, 2).astype(np.int64),
                 "offset": rng.integers(-50, 50, 1).astype(np.int32),
                 "mask": rng.integers(0, 2, 4).astype(np.bool_),
                 "seq": f32(n)} for b, n in ((1, 1), (3, 4), (2, 17), (6, 3))]
    return [{"obs": np.abs(f32(1, nets.OBS_SIZE))} for _ in range(6)]


# ---- tests ------------------------------------------------------------------------

def test_committed_models_weights_and_references_belong_together():
    ref = parse((MODELS / "reference.txt").read_text())
    checked = 0
    for name in MODEL_SPECS:
        cases = ref[f"{name}.onnx"]
        assert cases, name
        for case in cases:
            want = case["output"]
            for impl, got in (("torch", torch_run(name, case["input"])),
                              ("onnxruntime", ort_run(name, case["input"]))):
                for out, arr in want.items():
                    assert_close(got[out], arr, f"{name}/{out} ({impl} vs reference.txt)")
                    checked += 1
    assert checked >= 40


@pytest.mark.parametrize("name", sorted(MODEL_SPECS))
def test_cpp_runner_matches_pytorch_and_onnxruntime(name, cpp_runner):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    cases = random_cases(name, rng)
    got = cpp_run(name, cases)
    assert len(got) == len(cases)
    for inputs, cpp in zip(cases, got):
        ref_torch = torch_run(name, inputs)
        ref_ort = ort_run(name, inputs)
        assert set(cpp) == set(ref_torch) == set(ref_ort)
        for out in ref_torch:
            assert_close(cpp[out], ref_torch[out], f"{name}/{out}: C++ runner vs PyTorch")
            assert_close(cpp[out], ref_ort[out], f"{name}/{out}: C++ runner vs onnxruntime")


def test_cpp_runner_reports_a_corrupt_model(tmp_path, cpp_runner):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes((MODELS / "mlp_300_64_15.onnx").read_bytes()[:5000])
    res = subprocess.run([str(EVAL), str(bad)], input="", capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 1
    assert "malformed" in res.stderr and str(bad) in res.stderr, res.stderr
    assert res.stdout == ""  # the library never prints to stdout
