"""JSON SerDes: one compact JSON object per line (docs/protocol.md §3).

Compiler side: :func:`encode_header`, :func:`encode_context`,
:func:`encode_observation`, :func:`decode_advice`.
Model side: :func:`decode_message`, :func:`encode_advice`, :func:`encode_error`.

Values are typed exactly (§3.3): an integer dtype accepts only integer
tokens in range, a float dtype integers, floats and NaN/Infinity/-Infinity,
``bool`` only true/false, ``string`` only a JSON string. Floats are written
as the shortest decimal that round-trips for their dtype, always with a
``.`` or an exponent.
"""

import json
import struct

import numpy as np

from .. import dtypes
from ..errors import MessageTooLarge, ModelError, ProtocolError
from ..messages import DEFAULT_MAX_MESSAGE_BYTES, Observation
from ..values import coerce
from ._common import (check_encode_index, check_feature_count, check_index,
                      decode_line, encode_context_line, encode_header_line,
                      parse_context, parse_header, snippet)

__all__ = ["NAME", "encode_header", "encode_context", "encode_observation",
           "decode_advice", "decode_message", "encode_advice", "encode_error"]

NAME = "json"

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"),
                          allow_nan=True).encode


# ---- value conversion ----------------------------------------------------------------
def _to_json_value(spec, data, force_array=False):
    """Converted data (see values.coerce) -> a json-serializable value."""
    if spec.is_string:
        return data.decode("utf-8")
    if spec.dtype == "float":
        # numpy prints the shortest binary32 digits; as a Python float those
        # digits are what json writes back (repr is shortest for binary64).
        items = data.astype(str).astype(np.float64).tolist()
    else:
        items = data.tolist()  # Python int/float/bool: exact
    if spec.shape == (1,) and not force_array:
        return items[0]
    return items


def _json_token(value):
    try:
        return _dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _from_json_value(spec, value, what, exact_string_length):
    """A decoded JSON value -> numpy array (shape of spec) or str, strictly."""
    if spec.is_string:
        if not isinstance(value, str):
            raise ProtocolError(f"{what}: expected a JSON string, got {_json_token(value)}")
        try:
            n = len(value.encode("utf-8"))
        except UnicodeEncodeError:
            raise ProtocolError(f"{what}: string contains an unpaired surrogate escape") from None
        if exact_string_length and not spec.is_dynamic and n != spec.element_count:
            raise ProtocolError(f"{what}: expected {spec.element_count} UTF-8 bytes, got {n}")
        return value
    if isinstance(value, list):
        items = value
    elif isinstance(value, (int, float)):  # bool is an int subclass: typed below
        items = [value]
        expected = spec.fixed_element_count if spec.is_dynamic else spec.element_count
        if expected != 1:
            raise ProtocolError(f"{what}: expected an array of {expected}"
                                f"{' x N' if spec.is_dynamic else ''} elements, "
                                f"got the bare value {_json_token(value)}")
    else:
        raise ProtocolError(f"{what}: expected a number or an array, got {_json_token(value)}")

    count = len(items)
    if spec.is_dynamic:
        fixed = spec.fixed_element_count
        if (count % fixed if fixed else count) != 0:
            raise ProtocolError(f"{what}: {count} elements is not a multiple of {fixed}")
        shape = tuple((count // fixed if fixed else 0) if d == -1 else d for d in spec.shape)
    else:
        if count != spec.element_count:
            raise ProtocolError(f"{what}: expected {spec.element_count} element(s), got {count}")
        shape = spec.shape
    if count == 0:
        return np.empty(shape, dtype=spec.np_dtype)

    types = set(map(type, items))
    name = spec.dtype
    if dtypes.is_integer(name):
        if not types <= {int}:
            _reject(items, int, what, "integers")
        lo, hi = dtypes.integer_bounds(name)
        vmin, vmax = min(items), max(items)
        if vmin < lo or vmax > hi:
            bad = vmin if vmin < lo else vmax
            raise ProtocolError(f"{what}: {bad} is out of range for {name} [{lo}, {hi}]")
        arr = np.array(items, dtype=spec.np_dtype)
    elif dtypes.is_float(name):
        if not types <= {int, float}:
            _reject(items, (int, float), what, "numbers")
        try:
            src = np.array(items, dtype=np.float64)
        except OverflowError:
            raise ProtocolError(f"{what}: integer too large for {name}") from None
        if name == "float":
            with np.errstate(over="ignore"):
                arr = src.astype(spec.np_dtype)
            overflow = np.isinf(arr) & np.isfinite(src)
            if overflow.any():
                raise ProtocolError(f"{what}: {src[overflow][0]!r} is out of range for float")
        else:
            arr = src
    else:  # bool
        if not types <= {bool}:
            _reject(items, bool, what, "true/false")
        arr = np.array(items, dtype=spec.np_dtype)
    return arr.reshape(shape)


_F32 = struct.Struct("<f")


def _scalar_kind(spec):
    """How a shape-[1] feature's bare JSON value is checked on the fast path."""
    if spec.shape != (1,) or spec.is_string:
        return None
    return "int" if dtypes.is_integer(spec.dtype) else spec.dtype


def _fast_scalar(kind, bounds, v):
    """True when ``v`` is certainly valid for ``kind``; False sends the value
    through the full check (which also builds the error message)."""
    t = type(v)
    if kind == "int":
        return t is int and bounds[0] <= v <= bounds[1]
    if kind == "double":
        return t is float or (t is int and -(1 << 1000) < v < (1 << 1000))
    if kind == "float":
        if t is not float and not (t is int and -(1 << 100) < v < (1 << 100)):
            return False
        try:
            _F32.pack(v)  # OverflowError exactly when it would round to inf
        except OverflowError:
            return False
        return True
    return kind == "bool" and t is bool


def _reject(items, allowed, what, expected):
    for x in items:
        if isinstance(x, list):
            raise ProtocolError(f"{what}: nested arrays are not allowed; send one flat "
                                f"array in row-major order")
        # bool is a subclass of int but never an integer or a number here.
        if isinstance(x, bool) and allowed is not bool or not isinstance(x, allowed):
            raise ProtocolError(f"{what}: expected {expected}, got {_json_token(x)}")
    raise ProtocolError(f"{what}: expected {expected}")


# ---- compiler side ------------------------------------------------------------------
def encode_header(feature_specs, advice_spec, score_spec=None, continues=False):
    """The session header line (bytes); the same line as bitstream's."""
    return encode_header_line(feature_specs, advice_spec, score_spec, continues)


def encode_context(name):
    """A context-switch line (bytes)."""
    return encode_context_line(name)


def encode_observation(index, features):
    """``{"observation":N,"features":{"NAME":VALUE,...}}\\n``.

    ``features``: iterable of ``(TensorSpec, value)`` pairs in header order.
    """
    index = check_encode_index(index)
    feats = {}
    for spec, value in features:
        if spec.is_dynamic:
            raise ValueError(f"feature {spec.describe()}: features need concrete shapes")
        feats[spec.name] = _to_json_value(spec, coerce(spec, value, "feature"))
    return ('{"observation":%d,"features":%s}\n' % (index, _dumps(feats))).encode("utf-8")


def decode_advice(reader, spec, max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES):
    """Read one reply line: the advice as a numpy array shaped as ``spec``
    (or ``str``); raises ModelError with the model's message for
    ``{"error":...}``."""
    line = reader.read_line(max_message_bytes)

    def advice(obj):
        if "error" in obj:
            message = obj["error"]
            raise ModelError(message if isinstance(message, str) else _json_token(message))
        if "advice" not in obj:
            raise ProtocolError(f'reply has neither "advice" nor "error": {snippet(line)}')
        return _from_json_value(spec, obj["advice"], f"advice {spec.describe()}", True)

    return decode_line(line, advice)


# ---- model side -------------------------------------------------------------------
def decode_message(reader, state):
    """Read the next compiler message; returns Header, Context or
    Observation and updates ``state``. Errors as bitstream's."""
    state.in_message = False
    limit = max(state.max_header_bytes, state.max_message_bytes)
    line = reader.read_line(limit)
    check_feature_count(line, state)
    return decode_line(line, lambda obj: _message(obj, line, state))


def _message(obj, line, state):
    if "observation" in obj:
        return _observation(obj, state)
    if "features" in obj:
        if len(line) > state.max_header_bytes:
            raise MessageTooLarge(f"header line of {len(line)} bytes exceeds the "
                                  f"{state.max_header_bytes}-byte limit")
        header = parse_header(obj, state)
        names = {s.name: s for s in header.feature_specs}
        plan = [(s, _scalar_kind(s), dtypes.integer_bounds(s.dtype)
                 if dtypes.is_integer(s.dtype) else None) for s in header.feature_specs]
        state.cache = (names, plan)
        return header
    if "context" in obj:
        return parse_context(obj, state)
    raise ProtocolError(f"unrecognized message: {snippet(line)}")


def _observation(obj, state):
    index = check_index(obj["observation"], "observation")
    if state.cache is None:
        raise ProtocolError(f"observation {index} arrived before any header")
    names, plan = state.cache
    feats = obj.get("features")
    if not isinstance(feats, dict):
        raise ProtocolError(f'observation {index}: "features" must be an object')
    values = {}
    scalars = {}
    for spec, kind, bounds in plan:
        name = spec.name
        try:
            raw = feats[name]
        except KeyError:
            raise ProtocolError(f"observation {index}: missing feature {name!r}") from None
        if kind is not None:
            v = raw[0] if type(raw) is list and len(raw) == 1 else raw
            if _fast_scalar(kind, bounds, v):
                scalars[name] = v  # the array is built on first access
                continue
        # String features: any length (a JSON string carries its own length).
        value = _from_json_value(spec, raw, f"observation {index}: feature "
                                 f"{spec.describe()}", False)
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
        values[name] = value
    if len(feats) != len(plan):
        extra = sorted(k for k in feats if k not in names)
        raise ProtocolError(f"observation {index}: unknown feature(s) "
                            f"{', '.join(map(repr, extra))}")
    return Observation(index, state.context, state.feature_specs, state.advice_spec,
                       values=values, names=names, scalars=scalars)


def encode_advice(spec, value):
    """``{"advice":VALUE}\\n``; a dynamic spec always gets an array. Raises
    TypeError/ValueError for a value that does not fit ``spec``."""
    if type(value) is int and spec.shape == (1,) and dtypes.is_integer(spec.dtype):
        lo, hi = dtypes.integer_bounds(spec.dtype)
        if lo <= value <= hi:  # fast path for the common scalar decision
            return b'{"advice":%d}\n' % value
    data = coerce(spec, value, "advice")
    return ('{"advice":%s}\n' % _dumps(_to_json_value(spec, data, spec.is_dynamic))).encode("utf-8")


def encode_error(message):
    """``{"error":"MESSAGE"}\\n``: the model could not decide."""
    if not isinstance(message, str):
        message = str(message)
    message = message.encode("utf-8", "replace").decode("utf-8")
    return ('{"error":%s}\n' % _dumps(message)).encode("utf-8")
