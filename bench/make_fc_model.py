"""Writes the ONNX models of mlbridge-bench: one fully connected layer per
vector size, with fixed shapes (what a deployed model looks like: no slice
of the weights per call), in one of two forms of the same arithmetic:

    matmul         y[1] = MatMul(x[n], W[:n, :]) + B    (what exporters write
                   for a Linear layer; the model compiler's input)
    mul-reducesum  y[1] = ReduceSum(x[n] * W[:n]) + B   (the ONNX Runtime
                   runner's: ONNX Runtime 1.29 runs a one-column MatMul 3x
                   slower, see docs/performance.md)

W = linspace(-1, 1, 50000), B = 0.5 (float32) -- the numbers the Python peer
(bench_peer.py) uses with numpy.

    python bench/make_fc_model.py [--form FORM] DIR N...   writes DIR/fc_<N>.onnx
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MAX_N = 50000


def weights():
    return np.linspace(-1.0, 1.0, MAX_N, dtype=np.float32).reshape(MAX_N, 1)


def save(nodes, inits, x_shape, name, out):
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="mlbridge-bench")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out)


def fixed_model(n, form, out):
    inits = [numpy_helper.from_array(np.array([0.5], dtype=np.float32), "B")]
    if form == "matmul":
        inits.append(numpy_helper.from_array(weights()[:n], "W"))
        nodes = [helper.make_node("MatMul", ["x", "W"], ["xw"])]
    else:
        inits += [numpy_helper.from_array(weights()[:n, 0], "W"),
                  numpy_helper.from_array(np.array([0], dtype=np.int64), "axis")]
        nodes = [helper.make_node("Mul", ["x", "W"], ["xw_each"]),
                 helper.make_node("ReduceSum", ["xw_each", "axis"], ["xw"], keepdims=1)]
    nodes.append(helper.make_node("Add", ["xw", "B"], ["y"]))
    save(nodes, inits, [n], f"mlbridge_bench_fc_{n}", out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--form", choices=("matmul", "mul-reducesum"), default="matmul")
    parser.add_argument("dir")
    parser.add_argument("sizes", type=int, nargs="+")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    for n in args.sizes:
        fixed_model(n, args.form, os.path.join(args.dir, f"fc_{n}.onnx"))


if __name__ == "__main__":
    main()
