"""Writes the ONNX models of mlbridge-bench: one fully connected layer per
vector size, with fixed shapes (what a deployed model looks like: no slice
of the weights per call).

    y[1] = MatMul(x[n], W[:n, :]) + B

W = linspace(-1, 1, 50000) as a [50000, 1] array, B = 0.5 -- the same
numbers the Python peer (bench_peer.py) uses with numpy.

    python bench/make_fc_model.py DIR N...     writes DIR/fc_<N>.onnx per size
"""
import os
import sys

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


def fixed_model(n, out):
    inits = [numpy_helper.from_array(weights()[:n], "W"),
             numpy_helper.from_array(np.array([0.5], dtype=np.float32), "B")]
    nodes = [helper.make_node("MatMul", ["x", "W"], ["xw"]),
             helper.make_node("Add", ["xw", "B"], ["y"])]
    save(nodes, inits, [n], f"mlbridge_bench_fc_{n}", out)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for n in map(int, sys.argv[2:]):
        fixed_model(n, os.path.join(out_dir, f"fc_{n}.onnx"))


if __name__ == "__main__":
    main()
