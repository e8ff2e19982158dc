"""Protobuf SerDes for pipes (docs/grpc.md, "The Protobuf SerDes"), the mirror of C++
``SerDesKind::Protobuf``: every message is a base-128 varint byte length
followed by a serialized message of proto/mlbridge.proto; the compiler
sends ``PipeMessage`` (header, context or observation), the model answers
with ``Advice``. Reached as ``mlbridge.serdes.get("protobuf")``, with the
same functions as the other SerDes modules.
"""

from ..errors import MessageTooLarge, ModelError, ProtocolError
from ..messages import DEFAULT_MAX_MESSAGE_BYTES, Context, Header
from ..observation import Observation
from ..serdes import check_feature_specs
from ._proto import pb2
from .tensors import (array_from_pb, decode_advice as _decode_advice_msg,
                      encode_advice as _encode_advice_msg, spec_from_pb, spec_to_pb,
                      tensor_to_pb)

__all__ = ["NAME", "encode_header", "encode_context", "encode_observation",
           "decode_advice", "decode_message", "encode_advice", "encode_error",
           "encode_varint"]

NAME = "protobuf"


def encode_varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _frame(msg):
    body = msg.SerializeToString()
    return encode_varint(len(body)) + body


def _read_frame(reader, limit, state=None):
    """Reads one length-delimited message body (bytes)."""
    length = 0
    shift = 0
    while True:
        b = reader.read_exact(1)[0]
        if state is not None:
            state.in_message = True
        length |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise ProtocolError("message length varint is longer than 10 bytes")
    if length > limit:
        raise MessageTooLarge(f"message of {length} bytes exceeds the {limit}-byte limit")
    return bytes(reader.read_exact(length)) if length else b""


# ---- compiler side ------------------------------------------------------------------
def encode_header(feature_specs, advice_spec, score_spec=None, continues=False):
    if score_spec is not None:
        raise ValueError("the protobuf SerDes has no score records")
    msg = pb2.PipeMessage()
    for spec in check_feature_specs(feature_specs):
        spec_to_pb(spec, msg.header.features.add())
    spec_to_pb(advice_spec, msg.header.advice)
    msg.header.continues = bool(continues)
    return _frame(msg)


def encode_context(name):
    if not isinstance(name, str):
        raise TypeError(f"context name must be a str, got {type(name).__name__}")
    msg = pb2.PipeMessage()
    msg.context = name
    return _frame(msg)


def encode_observation(index, features):
    """``features``: ``(TensorSpec, value)`` pairs in header order."""
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"observation index must be a non-negative int, got {index!r}")
    msg = pb2.PipeMessage()
    msg.observation.index = index
    for spec, value in features:
        if spec.is_dynamic:
            raise ValueError(f"feature {spec.describe()}: features need concrete shapes")
        tensor_to_pb(spec, value, msg.observation.features.add(), "feature")
    return _frame(msg)


def decode_advice(reader, spec, max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES):
    body = _read_frame(reader, max_message_bytes)
    msg = pb2.Advice()
    try:
        msg.ParseFromString(body)
    except Exception:
        raise ProtocolError(f"reply of {len(body)} bytes is not an Advice message") from None
    return _decode_advice_msg(msg, spec, max_message_bytes)


# ---- model side ----------------------------------------------------------------------
def decode_message(reader, state):
    """Reads the next PipeMessage: Header, Context or Observation."""
    state.in_message = False
    limit = state.max_message_bytes
    body = _read_frame(reader, max(limit, state.max_header_bytes), state)
    msg = pb2.PipeMessage()
    try:
        msg.ParseFromString(body)
    except Exception:
        raise ProtocolError(f"message of {len(body)} bytes is not a PipeMessage") from None
    state.in_message = False
    kind = msg.WhichOneof("kind")
    if kind == "header":
        return _header(msg.header, state)
    if kind == "context":
        state.context = msg.context
        return Context(msg.context)
    if kind == "observation":
        return _observation(msg.observation, state)
    raise ProtocolError("message is neither a header, a context nor an observation")


def _header(h, state):
    limit = state.max_message_bytes
    if len(h.features) > state.max_features:
        raise MessageTooLarge(f"header: {len(h.features)} feature specs exceed the "
                              f"feature-count limit of {state.max_features}")
    specs = []
    seen = set()
    total = 0
    for i, s in enumerate(h.features):
        spec = spec_from_pb(s, False, limit, f"header: feature {i}")
        if spec.name in seen:
            raise ProtocolError(f"header: duplicate feature name {spec.name!r}")
        seen.add(spec.name)
        total += spec.nbytes
        if total > limit:
            raise MessageTooLarge(f"header: observations of {total} bytes exceed the "
                                  f"{limit}-byte message limit")
        specs.append(spec)
    if not h.HasField("advice"):
        raise ProtocolError("header: no advice spec")
    advice = spec_from_pb(h.advice, True, limit, "header: advice")
    state.feature_specs = tuple(specs)
    state.advice_spec = advice
    state.score_spec = None
    state.cache = None
    if not h.continues:
        state.session, state.requests = h.session, 0
    return Header(state.feature_specs, advice, None, bool(h.continues), state.session)


def _observation(o, state):
    what = f"observation {o.index}"
    if state.feature_specs is None:
        raise ProtocolError(f"{what} arrived before any header")
    specs = state.feature_specs
    if len(o.features) != len(specs):
        raise ProtocolError(f"{what}: {len(o.features)} features, the header declared "
                            f"{len(specs)}")
    values = {}
    for spec, t in zip(specs, o.features):
        got, value = array_from_pb(t, state.max_message_bytes)
        if got != spec:
            raise ProtocolError(f"{what}: feature {got.describe()} does not match the "
                                f"header's {spec.describe()}")
        values[spec.name] = value
    return Observation(o.index, state.context, specs, state.advice_spec, values=values)


def encode_advice(spec, value):
    return _frame(_encode_advice_msg(spec, value))


def encode_error(message):
    return _frame(pb2.Advice(error=str(message)))


# ModelError is what decode_advice raises for an error reply (re-exported
# for symmetry with the JSON SerDes).
ModelError = ModelError
