"""The one ONNX exporter of the project's small policy networks.

Every trained policy (the inliner's, the phase-ordering one, the MLIR
unroll one, the phase-ordering environment's PyTorch agent) is a few dense
layers written directly as an ONNX graph from its numpy weights, so the
same file runs under ONNX Runtime and through the compiled-model
generator, which supports a fixed operator set (Add, Mul, Sub, Div, Log,
Tanh, Relu, Gemm, Concat, Reshape, ArgMax). All exports share one opset,
one IR version and one return type (the serialized model)."""

from __future__ import annotations

from typing import Dict, Sequence, Tuple

import numpy as np

__all__ = ["OPSET", "IR_VERSION", "onnx_model", "node", "float32", "input_spec"]

OPSET = 13
IR_VERSION = 8

_ELEM = {np.dtype(np.float32): 1, np.dtype(np.int64): 7}   # TensorProto.FLOAT, INT64


def node(op: str, inputs: Sequence[str], outputs: Sequence[str], **attrs):
    """One graph node (``onnx.helper.make_node``)."""
    from onnx import helper
    return helper.make_node(op, list(inputs), list(outputs), **attrs)


def onnx_model(name: str, nodes, inputs: Sequence[Tuple[str, type, Sequence[int]]],
               outputs: Sequence[Tuple[str, type, Sequence[int]]],
               constants: Dict[str, np.ndarray], *, producer: str,
               path=None) -> bytes:
    """A checked ONNX model of ``nodes``; returns its serialized bytes and
    writes them to ``path`` when given.

    ``inputs``/``outputs``: ``(name, numpy dtype, shape)``; ``constants``:
    initializers by name (their dtype is kept: pass float32 or int64)."""
    import onnx
    from onnx import helper, numpy_helper

    def value(name, dtype, shape):
        return helper.make_tensor_value_info(name, _ELEM[np.dtype(dtype)], list(shape))

    graph = helper.make_graph(
        list(nodes), name, [value(*i) for i in inputs], [value(*o) for o in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name=producer)
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    data = model.SerializeToString()
    if path is not None:
        with open(path, "wb") as f:
            f.write(data)
    return data


def float32(a) -> np.ndarray:
    """``a`` as a float32 array (the weights of every exported network)."""
    return np.asarray(a, dtype=np.float32)


def input_spec(names: Sequence[str], shape: Sequence[int]):
    """Float32 inputs, one per name, all of ``shape``."""
    return [(n, np.float32, shape) for n in names]

