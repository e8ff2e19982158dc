"""Writes the committed seed corpus of every fuzz target (corpus/<target>/).

Seeds are valid inputs made with the Python side's encoders (so each
target starts from what real peers send) plus a few small ONNX models.
Run from the repository root with the project's Python:
``PYTHONPATH=python python tests/fuzz/make_seeds.py``.
"""

import shutil
from pathlib import Path

import numpy as np

from mlbridge import TensorSpec, serdes
from mlbridge.grpc import protobuf_serdes

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
REPO = HERE.parents[1]

SPECS = [TensorSpec("callee_users", "int64_t", [1]),
         TensorSpec("embedding", "float", [2, 3]),
         TensorSpec("flag", "bool", [2]),
         TensorSpec("label", "string", [5])]
VALUES = [7, [[1.5, -2.0, 3.25], [0.0, 1e-7, 6e20]], [True, False], "h\u00e9ll"]
ADVICE = [TensorSpec("inlining_decision", "int64_t", [1]),
          TensorSpec("priority", "float", [1]),
          TensorSpec("order", "int32_t", [-1]),
          TensorSpec("text", "string", [-1])]
ADVICE_VALUES = [1, 0.5, [3, 1, 2], "caf\u00e9"]
# The compiler-side fuzzers pick the advice spec from the first byte: the
# dtype (low nibble, DType order) and the shape (bits 4-5: [1], [3], [-1],
# [2,-1]).
DTYPE_CODE = {"float": 0, "int64_t": 5, "int32_t": 4, "string": 11}
SHAPE_CODE = {(1,): 0, (3,): 1, (-1,): 2, (2, -1): 3}


def stream(codec, session=None):
    header = codec.encode_header(SPECS, ADVICE[0])
    if session is not None and header.endswith(b"}\n"):
        header = header[:-2] + b',"session":"%s"}\n' % session.encode()
    parts = [header, codec.encode_context("main")]
    parts += [codec.encode_observation(i, list(zip(SPECS, VALUES))) for i in range(2)]
    parts.append(codec.encode_header(SPECS[:2], ADVICE[2], continues=True))
    parts.append(codec.encode_observation(2, list(zip(SPECS[:2], VALUES[:2]))))
    return b"".join(parts)


def advice_seeds(codec):
    for spec, value in zip(ADVICE, ADVICE_VALUES):
        selector = DTYPE_CODE[spec.dtype] | SHAPE_CODE[tuple(spec.shape)] << 4
        yield bytes([selector]) + bytes(codec.encode_advice(spec, value))


def write(target, seeds):
    out = CORPUS / target
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for i, data in enumerate(seeds):
        (out / f"seed-{i:02d}").write_bytes(data)


def main():
    bitstream, json_codec = serdes.get("bitstream"), serdes.get("json")
    write("json_value", [
        json_codec.encode_header(SPECS, ADVICE[0]),
        json_codec.encode_observation(0, list(zip(SPECS, VALUES))),
        b'{"advice":[1,2.5e-3,-0.0,NaN,Infinity],"x":{"a":[[]],"b":null}}',
        b'"\\u00e9\\ud834\\udd1e\\n"', b"[true,false,null,-9223372036854775808]"])
    write("tensor_spec_json", [s.to_json().encode() for s in SPECS + ADVICE])
    write("bitstream_model_side", [stream(bitstream), stream(bitstream, "00000000000000ab")])
    write("json_model_side", [stream(json_codec), stream(json_codec, "00000000000000ab")])
    write("protobuf_model_side", [stream(protobuf_serdes)])
    write("bitstream_compiler_side", advice_seeds(bitstream))
    write("json_compiler_side", list(advice_seeds(json_codec)) + [
        bytes([5]) + b'{"error":"cannot decide"}\n'])
    write("protobuf_compiler_side", advice_seeds(protobuf_serdes))
    models = REPO / "tests" / "cpp" / "compiled" / "models"
    write("onnx_import", [(models / n).read_bytes() for n in
                          ("edge_matmul.onnx", "edge_int.onnx", "edge_gemm.onnx")])


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
