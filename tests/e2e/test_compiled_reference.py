"""Compiled models (mlbridge-model-compiler) against ONNX Runtime.

Every test model of tests/cpp/compiled/models/ (exported by
tools/model-compiler/export_test_models.py) was compiled to C++ by the build
and linked into mlbridge-compiled-harness, which runs it behind
CompiledModelRunner. Here each model gets 1,000 random inputs, evaluated by
the onnxruntime Python package and by the compiled code; every output must
agree to 1e-5: |compiled - ort| <= 1e-5 * max(1, |ort|) for floating-point
outputs, exactly for integer ones.

An argmax may legitimately differ where two scores are closer than the
float rounding of either side; such a near-tie (the reference's two best
probabilities within 1e-5) is allowed, and counted so that it stays rare.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from build_components import require_component

require_component("compiled_model")

SAMPLES = 1000
TOLERANCE = 1e-5

DTYPES = {"float32": np.float32, "float64": np.float64, "int8": np.int8,
          "int16": np.int16, "int32": np.int32, "int64": np.int64,
          "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
          "uint64": np.uint64, "bool": np.bool_}


def build_dir() -> Path:
    """The CMake build directory (ctest sets MLBRIDGE_BUILD_DIR)."""
    env = os.environ.get("MLBRIDGE_BUILD_DIR")
    return Path(env).resolve() if env else Path(__file__).resolve().parents[2] / "build"


def harness() -> Path:
    path = build_dir() / "tests" / "cpp" / "compiled" / "mlbridge-compiled-harness"
    assert path.is_file(), (
        f"{path} is missing: build the project first (cmake --build "
        f"{build_dir()})")
    return path


def parse_tensor(text):
    _, name, dtype, dims = text.split(":")
    shape = tuple(int(d) for d in dims.split("x")) if dims else ()
    return name, DTYPES[dtype], shape


def list_models():
    out = subprocess.run([str(harness()), "list"], check=True, timeout=30,
                         capture_output=True, text=True).stdout
    models = {}
    for line in out.splitlines():
        fields = line.split()
        name, path = fields[0], fields[1]
        inputs = [parse_tensor(f) for f in fields[2:] if f.startswith("in:")]
        outputs = [parse_tensor(f) for f in fields[2:] if f.startswith("out:")]
        models[name] = (path, inputs, outputs)
    return models


MODELS = list_models()


def random_inputs(inputs, rng):
    """Normal floats; small integers (many ties for an argmax); random bools."""
    arrays = []
    for _, dtype, shape in inputs:
        if np.issubdtype(dtype, np.floating):
            arrays.append(rng.normal(0.0, 1.5, size=shape).astype(dtype))
        elif dtype == np.bool_:
            arrays.append(rng.random(size=shape) < 0.5)
        else:
            arrays.append(rng.integers(-4, 5, size=shape).astype(dtype))
    return arrays


@pytest.mark.parametrize("name", sorted(MODELS))
def test_matches_onnxruntime(name, tmp_path):
    path, inputs, outputs = MODELS[name]
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == [n for n, _, _ in inputs]
    assert [o.name for o in session.get_outputs()] == [n for n, _, _ in outputs]

    rng = np.random.default_rng(sum(map(ord, name)))
    samples = [random_inputs(inputs, rng) for _ in range(SAMPLES)]
    with open(tmp_path / "in.bin", "wb") as f:
        for sample in samples:
            for arr in sample:
                f.write(np.ascontiguousarray(arr).tobytes())
    subprocess.run([str(harness()), "run", name, str(tmp_path / "in.bin"),
                    str(tmp_path / "out.bin"), str(SAMPLES)], check=True,
                   timeout=120)
    raw = np.fromfile(tmp_path / "out.bin", dtype=np.uint8)

    offset, worst, near_ties = 0, 0.0, 0
    for s, sample in enumerate(samples):
        feeds = {n: arr for (n, _, _), arr in zip(inputs, sample)}
        expected = session.run(None, feeds)
        got = []
        for (_, dtype, shape), ref in zip(outputs, expected):
            size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            got.append(raw[offset:offset + size].view(dtype).reshape(shape))
            offset += size
            assert ref.shape == shape and ref.dtype == dtype
        for (oname, dtype, _), ref, val in zip(outputs, expected, got):
            if np.issubdtype(dtype, np.floating):
                err = np.abs(val.astype(np.float64) - ref) / np.maximum(1.0, np.abs(ref))
                worst = max(worst, float(err.max()))
                assert err.max() <= TOLERANCE, (
                    f"{name} sample {s} output {oname}: max scaled error "
                    f"{err.max():.3g}\ncompiled {val}\nonnxruntime {ref}")
            elif not np.array_equal(val, ref):
                # An argmax over scores: only a near-tie may differ.
                probs = dict(zip([n for n, _, _ in outputs], expected)).get("probs")
                top2 = np.sort(probs.ravel())[-2:] if probs is not None else None
                assert top2 is not None and top2[1] - top2[0] <= TOLERANCE, (
                    f"{name} sample {s} output {oname}: compiled {val}, "
                    f"onnxruntime {ref}")
                near_ties += 1
    assert offset == raw.size, "the harness wrote more outputs than expected"
    assert near_ties <= SAMPLES // 100
    print(f"{name}: {SAMPLES} samples, worst scaled error {worst:.3g}, "
          f"near-ties {near_ties}")
