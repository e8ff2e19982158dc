"""Bitstream SerDes (docs/protocol.md §2): LLVM's format, byte for byte."""

import struct

import numpy as np
import pytest

from cases import NUMERIC, STRINGS, decode_all, extremes
from mlbridge import (BufferReader, Context, Header, MessageTooLarge, Observation,
                      Outcome, PeerClosed, ProtocolError, SessionState, TensorSpec)
from mlbridge.serdes import bitstream as bs

A = TensorSpec("a", "int64_t", [1])
B = TensorSpec("b", "float", [2, 3])
ADVICE = TensorSpec("inlining_decision", "int64_t", [1])

HEADER = (b'{"features":[{"name":"a","type":"int64_t","port":0,"shape":[1]},'
          b'{"name":"b","type":"float","port":0,"shape":[2,3]}],'
          b'"advice":{"name":"inlining_decision","type":"int64_t","port":0,"shape":[1]}}\n')


def test_exact_bytes_of_header_and_observation():
    b = np.array([[1.5, -2, 0], [3, 4, 5]], dtype=np.float32)
    data = bs.encode_header([A, B], ADVICE) + bs.encode_observation(0, [(A, 7), (B, b)])
    payload = struct.pack("<q", 7) + struct.pack("<6f", 1.5, -2, 0, 3, 4, 5)
    assert data == HEADER + b'{"observation":0}\n' + payload + b"\n"


def test_decode_known_stream():
    payload = struct.pack("<q", -3) + struct.pack("<6f", *range(6))
    stream = (HEADER + b'{"context":"main"}\n' + b'{"observation":0}\n' + payload + b"\n"
              + b'{"observation":1}\n' + payload + b"\n" + b'{"context":"other"}\n')
    header, ctx, obs0, obs1, ctx2 = decode_all(bs, stream)
    assert header == Header((A, B), ADVICE)
    assert ctx == Context("main") and ctx2 == Context("other")
    assert isinstance(obs0, Observation)
    assert (obs0.index, obs1.index, obs0.context) == (0, 1, "main")
    assert list(obs0) == ["a", "b"] and len(obs0) == 2
    assert obs0["a"].dtype == np.dtype("<i8") and obs0["a"].shape == (1,)
    assert obs0["a"][0] == -3
    assert obs0["b"].shape == (2, 3) and obs0["b"].dtype == np.float32
    assert obs0["b"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert obs0.raw == payload and obs0.advice_spec == ADVICE
    assert obs0.feature_specs == (A, B)


def test_observation_arrays_are_read_only_views_of_raw():
    data = bs.encode_header([A, B], ADVICE) + bs.encode_observation(0, [(A, 1), (B, [0] * 6)])
    obs = decode_all(bs, data)[1]
    arr = obs["b"]
    assert not arr.flags.writeable
    assert np.shares_memory(arr, np.frombuffer(obs.raw, np.uint8))
    with pytest.raises(ValueError):
        arr[0, 0] = 1
    with pytest.raises(TypeError):
        obs["c"] = 1  # a Mapping, not a dict
    with pytest.raises(KeyError):
        obs["missing"]


@pytest.mark.parametrize("name", NUMERIC)
def test_fixed_shape_advice_is_the_raw_bytes(name):
    vec = extremes(name)
    adv = TensorSpec("adv", name, [len(vec)])
    assert len(bs.encode_advice(adv, vec)) == adv.nbytes
    assert bs.encode_advice(TensorSpec("e", name, [0]), []) == b""


@pytest.mark.parametrize("text", STRINGS)
def test_dynamic_string_advice_has_count_prefix(text):
    dyn = TensorSpec("d", "string", [-1])
    n = len(text.encode("utf-8"))
    assert bs.encode_advice(dyn, text) == struct.pack("<Q", n) + text.encode()


def test_dynamic_advice_has_count_prefix():
    spec = TensorSpec("adv", "float", [-1])
    reply = bs.encode_advice(spec, [1.0, 2.5, -3])
    assert reply == struct.pack("<Q", 3) + struct.pack("<3f", 1.0, 2.5, -3)
    out = bs.decode_advice(BufferReader(reply), spec)
    assert out.shape == (3,) and out.tolist() == [1.0, 2.5, -3.0]
    assert bs.encode_advice(spec, []) == struct.pack("<Q", 0)
    rows = TensorSpec("rows", "int32_t", [-1, 2])
    out = bs.decode_advice(BufferReader(bs.encode_advice(rows, [[1, 2], [3, 4], [5, 6]])), rows)
    assert out.shape == (3, 2)
    with pytest.raises(ValueError, match="not a multiple of 2"):
        bs.encode_advice(rows, [1, 2, 3])
    with pytest.raises(ProtocolError, match="not a multiple of 2"):
        bs.decode_advice(BufferReader(struct.pack("<Q", 3) + bytes(12)), rows)


def test_new_header_mid_session_changes_specs():
    s1 = TensorSpec("v", "int32_t", [2])
    s2 = TensorSpec("v", "int32_t", [3])
    stream = (bs.encode_header([s1], ADVICE) + bs.encode_observation(0, [(s1, [1, 2])])
              + bs.encode_header([s2], ADVICE) + bs.encode_observation(1, [(s2, [1, 2, 3])]))
    _, o0, _, o1 = decode_all(bs, stream)
    assert o0["v"].tolist() == [1, 2] and o1["v"].tolist() == [1, 2, 3]


def test_score_and_outcome_records_of_training_logs():
    score = TensorSpec("reward", "float", [1])
    header = (b'{"features":[' + A.to_json().encode() + b'],"score":' + score.to_json().encode()
              + b',"advice":' + ADVICE.to_json().encode() + b"}\n")
    assert header == bs.encode_header([A], ADVICE, score)
    stream = (header + bs.encode_observation(0, [(A, 5)])
              + b'{"outcome":0}\n' + struct.pack("<f", 2.5) + b"\n")
    h, obs, outcome = decode_all(bs, stream)
    assert h.score_spec == score
    assert isinstance(outcome, Outcome) and outcome.index == 0
    assert outcome.value.tolist() == [2.5]


def test_context_names_are_escaped_like_llvm():
    assert bs.encode_context('f"\\\n\x02é') == b'{"context":"f\\"\\\\\\n\\u0002\xc3\xa9"}\n'
    assert decode_all(bs, bs.encode_context('f"\\\n\x02é')) == [Context('f"\\\n\x02é')]


# ---- malformed input ------------------------------------------------------------
def _decode_error(stream, **limits):
    reader = BufferReader(stream)
    state = SessionState(**limits)
    with pytest.raises(Exception) as info:
        while True:
            bs.decode_message(reader, state)
    return info


@pytest.mark.parametrize("stream, exc, message", [
    (b"garbage\n", ProtocolError, "malformed message"),
    (b"[1,2]\n", ProtocolError, "must be a JSON object"),
    (b'{"hello":1}\n', ProtocolError, "unrecognized message"),
    (b"\xff\xfe\n", ProtocolError, "not valid UTF-8"),
    (b'{"observation":0}\n\n', ProtocolError, "before any header"),
    (b'{"observation":-1}\n', ProtocolError, "non-negative 64-bit integer"),
    (b'{"observation":1.5}\n', ProtocolError, "non-negative 64-bit integer"),
    (b'{"context":5}\n', ProtocolError, '"context" must be a string'),
    (b'{"features":{}}\n', ProtocolError, '"features" must be an array'),
    (HEADER.replace(b',"advice"', b',"x"'), ProtocolError, 'missing "advice"'),
    (HEADER.replace(b'"int64_t","port":0,"shape":[1]},{', b'"int64","port":0,"shape":[1]},{'),
     ProtocolError, 'unknown "type"'),
    (HEADER.replace(b'"shape":[2,3]', b'"shape":[-1,3]'), ProtocolError,
     "only the advice may"),
    (HEADER.replace(b'"name":"b"', b'"name":"a"'), ProtocolError, "duplicate feature name"),
    (HEADER.replace(b'"shape":[2,3]', b'"shape":[1099511627776]'), MessageTooLarge,
     "above the 268435456-byte message limit"),
    (HEADER + b'{"observation":0}\n' + bytes(8 + 24) + b"X", ProtocolError,
     "expected '\\n' after the 32-byte payload"),
    (HEADER + b'{"observation":0}\n' + bytes(10), PeerClosed,
     "stream ended inside observation 0"),
    (HEADER + b'{"outcome":0}\n', ProtocolError, "declared no score"),
    (b'{"observ', PeerClosed, "stream ended inside a line"),
])
def test_malformed_streams(stream, exc, message):
    info = _decode_error(stream)
    assert info.type is exc, info.value
    assert message in str(info.value)


def test_clean_end_of_stream_is_peer_closed():
    info = _decode_error(HEADER)
    assert info.type is PeerClosed and info.value.clean
    info = _decode_error(HEADER + b'{"observation":0}\n' + bytes(3))
    assert info.type is PeerClosed and not info.value.clean


def test_limits_are_checked_before_reading():
    info = _decode_error(HEADER, max_header_bytes=100)
    assert info.type is MessageTooLarge and "100-byte limit" in str(info.value)
    info = _decode_error(HEADER, max_message_bytes=16)
    assert info.type is MessageTooLarge
    assert "needs 24 bytes, above the 16-byte message limit" in str(info.value)
    info = _decode_error(HEADER, max_message_bytes=30)
    assert "observations of 32 bytes exceed the 30-byte message limit" in str(info.value)
    # A line without newline is rejected once it passes the limit, not at EOF.
    info = _decode_error(b"x" * 5000, max_header_bytes=1000)
    assert info.type is MessageTooLarge


def test_bool_and_string_payloads_are_validated():
    flag = TensorSpec("f", "bool", [2])
    stream = bs.encode_header([flag], ADVICE) + b'{"observation":0}\n\x01\x02\n'
    info = _decode_error(stream)
    assert info.type is ProtocolError and "bool bytes must be 0 or 1" in str(info.value)
    text = TensorSpec("t", "string", [2])
    stream = bs.encode_header([text], ADVICE) + b'{"observation":0}\n\xc3\x28\n'
    info = _decode_error(stream)
    assert info.type is ProtocolError and "not valid UTF-8" in str(info.value)


def test_decode_advice_errors():
    with pytest.raises(PeerClosed) as info:
        bs.decode_advice(BufferReader(b"\x01\x02"), ADVICE)
    assert "after 2 of 8 bytes" in str(info.value) and not info.value.clean
    dyn = TensorSpec("d", "double", [-1])
    with pytest.raises(MessageTooLarge, match="exceed the 1024-byte limit"):
        bs.decode_advice(BufferReader(struct.pack("<Q", 2 ** 60)), dyn, max_message_bytes=1024)
    with pytest.raises(ProtocolError, match="bool bytes"):
        bs.decode_advice(BufferReader(b"\x05"), TensorSpec("b", "bool", [1]))


# ---- advice validation (nothing is produced for a bad value) ---------------------------
@pytest.mark.parametrize("spec, value, exc, message", [
    (ADVICE, 1.5, TypeError, "expected integers, got float 1.5"),
    (ADVICE, np.float64(2.0), TypeError, "expected integers"),
    (ADVICE, True, TypeError, "expected integers, got bool"),
    (ADVICE, [1, 2], ValueError, "expected 1 element(s), got 2"),
    (ADVICE, [], ValueError, "expected 1 element(s), got 0"),
    (ADVICE, 2 ** 63, ValueError, "out of range"),
    (ADVICE, "1", TypeError, "got str"),
    (ADVICE, None, TypeError, "got NoneType"),
    (ADVICE, [1, "x"], TypeError, "unsupported element 'x'"),
    (ADVICE, [True, 1], TypeError, "mixes booleans and numbers"),
    (TensorSpec("u", "uint8_t", [1]), 256, ValueError, "256 is out of range [0, 255]"),
    (TensorSpec("u", "uint8_t", [1]), -1, ValueError, "out of range"),
    (TensorSpec("u", "int8_t", [2]), np.array([1, 300]), ValueError, "300 is out of range"),
    (TensorSpec("f", "float", [1]), True, TypeError, "expected numbers, got bool"),
    (TensorSpec("f", "float", [1]), 1e300, ValueError, "out of range for float"),
    (TensorSpec("f", "float", [1]), 1j, TypeError, "unsupported value"),
    (TensorSpec("f", "double", [1]), 10 ** 400, ValueError, "too large"),
    (TensorSpec("b", "bool", [1]), 1, TypeError, "expected booleans, got integer 1"),
    (TensorSpec("s", "string", [3]), "abcd", ValueError, "expected 3 UTF-8 bytes, got 4"),
    (TensorSpec("s", "string", [1]), 5, TypeError, "expected str"),
    (TensorSpec("m", "int32_t", [2, 2]), [[1, 2], [3]], TypeError, "ragged"),
])
def test_encode_advice_validation(spec, value, exc, message):
    with pytest.raises(exc) as info:
        bs.encode_advice(spec, value)
    assert message in str(info.value)


def test_encode_advice_accepts_python_and_numpy_values():
    assert bs.encode_advice(ADVICE, 5) == struct.pack("<q", 5)
    assert bs.encode_advice(ADVICE, np.int8(5)) == struct.pack("<q", 5)
    assert bs.encode_advice(ADVICE, [5]) == struct.pack("<q", 5)
    assert bs.encode_advice(ADVICE, np.array([[5]], dtype=np.uint16)) == struct.pack("<q", 5)
    f = TensorSpec("f", "float", [2])
    assert bs.encode_advice(f, [1, 2.5]) == struct.pack("<2f", 1, 2.5)
    assert bs.encode_advice(f, np.array([1, 2], dtype=np.int64)) == struct.pack("<2f", 1, 2)
    u = TensorSpec("u", "uint64_t", [1])
    assert bs.encode_advice(u, 2 ** 64 - 1) == b"\xff" * 8
    assert bs.encode_advice(TensorSpec("b", "bool", [2]), [True, np.bool_(False)]) == b"\x01\x00"


def test_encode_observation_validates_features():
    with pytest.raises(TypeError, match="feature float\\[2,3\\] 'b'"):
        bs.encode_observation(0, [(B, ["x"] * 6)])
    with pytest.raises(ValueError, match="concrete shapes"):
        bs.encode_observation(0, [(TensorSpec("d", "float", [-1]), [1.0])])
    with pytest.raises(ValueError, match="observation index"):
        bs.encode_observation(-1, [])
    with pytest.raises(ValueError, match="concrete shapes"):
        bs.encode_header([TensorSpec("d", "float", [-1])], ADVICE)
    with pytest.raises(ValueError, match="duplicate"):
        bs.encode_header([A, A], ADVICE)
