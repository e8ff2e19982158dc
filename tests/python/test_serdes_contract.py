"""What every SerDes promises (docs/protocol.md §2, §3), checked for each
format: features and advice come back with their values and dtypes, strings
as str, arrays read-only. Format-specific bytes and errors are in
test_serdes_bitstream.py and test_serdes_json.py."""

import numpy as np
import pytest

from cases import NUMERIC, STRINGS, decode_all, extremes, same, scalar
from mlbridge import BufferReader, Header, TensorSpec
from mlbridge.serdes import _common
from mlbridge.serdes import bitstream as bs
from mlbridge.serdes import json as js


@pytest.fixture(params=["bitstream", "json-orjson", "json-stdlib"])
def codec(request, monkeypatch):
    """Each format; JSON with both parsers: orjson (the fast path) and the
    standard library (the fallback)."""
    if request.param == "bitstream":
        return bs
    if request.param == "json-orjson":
        assert _common._orjson is not None, "orjson is not installed"
    else:
        monkeypatch.setattr(_common, "_orjson", None)
    return js


@pytest.mark.parametrize("name", NUMERIC)
def test_round_trip_every_numeric_dtype(codec, name):
    vec = extremes(name)
    specs = [TensorSpec("s", name, [1]), TensorSpec("v", name, [len(vec)]),
             TensorSpec("e", name, [0]), TensorSpec("m", name, [2, 3])]
    mat = np.arange(6).reshape(2, 3) % 2 == 1 if name == "bool" else np.arange(6).reshape(2, 3)
    values = [scalar(name), vec, [], mat]
    adv = TensorSpec("adv", name, [len(vec)])
    stream = codec.encode_header(specs, adv) + codec.encode_observation(3, zip(specs, values))
    header, obs = decode_all(codec, stream)
    assert header == Header(tuple(specs), adv)
    dt = specs[0].np_dtype
    assert obs.index == 3
    assert same(obs["s"], np.array([scalar(name)], dt))
    assert same(obs["v"], np.array(vec, dt))
    assert same(obs["e"], np.empty(0, dt))
    assert same(obs["m"], np.asarray(mat).astype(dt))
    assert not obs["v"].flags.writeable
    # advice, both directions
    reply = codec.encode_advice(adv, obs["v"])
    assert same(codec.decode_advice(BufferReader(reply), adv), np.array(vec, dt))
    one = codec.encode_advice(specs[0], scalar(name))
    assert same(codec.decode_advice(BufferReader(one), specs[0]), np.array([scalar(name)], dt))


@pytest.mark.parametrize("text", STRINGS)
def test_round_trip_strings(codec, text):
    spec = TensorSpec("s", "string", [len(text.encode("utf-8"))])
    other = TensorSpec("after", "int8_t", [1])
    stream = codec.encode_header([spec, other], spec) + \
        codec.encode_observation(0, [(spec, text), (other, -1)])
    _, obs = decode_all(codec, stream)
    assert obs["s"] == text and isinstance(obs["s"], str)
    assert obs["after"][0] == -1
    assert codec.decode_advice(BufferReader(codec.encode_advice(spec, text)), spec) == text
    dyn = TensorSpec("d", "string", [-1])
    assert codec.decode_advice(BufferReader(codec.encode_advice(dyn, text)), dyn) == text
