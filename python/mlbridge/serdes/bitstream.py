"""Bitstream SerDes: LLVM's training-log / interactive-mode format, byte for
byte (docs/protocol.md §2).

Compiler side: :func:`encode_header`, :func:`encode_context`,
:func:`encode_observation`, :func:`decode_advice`.
Model side: :func:`decode_message`, :func:`encode_advice`.

Observations are read with one ``read_exact`` of payload + ``\\n`` and their
arrays are ``numpy.frombuffer`` views of that buffer (no per-element work).
"""

import struct

import numpy as np

from ..errors import MessageTooLarge, PeerClosed, ProtocolError
from ..messages import DEFAULT_MAX_MESSAGE_BYTES, Observation, Outcome
from ..values import coerce
from ._common import (check_encode_index, check_feature_count, check_index,
                      encode_context_line, encode_header_line, parse_context,
                      parse_header, parse_line, snippet)

__all__ = ["NAME", "encode_header", "encode_context", "encode_observation",
           "decode_advice", "decode_message", "encode_advice"]

NAME = "bitstream"

_OBS_PREFIX = b'{"observation":'
_U64 = struct.Struct("<Q")
# Scalar advice fast path: Python int/float straight to bytes. struct raises
# for out-of-range values, which then take the general path for its message.
_SCALAR_STRUCTS = {name: struct.Struct("<" + code) for name, code in (
    ("int8_t", "b"), ("int16_t", "h"), ("int32_t", "i"), ("int64_t", "q"),
    ("uint8_t", "B"), ("uint16_t", "H"), ("uint32_t", "I"), ("uint64_t", "Q"),
    ("float", "f"), ("double", "d"))}


# ---- compiler side ---------------------------------------------------------------
def encode_header(feature_specs, advice_spec, score_spec=None, continues=False):
    """The session header line (bytes)."""
    return encode_header_line(feature_specs, advice_spec, score_spec, continues)


def encode_context(name):
    """A context-switch line (bytes)."""
    return encode_context_line(name)


def encode_observation(index, features):
    """``{"observation":N}\\n`` + each payload in order + ``\\n``.

    ``features``: iterable of ``(TensorSpec, value)`` pairs in header order;
    values are checked and converted as for advice (TypeError/ValueError).
    """
    parts = [b'{"observation":%d}\n' % check_encode_index(index)]
    for spec, value in features:
        if spec.is_dynamic:
            raise ValueError(f"feature {spec.describe()}: features need concrete shapes")
        data = coerce(spec, value, "feature")
        parts.append(data if isinstance(data, bytes) else memoryview(data).cast("B"))
    parts.append(b"\n")
    return b"".join(parts)


def decode_advice(reader, spec, max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES):
    """Read one reply for ``spec``: a numpy array shaped as the spec (the
    dynamic dimension resolved), or ``str`` for a string spec."""
    dtype = spec.np_dtype
    if spec.is_dynamic:
        head = reader.read_exact(8)
        count = _U64.unpack(head)[0]
        fixed = spec.fixed_element_count
        if (count % fixed if fixed else count) != 0:
            raise ProtocolError(f"advice {spec.describe()}: {count} elements is not a "
                                f"multiple of {fixed}")
        nbytes = count * dtype.itemsize
        if nbytes > max_message_bytes:
            raise MessageTooLarge(f"advice {spec.describe()}: {count} elements "
                                  f"({nbytes} bytes) exceed the {max_message_bytes}-byte limit")
        shape = tuple(count // fixed if fixed and d == -1 else (0 if d == -1 else d)
                      for d in spec.shape)
    else:
        count = spec.element_count
        nbytes = spec.nbytes
        if nbytes > max_message_bytes:
            raise MessageTooLarge(f"advice {spec.describe()}: {nbytes} bytes exceed the "
                                  f"{max_message_bytes}-byte limit")
        shape = spec.shape
    try:
        buf = reader.read_exact(nbytes)
    except PeerClosed as e:
        if spec.is_dynamic:
            raise PeerClosed(f"advice truncated: {e}", clean=False) from None
        raise
    if spec.is_string:
        try:
            return buf.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ProtocolError(f"advice {spec.describe()} is not valid UTF-8: {e}") from None
    arr = np.frombuffer(buf, dtype, count).reshape(shape)
    if spec.dtype == "bool":
        _check_bool_bytes(buf, 0, count, f"advice {spec.describe()}")
    return arr


# ---- model side --------------------------------------------------------------------
class _Layout:
    """Where each feature lives in an observation payload (built per header,
    so a new header -- also one that continues the session -- replaces it).

    ``views``: for readers whose buffers stay the same objects at the same
    place (``reader.stable_buffers``: the shared-memory ring), the payload
    view and the feature arrays already made from each such buffer, so a
    request landing where an earlier one did reuses them instead of making
    new ones. Only without string features (those are decoded per request).
    """

    __slots__ = ("specs", "names", "entries", "nbytes", "strings", "bools", "views")

    # Buffers remembered at once; a ring's requests land in a few places.
    MAX_VIEWS = 8

    def __init__(self, specs):
        self.specs = specs
        self.names = {s.name: s for s in specs}
        self.entries = {}
        self.strings = []
        self.bools = []
        self.views = {}  # id(buffer) -> (buffer, payload view, {name: array})
        offset = 0
        for s in specs:
            n = s.element_count
            if s.is_string:
                self.strings.append((s.name, offset, n))
            else:
                self.entries[s.name] = (s.np_dtype, n, offset, s.shape)
                if s.dtype == "bool":
                    self.bools.append((s.name, offset, n))
            offset += s.nbytes
        self.nbytes = offset


def decode_message(reader, state):
    """Read the next compiler message; returns Header, Context, Observation
    or Outcome and updates ``state``.

    Raises PeerClosed at end of stream (``clean`` between messages),
    ProtocolError / MessageTooLarge for malformed input, TimeoutError from
    the reader.
    """
    state.in_message = False
    line = reader.read_line(state.max_header_bytes)
    index = observation_index(line)
    if index is not None:
        return read_observation(reader, state, index)
    check_feature_count(line, state)
    obj = parse_line(line)
    if "observation" in obj:
        return read_observation(reader, state, check_index(obj["observation"], "observation"))
    if "features" in obj:
        header = parse_header(obj, state)
        state.cache = _Layout(header.feature_specs)
        return header
    if "context" in obj:
        return parse_context(obj, state)
    if "outcome" in obj:
        return _read_outcome(reader, state, check_index(obj["outcome"], "outcome"))
    raise ProtocolError(f"unrecognized message: {snippet(line)}")


def observation_index(line):
    """N when ``line`` is exactly LLVM's ``{"observation":N}`` (what every
    observation line is), read without the JSON parser; else None."""
    if line.startswith(_OBS_PREFIX) and line.endswith(b"}"):
        digits = line[15:-1]
        if digits.isdigit() and (len(digits) == 1 or digits[0] != 0x30) and len(digits) < 19:
            return int(digits)
    return None


def _read_record(reader, state, kind, index, nbytes):
    state.in_message = True
    try:
        buf = reader.read_exact(nbytes + 1)
    except PeerClosed as e:
        raise PeerClosed(f"stream ended inside {kind} {index} ({nbytes}-byte payload): {e}",
                         clean=False) from None
    if buf[nbytes] != 0x0A:
        raise ProtocolError(f"{kind} {index}: expected '\\n' after the {nbytes}-byte payload, "
                            f"got byte 0x{buf[nbytes]:02x} (payload size disagrees with the "
                            f"header?)")
    state.in_message = False
    return buf


def read_observation(reader, state, index):
    """The observation whose line (index ``index``) was just read: its
    payload and newline, decoded with the current header's layout."""
    layout = state.cache
    if layout is None:
        raise ProtocolError(f"observation {index} arrived before any header")
    buf = _read_record(reader, state, "observation", index, layout.nbytes)
    if not layout.strings and getattr(reader, "stable_buffers", False):
        seen = layout.views.get(id(buf))
        if seen is None:  # (the entry holds the buffer: its id is not reused)
            if len(layout.views) >= layout.MAX_VIEWS:
                layout.views.clear()
            seen = layout.views[id(buf)] = (buf, memoryview(buf)[:layout.nbytes].toreadonly(),
                                            {})
        raw = seen[1]
        for name, offset, n in layout.bools:
            _check_bool_bytes(buf, offset, n, f"observation {index}: bool feature {name!r}")
        return Observation(index, state.context, layout.specs, state.advice_spec,
                           values=seen[2], raw=raw, layout=layout.entries, buf=raw,
                           names=layout.names)
    raw = memoryview(buf)[:layout.nbytes].toreadonly()
    values = {}
    for name, offset, n in layout.strings:
        try:
            values[name] = raw[offset:offset + n].tobytes().decode("utf-8")
        except UnicodeDecodeError as e:
            raise ProtocolError(f"observation {index}: string feature {name!r} is not "
                                f"valid UTF-8: {e}") from None
    for name, offset, n in layout.bools:
        _check_bool_bytes(buf, offset, n, f"observation {index}: bool feature {name!r}")
    return Observation(index, state.context, layout.specs, state.advice_spec,
                       values=values, raw=raw, layout=layout.entries, buf=raw,
                       names=layout.names)


def _read_outcome(reader, state, index):
    spec = state.score_spec
    if spec is None:
        raise ProtocolError(f"outcome {index} arrived but the header declared no score")
    buf = _read_record(reader, state, "outcome", index, spec.nbytes)
    value = np.frombuffer(memoryview(buf)[:spec.nbytes].toreadonly(), spec.np_dtype,
                          spec.element_count).reshape(spec.shape)
    return Outcome(index, value)


def _check_bool_bytes(buf, offset, n, what):
    if n and np.frombuffer(buf, np.uint8, n, offset).max() > 1:
        raise ProtocolError(f"{what}: bool bytes must be 0 or 1")


def encode_advice(spec, value):
    """The reply bytes: the payload, preceded by an 8-byte LE element count
    when ``spec`` is dynamic. Raises TypeError/ValueError for a value that
    does not fit ``spec`` (nothing is produced)."""
    t = type(value)
    if (t is int or t is float) and spec.shape == (1,):
        packer = _SCALAR_STRUCTS.get(spec.dtype)
        if packer is not None and (t is int or packer.format[-1] in "fd"):
            try:
                return packer.pack(value)
            except (struct.error, OverflowError):
                pass
    data = coerce(spec, value, "advice")
    payload = data if isinstance(data, bytes) else data.tobytes()
    if spec.is_dynamic:
        count = len(data) if isinstance(data, bytes) else data.size
        return _U64.pack(count) + payload
    return payload
