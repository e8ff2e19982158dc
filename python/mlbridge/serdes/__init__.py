"""SerDes: how messages become bytes (docs/protocol.md §2-§3).

Each SerDes module offers the same functions:

* compiler side: ``encode_header(feature_specs, advice_spec) -> bytes``,
  ``encode_context(name) -> bytes``, ``encode_observation(index, features)
  -> bytes`` (``features``: ``(TensorSpec, value)`` pairs),
  ``decode_advice(reader, spec, max_message_bytes)``;
* model side: ``decode_message(reader, state)`` -> Header | Context |
  Observation | Outcome, ``encode_advice(spec, value) -> bytes``.
"""

from . import bitstream
from . import json
# Shared with the SerDes outside this package (protobuf, in mlbridge.grpc).
from ._common import check_feature_specs

__all__ = ["bitstream", "json", "get", "NAMES", "check_feature_specs"]

_BY_NAME = {bitstream.NAME: bitstream, json.NAME: json}

#: Names accepted by :func:`get`. "protobuf" lives in mlbridge.grpc and is
#: imported on first use (it needs the protobuf runtime).
NAMES = tuple(_BY_NAME) + ("protobuf",)


def get(name):
    """The SerDes module called ``name`` ("bitstream", "json" or "protobuf")."""
    if name == "protobuf":
        from ..grpc import protobuf_serdes
        return protobuf_serdes
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown serdes {name!r}; expected one of {', '.join(NAMES)}") from None
