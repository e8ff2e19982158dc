"""What the stream interfaces (pipes, shared memory) have in common: the
request/answer contract, the properties of the current session, the
watched compiler process, serve() through the event loop, and the session
logic between the bytes and the policy (which message ends a session,
when an observation may be answered, what a reply is)."""

import time

from .errors import MLBridgeError, ProtocolError
from .event_loop import EventLoop
from .messages import Header, Observation

__all__ = ["StreamInterface", "decode_next", "answer", "PendingDeadline"]


def decode_next(codec, reader, state, fast=None):
    """The next message of a session (Header, Context, Observation,
    Outcome), with the session rules every stream transport keeps: a
    header that does not continue the session forgets the context, and an
    observation needs an advice spec to be answered. ``fast(reader,
    state)``: a transport's shortcut for the common message, tried first
    (None: not this one)."""
    msg = None if fast is None else fast(reader, state)
    if msg is None:
        msg = codec.decode_message(reader, state)
    kind = type(msg)
    if kind is Observation:
        if state.advice_spec is None:
            raise ProtocolError("observation without an advice spec")
    elif kind is Header and not msg.continues:
        state.context = None
    return msg


def answer(codec, policy, obs):
    """The reply bytes for ``obs``: ``policy(obs)`` encoded for its advice
    spec (the frame is the transport's)."""
    return codec.encode_advice(obs.advice_spec, policy(obs))


class PendingDeadline:
    """When a session waiting on its peer -- a message begun but not ended,
    a reply with no room yet -- must give up (``timeout`` seconds after it
    began to wait; one per session, so a slow peer costs only its own)."""

    __slots__ = ("timeout", "due")

    def __init__(self, timeout):
        self.timeout = timeout
        self.due = None

    def waiting(self):
        """The session waits (from now, if it did not already)."""
        if self.due is None:
            self.due = time.monotonic() + self.timeout

    def clear(self):
        self.due = None

    def passed(self, now):
        return self.due is not None and now >= self.due


def _of_session(name, doc):
    """A read-only property: the current session's ``name``."""
    return property(lambda self: getattr(self._state, name), doc=doc)


class StreamInterface:
    """Base of PipeCompilerInterface and ShmCompilerInterface.

    A subclass sets ``_codec``, ``_state``, ``_pending``, ``_closed``,
    ``_process``, ``timeout``, ``_finalizer`` (removes what it created) and
    implements ``_send(data) -> bool``, ``_drop_session()``,
    ``_loop_source(loop, policy, on_header)`` (its part of an
    :class:`~mlbridge.EventLoop`) and ``_process_changed()``.
    """

    # ---- properties -------------------------------------------------------------
    @property
    def serdes(self):
        return self._codec.NAME

    feature_specs = _of_session("feature_specs", "Feature specs of the last header (None "
                                                 "before the first).")
    advice_spec = _of_session("advice_spec", "Advice spec of the last header (None before "
                                             "the first).")
    context = _of_session("context", "The last context name the compiler announced (None "
                                     "if none).")

    @property
    def pending(self):
        """The observation awaiting populate_buffer(), or None."""
        return self._pending

    @property
    def process(self):
        """The compiler's ``subprocess.Popen`` being watched (or None).

        Settable, because a compiler is usually started after the interface
        (it needs the channel's path)."""
        return self._process

    @process.setter
    def process(self, process):
        self._process = process
        self._process_changed()

    def _alive_check(self):
        proc = self._process
        return None if proc is None else (lambda: proc.poll() is None)

    def _process_exited(self):
        return self._process is not None and self._process.poll() is not None

    # ---- lifecycle --------------------------------------------------------------
    def close(self):
        """End the session and remove what this object created (FIFOs or
        socket, and the private directory)."""
        self._closed = True
        self._drop_session()
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ---- requests ---------------------------------------------------------------
    def _check_can_evaluate(self):
        if self._closed:
            raise MLBridgeError("the interface is closed")
        if self._pending is not None:
            raise MLBridgeError(f"observation {self._pending.index} has not been answered; "
                                f"call populate_buffer() first")

    def populate_buffer(self, advice):
        """Send the advice for the pending observation.

        ``advice``: Python or numpy scalar, list, array, or str for string
        advice, checked against ``advice_spec`` before anything is written
        (TypeError/ValueError; the observation stays pending). Raises
        MLBridgeError with no pending observation, PeerClosed if the
        compiler is gone, TimeoutError if it does not take the bytes in
        time. Returns False (sending nothing) when the compiler stopped
        waiting for this answer, True once sent.
        """
        obs = self._pending
        if obs is None:
            raise MLBridgeError("no pending observation; call evaluate() first")
        return self._send(self._codec.encode_advice(obs.advice_spec, advice))

    def send_error(self, message):
        """Answer the pending observation with an error (JSON only)."""
        if self._pending is None:
            raise MLBridgeError("no pending observation; call evaluate() first")
        encode_error = getattr(self._codec, "encode_error", None)
        if encode_error is None:
            raise MLBridgeError(f"the {self.serdes} format has no error channel; "
                                f"send advice or close the session")
        return self._send(encode_error(message))

    def serve(self, policy, *, sessions=None, timeout=None):
        """Answer requests with ``policy(observation) -> advice``.

        Stops after ``sessions`` sessions have ended (None: no limit), when
        the compiler process (if given) has exited, or when no request came
        for ``timeout`` seconds (default: the interface's) -- returning if
        at least one session has ended, raising mlbridge.TimeoutError
        otherwise. A policy exception (or an invalid advice) closes the
        session and propagates. Returns the number of requests answered.

        This is :class:`mlbridge.EventLoop` with this one interface; use
        the loop directly to serve several interfaces from one thread.
        """
        self._check_can_evaluate()
        with EventLoop(spin_us=self._spin_us) as loop:
            loop.add(self, policy)
            return loop.run(sessions=sessions,
                            timeout=self.timeout if timeout is None else timeout)
