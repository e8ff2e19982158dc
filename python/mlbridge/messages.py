"""Messages a model-side decoder returns, and the per-session decoding state.

``decode_message(reader, state)`` of every SerDes returns one of
:class:`Header`, :class:`Context`, :class:`Outcome` or
:class:`~mlbridge.Observation`, and updates ``state`` accordingly.
"""

import struct
from dataclasses import dataclass
from typing import Any, Optional, Tuple

from .observation import Observation
from .tensor_spec import TensorSpec

# The reply frame of protocol §5.1: session id, request number, length.
_FRAME = struct.Struct("<QQQ")

__all__ = ["Header", "Context", "Outcome", "Observation", "SessionState",
           "DEFAULT_MAX_MESSAGE_BYTES", "DEFAULT_MAX_HEADER_BYTES", "DEFAULT_MAX_FEATURES"]

DEFAULT_MAX_MESSAGE_BYTES = 256 << 20
DEFAULT_MAX_HEADER_BYTES = 16 << 20
# Feature specs in one header: bounds the time and memory a header costs.
DEFAULT_MAX_FEATURES = 16384


@dataclass(frozen=True)
class Header:
    """A header: the specs of all following records.

    ``continues`` is True for a spec update within the current session
    (protocol §2.3, ``"continue":true``); otherwise the header starts a new
    session, as every LLVM header does. ``session`` is the compiler's
    session id (protocol §5.1), 0 when it offered none (LLVM never does)."""

    feature_specs: Tuple[TensorSpec, ...]
    advice_spec: Optional[TensorSpec]  # None only in a training log without one
    score_spec: Optional[TensorSpec] = None
    continues: bool = False
    session: int = 0


@dataclass(frozen=True)
class Context:
    """A context switch; observation indices are counted per context."""

    name: str


@dataclass(frozen=True)
class Outcome:
    """A reward record of a training log (``{"outcome":N}`` + score)."""

    index: int
    value: Any


class SessionState:
    """What a decoder knows about the current session.

    Holds the specs of the last header, the current context and the size
    limits (protocol §4). ``in_message`` is True while a decoder has
    consumed part of a message; a timeout then leaves the stream unusable.
    ``session`` (0: none) and ``requests`` (replies sent) frame the replies
    of a session that asked for it (protocol §5.1). ``advice_optional``:
    accept headers without "advice" (training logs, where LLVM omits it; a
    compiler session always has one).
    """

    __slots__ = ("feature_specs", "advice_spec", "score_spec", "context",
                 "max_message_bytes", "max_header_bytes", "max_features", "in_message",
                 "cache", "session", "requests", "advice_optional")

    def __init__(self, max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES,
                 max_header_bytes=DEFAULT_MAX_HEADER_BYTES,
                 max_features=DEFAULT_MAX_FEATURES, advice_optional=False):
        self.max_message_bytes = int(max_message_bytes)
        self.max_header_bytes = int(max_header_bytes)
        self.max_features = int(max_features)
        self.advice_optional = bool(advice_optional)
        self.reset()

    def frame(self, reply):
        """``reply`` as sent: behind the frame of protocol §5.1 (session id,
        request number, length) when the session asked for one."""
        if not self.session:
            return reply
        return _FRAME.pack(self.session, self.requests, len(reply)) + reply

    @property
    def frame_bytes(self):
        """Bytes of the frame before each reply (0: the session has none)."""
        return _FRAME.size if self.session else 0

    def frame_into(self, buffer, offset, length):
        """Write the frame of a ``length``-byte reply at ``offset`` of
        ``buffer`` (a session with frames only)."""
        _FRAME.pack_into(buffer, offset, self.session, self.requests, length)

    def reset(self):
        """Forget the specs and context (a new session begins)."""
        self.feature_specs = None
        self.advice_spec = None
        self.score_spec = None
        self.context = None
        self.in_message = False
        self.cache = None  # SerDes-private data derived from the header
        self.session = 0
        self.requests = 0
