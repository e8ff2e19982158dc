"""Trains the MLIR plugin's unroll policy (models/mlir/unroll_policy.onnx)
and measures it on held-out kernels (docs/mlir.md).

    MLBRIDGE_BUILD_DIR=build .venv/bin/python -m mlbridge.train mlir-unroll train

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
  instructions of the whole kernel with the predicted factors (the shared
  selection routine, :mod:`mlbridge.train.selection`).
* Export: ONNX (:mod:`mlbridge.train.export`; Concat/Reshape/Mul/Tanh/
  Gemm/Relu, which ONNX Runtime and the compiled-model runner both run),
  inputs named like the plugin's features, output ``unroll_action`` (one
  score per factor).
* Report: held-out instructions with the model deployed through the
  plugin's ONNX runner, against the default (factor 4) and the best single
  factor chosen on the training kernels; written to unroll_policy.metrics.txt.

Measurements are cached in unroll_measurements.json (exact counts, so a
rerun only measures what is new). The model goes to ``models/mlir/``
(``--out``), the metrics and the measurements to ``results/mlir-unroll/``
(``--records``).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from ...mlir import (DEFAULT_ACTION, FEATURES, UNROLL_FACTORS, build_executable,
                     count_instructions, find_plugin, kernel_names, run_output, unroll_command)
from ...mlir.env import KernelLab
from ...toolchain import compile
from ..export import float32, input_spec, node, onnx_model
from ..results import TrainingError
from ..selection import best, sweep
from . import RECORDS, SHIPPED

MEASUREMENTS = "unroll_measurements.json"
MODEL = "unroll_policy.onnx"
METRICS = "unroll_policy.metrics.txt"
#: tanh(x / SCALE): trip counts and op counts to about [-1, 1).
SCALE = np.array([64, 4, 4096, 32, 8, 4, 16, 16, 2, 2], np.float32)
GRID = [(hidden, decay) for hidden in (8, 16) for decay in (1e-3, 1e-2, 1e-1)]


def split():
    names = kernel_names()
    held = [n for i, n in enumerate(names) if i % 3 == 2]
    return [n for n in names if n not in held], held


class Cache:
    """Instruction counts by kernel and list of actions, kept in a JSON file."""

    def __init__(self, labs, path):
        self.labs = labs
        self.path = Path(path)
        self.data = json.loads(self.path.read_text()) if self.path.exists() else {}

    def count(self, kernel, actions):
        key = "-".join(map(str, actions))
        k = self.data.setdefault(kernel, {})
        if key not in k:
            k[key] = self.labs(kernel).count(actions)
            self.path.write_text(json.dumps(self.data, indent=1, sort_keys=True) + "\n")
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
    """The policy as the plugin's ONNX model (written to ``path``)."""
    w1, b1, w2, b2 = params
    nodes = [node("Concat", FEATURES, ["flat"], axis=0),
             node("Reshape", ["flat", "shape"], ["row"]),
             node("Mul", ["row", "inv_scale"], ["scaled"]),
             node("Tanh", ["scaled"], ["squashed"]),
             node("Gemm", ["squashed", "w1", "b1"], ["h"]),
             node("Relu", ["h"], ["hr"]),
             node("Gemm", ["hr", "w2", "b2"], ["unroll_action"])]
    constants = {"shape": np.array([1, len(FEATURES)], np.int64),
                 "inv_scale": float32((1 / SCALE).reshape(1, -1)),
                 "w1": float32(w1), "b1": float32(b1), "w2": float32(w2), "b2": float32(b2)}
    return onnx_model("mlbridge_unroll_policy", nodes, input_spec(FEATURES, [1]),
                      [("unroll_action", np.float32, [1, len(UNROLL_FACTORS)])], constants,
                      producer="mlbridge.train.mlir_unroll", path=path)


def main(out_dir=SHIPPED, records_dir=RECORDS):
    """The whole run; writes the model into ``out_dir``, the metrics and the
    measurements into ``records_dir``."""
    out_dir, records_dir = Path(out_dir), Path(records_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    records_dir.mkdir(parents=True, exist_ok=True)
    model_path = out_dir / MODEL
    info = find_plugin()
    train, held = split()
    work = Path(tempfile.mkdtemp(prefix="mlbridge-unroll-train-"))
    labs = {}

    def lab(name):
        if name not in labs:
            labs[name] = KernelLab(name, info, work)
        return labs[name]

    cache = Cache(lab, records_dir / MEASUREMENTS)
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
    def loko_ratio(cfg):
        """Geometric mean over the training kernels of instructions with the
        predicted factors / with the default, each kernel left out of its fit."""
        ratios = []
        for name in train:
            params = train_mlp(x[owner != name], y[owner != name], *cfg)
            got, base = kernel_score(name, params)
            ratios.append(got / base)
        ratio = float(np.exp(np.mean(np.log(ratios))))
        print(f"hidden={cfg[0]} decay={cfg[1]}: leave-one-kernel-out gain {1 - ratio:+.2%}",
              flush=True)
        return ratio

    chosen = best(sweep(((cfg, cfg) for cfg in GRID), loko_ratio))
    best_cfg, best_gain = chosen.label, 1 - chosen.total
    params = train_mlp(x, y, *best_cfg)
    export_onnx(params, model_path)

    # Best single factor on the training kernels (a baseline a user could pick).
    def geo_ratio(names, acts_of):
        r = [cache.count(n, acts_of(n)) / cache.count(n, [DEFAULT_ACTION] * len(lab(n).measured))
             for n in names]
        return float(np.exp(np.mean(np.log(r))))
    const = min(range(len(UNROLL_FACTORS)),
                key=lambda a: geo_ratio(train, lambda n: [a] * len(lab(n).measured)))

    # ---- held-out: the model deployed through the plugin's ONNX runner ------------
    lines = ["MLIR unroll policy (python -m mlbridge.train mlir-unroll train)",
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
    for name in held:
        L = lab(name)
        out = work / f"{name}-onnx.mlir"
        log = work / f"{name}-onnx.log"
        res = compile(unroll_command(info, L.src, out, runner="onnx", model=model_path, log=log),
                      output=out, measure_text=False, timeout=120)
        if "warning" in res.stderr:
            raise TrainingError(f"{name}: mlir-opt-19 with the ONNX model warned:\n{res.stderr}")
        entry = json.loads(log.read_text().splitlines()[0])
        factors = [f for f, c in zip(entry["factors"], L.contexts) if not c.startswith(("fill", "check"))]
        exe = build_executable(out, work / f"{name}-onnx")
        if run_output(exe) != L.reference:
            raise TrainingError(f"{name}: the policy's unrolling changed the results")
        got = count_instructions(exe)
        acts = [UNROLL_FACTORS.index(f) for f in factors]
        if cache.count(name, acts) != got:
            raise TrainingError(f"{name}: ONNX deployment and the pipe replay disagree")
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
    (records_dir / METRICS).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return {"model": str(model_path), "hidden": best_cfg[0], "weight_decay": best_cfg[1],
            "heldout_ratio": geo, "best_single_factor_ratio": cgeo}
