"""The Python Protobuf SerDes (pipes) and the tensor conversions of
mlbridge.grpc: round trips for every dtype and every check on wire data."""

import numpy as np
import pytest

from cases import NUMERIC, STRINGS, decode_all, extremes, same
from mlbridge import (BufferReader, Context, Header, MessageTooLarge, ModelError,
                      ProtocolError, SessionState, TensorSpec, serdes)
from mlbridge.grpc import pb2
from mlbridge.grpc import protobuf_serdes as pbs
from mlbridge.grpc.tensors import array_from_pb, decode_advice, encode_advice, tensor_to_pb


def test_registered_as_a_serdes():
    assert serdes.get("protobuf") is pbs
    assert "protobuf" in serdes.NAMES
    assert pbs.NAME == "protobuf"


@pytest.mark.parametrize("dtype", NUMERIC)
def test_every_numeric_dtype_round_trips(dtype):
    values = extremes(dtype)
    spec = TensorSpec("v", dtype, (len(values),))
    advice = TensorSpec("a", dtype, (-1,))
    data = (pbs.encode_header([spec], advice) + pbs.encode_context("fn")
            + pbs.encode_observation(3, [(spec, values)]))
    header, ctx, obs = decode_all(pbs, data)
    assert isinstance(header, Header) and header.feature_specs == (spec,)
    assert header.advice_spec == advice and not header.continues
    assert isinstance(ctx, Context) and ctx.name == "fn"
    assert obs.index == 3 and obs.context == "fn"
    want = np.array(values, dtype=spec.np_dtype)
    assert same(obs["v"], want)
    assert not obs["v"].flags.writeable
    reply = pbs.encode_advice(advice, values)
    assert same(pbs.decode_advice(BufferReader(reply), advice), want)


@pytest.mark.parametrize("text", STRINGS)
def test_strings_round_trip(text):
    n = len(text.encode("utf-8"))
    spec = TensorSpec("s", "string", (n,))
    advice = TensorSpec("a", "string", (-1,))
    data = pbs.encode_header([spec], advice) + pbs.encode_observation(0, [(spec, text)])
    _, obs = decode_all(pbs, data)
    assert obs["s"] == text
    assert pbs.decode_advice(BufferReader(pbs.encode_advice(advice, text)), advice) == text


def test_advice_is_checked_before_sending():
    spec = TensorSpec("a", "int32_t", (1,))
    with pytest.raises(TypeError):
        pbs.encode_advice(spec, 1.5)
    with pytest.raises(ValueError):
        pbs.encode_advice(spec, 1 << 40)
    with pytest.raises(ValueError):
        pbs.encode_advice(TensorSpec("a", "float", (2,)), [1.0, 2.0, 3.0])


def test_error_replies():
    spec = TensorSpec("a", "int64_t")
    with pytest.raises(ModelError, match="no idea"):
        pbs.decode_advice(BufferReader(pbs.encode_error("no idea")), spec)
    empty = pbs.encode_varint(0)
    with pytest.raises(ProtocolError, match="neither"):
        pbs.decode_advice(BufferReader(empty), spec)


def test_wire_data_is_checked():
    spec = TensorSpec("v", "int32_t", (2,))
    advice = TensorSpec("a", "int32_t")
    header = pbs.encode_header([spec], advice)
    # An observation whose shape disagrees with the header.
    other = TensorSpec("v", "int32_t", (3,))
    bad = header + pbs.encode_observation(0, [(other, [1, 2, 3])])
    with pytest.raises(ProtocolError, match="does not match"):
        decode_all(pbs, bad)
    # An observation before any header.
    with pytest.raises(ProtocolError, match="before any header"):
        decode_all(pbs, pbs.encode_observation(0, [(spec, [1, 2])]))
    # A length above the limit is refused before reading the body.
    huge = pbs.encode_varint(1 << 30)
    with pytest.raises(MessageTooLarge):
        pbs.decode_message(BufferReader(huge), SessionState(max_message_bytes=1 << 20))
    # Bytes that are not a PipeMessage.
    junk = pbs.encode_varint(3) + b"\xff\xff\xff"
    with pytest.raises(ProtocolError):
        decode_all(pbs, junk)
    # A truncated stream is the peer closing mid-message.
    from mlbridge import PeerClosed
    with pytest.raises(PeerClosed):
        decode_all(pbs, header[:-2])


def test_tensor_checks():
    t = pb2.Tensor(name="b", dtype=11, shape=[2], data=b"\x01\x02")
    with pytest.raises(ProtocolError, match="not 0 or 1"):
        array_from_pb(t, 1 << 20)
    t = pb2.Tensor(name="f", dtype=1, shape=[3], data=b"\0" * 8)
    with pytest.raises(ProtocolError, match="does not describe"):
        array_from_pb(t, 1 << 20)
    t = pb2.Tensor(name="f", dtype=0, shape=[1], data=b"\0" * 4)
    with pytest.raises(ProtocolError, match="dtype is not set"):
        array_from_pb(t, 1 << 20)
    t = pb2.Tensor(name="s", dtype=12, shape=[2], data=b"\xff\xfe")
    with pytest.raises(ProtocolError, match="UTF-8"):
        array_from_pb(t, 1 << 20)
    t = pb2.Tensor(name="f", dtype=1, shape=[1000], data=b"\0" * 4000)
    with pytest.raises(MessageTooLarge):
        array_from_pb(t, 3999)
    # Dynamic advice: the shape follows the count.
    spec = TensorSpec("a", "float", (-1, 2))
    msg = encode_advice(spec, [1.0, 2.0, 3.0, 4.0])
    assert list(msg.tensor.shape) == [2, 2]
    assert decode_advice(msg, spec, 1 << 20).shape == (2, 2)
    with pytest.raises(ValueError):
        tensor_to_pb(spec, [1.0, 2.0, 3.0])
