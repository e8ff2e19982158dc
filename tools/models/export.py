#!/usr/bin/env python3
"""Writes the committed models of models/ from the PyTorch modules in nets.py.

    .venv/bin/python tools/models/export.py            # into models/
    .venv/bin/python tools/models/export.py --out DIR

Needs Debian's python3-torch 1.13 (seen by the project .venv) and the onnx
package (python/requirements/onnx.txt). Writes, for each model, NAME.onnx
(opset 17) and NAME.npz (the weights, for the Python side of tests and
examples), plus reference.txt: inputs and PyTorch's outputs that the C++
tests compare against. Seeds are fixed; a re-run on another machine may
differ in the last bits of trained weights (regenerate reference.txt with
the models, never alone).
"""

import argparse
import os
import sys

import numpy as np
import onnx
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import nets  # noqa: E402

OPSET = 17


def save_weights(module, path):
    np.savez(path, **{k: v.detach().cpu().numpy() for k, v in module.state_dict().items()})


def add_metadata(path, advice):
    """Names the advice output in the model's own metadata (metadata_props)."""
    model = onnx.load(path)
    onnx.helper.set_model_props(model, {"mlbridge.advice": advice,
                                        "mlbridge.exported_by": "tools/models/export.py"})
    onnx.checker.check_model(model)
    onnx.save(model, path)


def export(module, args, path, input_names, output_names, dynamic_axes, advice):
    module.eval()
    with torch.no_grad():
        torch.onnx.export(module, args, path, input_names=input_names,
                          output_names=output_names, dynamic_axes=dynamic_axes,
                          opset_version=OPSET, do_constant_folding=True)
    add_metadata(path, advice)


# ---- reference data -----------------------------------------------------------

TYPE_NAMES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double",
              np.dtype(np.int32): "int32_t", np.dtype(np.int64): "int64_t",
              np.dtype(np.bool_): "bool"}


def fmt_tensor(kind, name, arr):
    arr = np.asarray(arr)
    shape = ",".join(str(d) for d in arr.shape) if arr.ndim else "1"
    if arr.dtype == np.bool_:
        vals = " ".join("1" if v else "0" for v in arr.ravel())
    elif arr.dtype.kind == "f":
        vals = " ".join(repr(float(v)) for v in arr.ravel())
    else:
        vals = " ".join(str(int(v)) for v in arr.ravel())
    return f"{kind} {name} {TYPE_NAMES[arr.dtype]} {shape} {vals}"


def torch_outputs(module, inputs):
    with torch.no_grad():
        out = module(*[torch.from_numpy(np.array(v)) for v in inputs])
    if isinstance(out, torch.Tensor):
        out = (out,)
    return [o.numpy() for o in out]


def reference_cases(name, module, input_names, output_names, cases):
    lines = [f"model {name}.onnx"]
    for inputs in cases:
        lines.append("case")
        for n, v in zip(input_names, inputs):
            lines.append(fmt_tensor("input", n, v))
        for n, v in zip(output_names, torch_outputs(module, inputs)):
            lines.append(fmt_tensor("output", n, v))
        lines.append("end")
    return lines


# ---- the RL agents: imitate a simple heuristic --------------------------------

def sample_counts(rng, n):
    """Programs like those of toy_phase_ordering.h (8 counters each)."""
    insts = rng.integers(20, 700, n).astype(np.float64)
    frac = lambda lo, hi: rng.uniform(lo, hi, n)
    c = np.stack([insts, insts * frac(0.05, 0.45), insts * frac(0.02, 0.2),
                  insts * frac(0.02, 0.3), rng.integers(0, 10, n),
                  rng.integers(0, 5, n), insts * frac(0.0, 0.4),
                  insts * frac(0.0, 0.3)], axis=1)
    return np.floor(c)


def observe(c):
    return (np.log1p(c) / 5.0).astype(np.float32)


def teacher_pass(c):
    insts, loads, _, _, calls, loops, consts, dead = c.T
    a = np.full(len(c), 5)
    cond = [(dead > 0.15 * insts, 0), (consts > 0.2 * insts, 1), (calls > 3, 2),
            ((loads > 0.3 * insts) & (loops > 0), 3), ((loops > 0) & (insts < 400), 4)]
    for mask, action in reversed(cond):  # earlier rules win
        a[mask] = action
    return a


def teacher_factor(c):
    insts = c[:, 0]
    return np.where(insts < 100, 2, np.where(insts < 250, 1, 0))


def train_agent(n_actions, teacher, seed):
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    net = nets.PolicyNet(n_actions=n_actions)
    c = sample_counts(rng, 4096)
    x = torch.from_numpy(observe(c))
    y = torch.from_numpy(teacher(c)).long()
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    for _ in range(400):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
    acc = (net(x).argmax(1) == y).float().mean().item()
    print(f"  agent with {n_actions} actions imitates its heuristic on "
          f"{acc:.1%} of {len(c)} states")
    return net.eval()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "models"))
    out = os.path.abspath(ap.parse_args().out)
    os.makedirs(out, exist_ok=True)
    p = lambda f: os.path.join(out, f)
    ref = ["# Inputs and PyTorch's outputs for tests/cpp/onnx (written by "
           "tools/models/export.py).",
           "# Format: 'model FILE', then cases: 'input|output NAME TYPE DIMS VALUES...', 'end'."]
    rng = np.random.default_rng(1234)

    # 1. The paper's latency MLP, 300 -> 64 -> 15, with a variable batch.
    torch.manual_seed(0)
    mlp = nets.MLP(300, 64, 15).eval()
    export(mlp, (torch.zeros(1, 300),), p("mlp_300_64_15.onnx"), ["x"], ["scores"],
           {"x": {0: "batch"}, "scores": {0: "batch"}}, "scores")
    save_weights(mlp, p("mlp_300_64_15.npz"))
    cases = [[rng.standard_normal((1, 300)).astype(np.float32)] for _ in range(3)]
    cases.append([rng.standard_normal((3, 300)).astype(np.float32)])
    ref += reference_cases("mlp_300_64_15", mlp, ["x"], ["scores"], cases)

    # 2. Several inputs and outputs, every supported kind, variable dims.
    torch.manual_seed(1)
    mio = nets.MultiIO().eval()
    ins = ["features", "weights", "counts", "offset", "mask", "seq"]
    outs = ["scores", "total", "best", "doubled", "any_masked", "seq_stats"]
    example = (torch.zeros(2, 4), torch.zeros(3, dtype=torch.float64),
               torch.zeros(2, dtype=torch.int64), torch.zeros(1, dtype=torch.int32),
               torch.ones(4, dtype=torch.bool), torch.zeros(5))
    export(mio, example, p("multi_io.onnx"), ins, outs,
           {"features": {0: "batch"}, "scores": {0: "batch"}, "best": {0: "batch"},
            "seq": {0: "len"}}, "best")
    save_weights(mio, p("multi_io.npz"))

    def mio_case(batch, seq_len):
        return [rng.standard_normal((batch, 4)).astype(np.float32),
                rng.standard_normal(3),
                rng.integers(-5, 6, 2).astype(np.int64),
                rng.integers(-100, 100, 1).astype(np.int32),
                rng.integers(0, 2, 4).astype(np.bool_),
                rng.standard_normal(seq_len).astype(np.float32)]
    ref += reference_cases("multi_io", mio, ins, outs,
                           [mio_case(1, 5), mio_case(4, 2), mio_case(2, 9)])

    # 3. An input with two variable dimensions (an error unless one is fixed).
    two = nets.TwoDims().eval()
    export(two, (torch.zeros(2, 3),), p("two_dims.onnx"), ["x"], ["y"],
           {"x": {0: "batch", 1: "len"}, "y": {0: "batch", 1: "len"}}, "y")
    ref += reference_cases("two_dims", two, ["x"], ["y"],
                           [[rng.standard_normal((1, 6)).astype(np.float32)]])

    # 4. The two agents of the toy phase-ordering environment (examples/rl).
    for name, n_actions, teacher, seed in (
            ("rl_pass_agent", nets.PASS_ACTIONS, teacher_pass, 7),
            ("rl_factor_agent", nets.FACTOR_ACTIONS, teacher_factor, 8)):
        net = train_agent(n_actions, teacher, seed)
        export(net, (torch.zeros(1, nets.OBS_SIZE),), p(f"{name}.onnx"), ["obs"],
               ["scores"], None, "scores")
        save_weights(net, p(f"{name}.npz"))
        cases = [[observe(sample_counts(rng, 1))] for _ in range(4)]
        ref += reference_cases(name, net, ["obs"], ["scores"], cases)

    with open(p("reference.txt"), "w") as f:
        f.write("\n".join(ref) + "\n")
    for f in sorted(os.listdir(out)):
        print(f"  {f}: {os.path.getsize(p(f))} bytes")


if __name__ == "__main__":
    main()
