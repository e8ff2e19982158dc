"""A ShmCompilerInterface in an EventLoop (docs/event-loop.md): its listener
and every connected compiler's ring, eventfd and socket.

Nothing here waits on one compiler: requests are whole ring records (read
only once published), and a reply that finds the compiler's reply ring
full is kept as the session's pending reply, retried every millisecond
until the compiler makes room or the interface's timeout ends that
session alone.
"""

import logging
import time

from .._model_side import PendingDeadline, answer
from ..errors import PeerClosed, TimeoutError
from ..event_loop import ChannelStats
from ..messages import Header, Observation
from ..reader import ALIVE_SLICE_MS

__all__ = ["ShmSource"]

_log = logging.getLogger("mlbridge.shm")

# Rounds of one request per compiler that serve_ready() makes before
# returning to the loop.
_MAX_PASSES = 16
# How often a pending reply looks for room (the compiler does not signal
# the room it makes).
_RETRY_REPLY_EVERY = 0.001


class ShmSource:
    """The loop's view of one ShmCompilerInterface. Methods return their
    progress (requests answered, sessions opened or ended)."""

    in_memory = True  # a request shows in its ring without a system call

    def __init__(self, iface, loop, policy, on_header, sessions):
        self.iface = iface
        self.loop = loop
        self.policy = policy
        self.on_header = on_header
        self.stats = ChannelStats()
        self.sessions = []
        self.due = None
        self._schedule()
        loop.register(iface._listener.fileno(), self)
        for session in sessions:
            self.add(session)

    def add(self, session):
        session.nonblocking = True
        session.waiting = PendingDeadline(self.iface.timeout)
        self.sessions.append(session)
        self.loop.register(session.wake_self, self)
        self.loop.register(session.conn.fileno(), self)

    def _unregister(self, session):
        self.loop.unregister(session.wake_self)
        self.loop.unregister(session.conn.fileno())

    def drop(self, session):
        self.sessions.remove(session)
        self._unregister(session)
        session.close()

    def _ended(self, session, why):
        _log.debug("session ended: %s", why)
        self.drop(session)
        self.stats.ended += 1
        self.loop.ended += 1
        return 1

    def detach(self):
        """Leave the loop; connected sessions are parked for the next
        serve() or evaluate() (a reply still pending is sent first, within
        the interface's timeout)."""
        self.loop.unregister(self.iface._listener.fileno())
        for session in list(self.sessions):
            self._unregister(session)
            session.nonblocking = False
            if session.pending_reply is not None:
                try:
                    self._flush(session, wait=True)
                except (PeerClosed, TimeoutError, OSError) as e:
                    _log.debug("session ended: %s", e)
                    session.close()
        self.iface._parked += [s for s in self.sessions if s.open]
        self.sessions = []

    def accept(self):
        accepted = 0
        while True:
            state = self.iface._new_state()
            session = self.iface._next_session(state)
            if session is None:
                return accepted
            self.add(session)
            accepted += 1

    # ---- the source interface of EventLoop -----------------------------------------
    def ready(self):
        for session in self.sessions:
            if session.pending_reply is None and session.has_request():
                return True
        return False

    def serve_ready(self):
        """Answer the requests in the rings: one per compiler in turn (so
        none waits behind another's stream of requests), for as long as
        they keep coming, up to _MAX_PASSES rounds (then the loop looks
        at its descriptors and timers)."""
        progress = 0
        for _ in range(_MAX_PASSES):
            answered = 0
            for session in list(self.sessions):
                if session.pending_reply is not None:
                    continue  # on_timer retries it
                if session.has_request():
                    answered += self._serve_one(session)
                else:
                    session.release()  # all read: a waiting writer may go on
            if not answered:
                break
            progress += answered
        return progress

    def _serve_one(self, session):
        """Read the session's messages up to its next observation and answer
        it; 1 if answered (or the reply is pending) or the session ended,
        else 0."""
        iface = self.iface
        state = session.state
        try:
            while session.has_request():
                msg = iface._next_message(session, state)
                if type(msg) is Observation:
                    session.pending_reply = answer(iface._codec, self.policy, msg)
                    session.release()
                    return self._flush(session)
                if type(msg) is Header and self.on_header is not None:
                    self.on_header(msg.feature_specs, msg.advice_spec)
        except (PeerClosed, TimeoutError, OSError) as e:
            return self._ended(session, e)
        except BaseException:
            self.drop(session)
            raise
        session.release()
        return 0

    def _flush(self, session, wait=False):
        """Write the session's pending reply if its ring has room (``wait``:
        until it has, within the timeout); 1 when written, else 0 and the
        session waits (the timer retries, and ends it at its deadline)."""
        state = session.state
        if wait:
            session.write(session.pending_reply, self.iface.timeout, state)
        elif not session.try_write(session.pending_reply, state):
            session.waiting.waiting()
            self._schedule()
            return 0
        session.pending_reply = None
        session.waiting.clear()
        state.requests += 1
        self.stats.answered += 1
        return 1

    def on_event(self, fd):
        if fd == self.iface._listener.fileno():
            return self.accept()
        for session in self.sessions:
            if fd == session.conn.fileno():
                if session.has_request() and session.pending_reply is None:
                    return 0  # served first; the hang-up stays readable
                return self._ended(session, "the compiler closed the channel")
            if fd == session.wake_self:
                session.drain_wake_up()
                return 0
        return 0

    def on_timer(self):
        """Retry the pending replies; end the sessions whose compiler did
        not make room before its deadline."""
        progress = 0
        now = time.monotonic()
        for session in list(self.sessions):
            if session.pending_reply is None:
                continue
            try:
                progress += self._flush(session)
            except (PeerClosed, OSError) as e:
                progress += self._ended(session, e)
                continue
            if session.waiting.passed(now):
                progress += self._ended(session, "the compiler did not read its replies "
                                                 f"within {self.iface.timeout:g} s")
        self._schedule()
        return progress

    def _schedule(self):
        """The next timer: soon while a reply is pending, else a look at
        the watched compiler process now and then."""
        now = time.monotonic()
        if any(s.pending_reply is not None for s in self.sessions):
            self.due = now + _RETRY_REPLY_EVERY
        elif self.iface._process is not None:
            self.due = now + ALIVE_SLICE_MS / 1e3
        else:
            self.due = None

    def before_sleep(self):
        for session in self.sessions:
            session.sleeping(True)

    def after_sleep(self):
        for session in self.sessions:
            session.sleeping(False)

    def finished(self):
        return not self.sessions and self.iface._process_exited()
