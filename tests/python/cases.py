"""Values every SerDes must round-trip (shared by the serdes tests)."""

import numpy as np

from mlbridge import BufferReader, SessionState, TensorSpec, dtypes

NUMERIC = [n for n in dtypes.DTYPE_NAMES if n != "string"]


def extremes(name):
    """A vector with the extreme and special values of a dtype."""
    if dtypes.is_integer(name):
        lo, hi = dtypes.integer_bounds(name)
        return [lo, hi, 0, 1, lo + 1, hi - 1]
    if name == "bool":
        return [True, False, True]
    info = np.finfo(dtypes.to_numpy(name))
    return [float(info.max), float(-info.max), float(info.tiny), float(info.smallest_subnormal),
            0.1, -0.0, 1.0, 1e20, float("nan"), float("inf"), float("-inf"),
            float(np.float32(1 / 3)) if name == "float" else 1 / 3]


def scalar(name):
    return {"bool": True}.get(name, 0.5 if dtypes.is_float(name) else 42)


STRINGS = ["", "hello", "naïve — 日本語 🚀", "quote\" back\\slash\nnewline\x00nul"]


def decode_all(codec, data, **limits):
    reader = BufferReader(data)
    state = SessionState(**limits)
    out = []
    while not reader.at_end:
        out.append(codec.decode_message(reader, state))
    return out


def same(a, b):
    """Equality that treats NaN as equal and checks dtype and shape."""
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        return bool(np.array_equal(a, b, equal_nan=True)) and \
            bool(np.array_equal(np.signbit(a), np.signbit(b)))
    return bool(np.array_equal(a, b))


def spec_for(name, n, shape=None):
    return TensorSpec(name + "_" + str(n), name, shape if shape is not None else [n])
