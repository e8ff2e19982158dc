"""Trains the MLIR plugin's unroll policy (models/mlir/unroll_policy.onnx)
and measures it on held-out kernels (docs/mlir.md).

    MLBRIDGE_BUILD_DIR=build .venv/bin/python models/mlir/train_unroll_policy.py

* Kernels: integrations/mlir/kernels, sorted by name; every third one
  (positions 2, 5, 8, ...) is held out, fixed before any measurement. The
  held-out kernels are measured only for the final report.
* Data: on each training kernel, every loop tried with every factor while
  the other loops keep the default (mlbridge.mlir.env.KernelLab: the stock
  mlir-opt-19 with the plugin answering over a pipe, clang-19 -O2, results
  checked, instructions retired in @kernel counted by callgrind). A loop's
  label is its factor with the fewest instructions (the default on ties).
* Model: a small MLP over squashed features (tanh(x / scale)) -> 5 scores,
  trained with numpy. Its size and regularisation are selected by
  leave-one-kernel-out over the training kernels, scored by the measured
  instructions of the whole kernel with the predicted factors.
* Export: ONNX (opset 13; Concat/Reshape/Mul/Tanh/Gemm/Relu, which ONNX
  Runtime and the compiled-model runner both run), inputs named like the
  plugin's features, output ``unroll_action`` (one score per factor).
* Report: held-out instructions with the model deployed through the
  plugin's ONNX runner, against the default (factor 4) and the best single
  factor chosen on the training kernels; written to unroll_policy.metrics.txt.

Measurements are cached in unroll_measurements.json (exact counts, so a
rerun only measures what is new).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))

from mlbridge.mlir import (DEFAULT_ACTION, FEATURES, UNROLL_FACTORS, build_executable,  # noqa: E402
                           count_instructions, find_plugin, kernel_names, run_output,
                           unroll_command)
from mlbridge.mlir.env import KernelLab  # noqa: E402

MEASUREMENTS = HERE / "unroll_measurements.json"
MODEL = HERE / "unroll_policy.onnx"
METRICS = HERE / "unroll_policy.metrics.txt"
#: tanh(x / SCALE): trip counts and op counts to about [-1, 1).
SCALE = np.array([64, 4, 4096, 32, 8, 4, 16, 16, 2, 2], np.float32)
GRID = [(hidden, decay) for hidden in (8, 16) for decay in (1e-3, 1e-2, 1e-1)]


def split():
    names = kernel_names()
    held = [n for i, n in enumerate(names) if i % 3 == 2]
    return [n for n in names if n not in held], held


class Cache:
    def __init__(self, labs):
        self.labs = labs
        self.data = json.loads(MEASUREMENTS.read_text()) if MEASUREMENTS.exists() else {}

    def count(self, kernel, actions):
        key = "-".join(map(str, actions))
        k = self.data.setdefault(kernel, {})
        if key not in k:
            k[key] = self.labs(kernel).count(actions)
            MEASUREMENTS.write_text(json.dumps(self.data, indent=1, sort_keys=True) + "\n")
        return k[key]


def squash(x):
    return np.tanh(np.asarray(x, np.float32) / SCALE)


def train_mlp(x, y, hidden, decay, seed=0, epochs=3000, lr=0.05):
    rng = np.random.default_rng(seed)
    n_in, n_out = x.shape[1], len(UNROLL_FACTORS)
    w1 = rng.normal(0, 1 / np.sqrt(n_in), (n_in, hidden)).astype(np.float32)
    b1 = np.zeros(hidden, np.float32)
    w2 = rng.normal(0, 1 / np.sqrt(hidden), (hidden, n_out)).astype(np.float32)
    b2 = np.zeros(n_out, np.float32)
    onehot = np.eye(n_out, dtype=np.float32)[y]
    for _ in range(epochs):
        h = np.maximum(x @ w1 + b1, 0)
        z = h @ w2 + b2
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        g = (p - onehot) / len(x)
        gw2 = h.T @ g + decay * w2
        gh = (g @ w2.T) * (h > 0)
        gw1 = x.T @ gh + decay * w1
        w2 -= lr * gw2
        b2 -= lr * g.sum(0)
        w1 -= lr * gw1
        b1 -= lr * gh.sum(0)
    return w1, b1, w2, b2


def predict(params, x):
    w1, b1, w2, b2 = params
    return np.argmax(np.maximum(x @ w1 + b1, 0) @ w2 + b2, axis=1)


def export_onnx(params, path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w1, b1, w2, b2 = params
    inputs = [helper.make_tensor_value_info(f, TensorProto.FLOAT, [1]) for f in FEATURES]
    inits = [numpy_helper.from_array(np.array([1, len(FEATURES)], np.int64), "shape"),
             numpy_helper.from_array((1 / SCALE).reshape(1, -1).astype(np.float32), "inv_scale"),
             numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
             numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(b2, "b2")]
    nodes = [helper.make_node("Concat", list(FEATURES), ["flat"], axis=0),
             helper.make_node("Reshape", ["flat", "shape"], ["row"]),
             helper.make_node("Mul", ["row", "inv_scale"], ["scaled"]),
             helper.make_node("Tanh", ["scaled"], ["squashed"]),
             helper.make_node("Gemm", ["squashed", "w1", "b1"], ["h"]),
             helper.make_node("Relu", ["h"], ["hr"]),
             helper.make_node("Gemm", ["hr", "w2", "b2"], ["unroll_action"])]
    out = helper.make_tensor_value_info("unroll_action", TensorProto.FLOAT,
                                        [1, len(UNROLL_FACTORS)])
    graph = helper.make_graph(nodes, "mlbridge_unroll_policy", inputs, [out], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="mlbridge models/mlir/train_unroll_policy.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def main():
    info = find_plugin()
    train, held = split()
    work = Path(tempfile.mkdtemp(prefix="mlbridge-unroll-train-"))
    labs = {}

    def lab(name):
        if name not in labs:
            labs[name] = KernelLab(name, info, work)
        return labs[name]

    cache = Cache(lab)
    # ---- data: every loop x every factor, others at the default ----------------
    rows, labels, owner = [], [], []
    for name in train:
        L = lab(name)
        base = [DEFAULT_ACTION] * len(L.measured)
        for i in range(len(L.measured)):
            counts = []
            for a in range(len(UNROLL_FACTORS)):
                acts = list(base)
                acts[i] = a
                counts.append(cache.count(name, acts))
            best = min(range(len(counts)), key=lambda a: (counts[a], a != DEFAULT_ACTION))
            rows.append(L.features[i])
            labels.append(best)
            owner.append(name)
            print(f"{name} loop {i}: {dict(zip(UNROLL_FACTORS, counts))} -> {UNROLL_FACTORS[best]}",
                  flush=True)
    x = squash(np.asarray(rows))
    y = np.asarray(labels)
    owner = np.asarray(owner)

    def kernel_score(name, params):
        acts = predict(params, squash(lab(name).features)).tolist()
        return cache.count(name, acts), cache.count(name, [DEFAULT_ACTION] * len(acts))

    # ---- model selection: leave one training kernel out -----------------------------
    best_cfg, best_gain = None, -np.inf
    for hidden, decay in GRID:
        ratios = []
        for name in train:
            params = train_mlp(x[owner != name], y[owner != name], hidden, decay)
            got, base = kernel_score(name, params)
            ratios.append(got / base)
        gain = 1 - float(np.exp(np.mean(np.log(ratios))))
        print(f"hidden={hidden} decay={decay}: leave-one-kernel-out gain {gain:+.2%}", flush=True)
        if gain > best_gain:
            best_cfg, best_gain = (hidden, decay), gain
    params = train_mlp(x, y, *best_cfg)
    export_onnx(params, MODEL)

    # Best single factor on the training kernels (a baseline a user could pick).
    def geo_ratio(names, acts_of):
        r = [cache.count(n, acts_of(n)) / cache.count(n, [DEFAULT_ACTION] * len(lab(n).measured))
             for n in names]
        return float(np.exp(np.mean(np.log(r))))
    const = min(range(len(UNROLL_FACTORS)),
                key=lambda a: geo_ratio(train, lambda n: [a] * len(lab(n).measured)))

    # ---- held-out: the model deployed through the plugin's ONNX runner ------------
    lines = [f"MLIR unroll policy (models/mlir/train_unroll_policy.py)",
             f"train kernels ({len(train)}): {' '.join(train)}",
             f"held-out kernels ({len(held)}): {' '.join(held)}",
             f"training loops: {len(y)}; labels (factor: loops): "
             + ", ".join(f"{UNROLL_FACTORS[a]}: {int((y == a).sum())}" for a in range(len(UNROLL_FACTORS))),
             f"selected: hidden={best_cfg[0]} weight_decay={best_cfg[1]} "
             f"(leave-one-kernel-out gain on train {best_gain:+.2%})",
             f"best single factor on train: {UNROLL_FACTORS[const]}",
             "",
             "held-out instructions retired in @kernel (callgrind), clang-19 -O2:",
             f"{'kernel':<12} {'default(4)':>11} {'policy':>11} {'ratio':>7} "
             f"{'const(' + str(UNROLL_FACTORS[const]) + ')':>11} {'ratio':>7}  policy factors"]
    ratios, const_ratios = [], []
    import subprocess
    for name in held:
        L = lab(name)
        out = work / f"{name}-onnx.mlir"
        log = work / f"{name}-onnx.log"
        res = subprocess.run(unroll_command(info, L.src, out, runner="onnx", model=MODEL,
                                            log=log), capture_output=True, text=True, timeout=120)
        if res.returncode != 0 or "warning" in res.stderr:
            raise SystemExit(f"{name}: mlir-opt-19 with the ONNX model failed:\n{res.stderr}")
        entry = json.loads(log.read_text().splitlines()[0])
        factors = [f for f, c in zip(entry["factors"], L.contexts) if not c.startswith(("fill", "check"))]
        exe = build_executable(out, work / f"{name}-onnx")
        if run_output(exe) != L.reference:
            raise SystemExit(f"{name}: the policy's unrolling changed the results")
        got = count_instructions(exe)
        acts = [UNROLL_FACTORS.index(f) for f in factors]
        if cache.count(name, acts) != got:
            raise SystemExit(f"{name}: ONNX deployment and the pipe replay disagree")
        base = cache.count(name, [DEFAULT_ACTION] * len(acts))
        c = cache.count(name, [const] * len(acts))
        ratios.append(got / base)
        const_ratios.append(c / base)
        lines.append(f"{name:<12} {base:>11} {got:>11} {got / base:>7.3f} {c:>11} {c / base:>7.3f}  {factors}")
    geo = float(np.exp(np.mean(np.log(ratios))))
    cgeo = float(np.exp(np.mean(np.log(const_ratios))))
    lines += ["", f"geometric mean ratio to the default: policy {geo:.3f} "
              f"({1 - geo:+.1%} instructions saved), best single factor {cgeo:.3f} "
              f"({1 - cgeo:+.1%})",
              f"policy beats the default on {sum(r < 1 for r in ratios)} of {len(ratios)} "
              f"held-out kernels, loses on {sum(r > 1 for r in ratios)}"]
    METRICS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
