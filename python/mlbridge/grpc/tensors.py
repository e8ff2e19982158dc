"""Conversions between the generic messages of proto/mlbridge.proto and
numpy / :class:`~mlbridge.TensorSpec` / :class:`~mlbridge.Observation`.

Every value from the wire is checked (dtype known, byte count consistent
with the shape, within the size limit, bool bytes 0/1, valid UTF-8) before
it is used; numeric features are read-only numpy views of the received
bytes (no copy).
"""

import struct

import numpy as np

from .. import dtypes
from ..errors import MessageTooLarge, ProtocolError
from ..observation import Observation
from ..tensor_spec import DYNAMIC, TensorSpec
from ..values import coerce
from ._proto import pb2

__all__ = ["dtype_to_pb", "dtype_from_pb", "spec_to_pb", "spec_from_pb",
           "tensor_to_pb", "array_from_pb", "observation_from_pb",
           "encode_advice", "decode_advice"]

#: protocol dtype name -> proto enum value (core DType + 1)
_TO_PB = {name: i + 1 for i, name in enumerate(dtypes.DTYPE_NAMES)}
_FROM_PB = {v: k for k, v in _TO_PB.items()}


def dtype_to_pb(name):
    return _TO_PB[dtypes.normalize(name)]


def dtype_from_pb(value, what):
    try:
        return _FROM_PB[value]
    except KeyError:
        detail = "dtype is not set" if value == 0 else f"unknown dtype {value}"
        raise ProtocolError(f"{what}: {detail}") from None


def spec_to_pb(spec, out=None):
    out = pb2.TensorSpec() if out is None else out
    out.name = spec.name
    out.dtype = _TO_PB[spec.dtype]
    del out.shape[:]
    out.shape.extend(spec.shape)
    return out


def spec_from_pb(msg, allow_dynamic, max_bytes, what="tensor spec"):
    dtype = dtype_from_pb(msg.dtype, f"{what} {msg.name!r}")
    if not msg.shape:
        raise ProtocolError(f"{what} {msg.name!r}: empty shape (scalars are [1])")
    try:
        spec = TensorSpec(msg.name, dtype, tuple(msg.shape))
    except (TypeError, ValueError) as e:
        raise ProtocolError(f"{what}: {e}") from None
    if spec.is_dynamic and not allow_dynamic:
        raise ProtocolError(f"{what} {spec.describe()}: a -1 dimension is not allowed here")
    row = spec.fixed_element_count * spec.itemsize
    if row > max_bytes:
        raise MessageTooLarge(f"{what} {spec.describe()} exceeds the {max_bytes}-byte limit")
    return spec


def _check_tensor(msg, max_bytes, what):
    dtype = dtype_from_pb(msg.dtype, f"{what} {msg.name!r}")
    data = msg.data
    n = len(data)
    if n > max_bytes:
        raise MessageTooLarge(f"{what} {msg.name!r} has {n} bytes, limit {max_bytes}")
    size = dtypes.itemsize(dtype)
    if n % size:
        raise ProtocolError(f"{what} {msg.name!r}: {n} bytes is not a whole number of "
                            f"{dtype} elements")
    count = n // size
    shape = tuple(msg.shape)
    expect = 1
    for d in shape:
        if d < 0:
            expect = -1
            break
        expect *= d
    if not shape or expect != count:
        raise ProtocolError(f"{what} {msg.name!r}: shape {list(shape)} does not describe "
                            f"its {count} elements")
    return dtype, shape, data


def _value(dtype, shape, data, what, name):
    """numpy view (read-only) or str for a checked tensor."""
    if dtype == dtypes.STRING:
        try:
            return bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ProtocolError(f"{what} {name!r}: string is not valid UTF-8 "
                                f"(byte {e.start})") from None
    arr = np.frombuffer(data, dtypes.to_numpy(dtype)).reshape(shape)
    if dtype == "bool":
        raw = np.frombuffer(data, np.uint8)
        if raw.size and raw.max() > 1:
            i = int(np.argmax(raw > 1))
            raise ProtocolError(f"{what} {name!r}: bool element {i} is byte "
                                f"{int(raw[i]):#04x}, not 0 or 1")
    return arr  # frombuffer over bytes is read-only


_SCALAR_FORMAT = {"float": "<f", "double": "<d", "int8_t": "<b", "int16_t": "<h",
                  "int32_t": "<i", "int64_t": "<q", "uint8_t": "<B", "uint16_t": "<H",
                  "uint32_t": "<I", "uint64_t": "<Q"}


def _scalar_bytes(spec, value):
    """The bytes of a plain int/float scalar for a shape-[1] numeric spec,
    or None to take the general (checking) path."""
    fmt = _SCALAR_FORMAT.get(spec.dtype)
    if fmt is None or spec.shape != (1,):
        return None
    t = type(value)
    if t is int:
        if dtypes.is_integer(spec.dtype):
            lo, hi = dtypes.integer_bounds(spec.dtype)
            if not lo <= value <= hi:
                return None
    elif t is not float or not dtypes.is_float(spec.dtype):
        return None
    try:
        return struct.pack(fmt, value)
    except (OverflowError, struct.error):
        return None


def tensor_to_pb(spec, value, out=None, what="advice"):
    """Checks ``value`` against ``spec`` (values.coerce: TypeError /
    ValueError before anything is sent) and fills a Tensor message."""
    out = pb2.Tensor() if out is None else out
    fast = _scalar_bytes(spec, value)
    if fast is not None:  # the common scalar decision, already checked
        out.name = spec.name
        out.dtype = _TO_PB[spec.dtype]
        out.shape[:] = (1,)
        out.data = fast
        return out
    data = coerce(spec, value, what)
    out.name = spec.name
    out.dtype = _TO_PB[spec.dtype]
    if spec.is_string:
        shape = (len(data),)
        out.data = data
    else:
        count = data.size
        if spec.is_dynamic:
            fixed = spec.fixed_element_count
            shape = tuple((count // fixed if fixed else 0) if d == DYNAMIC else d
                          for d in spec.shape)
        else:
            shape = spec.shape
        out.data = data.tobytes()
    del out.shape[:]
    out.shape.extend(shape)
    return out


def array_from_pb(msg, max_bytes, what="feature"):
    """(TensorSpec with the concrete shape, value) of a feature tensor."""
    dtype, shape, data = _check_tensor(msg, max_bytes, what)
    if not msg.name:
        raise ProtocolError(f"{what} tensor without a name")
    return TensorSpec(msg.name, dtype, shape), _value(dtype, shape, data, what, msg.name)


def observation_from_pb(msg, max_bytes, cache=None):
    """An :class:`~mlbridge.Observation` of a request. Attributes beyond the
    pipe interface's: ``session`` (the compiler session id) and ``id``
    (training mode). ``cache``: optional dict reused across calls so a
    steady feature set builds its TensorSpecs once."""
    values = {}
    specs = []
    key = []
    for t in msg.features:
        key.append((t.name, t.dtype, tuple(t.shape)))
    key.append((msg.advice.name, msg.advice.dtype, tuple(msg.advice.shape)))
    key = tuple(key)
    hit = cache.get(key) if cache is not None else None
    total = 0
    if hit is None:
        names = set()
        for t in msg.features:
            spec, value = array_from_pb(t, max_bytes)
            if spec.name in names:
                raise ProtocolError(f"duplicate feature name {spec.name!r}")
            names.add(spec.name)
            specs.append(spec)
            values[spec.name] = value
            total += len(t.data)
        if not msg.HasField("advice"):
            raise ProtocolError("observation without an advice spec")
        advice = spec_from_pb(msg.advice, True, max_bytes, "advice spec")
        specs = tuple(specs)
        if cache is not None:
            if len(cache) > 64:
                cache.clear()
            cache[key] = (specs, advice)
    else:
        specs, advice = hit
        for spec, t in zip(specs, msg.features):
            dtype, shape, data = _check_tensor(t, max_bytes, "feature")
            values[spec.name] = _value(dtype, shape, data, "feature", spec.name)
            total += len(t.data)
    if total > max_bytes:
        raise MessageTooLarge(f"observation of {total} bytes exceeds the "
                              f"{max_bytes}-byte limit")
    obs = GrpcObservation(msg.index, msg.context or None, specs, advice, values=values)
    obs.session = msg.session
    obs.id = msg.id
    return obs


class GrpcObservation(Observation):
    """An Observation that also knows its compiler ``session`` and, in
    training mode, its ``id`` (and ``compiler``: the address it came from)."""

    __slots__ = ("session", "id", "compiler", "_slot")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.session = ""
        self.id = 0
        self.compiler = None
        self._slot = None


def encode_advice(spec, value, out=None):
    """An Advice message holding ``value`` checked against ``spec``."""
    out = pb2.Advice() if out is None else out
    tensor_to_pb(spec, value, out.tensor, "advice")
    return out


def decode_advice(msg, spec, max_bytes):
    """The value of an Advice message for ``spec`` (compiler side, tests):
    numpy array or str; raises ModelError for an error reply."""
    from ..errors import ModelError
    which = msg.WhichOneof("result")
    if which == "error":
        raise ModelError(msg.error)
    if which != "tensor":
        raise ProtocolError("reply holds neither advice nor an error")
    dtype, shape, data = _check_tensor(msg.tensor, max_bytes, "advice")
    if dtype != spec.dtype:
        raise ProtocolError(f"advice {spec.describe()}: got {dtype}")
    count = len(data) // dtypes.itemsize(dtype)
    if spec.is_dynamic:
        fixed = spec.fixed_element_count
        if (count % fixed if fixed else count) != 0:
            raise ProtocolError(f"advice {spec.describe()}: {count} elements is not a "
                                f"multiple of {fixed}")
    elif count != spec.element_count:
        raise ProtocolError(f"advice {spec.describe()}: expected {spec.element_count} "
                            f"element(s), got {count}")
    return _value(dtype, shape, data, "advice", spec.name)
