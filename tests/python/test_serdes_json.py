"""JSON SerDes (docs/protocol.md §3): one compact object per line, exact typing."""

import json

import numpy as np
import pytest

from cases import decode_all
from mlbridge import (BufferReader, Context, MessageTooLarge, ModelError, PeerClosed,
                      ProtocolError, TensorSpec)
from mlbridge.serdes import _common
from mlbridge.serdes import json as js

A = TensorSpec("a", "int64_t", [1])
B = TensorSpec("b", "float", [2, 3])
ADVICE = TensorSpec("inlining_decision", "int64_t", [1])


@pytest.fixture(autouse=True, params=["orjson", "stdlib"])
def json_parser(request, monkeypatch):
    """Every test runs with both parsers: orjson (the fast path, pinned in
    python/requirements/base.txt) and the standard library (the fallback);
    they must accept and reject the same messages, with the same values."""
    if request.param == "orjson":
        assert _common._orjson is not None, "orjson is not installed"
    else:
        monkeypatch.setattr(_common, "_orjson", None)


def _stream_with(feature_specs, features_json, advice=ADVICE):
    return (js.encode_header(feature_specs, advice)
            + b'{"observation":0,"features":' + features_json + b"}\n")


def test_exact_lines():
    assert js.encode_header([A, B], ADVICE) == (
        b'{"features":[{"name":"a","type":"int64_t","port":0,"shape":[1]},'
        b'{"name":"b","type":"float","port":0,"shape":[2,3]}],'
        b'"advice":{"name":"inlining_decision","type":"int64_t","port":0,"shape":[1]}}\n')
    b = np.array([[0.1, 1, 1e20], [np.nan, np.inf, -np.inf]], dtype=np.float32)
    assert js.encode_observation(4, [(A, -7), (B, b)]) == (
        b'{"observation":4,"features":{"a":-7,"b":[0.1,1.0,1e+20,NaN,Infinity,-Infinity]}}\n')
    assert js.encode_context("main") == b'{"context":"main"}\n'
    assert js.encode_advice(ADVICE, 1) == b'{"advice":1}\n'
    assert js.encode_advice(TensorSpec("v", "double", [3]), [0.1, 2, -0.0]) == \
        b'{"advice":[0.1,2.0,-0.0]}\n'
    assert js.encode_advice(TensorSpec("d", "int8_t", [-1]), 5) == b'{"advice":[5]}\n'
    assert js.encode_advice(TensorSpec("f", "bool", [2]), [True, False]) == \
        b'{"advice":[true,false]}\n'
    assert js.encode_error('no "idea"\n') == b'{"error":"no \\"idea\\"\\n"}\n'


def test_float_formatting_is_shortest_per_dtype():
    f32 = TensorSpec("x", "float", [5])
    line = js.encode_advice(f32, np.array([0.1, 1 / 3, 3.4028235e38, 1e-45, 16777216],
                                          dtype=np.float32))
    assert line == b'{"advice":[0.1,0.33333334,3.4028235e+38,1e-45,16777216.0]}\n'
    f64 = TensorSpec("x", "double", [3])
    assert js.encode_advice(f64, [0.1, 1 / 3, 1e16]) == \
        b'{"advice":[0.1,0.3333333333333333,1e+16]}\n'
    # every token has a '.' or an exponent: it can never be read as an integer
    assert js.encode_advice(TensorSpec("x", "double", [1]), 2) == b'{"advice":2.0}\n'


def test_integers_are_exact_and_strings_raw_utf8():
    line = js.encode_advice(TensorSpec("u", "uint64_t", [2]), [2 ** 64 - 1, 0])
    assert line == b'{"advice":[18446744073709551615,0]}\n'
    line = js.encode_advice(TensorSpec("s", "string", [-1]), "é日")
    assert line == '{"advice":"é日"}\n'.encode("utf-8")


def test_observations_carry_no_raw_bytes():
    stream = js.encode_header([A], ADVICE) + js.encode_observation(0, [(A, 1)])
    assert decode_all(js, stream)[1].raw is None


def test_string_features_may_change_length_without_a_new_header():
    spec = TensorSpec("s", "string", [1])
    _, obs = decode_all(js, _stream_with([spec], b'{"s":"longer than one byte"}'))
    assert obs["s"] == "longer than one byte"
    with pytest.raises(ProtocolError, match="expected 1 UTF-8 bytes, got 2"):
        js.decode_advice(BufferReader(b'{"advice":"ab"}\n'), spec)


def test_scalar_shape_accepts_bare_value_or_one_element_array():
    _, obs = decode_all(js, _stream_with([A], b'{"a":[5]}'))
    assert obs["a"].tolist() == [5]
    assert js.decode_advice(BufferReader(b'{"advice":[1]}\n'), ADVICE).tolist() == [1]


def test_context_and_header_messages():
    stream = js.encode_header([A], ADVICE) + js.encode_context("f") + \
        js.encode_observation(0, [(A, 1)])
    header, ctx, obs = decode_all(js, stream)
    assert ctx == Context("f") and obs.context == "f"


# ---- strict decoding ---------------------------------------------------------------
@pytest.mark.parametrize("spec, value, message", [
    (A, "2.0", "expected integers, got 2.0"),
    (A, "1e3", "expected integers, got 1000.0"),
    (A, "true", "expected integers, got true"),
    (A, '"1"', "expected a number or an array"),
    (A, "null", "expected a number or an array"),
    (A, "[]", "expected 1 element(s), got 0"),
    (A, "[1,2]", "expected 1 element(s), got 2"),
    (A, "9223372036854775808", "out of range for int64_t"),
    (TensorSpec("a", "int8_t", [1]), "128", "128 is out of range for int8_t [-128, 127]"),
    (TensorSpec("a", "uint64_t", [1]), "-1", "-1 is out of range"),
    (TensorSpec("a", "uint64_t", [1]), "18446744073709551616", "out of range"),
    (TensorSpec("a", "int32_t", [3]), "[1,2.5,3]", "expected integers, got 2.5"),
    (TensorSpec("a", "int32_t", [3]), "[1,true,3]", "expected integers, got true"),
    (TensorSpec("a", "int32_t", [2]), "[[1],[2]]", "nested arrays are not allowed"),
    (TensorSpec("a", "int32_t", [2]), "5", "expected an array of 2 elements"),
    (TensorSpec("f", "float", [1]), "true", "expected numbers, got true"),
    (TensorSpec("f", "float", [1]), "1e39", "out of range for float"),
    (TensorSpec("f", "double", [2]), '[1,"x"]', 'expected numbers, got "x"'),
    (TensorSpec("b", "bool", [1]), "1", "expected true/false, got 1"),
    (TensorSpec("b", "bool", [1]), "0.0", "expected true/false, got 0.0"),
    (TensorSpec("s", "string", [1]), "5", "expected a JSON string, got 5"),
    (TensorSpec("s", "string", [1]), '"\\ud800"', "unpaired surrogate"),
    (TensorSpec("d", "int16_t", [-1, 2]), "[1,2,3]", "3 elements is not a multiple of 2"),
])
def test_decode_rejects_wrong_types(spec, value, message):
    with pytest.raises(ProtocolError) as info:
        js.decode_advice(BufferReader(b'{"advice":' + value.encode() + b"}\n"), spec)
    assert message in str(info.value)
    assert spec.describe() in str(info.value)
    # and the same value as a feature
    if not spec.is_dynamic:
        with pytest.raises(ProtocolError) as info:
            decode_all(js, _stream_with([spec], b'{"' + spec.name.encode() + b'":'
                                        + value.encode() + b"}"))
        if "UTF-8 bytes" not in message:
            assert message in str(info.value)
        assert "observation 0: feature" in str(info.value)


def test_decode_accepts_what_the_protocol_allows():
    f = TensorSpec("f", "float", [4])
    out = js.decode_advice(BufferReader(b'{"advice":[1,2.5,NaN,-Infinity]}\n'), f)
    assert out.dtype == np.float32 and out[0] == 1 and np.isnan(out[2]) and out[3] == -np.inf
    u = TensorSpec("u", "uint64_t", [1])
    assert js.decode_advice(BufferReader(b'{"advice":18446744073709551615}\n'), u)[0] == \
        np.uint64(2 ** 64 - 1)
    d = TensorSpec("d", "int16_t", [-1, 2])
    out = js.decode_advice(BufferReader(b'{"advice":[1,2,3,4]}\n'), d)
    assert out.shape == (2, 2)
    assert js.decode_advice(BufferReader(b'{"advice":[],"x":1}\n'), d).shape == (0, 2)


def test_model_error_reply():
    with pytest.raises(ModelError, match="^model failed$"):
        js.decode_advice(BufferReader(js.encode_error("model failed")), ADVICE)
    with pytest.raises(ProtocolError, match='neither "advice" nor "error"'):
        js.decode_advice(BufferReader(b'{"result":1}\n'), ADVICE)


@pytest.mark.parametrize("stream, exc, message", [
    (b"{nope\n", ProtocolError, "malformed message"),
    (b"1\n", ProtocolError, "must be a JSON object"),
    (b"\xc3\x28\n", ProtocolError, "not valid UTF-8"),
    (b"[" * 100000 + b"\n", ProtocolError, "malformed message"),
    (b'{"observation":0,"features":{}}\n', ProtocolError, "before any header"),
    (b'{"what":0}\n', ProtocolError, "unrecognized message"),
    (_stream_with([A, B], b'{"a":1}'), ProtocolError, "missing feature 'b'"),
    (_stream_with([A], b'{"a":1,"zz":2}'), ProtocolError, "unknown feature(s) 'zz'"),
    (_stream_with([A], b'[1]'), ProtocolError, '"features" must be an object'),
    (js.encode_header([A], ADVICE) + b'{"observation":0,"features":{"a":1', PeerClosed,
     "stream ended inside a line"),
])
def test_malformed_streams(stream, exc, message):
    with pytest.raises(Exception) as info:
        decode_all(js, stream)
    assert info.type is exc, info.value
    assert message in str(info.value)


def test_limits():
    big = TensorSpec("big", "double", [1 << 26])  # 512 MiB
    with pytest.raises(MessageTooLarge, match="above the 268435456-byte message limit"):
        decode_all(js, js.encode_header([big], ADVICE))
    header = js.encode_header([A], ADVICE)
    with pytest.raises(MessageTooLarge, match="exceeds the 50-byte limit"):
        decode_all(js, header, max_header_bytes=50, max_message_bytes=50)
    with pytest.raises(MessageTooLarge, match="header line of"):
        decode_all(js, header, max_header_bytes=50, max_message_bytes=1000)
    # observation lines may be as long as the message limit
    vec = TensorSpec("v", "double", [1000])
    stream = js.encode_header([vec], ADVICE) + js.encode_observation(0, [(vec, np.ones(1000))])
    assert len(decode_all(js, stream, max_header_bytes=200)) == 2
    with pytest.raises(MessageTooLarge):
        js.decode_advice(BufferReader(b'{"advice":[' + b"1," * 1000 + b"1]}\n"),
                         TensorSpec("x", "int8_t", [-1]), max_message_bytes=100)


def test_lines_are_compact_json():
    line = js.encode_observation(0, [(TensorSpec("n", "string", [6]), 'a"\n\tb\x01')])
    assert line.count(b"\n") == 1 and line.endswith(b"\n")
    assert json.loads(line) == {"observation": 0, "features": {"n": 'a"\n\tb\x01'}}
    assert b" " not in line
