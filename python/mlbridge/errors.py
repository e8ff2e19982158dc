"""Exceptions raised by mlbridge.

Every error the library raises on purpose derives from :class:`MLBridgeError`,
except argument validation (``TypeError``/``ValueError``) on values the caller
supplies, e.g. an advice of the wrong type.
"""

import builtins

__all__ = [
    "MLBridgeError",
    "ProtocolError",
    "MessageTooLarge",
    "PeerClosed",
    "TimeoutError",
    "ModelError",
]


class MLBridgeError(Exception):
    """Base class of all mlbridge errors."""


class ProtocolError(MLBridgeError):
    """The peer sent bytes that do not follow docs/protocol.md."""


class MessageTooLarge(ProtocolError):
    """A length announced or implied by the peer exceeds a configured limit.

    Raised before anything of that size is allocated. A subclass of
    :class:`ProtocolError` because the stream can no longer be trusted.
    """


class PeerClosed(MLBridgeError):
    """The peer closed its end (EOF, EPIPE) or its process exited.

    ``clean`` is True when the stream ended between two messages, False when
    it ended in the middle of one (truncated input).
    """

    def __init__(self, message="peer closed the connection", *, clean=True):
        super().__init__(message)
        self.clean = clean


class TimeoutError(MLBridgeError, builtins.TimeoutError):  # noqa: A001
    """A deadline passed before the peer opened, sent or accepted data.

    Also an instance of the builtin :class:`TimeoutError`, so generic
    ``except TimeoutError`` handlers catch it.
    """


class ModelError(MLBridgeError):
    """The model answered with an error message instead of advice (JSON)."""
