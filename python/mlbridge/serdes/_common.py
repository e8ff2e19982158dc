"""Pieces shared by the SerDes: the header and context lines (identical in
bitstream and JSON, protocol §2.1 and §3.1) and strict parsing of one JSON
message line."""

import json

try:  # a parser in C, 3-5x faster than json.loads on long arrays of numbers
    import orjson as _orjson
except ImportError:  # the standard library alone gives the same results
    _orjson = None

from ..errors import MessageTooLarge, ProtocolError
from ..messages import DEFAULT_MAX_MESSAGE_BYTES, Context, Header
from ..tensor_spec import TensorSpec, llvm_json_quote

__all__ = ["parse_line", "decode_line", "parse_header", "check_feature_count", "parse_session",
           "parse_context", "encode_header_line",
           "encode_context_line", "check_index", "check_encode_index", "snippet",
           "DEFAULT_MAX_MESSAGE_BYTES"]

_INT64_MAX = (1 << 63) - 1


def snippet(data, limit=80):
    """A short printable excerpt of wire data for error messages."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
        return repr(data[:limit]) + ("..." if len(data) > limit else "")
    text = repr(data)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def parse_line(line, exact=False):
    """One message line -> dict, or ProtocolError saying what is wrong.

    orjson parses when it is installed and accepts the line; otherwise, or
    with ``exact``, the standard library does (NaN/Infinity, lone surrogate
    escapes and integers beyond 64 bits, which orjson rejects or turns into
    floats, and every error message)."""
    if _orjson is not None and not exact:
        try:
            obj = _orjson.loads(line)
        except _orjson.JSONDecodeError:
            pass
        else:
            if isinstance(obj, dict):
                return obj
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProtocolError(f"message is not valid UTF-8 (byte {e.start}): "
                            f"{snippet(line)}") from None
    try:
        obj = json.loads(text)
    except ValueError as e:
        detail = getattr(e, "msg", str(e))
        col = getattr(e, "colno", None)
        where = f" at column {col}" if col is not None else ""
        raise ProtocolError(f"malformed message ({detail}{where}): {snippet(line)}") from None
    except RecursionError:
        raise ProtocolError(f"malformed message (nested too deeply): {snippet(line)}") from None
    if not isinstance(obj, dict):
        raise ProtocolError(f"message must be a JSON object: {snippet(line)}")
    return obj


def decode_line(line, handle):
    """``handle(parse_line(line))``. A ProtocolError after the fast parser is
    checked again with the exact one: orjson reads an integer beyond 64 bits
    as a float, so only the standard library's typing may reject a message
    (and say why). Both parsers accept the same messages with the same
    values otherwise."""
    try:
        return handle(parse_line(line))
    except ProtocolError:
        if _orjson is None:
            raise
    return handle(parse_line(line, exact=True))


def check_feature_count(line, state):
    """Refuse a header line with more feature specs than the limit before
    it is parsed (a 16 MiB header can hold ~300k specs: seconds of work and
    hundreds of MB). Every spec has one "name" key; names cannot contain
    the unescaped quotes."""
    if line.count(b'"name"') > state.max_features + 1:
        raise MessageTooLarge(f"header: more than {state.max_features} feature specs "
                              f"(the feature-count limit)")


def parse_session(obj, continues):
    """The optional "session" key: 16 lower-case hex digits, not all zero."""
    value = obj.get("session")
    if value is None:
        return 0
    if (not isinstance(value, str) or len(value) != 16
            or value.strip("0123456789abcdef") or value == "0" * 16):
        raise ProtocolError(f'header: "session" must be 16 lower-case hex digits, not '
                            f'all zero, got {snippet(value)}')
    return int(value, 16)


def check_index(value, key):
    """A record index from the wire: an integer in [0, 2**63)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _INT64_MAX:
        raise ProtocolError(f'"{key}" must be a non-negative 64-bit integer, got {value!r}')
    return value


def parse_header(obj, state):
    """Validate a header object, store it in ``state``, return a Header.

    Rejects dynamic feature dimensions, duplicate feature names and any
    payload above ``state.max_message_bytes`` before anything is allocated.
    """
    features = obj.get("features")
    if not isinstance(features, list):
        raise ProtocolError('header: "features" must be an array of tensor specs')
    if len(features) > state.max_features:
        raise MessageTooLarge(f"header: {len(features)} feature specs exceed the "
                              f"feature-count limit of {state.max_features}")
    if "advice" not in obj and not state.advice_optional:
        raise ProtocolError('header: missing "advice" tensor spec')
    limit = state.max_message_bytes
    specs = []
    seen = set()
    total = 0
    for item in features:
        spec = TensorSpec.from_json(item)
        if spec.is_dynamic:
            raise ProtocolError(f"header: feature {spec.describe()} has a dynamic (-1) "
                                f"dimension; only the advice may")
        if spec.name in seen:
            raise ProtocolError(f"header: duplicate feature name {spec.name!r}")
        seen.add(spec.name)
        if spec.nbytes > limit:
            raise MessageTooLarge(f"header: feature {spec.describe()} needs {spec.nbytes} "
                                  f"bytes, above the {limit}-byte message limit")
        total += spec.nbytes
        specs.append(spec)
    if total > limit:
        raise MessageTooLarge(f"header: observations of {total} bytes exceed the "
                              f"{limit}-byte message limit")
    advice = TensorSpec.from_json(obj["advice"]) if "advice" in obj else None
    if advice is not None and not advice.is_dynamic and advice.nbytes > limit:
        raise MessageTooLarge(f"header: advice {advice.describe()} needs {advice.nbytes} "
                              f"bytes, above the {limit}-byte message limit")
    score = None
    if obj.get("score") is not None:
        score = TensorSpec.from_json(obj["score"])
        if score.is_dynamic or score.nbytes > limit:
            raise ProtocolError(f"header: unusable score spec {score.describe()}")
    state.feature_specs = tuple(specs)
    state.advice_spec = advice
    state.score_spec = score
    state.cache = None
    continues = obj.get("continue", False)
    if not isinstance(continues, bool):
        raise ProtocolError(f'header: "continue" must be true or false, got {continues!r}')
    session = parse_session(obj, continues)
    if not continues:
        state.session, state.requests = session, 0
    return Header(state.feature_specs, advice, score, continues, state.session)


def parse_context(obj, state):
    name = obj["context"]
    if not isinstance(name, str):
        raise ProtocolError(f'"context" must be a string, got {name!r}')
    state.context = name
    return Context(name)


def check_feature_specs(feature_specs):
    """The feature specs of a header as a list; TypeError / ValueError for
    what a peer would reject (not a TensorSpec, a dynamic shape, a name
    twice)."""
    feature_specs = list(feature_specs)
    seen = set()
    for spec in feature_specs:
        if not isinstance(spec, TensorSpec):
            raise TypeError(f"feature specs must be TensorSpec, got {type(spec).__name__}")
        if spec.is_dynamic:
            raise ValueError(f"feature {spec.describe()}: features need concrete shapes")
        if spec.name in seen:
            raise ValueError(f"duplicate feature name {spec.name!r}")
        seen.add(spec.name)
    return feature_specs


def encode_header_line(feature_specs, advice_spec, score_spec=None, continues=False):
    """``{"features":[...],"advice":SPEC}\\n`` (LLVM's key order: features,
    score, advice), plus ``"continue":true`` for a spec update within the
    session. Raises ValueError for specs a peer would reject."""
    feature_specs = check_feature_specs(feature_specs)
    if not isinstance(advice_spec, TensorSpec):
        raise TypeError("advice_spec must be a TensorSpec")
    parts = ['{"features":[', ",".join(s.to_json() for s in feature_specs), "]"]
    if score_spec is not None:
        parts += [',"score":', score_spec.to_json()]
    parts += [',"advice":', advice_spec.to_json()]
    parts.append(',"continue":true}\n' if continues else "}\n")
    return "".join(parts).encode("utf-8")


def encode_context_line(name):
    """``{"context":"NAME"}\\n``, quoted as LLVM quotes it."""
    if not isinstance(name, str):
        raise TypeError(f"context name must be a str, got {type(name).__name__}")
    try:
        return ('{"context":' + llvm_json_quote(name) + "}\n").encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"context name {name!r} is not valid Unicode") from None


def check_encode_index(index):
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= _INT64_MAX:
        raise ValueError(f"observation index must be a non-negative 64-bit int, got {index!r}")
    return index
