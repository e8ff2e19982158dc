"""Element types of the wire protocol (docs/protocol.md §1) and their numpy dtypes.

Protocol names are LLVM's: ``float`` is binary32 and ``double`` binary64, not
numpy's meaning of ``"float"``. All numpy dtypes here are little-endian, the
byte order on the wire. ``string`` tensors are UTF-8 bytes (element size 1);
their numpy storage type is ``uint8`` and they surface as Python ``str``.
"""

import numpy as np

__all__ = [
    "DTYPE_NAMES",
    "STRING",
    "to_numpy",
    "from_numpy",
    "normalize",
    "itemsize",
    "is_integer",
    "is_float",
    "is_bool",
    "is_string",
    "integer_bounds",
]

STRING = "string"

_TO_NUMPY = {
    "float": np.dtype("<f4"),
    "double": np.dtype("<f8"),
    "int8_t": np.dtype("i1"),
    "int16_t": np.dtype("<i2"),
    "int32_t": np.dtype("<i4"),
    "int64_t": np.dtype("<i8"),
    "uint8_t": np.dtype("u1"),
    "uint16_t": np.dtype("<u2"),
    "uint32_t": np.dtype("<u4"),
    "uint64_t": np.dtype("<u8"),
    "bool": np.dtype("?"),
    STRING: np.dtype("u1"),
}

#: Every protocol dtype name, in the order of docs/protocol.md §1.
DTYPE_NAMES = tuple(_TO_NUMPY)

# numpy dtype (compared by value, byte order ignored) -> protocol name
_FROM_NUMPY = {}
for _name, _dt in _TO_NUMPY.items():
    if _name != STRING:
        _FROM_NUMPY[_dt.newbyteorder("=")] = _name
del _name, _dt

_BOUNDS = {
    name: (int(np.iinfo(dt).min), int(np.iinfo(dt).max))
    for name, dt in _TO_NUMPY.items()
    if dt.kind in "iu" and name != STRING
}


def to_numpy(name):
    """Protocol name -> little-endian numpy dtype (``uint8`` for ``string``)."""
    try:
        return _TO_NUMPY[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown dtype {name!r}; expected one of {', '.join(DTYPE_NAMES)}"
        ) from None


def from_numpy(dtype):
    """numpy dtype (or anything ``numpy.dtype`` accepts) -> protocol name."""
    dt = np.dtype(dtype)
    if dt.kind in "US":
        return STRING
    try:
        return _FROM_NUMPY[dt.newbyteorder("=")]
    except KeyError:
        raise ValueError(f"numpy dtype {dt} has no protocol equivalent") from None


def normalize(dtype):
    """Any accepted dtype spelling -> protocol name.

    Protocol names win over numpy's spellings (``"float"`` is binary32 here).
    Also accepts numpy dtypes and scalar types, ``float``, ``int``, ``bool``
    and ``str`` (-> ``"string"``).
    """
    if isinstance(dtype, str) and dtype in _TO_NUMPY:
        return dtype
    if dtype is str or dtype is bytes:
        return STRING
    try:
        return from_numpy(dtype)
    except TypeError:
        raise ValueError(f"unknown dtype {dtype!r}") from None


def itemsize(name):
    """Bytes per element of a protocol dtype."""
    return to_numpy(name).itemsize


def is_integer(name):
    return name in _BOUNDS


def is_float(name):
    return name in ("float", "double")


def is_bool(name):
    return name == "bool"


def is_string(name):
    return name == STRING


def integer_bounds(name):
    """(min, max) of an integer protocol dtype, as Python ints."""
    return _BOUNDS[name]
