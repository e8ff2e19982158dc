"""EventLoop: many compiler channels, one Python thread.

A thread per channel makes N compilers fight for the GIL; one loop waits on
every channel at once (``selectors``: epoll on Linux) and answers whatever
is ready, so the Python side costs the same per request whether one
compiler or eight are connected. Pipe and shared-memory interfaces mix
freely; see docs/event-loop.md.
"""

import selectors
import time

from ._spin import SpinBudget, full_fence
from .errors import TimeoutError

__all__ = ["EventLoop", "ChannelStats"]

# While busy, the loop still polls every descriptor at least this often, so
# a compiler whose requests keep coming cannot starve the others.
_POLL_EVERY = 0.001


class ChannelStats:
    """Counters of one interface in an EventLoop (returned by ``add``):
    ``answered`` requests and ``ended`` sessions, over every run()."""

    __slots__ = ("answered", "ended")

    def __init__(self):
        self.answered = 0
        self.ended = 0


class EventLoop:
    """Serve several model-side interfaces from the calling thread.

    ``add(iface, policy)`` every interface (``PipeCompilerInterface``,
    ``ShmCompilerInterface``: a pipe pair is one compiler at a time, a
    shared-memory interface every compiler that connects), then ``run()``.
    Each request is answered with its interface's ``policy(observation) ->
    advice``; requests of one channel are answered in order and replies
    never cross channels. While nothing is ready the loop polls for up to
    ``spin_us`` microseconds when that has proved faster, then sleeps in
    one ``select`` on every channel (an idle loop uses no CPU).

    Interfaces stay open and keep their sessions when the loop is closed
    (``close()`` or the end of a ``with`` block); one loop at a time per
    interface.
    """

    def __init__(self, *, spin_us=50):
        if spin_us < 0:
            raise ValueError(f"spin_us must not be negative, got {spin_us}")
        self.selector = selectors.DefaultSelector()
        self._sources = []
        self._spinner = SpinBudget(spin_us / 1e6) if spin_us else None
        self._activity = False

    # ---- channels -----------------------------------------------------------------
    def add(self, iface, policy, *, on_header=None):
        """Serve ``iface`` with ``policy``. ``on_header(feature_specs,
        advice_spec)``, if given, is called for every header the compiler
        sends, before the requests that follow it. Returns the channel's
        :class:`ChannelStats`."""
        if any(s.iface is iface for s in self._sources):
            raise ValueError("this interface is already in the loop")
        iface._check_can_evaluate()
        source = iface._loop_source(self, policy, on_header)
        self._sources.append(source)
        return source.stats

    def remove(self, iface):
        """Stop serving ``iface`` (it stays open, its sessions continue
        with its own evaluate() or serve())."""
        for source in self._sources:
            if source.iface is iface:
                self._sources.remove(source)
                source.detach()
                return
        raise ValueError("this interface is not in the loop")

    def close(self):
        for source in self._sources:
            source.detach()
        self._sources = []
        self.selector.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ---- what the sources call -----------------------------------------------------
    def activity(self):
        """A source made progress without answering (a session opened or
        ended): the idle timeout starts again."""
        self._activity = True

    # ---- the loop ------------------------------------------------------------------
    def run(self, *, sessions=None, timeout=60.0, deadline=None):
        """Answer requests until ``sessions`` sessions have ended (None: no
        limit), every interface's watched compiler process has exited, no
        request came for ``timeout`` seconds (returning if a session has
        ended, raising mlbridge.TimeoutError otherwise), or the
        ``time.monotonic()`` ``deadline`` passes (TimeoutError). Returns the
        number of requests answered.

        A policy exception or a malformed stream closes that compiler's
        session and propagates (the other channels keep theirs; run()
        again to continue).
        """
        if timeout is None or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        sources = self._sources
        answered = ended = 0
        idle_deadline = time.monotonic() + timeout
        waiting_since = None  # out of requests: how long until the next one came?
        polled_at = 0.0
        spinner = self._spinner
        poll_fds = any(s.spin_on_fds for s in sources)
        events = []
        while sessions is None or ended < sessions:
            before = self._totals()
            self._activity = False
            for key, _ in events:
                key.data.on_event(key.fileobj)
            events = []
            for s in sources:
                if s.ready():
                    s.serve_ready()
                due = s.due
                if due is not None and due <= time.monotonic():
                    s.on_timer()
            after = self._totals()
            answered += after[0] - before[0]
            ended += after[1] - before[1]
            if after != before or self._activity:
                now = time.monotonic()
                if waiting_since is not None:
                    if spinner is not None:
                        spinner.update(now - waiting_since)
                    waiting_since = None
                idle_deadline = now + timeout
                if deadline is not None and now > deadline:
                    raise TimeoutError("the deadline passed")
                if poll_fds or now - polled_at > _POLL_EVERY:
                    events = self.selector.select(0)
                    polled_at = now
                continue
            if all(s.finished() for s in sources):
                break
            if waiting_since is None:
                waiting_since = time.monotonic()
                if spinner is not None:
                    events = self._spin(spinner.next(), poll_fds)
                    if events is None:  # a ring has a request
                        events = []
                        continue
                    if events:
                        continue
            for s in sources:
                s.before_sleep()
            full_fence()
            try:
                if any(s.ready() for s in sources):
                    continue
                now = time.monotonic()
                wait = idle_deadline - now
                if wait <= 0:
                    if ended:
                        break
                    raise TimeoutError(f"no request from a compiler within {timeout:g} s")
                if deadline is not None:
                    if deadline <= now:
                        raise TimeoutError("the deadline passed")
                    wait = min(wait, deadline - now)
                for s in sources:
                    if s.due is not None:
                        wait = min(wait, max(0.0, s.due - now))
                events = self.selector.select(wait)
                polled_at = time.monotonic()
            finally:
                for s in sources:
                    s.after_sleep()
        return answered

    def _totals(self):
        a = e = 0
        for s in self._sources:
            a += s.stats.answered
            e += s.stats.ended
        return a, e

    def _spin(self, budget, poll_fds):
        """Poll every channel for ``budget`` seconds: None when a source is
        ready, the events when a descriptor is, [] when nothing came."""
        if not budget:
            return []
        end = time.monotonic() + budget
        sources = self._sources
        while True:
            for s in sources:
                if s.ready():
                    return None
            if poll_fds:
                events = self.selector.select(0)
                if events:
                    return events
            if time.monotonic() >= end:
                return []
