"""TensorSpec: a named, typed, shaped tensor (docs/protocol.md §1)."""

import json
import operator
from dataclasses import dataclass
from functools import cached_property, reduce
from typing import Tuple

from . import dtypes
from .errors import ProtocolError

__all__ = ["TensorSpec", "DYNAMIC"]

#: A dimension whose length is only known when a value is received
#: (advice only, protocol §2.3 extension 2).
DYNAMIC = -1

# LLVM's json::OStream escaping, byte for byte: '"' and '\' get a backslash,
# \t \n \r their short escapes, other control characters \u00xx (lower-case
# hex), and everything else -- including non-ASCII -- is written raw.
_LLVM_ESCAPES = {c: "\\u%04x" % c for c in range(0x20)}
_LLVM_ESCAPES.update({0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"})


def llvm_json_quote(text):
    """Quote a string exactly as LLVM's JSON writer does."""
    return '"' + text.translate(_LLVM_ESCAPES) + '"'


def _product(dims):
    return reduce(operator.mul, dims, 1)


@dataclass(frozen=True)
class TensorSpec:
    """Describes one feature or the advice.

    ``dtype`` is a protocol name (``"int64_t"``, ``"float"``, ...); numpy
    dtypes, ``float``/``int``/``bool``/``str`` are accepted and normalized.
    ``shape`` is a tuple of dimensions ``>= 0``, at most one of which may be
    ``-1`` (dynamic). Scalars are ``(1,)``; a string's shape is
    ``(byte_length,)``. Construction with bad arguments raises
    ``TypeError``/``ValueError``.
    """

    name: str
    dtype: str
    shape: Tuple[int, ...] = (1,)
    port: int = 0

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"tensor name must be a non-empty str, got {self.name!r}")
        try:
            self.name.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"tensor name {self.name!r} is not valid Unicode") from None
        object.__setattr__(self, "dtype", dtypes.normalize(self.dtype))
        shape = self.shape
        if isinstance(shape, int) and not isinstance(shape, bool):
            shape = (shape,)
        try:
            dims = tuple(shape)
        except TypeError:
            raise TypeError(f"tensor {self.name!r}: shape must be a sequence of ints") from None
        clean = []
        for d in dims:
            if isinstance(d, bool) or not isinstance(d, int):
                try:
                    d = operator.index(d)  # numpy integers
                except TypeError:
                    raise TypeError(
                        f"tensor {self.name!r}: shape dimensions must be ints, got {d!r}"
                    ) from None
                if isinstance(d, bool):
                    raise TypeError(f"tensor {self.name!r}: shape dimensions must be ints")
            d = int(d)
            if d < 0 and d != DYNAMIC:
                raise ValueError(
                    f"tensor {self.name!r}: dimension {d} must be >= 0 or -1 (dynamic)"
                )
            clean.append(d)
        if clean.count(DYNAMIC) > 1:
            raise ValueError(f"tensor {self.name!r}: at most one dimension may be -1")
        object.__setattr__(self, "shape", tuple(clean))
        if isinstance(self.port, bool) or not isinstance(self.port, int):
            raise TypeError(f"tensor {self.name!r}: port must be an int")

    # ---- derived properties ------------------------------------------------
    @property
    def np_dtype(self):
        """The little-endian numpy dtype of one element (uint8 for strings)."""
        return dtypes.to_numpy(self.dtype)

    @property
    def itemsize(self):
        return dtypes.itemsize(self.dtype)

    @property
    def is_dynamic(self):
        return DYNAMIC in self.shape

    @property
    def is_string(self):
        return self.dtype == dtypes.STRING

    @property
    def fixed_element_count(self):
        """Product of the non-dynamic dimensions."""
        return _product(d for d in self.shape if d != DYNAMIC)

    @property
    def element_count(self):
        """Number of elements, or None for a dynamic spec."""
        return None if self.is_dynamic else _product(self.shape)

    @property
    def nbytes(self):
        """Payload size in bytes, or None for a dynamic spec."""
        n = self.element_count
        return None if n is None else n * self.itemsize

    def with_shape(self, shape):
        """A copy with another shape."""
        return TensorSpec(self.name, self.dtype, shape, self.port)

    def describe(self):
        """``int64_t[1] name`` style text for messages."""
        return f"{self.dtype}[{','.join(map(str, self.shape))}] {self.name!r}"

    # ---- JSON ----------------------------------------------------------------
    @cached_property
    def _json(self):
        return (
            '{"name":' + llvm_json_quote(self.name)
            + ',"type":"' + self.dtype
            + '","port":' + str(self.port)
            + ',"shape":[' + ",".join(map(str, self.shape)) + "]}"
        )

    def to_json(self):
        """LLVM's compact form: ``{"name":"x","type":"int64_t","port":0,"shape":[1]}``."""
        return self._json

    @classmethod
    def from_json(cls, obj):
        """Parse and validate a spec (a dict, or its JSON text as str/bytes).

        Keys may come in any order and unknown keys are ignored; ``port`` is
        optional. Raises :class:`~mlbridge.ProtocolError` naming the
        offending key.
        """
        if isinstance(obj, (str, bytes, bytearray)):
            try:
                obj = json.loads(obj)
            except (ValueError, UnicodeDecodeError) as e:
                raise ProtocolError(f"tensor spec is not valid JSON: {e}") from None
        if not isinstance(obj, dict):
            raise ProtocolError(f"tensor spec must be a JSON object, got {_snippet(obj)}")
        name = obj.get("name")
        if name is None:
            raise ProtocolError(f'tensor spec {_snippet(obj)}: missing "name"')
        if not isinstance(name, str) or not name:
            raise ProtocolError(f'tensor spec: "name" must be a non-empty string, got {_snippet(name)}')
        where = f"tensor spec {name!r}"
        if "type" not in obj:
            raise ProtocolError(f'{where}: missing "type"')
        dtype = obj["type"]
        if not isinstance(dtype, str) or dtype not in dtypes.DTYPE_NAMES:
            raise ProtocolError(
                f'{where}: unknown "type" {_snippet(dtype)}; expected one of '
                + ", ".join(dtypes.DTYPE_NAMES)
            )
        if "shape" not in obj:
            raise ProtocolError(f'{where}: missing "shape"')
        shape = obj["shape"]
        if not isinstance(shape, list):
            raise ProtocolError(f'{where}: "shape" must be an array, got {_snippet(shape)}')
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, int):
                raise ProtocolError(f'{where}: "shape" dimension {_snippet(d)} is not an integer')
            if d < 0 and d != DYNAMIC:
                raise ProtocolError(f'{where}: "shape" dimension {d} must be >= 0 or -1')
        if shape.count(DYNAMIC) > 1:
            raise ProtocolError(f'{where}: "shape" has more than one -1 dimension')
        port = obj.get("port", 0)
        if isinstance(port, bool) or not isinstance(port, int):
            raise ProtocolError(f'{where}: "port" must be an integer, got {_snippet(port)}')
        try:
            return cls(name, dtype, tuple(shape), port)
        except (TypeError, ValueError) as e:
            raise ProtocolError(f"{where}: {e}") from None


def _snippet(value, limit=80):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
