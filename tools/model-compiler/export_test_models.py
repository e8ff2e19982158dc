#!/usr/bin/env python3
"""Exports the compiled-model test models (tests/cpp/compiled/models/).

    .venv/bin/python tools/model-compiler/export_test_models.py [--out DIR]

Needs Debian's python3-torch 1.13 (seen by the project .venv) and the onnx
package (python/requirements/onnx.txt) for the metadata entry. Seeds are
fixed; weights are PyTorch's default initialisation. Every model has static
shapes (no dynamic axes), so mlbridge-model-compiler needs no --dim.

The set covers every operator the compiler supports, as PyTorch emits them:
MLPs of several depths and activations (Gemm, Relu, Tanh, Sigmoid,
LeakyRelu), the 300->64->15 MLP of the latency benchmark, a two-input model
(Concat, broadcasting Add/Sub/Mul/Div with constants), a policy head
(Softmax, LogSoftmax, ArgMax, Squeeze), and an operator zoo exported at
opsets 9, 11 and 14 (MatMul, Clip, Reshape, Flatten, Squeeze, Unsqueeze,
Transpose, Constant, Identity, batched MatMul, Softmax on an inner axis).

The edge_* models are built node by node with onnx.helper, for operator
variants PyTorch never emits: Gemm with transA, a computed B, alpha/beta and
broadcast C; 1-D and broadcast-batched MatMul; ArgMax with keepdims=0,
select_last_index and ties; opset-11 Softmax over a flattened axis; N-d
Transpose; Concat on several axes; Reshape with 0 and -1; Squeeze without
axes; Clip with only a minimum; integer arithmetic with broadcasting;
double precision; an input passed straight to an output; a constant output;
an unused input.
"""

import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "..", "tests", "cpp", "compiled", "models")


def mlp(sizes, act):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(act())
    return nn.Sequential(*layers)


class MixedMlp(nn.Module):
    """Sigmoid then LeakyReLU(0.2), on a batch of 4."""

    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(20, 48), nn.Linear(48, 24), nn.Linear(24, 6)

    def forward(self, x):
        return self.l3(F.leaky_relu(self.l2(torch.sigmoid(self.l1(x))), 0.2))


class TwoInput(nn.Module):
    """Two feature groups, e.g. a function's IR counts and its loop shape."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(18, 32)
        self.gate = nn.Linear(6, 32)
        self.out = nn.Linear(32, 5)
        self.register_buffer("scale", torch.linspace(0.5, 2.0, 12))

    def forward(self, ir, loop):
        h = torch.relu(self.fc(torch.cat([ir * self.scale, loop * 2.0 - 1.0], dim=1)))
        g = torch.sigmoid(self.gate(loop))
        return self.out(h * g) / 3.0 - 0.25


class PolicyHead(nn.Module):
    """An actor-critic head: probabilities, log-probabilities, the greedy
    action (the advice) and a value."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(24, 64), nn.Tanh())
        self.logits = nn.Linear(64, 10)
        self.value = nn.Linear(64, 1)

    def forward(self, obs):
        h = self.body(obs)
        logits = self.logits(h)
        return (F.softmax(logits, dim=-1), F.log_softmax(logits, dim=-1),
                torch.argmax(logits, dim=-1), self.value(h).squeeze(-1))


class Zoo(nn.Module):
    """The remaining operators, on a [2,3,8] input."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 6)          # 3-D input: MatMul + Add
        self.mix = nn.Linear(24, 4)

    def forward(self, x):
        a = torch.clamp(self.proj(x), -0.5, 0.75)                 # Clip
        m = a.reshape(6, 6)                                       # Reshape
        sq = torch.matmul(m, m.t())                               # Transpose, MatMul
        f = torch.flatten(x, 1)                                   # Flatten
        u = f.unsqueeze(1).squeeze(1)                             # Unsqueeze, Squeeze
        bm = torch.matmul(x, x.transpose(1, 2))                   # batched MatMul
        s = torch.softmax(bm, dim=1)                              # inner axis
        k = torch.tensor([[1.5, -2.0, 0.25, 4.0]])                # Constant
        mixed = self.mix(u) * k + 0.125
        return sq, s, mixed, x.clone()                            # Identity (clone)


def export(module, args, path, input_names, output_names, opset, advice=None):
    module.eval()
    with torch.no_grad():
        torch.onnx.export(module, args, path, input_names=input_names,
                          output_names=output_names, opset_version=opset,
                          do_constant_folding=True)
    if advice is not None:
        import onnx
        model = onnx.load(path)
        onnx.helper.set_model_props(model, {"mlbridge.advice": advice})
        onnx.save(model, path)
    print("wrote", os.path.relpath(path))


def edge_models(out):
    """Hand-built graphs (onnx.helper) for the variants PyTorch never emits."""
    import numpy as np
    import onnx
    from onnx import TensorProto as T, helper as h, numpy_helper as nh

    rng = np.random.default_rng(9)

    def init(name, arr):
        return nh.from_array(np.asarray(arr), name)

    def save(name, nodes, inputs, outputs, inits, opset):
        graph = h.make_graph(nodes, name, inputs, outputs, inits)
        model = h.make_model(graph, producer_name="export_test_models.py",
                             opset_imports=[h.make_opsetid("", opset)])
        model.ir_version = 7
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, out(name))
        print("wrote", os.path.relpath(out(name)))

    f32 = lambda *s: rng.normal(0, 0.5, size=s).astype(np.float32)
    vi = h.make_tensor_value_info

    save("edge_gemm", [
        h.make_node("Gemm", ["a", "b", "c1"], ["y1"], "gemm_computed_b",
                    alpha=0.5, beta=2.0, transB=1),
        h.make_node("Gemm", ["at", "w", "c2"], ["y2"], "gemm_trans_a", transA=1),
        h.make_node("Gemm", ["a", "w"], ["y3"], "gemm_no_c", alpha=-1.25),
        h.make_node("Gemm", ["a", "w", "c3"], ["y4"], "gemm_scalar_c", beta=0.0),
    ], [vi("a", T.FLOAT, [3, 5]), vi("b", T.FLOAT, [4, 5]), vi("at", T.FLOAT, [5, 3])],
        [vi("y1", T.FLOAT, [3, 4]), vi("y2", T.FLOAT, [3, 4]),
         vi("y3", T.FLOAT, [3, 4]), vi("y4", T.FLOAT, [3, 4])],
        [init("w", f32(5, 4)), init("c1", f32(1, 4)), init("c2", f32(3, 1)),
         init("c3", f32())], 13)

    save("edge_matmul", [
        h.make_node("MatMul", ["p", "q"], ["batched"], "matmul_broadcast_batch"),
        h.make_node("MatMul", ["v", "q"], ["vec_mat"], "matmul_1d_a"),
        h.make_node("MatMul", ["p", "w1"], ["mat_vec"], "matmul_1d_b"),
        h.make_node("MatMul", ["v", "w1"], ["dot"], "matmul_dot"),
    ], [vi("p", T.FLOAT, [2, 1, 3, 4]), vi("q", T.FLOAT, [3, 4, 5]),
        vi("v", T.FLOAT, [4])],
        [vi("batched", T.FLOAT, [2, 3, 3, 5]), vi("vec_mat", T.FLOAT, [3, 5]),
         vi("mat_vec", T.FLOAT, [2, 1, 3]), vi("dot", T.FLOAT, [])],
        [init("w1", f32(4))], 13)

    save("edge_reduce", [
        h.make_node("ArgMax", ["x"], ["am0"], "argmax_axis0", axis=0, keepdims=0),
        h.make_node("ArgMax", ["ties"], ["am_first"], "argmax_first", axis=-1),
        h.make_node("ArgMax", ["ties"], ["am_last"], "argmax_last", axis=1,
                    select_last_index=1, keepdims=0),
        h.make_node("Softmax", ["x"], ["sm"], "softmax_coerced", axis=1),
        h.make_node("LogSoftmax", ["x"], ["lsm"], "logsoftmax_last", axis=2),
        h.make_node("Softmax", ["x"], ["sm_default"], "softmax_default"),
    ], [vi("x", T.FLOAT, [3, 4, 5]), vi("ties", T.INT32, [3, 4, 5])],
        [vi("am0", T.INT64, [4, 5]), vi("am_first", T.INT64, [3, 4, 1]),
         vi("am_last", T.INT64, [3, 5]), vi("sm", T.FLOAT, [3, 4, 5]),
         vi("lsm", T.FLOAT, [3, 4, 5]), vi("sm_default", T.FLOAT, [3, 4, 5])],
        [], 12)

    save("edge_shapes", [
        h.make_node("Transpose", ["x"], ["xt"], "transpose_3d", perm=[2, 0, 1]),
        h.make_node("Mul", ["x", "two"], ["x2"], "times_two"),
        h.make_node("Concat", ["x", "x2"], ["cat1"], "concat_axis1", axis=1),
        h.make_node("Concat", ["x2", "x", "x2"], ["cat0"], "concat_axis0", axis=-3),
        h.make_node("Reshape", ["x", "shape"], ["r"], "reshape_0_m1"),
        h.make_node("Flatten", ["x2"], ["flat0"], "flatten_axis0", axis=0),
        h.make_node("Squeeze", ["flat0"], ["sq"], "squeeze_all"),
        h.make_node("Unsqueeze", ["sq", "axes"], ["unsq"], "unsqueeze_two"),
        h.make_node("Clip", ["unsq", "lo"], ["clipped"], "clip_min_only"),
        h.make_node("Identity", ["x"], ["same"], "identity_input"),
        h.make_node("Constant", [], ["k"], "constant_out",
                    value=nh.from_array(np.arange(6, dtype=np.float32).reshape(2, 3))),
        h.make_node("Sub", ["r", "row"], ["centered"], "sub_row"),
        h.make_node("Div", ["centered", "col"], ["scaled"], "div_col"),
        h.make_node("LeakyRelu", ["scaled"], ["leaky"], "leaky_default"),
    ], [vi("x", T.FLOAT, [2, 3, 4]), vi("unused", T.FLOAT, [7])],
        [vi("xt", T.FLOAT, [4, 2, 3]), vi("cat1", T.FLOAT, [2, 6, 4]),
         vi("cat0", T.FLOAT, [6, 3, 4]), vi("clipped", T.FLOAT, [1, 24, 1]),
         vi("same", T.FLOAT, [2, 3, 4]), vi("k", T.FLOAT, [2, 3]),
         vi("leaky", T.FLOAT, [2, 12])],
        [init("two", np.float32(2.0)), init("shape", np.array([0, -1], np.int64)),
         init("axes", np.array([0, -1], np.int64)), init("lo", np.float32(-0.25)),
         init("row", f32(12)), init("col", (np.abs(f32(2, 1)) + 0.5).astype(np.float32))],
        13)

    save("edge_int", [
        h.make_node("Add", ["i", "j"], ["sum"], "add_broadcast"),
        h.make_node("Mul", ["i", "j"], ["prod"], "mul_broadcast"),
        h.make_node("Sub", ["jcol", "i"], ["diff"], "sub_broadcast"),
        h.make_node("Div", ["i", "d"], ["quot"], "div_trunc"),
        h.make_node("MatMul", ["i32", "m32"], ["mm"], "matmul_int32"),
        h.make_node("Concat", ["i", "prod"], ["cat"], "concat_int", axis=0),
    ], [vi("i", T.INT64, [2, 3]), vi("j", T.INT64, [3]), vi("jcol", T.INT64, [2, 1]),
        vi("i32", T.INT32, [2, 3])],
        [vi("sum", T.INT64, [2, 3]), vi("prod", T.INT64, [2, 3]),
         vi("diff", T.INT64, [2, 3]), vi("quot", T.INT64, [2, 3]),
         vi("mm", T.INT32, [2, 4]), vi("cat", T.INT64, [4, 3])],
        [init("d", np.array([3, -2, 5], np.int64)),
         init("m32", rng.integers(-3, 4, size=(3, 4)).astype(np.int32))], 14)

    save("edge_double", [
        h.make_node("Gemm", ["x", "w", "b"], ["h"], "gemm_double", transB=1),
        h.make_node("Tanh", ["h"], ["t"], "tanh_double"),
        h.make_node("Sigmoid", ["t"], ["s"], "sigmoid_double"),
        h.make_node("Clip", ["h", "lo", "hi"], ["c"], "clip_double"),
        h.make_node("Add", ["s", "c"], ["sc"], "add_double"),
        h.make_node("Softmax", ["sc"], ["probs"], "softmax_double", axis=-1),
        h.make_node("Relu", ["h"], ["r"], "relu_double"),
    ], [vi("x", T.DOUBLE, [2, 6])],
        [vi("probs", T.DOUBLE, [2, 4]), vi("r", T.DOUBLE, [2, 4])],
        [init("w", rng.normal(0, 0.5, size=(4, 6))), init("b", rng.normal(0, 0.5, size=4)),
         init("lo", np.float64(-0.3)), init("hi", np.float64(0.4))], 13)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    out = lambda name: os.path.join(args.out, name + ".onnx")

    torch.manual_seed(9)
    export(mlp([8, 16, 4], nn.ReLU), torch.randn(1, 8), out("mlp_relu_d1"),
           ["x"], ["y"], 14)
    export(mlp([32, 64, 64, 32, 8], nn.Tanh), torch.randn(1, 32),
           out("mlp_tanh_d3"), ["x"], ["y"], 14)
    export(MixedMlp(), torch.randn(4, 20), out("mlp_mixed_d2"), ["x"], ["y"], 13)
    export(mlp([300, 64, 15], nn.ReLU), torch.randn(1, 300),
           out("mlp_300_64_15"), ["x"], ["scores"], 14)
    export(TwoInput(), (torch.randn(1, 12), torch.randn(1, 6)), out("two_input"),
           ["ir", "loop"], ["score"], 14)
    export(PolicyHead(), torch.randn(1, 24), out("policy_head"), ["obs"],
           ["probs", "log_probs", "action", "value"], 14, advice="action")
    for opset in (9, 11, 14):
        export(Zoo(), torch.randn(2, 3, 8), out("zoo_opset%d" % opset), ["x"],
               ["sq", "soft", "mixed", "copy"], opset)
    edge_models(out)


if __name__ == "__main__":
    main()
