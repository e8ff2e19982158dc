"""Property-based fuzzing of the Python decoders (hypothesis).

Whatever bytes a peer sends, a decoder returns a value or raises an
MLBridgeError subclass (ProtocolError, MessageTooLarge, PeerClosed,
ModelError) — never another exception, a hang or an unbounded allocation.
Inputs are random bytes and valid streams with random byte edits. The C++
decoders have libFuzzer targets (tests/fuzz).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlbridge import BufferReader, MLBridgeError, TensorSpec, serdes
from mlbridge.grpc import protobuf_serdes
from mlbridge.messages import SessionState

CODECS = {"bitstream": serdes.get("bitstream"), "json": serdes.get("json"),
          "protobuf": protobuf_serdes}
SPECS = [TensorSpec("a", "int64_t", [1]), TensorSpec("b", "float", [2, 3]),
         TensorSpec("c", "bool", [2]), TensorSpec("d", "string", [3])]
VALUES = [7, [[1.5, -2.0, 3.25], [0.0, 1e-7, 6e20]], [True, False], "abc"]
ADVICE = [TensorSpec("i", "int64_t", [1]), TensorSpec("f", "float", [1]),
          TensorSpec("v", "int32_t", [-1]), TensorSpec("s", "string", [-1]),
          TensorSpec("m", "double", [2, -1]), TensorSpec("b", "bool", [3])]
ADVICE_VALUES = [1, 0.5, [3, 1, 2], "caf\u00e9", [[1.0], [2.0]], [True, False, True]]

FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])


def valid_stream(codec):
    parts = [codec.encode_header(SPECS, ADVICE[0]), codec.encode_context("f")]
    parts += [codec.encode_observation(i, list(zip(SPECS, VALUES))) for i in range(2)]
    return b"".join(parts)


@st.composite
def edited(draw, data):
    """``data`` with a few random byte replacements, insertions or cuts."""
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["set", "insert", "cut"]))
        byte = draw(st.integers(0, 255))
        if op == "set" and pos < len(data):
            data[pos] = byte
        elif op == "insert":
            data[pos:pos] = bytes([byte])
        else:
            del data[pos:]
    return bytes(data)


def small_state():
    return SessionState(max_message_bytes=1 << 16, max_header_bytes=1 << 12,
                        max_features=32)


def decode_all(codec, data):
    reader, state = BufferReader(data), small_state()
    for _ in range(100):
        if reader.at_end:
            return
        try:
            codec.decode_message(reader, state)
        except MLBridgeError:
            return


@pytest.mark.parametrize("name", sorted(CODECS))
@FUZZ
@given(data=st.data())
def test_model_side_decoding_raises_only_mlbridge_errors(name, data):
    codec = CODECS[name]
    blob = data.draw(st.one_of(st.binary(max_size=512), edited(valid_stream(codec))))
    decode_all(codec, blob)


@pytest.mark.parametrize("name", sorted(CODECS))
@FUZZ
@given(data=st.data())
def test_compiler_side_decoding_raises_only_mlbridge_errors(name, data):
    codec = CODECS[name]
    i = data.draw(st.integers(0, len(ADVICE) - 1))
    spec = ADVICE[i]
    reply = bytes(codec.encode_advice(spec, ADVICE_VALUES[i]))
    blob = data.draw(st.one_of(st.binary(max_size=256), edited(reply)))
    try:
        value = codec.decode_advice(BufferReader(blob), spec, 1 << 16)
    except MLBridgeError:
        return
    # What decodes must encode again and decode to the same value.
    again = codec.decode_advice(BufferReader(bytes(codec.encode_advice(spec, value))),
                                spec, 1 << 16)
    if isinstance(value, str):
        assert again == value
    else:
        assert np.array_equal(np.asarray(again), np.asarray(value), equal_nan=True)


@FUZZ
@given(text=st.one_of(st.binary(max_size=200),
                      edited(b'{"name":"x","type":"int64_t","port":0,"shape":[2,-1]}')))
def test_tensor_spec_json_raises_only_mlbridge_errors(text):
    try:
        spec = TensorSpec.from_json(text)
    except MLBridgeError:
        return
    assert TensorSpec.from_json(spec.to_json()) == spec
