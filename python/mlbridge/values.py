"""Strict conversion of user-supplied values (advice, compiler-side features).

:func:`coerce` turns a Python/numpy value into the exact bytes-level form a
spec requires, or raises ``TypeError`` (wrong kind of value) / ``ValueError``
(out of range, wrong element count) *before* anything is sent. Rules: an
integer dtype takes only integers, a float dtype takes integers and floats,
``bool`` takes only booleans, ``string`` takes ``str`` (or UTF-8 ``bytes``).
"""

import numbers

import numpy as np

from . import dtypes

__all__ = ["coerce", "check_count"]

_KIND_NAMES = {"b": "bool", "i": "integer", "f": "float"}


def _type_kind(t):
    """'b', 'i', 'f' for a Python/numpy scalar type, None for any other."""
    if issubclass(t, (bool, np.bool_)):
        return "b"
    if issubclass(t, (int, np.integer)):
        return "i"
    if issubclass(t, (float, np.floating)):
        return "f"
    return None


def check_count(spec, count, what):
    """Raise ValueError unless ``count`` elements fit ``spec``'s shape."""
    unit = "UTF-8 bytes" if spec.is_string else "element(s)"
    if spec.is_dynamic:
        fixed = spec.fixed_element_count
        ok = count == 0 if fixed == 0 else count % fixed == 0
        if not ok:
            raise ValueError(
                f"{what} {spec.describe()}: {count} {unit} is not a multiple of {fixed}"
            )
    elif count != spec.element_count:
        raise ValueError(
            f"{what} {spec.describe()}: expected {spec.element_count} {unit}, got {count}"
        )


def _as_array(spec, value, what):
    """Returns (array, kind) with kind in 'b', 'i', 'f', or raises TypeError."""
    if isinstance(value, np.ndarray):
        arr = value
    elif isinstance(value, np.generic) or isinstance(value, (bool, int, float)):
        kind = _type_kind(type(value))
        if kind is None:
            raise TypeError(f"{what} {spec.describe()}: unsupported value {value!r}")
        if kind == "i" and isinstance(value, int):
            # Python ints may exceed every numpy type; keep them exact.
            return np.array([value], dtype=object), "i"
        return np.asarray(value).reshape(1), kind
    elif isinstance(value, (list, tuple)):
        obj = np.empty(0, dtype=object) if len(value) == 0 else np.array(value, dtype=object)
        flat = obj.reshape(-1)
        kinds = {_type_kind(t) for t in set(map(type, flat))}
        if None in kinds:
            bad = next(x for x in flat if _type_kind(type(x)) is None)
            if isinstance(bad, (list, tuple)):
                raise TypeError(f"{what} {spec.describe()}: nested sequences are ragged")
            raise TypeError(f"{what} {spec.describe()}: unsupported element {bad!r}")
        if "b" in kinds and len(kinds) > 1:
            raise TypeError(f"{what} {spec.describe()}: mixes booleans and numbers")
        kind = "f" if "f" in kinds else ("i" if "i" in kinds else ("b" if kinds else None))
        if kind == "i":
            return flat, "i"  # object array of exact ints, range-checked below
        arr = np.asarray(flat.tolist()) if len(flat) else np.empty(0)
        return arr, kind
    elif isinstance(value, numbers.Number):
        raise TypeError(f"{what} {spec.describe()}: unsupported value {value!r}")
    elif hasattr(value, "__array__"):
        arr = np.asarray(value)
    else:
        raise TypeError(
            f"{what} {spec.describe()}: expected a number, a sequence or an array, "
            f"got {type(value).__name__}"
        )
    kind = {"b": "b", "i": "i", "u": "i", "f": "f"}.get(arr.dtype.kind)
    if kind is None:
        if arr.dtype.kind == "O":
            return _as_array(spec, arr.reshape(-1).tolist(), what)
        raise TypeError(f"{what} {spec.describe()}: unsupported array dtype {arr.dtype}")
    return arr.reshape(-1), kind


def coerce(spec, value, what="value"):
    """Convert ``value`` for ``spec``.

    Returns ``bytes`` (UTF-8) for string specs, else a 1-D contiguous
    little-endian array of ``spec.np_dtype`` whose length fits the shape.
    ``what`` prefixes error messages ("advice", "feature", ...).
    """
    if spec.is_string:
        if isinstance(value, str):
            try:
                data = value.encode("utf-8")
            except UnicodeEncodeError as e:
                raise ValueError(f"{what} {spec.describe()}: not valid Unicode: {e}") from None
        elif isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{what} {spec.describe()}: bytes are not UTF-8: {e}") from None
        else:
            raise TypeError(
                f"{what} {spec.describe()}: expected str, got {type(value).__name__}"
            )
        check_count(spec, len(data), what)
        return data

    arr, kind = _as_array(spec, value, what)
    target = spec.np_dtype
    name = spec.dtype
    count = arr.size
    check_count(spec, count, what)
    if count == 0:
        return np.empty(0, dtype=target)
    if dtypes.is_integer(name):
        if kind != "i":
            raise TypeError(
                f"{what} {spec.describe()}: expected integers, got {_KIND_NAMES[kind]} "
                f"{_first_of_kind(arr, kind)!r}"
            )
        lo, hi = dtypes.integer_bounds(name)
        if arr.dtype == object:
            vmin, vmax = int(min(arr)), int(max(arr))
        else:
            vmin, vmax = int(arr.min()), int(arr.max())
        if vmin < lo or vmax > hi:
            bad = vmin if vmin < lo else vmax
            raise ValueError(f"{what} {spec.describe()}: {bad} is out of range [{lo}, {hi}]")
        if arr.dtype == object:
            return np.array(arr.tolist(), dtype=target)
        return np.ascontiguousarray(arr, dtype=target)
    if dtypes.is_float(name):
        if kind == "b":
            raise TypeError(f"{what} {spec.describe()}: expected numbers, got bool")
        try:
            src = np.asarray(arr.tolist() if arr.dtype == object else arr, dtype=np.float64)
        except OverflowError:
            raise ValueError(f"{what} {spec.describe()}: integer too large for {name}") from None
        if target.itemsize == 8:
            return np.ascontiguousarray(src, dtype=target)
        with np.errstate(over="ignore"):
            out = src.astype(target)
        overflow = np.isinf(out) & np.isfinite(src)
        if overflow.any():
            bad = src[overflow][0]
            raise ValueError(f"{what} {spec.describe()}: {bad!r} is out of range for float")
        return out
    # bool
    if kind != "b":
        raise TypeError(
            f"{what} {spec.describe()}: expected booleans, got {_KIND_NAMES[kind]} "
            f"{_first_of_kind(arr, kind)!r}"
        )
    return np.ascontiguousarray(arr, dtype=target)


def _first_of_kind(arr, kind):
    for x in arr.tolist():
        if _type_kind(type(x)) == kind:
            return x
    return arr.reshape(-1)[0].item() if arr.size else None
