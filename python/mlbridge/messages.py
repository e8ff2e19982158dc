"""Messages a model-side decoder returns, and the per-session decoding state.

``decode_message(reader, state)`` of every SerDes returns one of
:class:`Header`, :class:`Context`, :class:`Outcome` or
:class:`~mlbridge.Observation`, and updates ``state`` accordingly.
"""

from dataclasses import dataclass
from typing import Any, Optional, Tuple

from .observation import Observation
from .tensor_spec import TensorSpec

__all__ = ["Header", "Context", "Outcome", "Observation", "SessionState",
           "DEFAULT_MAX_MESSAGE_BYTES", "DEFAULT_MAX_HEADER_BYTES"]

DEFAULT_MAX_MESSAGE_BYTES = 256 << 20
DEFAULT_MAX_HEADER_BYTES = 16 << 20


@dataclass(frozen=True)
class Header:
    """A header: the specs of all following records.

    ``continues`` is True for a spec update within the current session
    (protocol §2.3, ``"continue":true``); otherwise the header starts a new
    session, as every LLVM header does."""

    feature_specs: Tuple[TensorSpec, ...]
    advice_spec: TensorSpec
    score_spec: Optional[TensorSpec] = None
    continues: bool = False


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
    """

    __slots__ = ("feature_specs", "advice_spec", "score_spec", "context",
                 "max_message_bytes", "max_header_bytes", "in_message", "cache")

    def __init__(self, max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES,
                 max_header_bytes=DEFAULT_MAX_HEADER_BYTES):
        self.max_message_bytes = int(max_message_bytes)
        self.max_header_bytes = int(max_header_bytes)
        self.reset()

    def reset(self):
        """Forget the specs and context (a new session begins)."""
        self.feature_specs = None
        self.advice_spec = None
        self.score_spec = None
        self.context = None
        self.in_message = False
        self.cache = None  # SerDes-private data derived from the header
