"""The XLA AOT compiled models give TensorFlow's own outputs.

For every TensorFlow model this build compiled (tools/models/tf_saved_models.py,
src/tf/CMakeLists.txt), fresh random inputs go (1) through the compiled C++
model behind TfModelRunner (the mlbridge-tf-eval tool) and (2) through the
SavedModel's signature in TensorFlow itself, run by the TensorFlow
virtualenv's Python (.venv-tf); the outputs must agree to 1e-5.

The build manifest's tf_aot section names the toolchain and models when
MLBRIDGE_ENABLE_TF_AOT is ON. The module is skipped only when the manifest
says TF-AOT is off; when it is on, a missing section or tool fails.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from build_components import manifest, require_built

CFG = require_built("tf_aot", lambda: manifest().section("tf_aot", paths=("eval_tool",)))
CASES = 25
SEED = int(os.environ.get("MLBRIDGE_TF_TEST_SEED", time.time_ns() % 2**31))

# Runs in .venv-tf: inputs.npz ("model|case|input") -> outputs.npz.
TF_SCRIPT = r"""
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tensorflow as tf
models_dir, inp, out = sys.argv[1:4]
data = np.load(inp)
groups = {}
for key in data.files:
    model, case, name = key.split("|")
    groups.setdefault((model, int(case)), {})[name] = data[key]
results, fns = {}, {}
for (model, case), inputs in sorted(groups.items()):
    if model not in fns:
        fns[model] = tf.saved_model.load(
            os.path.join(models_dir, model)).signatures["serving_default"]
    outs = fns[model](**{k: tf.constant(v) for k, v in inputs.items()})
    for name, value in outs.items():
        results[f"{model}|{case}|{name}"] = value.numpy()
np.savez(out, **results)
"""

# Input signatures of the project's models (tools/models/tf_saved_models.py).
INPUTS = {
    "policy": {"observation": ("float32", (1, 8)),
               "action_mask": ("float32", (1, 4)),
               "step": ("int64", ())},
    "mlp_300_64_15": {"x": ("float32", (1, 300))},
    "rl_pass_agent": {"obs": ("float32", (1, 8))},
    "rl_factor_agent": {"obs": ("float32", (1, 8))},
}
TYPE_NAMES = {"float32": "float", "int64": "int64_t"}


def random_inputs(model, rng):
    inputs = {}
    for name, (dtype, shape) in INPUTS[model].items():
        if name == "action_mask":
            v = (rng.random(shape) < 0.6).astype(np.float32)
            v[0, rng.integers(shape[1])] = 1.0
        elif dtype == "int64":
            v = np.asarray(rng.integers(0, 100), dtype=np.int64).reshape(shape)
        else:
            v = (rng.standard_normal(shape) * 2).astype(np.float32)
        inputs[name] = v
    return inputs


def eval_compiled(model, cases, extra_input=None):
    """Runs mlbridge-tf-eval; returns ([{name: array}], completed process)."""
    lines = []
    for inputs in cases:
        lines.append("case")
        for name, v in inputs.items():
            dims = ",".join(map(str, v.shape)) or "1"
            vals = " ".join(repr(float(x)) if v.dtype.kind == "f" else str(int(x))
                            for x in v.reshape(-1))
            lines.append(f"input {name} {TYPE_NAMES[str(v.dtype)]} {dims} {vals}")
        if extra_input:
            lines.append(extra_input)
        lines.append("end")
    proc = subprocess.run([CFG["eval_tool"], model], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, timeout=60)
    results = []
    for line in proc.stdout.splitlines():
        parts = line.split()
        if parts[:1] == ["case"]:
            results.append({})
        elif parts[:1] == ["output"]:
            name, typ = parts[1], parts[2]
            dtype = np.int64 if typ.startswith("int") else np.float64
            results[-1][name] = np.array([float(x) for x in parts[4:]]).astype(dtype)
    return results, proc


def test_compiled_models_match_tensorflow():
    models = [m for m in CFG["models"] if m in INPUTS]
    assert "policy" in models, CFG
    rng = np.random.default_rng(SEED)
    cases = {m: [random_inputs(m, rng) for _ in range(CASES)] for m in models}
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = Path(tmp, "in.npz"), Path(tmp, "out.npz")
        np.savez(inp, **{f"{m}|{k}|{n}": v for m in models
                         for k, c in enumerate(cases[m]) for n, v in c.items()})
        tf = subprocess.run([CFG["python"], "-c", TF_SCRIPT, CFG["models_dir"],
                             str(inp), str(out)],
                            capture_output=True, text=True, timeout=300)
        assert tf.returncode == 0, tf.stderr[-3000:]
        want = dict(np.load(out))
    for m in models:
        got, proc = eval_compiled(m, cases[m])
        assert proc.returncode == 0, proc.stderr
        assert len(got) == CASES
        for k, outputs in enumerate(got):
            names = sorted(key.split("|")[2] for key in want
                           if key.startswith(f"{m}|{k}|"))
            assert sorted(outputs) == names, (m, k)
            for name in names:
                ref = want[f"{m}|{k}|{name}"].reshape(-1)
                msg = f"model {m}, case {k}, output {name} (seed {SEED})"
                if ref.dtype.kind in "iu":
                    np.testing.assert_array_equal(outputs[name], ref, err_msg=msg)
                else:
                    np.testing.assert_allclose(outputs[name], ref, rtol=1e-5,
                                               atol=1e-5, err_msg=msg)


def test_wrong_feature_name_is_a_clear_error():
    rng = np.random.default_rng(1)
    case = random_inputs("policy", rng)
    _, proc = eval_compiled("policy", [case],
                            extra_input="input obs float 1,8 " + " ".join(["0"] * 8))
    assert proc.returncode == 1
    assert "unknown feature 'obs'" in proc.stderr
    assert "observation" in proc.stderr  # the declared names are listed


def test_wrong_shape_is_a_clear_error():
    _, proc = eval_compiled("policy", [{}],
                            extra_input="input observation float 1,7 " + " ".join(["0"] * 7))
    assert proc.returncode == 1
    assert "observation" in proc.stderr and "8 elements" in proc.stderr, proc.stderr



def test_dynamic_shape_is_a_clear_build_error(tmp_path):
    """XLA AOT needs static shapes: the build step says so by name.

    bad_dynamic_shape (x float32[None, 4]) is saved by the build next to the
    other models (tools/models/tf_saved_models.py)."""
    saved = Path(CFG["models_dir"]) / "bad_dynamic_shape"
    assert (saved / "saved_model.pb").exists()
    source = Path(os.environ.get("MLBRIDGE_SOURCE_DIR",
                                 Path(__file__).resolve().parents[2]))
    proc = subprocess.run(
        [CFG["python"], str(source / "tools" / "tf-aot" / "tfaot_compile.py"),
         "--saved-model", str(saved), "--cpp-class", "Dyn", "--accessor",
         "DynModel", "--model-name", "dyn", "--out-dir", str(tmp_path),
         "--prefix", "dyn", "--target-triple", "x86_64-pc-linux-gnu"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert "input 'x'" in proc.stderr and "static shapes" in proc.stderr, proc.stderr
    assert not (tmp_path / "libdyn.a").exists()
