"""TensorSpec and dtype names (docs/protocol.md §1)."""

import json

import numpy as np
import pytest

from mlbridge import DYNAMIC, ProtocolError, TensorSpec, dtypes


def test_to_json_is_llvm_compact_form():
    spec = TensorSpec("x", "int64_t", [1])
    assert spec.to_json() == '{"name":"x","type":"int64_t","port":0,"shape":[1]}'
    assert TensorSpec("b", "float", (2, 3)).to_json() == \
        '{"name":"b","type":"float","port":0,"shape":[2,3]}'
    assert TensorSpec("adv", "double", [-1]).to_json() == \
        '{"name":"adv","type":"double","port":0,"shape":[-1]}'


def test_to_json_escapes_names_like_llvm():
    # LLVM: \" \\ \t \n \r short escapes, other controls \u00xx, UTF-8 raw.
    spec = TensorSpec('a"b\\c\td\ne\rf\x01g\bh\x1fé€', "bool", [1])
    assert spec.to_json() == (
        '{"name":"a\\"b\\\\c\\td\\ne\\rf\\u0001g\\u0008h\\u001fé€",'
        '"type":"bool","port":0,"shape":[1]}')
    assert json.loads(spec.to_json())["name"] == spec.name
    assert TensorSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize("name", dtypes.DTYPE_NAMES)
def test_json_round_trip_every_dtype(name):
    spec = TensorSpec("t", name, [4, 2])
    assert TensorSpec.from_json(spec.to_json()) == spec
    assert TensorSpec.from_json(json.loads(spec.to_json())) == spec


def test_from_json_key_order_port_and_unknown_keys():
    spec = TensorSpec.from_json({"shape": [3], "extra": [1, 2], "type": "uint8_t", "name": "n"})
    assert spec == TensorSpec("n", "uint8_t", (3,), 0)
    assert TensorSpec.from_json(b'{"name":"p","type":"float","port":2,"shape":[1]}').port == 2


@pytest.mark.parametrize("obj, message", [
    ({"type": "float", "shape": [1]}, 'missing "name"'),
    ({"name": "", "type": "float", "shape": [1]}, '"name" must be a non-empty string'),
    ({"name": 5, "type": "float", "shape": [1]}, '"name" must be a non-empty string'),
    ({"name": "x", "shape": [1]}, 'missing "type"'),
    ({"name": "x", "type": "int128_t", "shape": [1]}, 'unknown "type"'),
    ({"name": "x", "type": "float32", "shape": [1]}, 'unknown "type"'),
    ({"name": "x", "type": "float"}, 'missing "shape"'),
    ({"name": "x", "type": "float", "shape": 3}, '"shape" must be an array'),
    ({"name": "x", "type": "float", "shape": [1.5]}, "is not an integer"),
    ({"name": "x", "type": "float", "shape": [True]}, "is not an integer"),
    ({"name": "x", "type": "float", "shape": [-2]}, "must be >= 0 or -1"),
    ({"name": "x", "type": "float", "shape": [-1, -1]}, "more than one -1"),
    ({"name": "x", "type": "float", "shape": [1], "port": "0"}, '"port" must be an integer'),
    ([1, 2], "must be a JSON object"),
    ('{"name":', "not valid JSON"),
])
def test_from_json_rejects_bad_specs(obj, message):
    with pytest.raises(ProtocolError) as info:
        TensorSpec.from_json(obj)
    assert message in str(info.value)


def test_error_names_the_tensor():
    with pytest.raises(ProtocolError, match="tensor spec 'callee_users'"):
        TensorSpec.from_json({"name": "callee_users", "type": "int65_t", "shape": [1]})


def test_constructor_normalizes_and_validates():
    assert TensorSpec("a", np.float32).dtype == "float"
    assert TensorSpec("a", "float").np_dtype == np.dtype("<f4")  # binary32, not numpy's float
    assert TensorSpec("a", float).dtype == "double"
    assert TensorSpec("a", np.dtype("uint16")).dtype == "uint16_t"
    assert TensorSpec("a", bool).dtype == "bool"
    assert TensorSpec("a", str).dtype == "string"
    assert TensorSpec("a", "int32_t", 5).shape == (5,)
    assert TensorSpec("a", "int32_t", [np.int64(2), 3]).shape == (2, 3)
    with pytest.raises(ValueError, match="non-empty"):
        TensorSpec("", "float")
    with pytest.raises(ValueError, match="unknown dtype"):
        TensorSpec("a", "quux")
    with pytest.raises(ValueError, match="must be >= 0 or -1"):
        TensorSpec("a", "float", [-3])
    with pytest.raises(TypeError, match="ints"):
        TensorSpec("a", "float", [1.0])
    with pytest.raises(ValueError, match="at most one"):
        TensorSpec("a", "float", [-1, -1])


def test_spec_is_frozen_and_hashable():
    spec = TensorSpec("a", "float", [2])
    with pytest.raises(AttributeError):
        spec.name = "b"
    assert {spec: 1}[TensorSpec("a", "float", (2,))] == 1


def test_derived_sizes():
    spec = TensorSpec("a", "double", [2, 3])
    assert (spec.element_count, spec.nbytes, spec.itemsize, spec.is_dynamic) == (6, 48, 8, False)
    dyn = TensorSpec("d", "int16_t", [DYNAMIC, 4])
    assert dyn.is_dynamic and dyn.element_count is None and dyn.nbytes is None
    assert dyn.fixed_element_count == 4
    assert TensorSpec("e", "float", [0]).nbytes == 0
    assert TensorSpec("s", "string", [5]).nbytes == 5


def test_dtype_table():
    expected = {
        "float": "<f4", "double": "<f8", "int8_t": "i1", "int16_t": "<i2",
        "int32_t": "<i4", "int64_t": "<i8", "uint8_t": "u1", "uint16_t": "<u2",
        "uint32_t": "<u4", "uint64_t": "<u8", "bool": "?", "string": "u1",
    }
    assert set(dtypes.DTYPE_NAMES) == set(expected)
    for name, np_name in expected.items():
        assert dtypes.to_numpy(name) == np.dtype(np_name)
        if name != "string":
            assert dtypes.from_numpy(np.dtype(np_name)) == name
    assert dtypes.from_numpy(np.dtype(">i4")) == "int32_t"
    assert dtypes.integer_bounds("uint64_t") == (0, 2 ** 64 - 1)
    with pytest.raises(ValueError):
        dtypes.to_numpy("int")
    with pytest.raises(ValueError):
        dtypes.from_numpy(np.complex64)
