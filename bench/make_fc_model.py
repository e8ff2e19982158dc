"""Writes the ONNX model of mlbridge-bench: one fully connected layer.

    y[1] = MatMul(x[n], W[:n, :]) + B     (n = len(x), 1 <= n <= 50000)

W = linspace(-1, 1, 50000) as a [50000, 1] initializer, B = 0.5 -- the same
numbers the Python peer (bench_peer.py) uses with numpy. The input length is
dynamic: the graph slices the first n rows of W (Shape -> Slice), so one
model serves every vector size of the sweep.

    python bench/make_fc_model.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MAX_N = 50000


def main():
    out = sys.argv[1]
    w = np.linspace(-1.0, 1.0, MAX_N, dtype=np.float32).reshape(MAX_N, 1)
    inits = [numpy_helper.from_array(w, "W"),
             numpy_helper.from_array(np.array([0.5], dtype=np.float32), "B"),
             numpy_helper.from_array(np.array([0], dtype=np.int64), "zero")]
    nodes = [helper.make_node("Shape", ["x"], ["n"]),
             helper.make_node("Slice", ["W", "zero", "n", "zero"], ["Wn"]),
             helper.make_node("MatMul", ["x", "Wn"], ["xw"]),
             helper.make_node("Add", ["xw", "B"], ["y"])]
    graph = helper.make_graph(
        nodes, "mlbridge_bench_fc",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="mlbridge-bench")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    main()
