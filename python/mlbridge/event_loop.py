"""EventLoop: many compiler channels, one Python thread.

A thread per channel makes N compilers fight for the GIL; one loop waits on
every channel at once (epoll) and answers whatever
is ready, so the Python side costs the same per request whether one
compiler or eight are connected. Pipe and shared-memory interfaces mix
freely; see docs/event-loop.md.
"""

import os
import select
import time

from ._spin import PAUSE_ONLY, SpinBudget, full_fence
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
    never cross channels. No channel waits for another: a compiler that
    stops in the middle of a message, or does not read its reply, holds
    only its own session, until the interface's timeout ends it
    (docs/event-loop.md). While nothing is ready the loop polls for up to
    ``spin_us`` microseconds when that has proved faster, then sleeps in
    one ``select`` on every channel (an idle loop uses no CPU).

    Interfaces stay open and keep their sessions when the loop is closed
    (``close()`` or the end of a ``with`` block); one loop at a time per
    interface. ``ended`` counts the sessions ended so far, ``failed`` is
    the interface whose channel made the last run() raise.
    """

    def __init__(self, *, spin_us=50):
        if spin_us < 0:
            raise ValueError(f"spin_us must not be negative, got {spin_us}")
        self._epoll = select.epoll()
        self._by_fd = {}  # descriptor -> its source
        self._sources = []
        self._spinner = SpinBudget(spin_us / 1e6) if spin_us else None
        self._current = None
        self.failed = None  # the interface whose channel failed the last run()
        self.ended = 0  # sessions ended, counted by the sources
        self._again = []  # sources with work that no descriptor will signal

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
                self._again = [s for s in self._again if s is not source]
                source.detach()
                return
        raise ValueError("this interface is not in the loop")

    def close(self):
        for source in self._sources:
            source.detach()
        self._sources = []
        self._epoll.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ---- what the sources call -----------------------------------------------------
    def register(self, fd, source):
        """Wake for ``fd`` (readable or hung up): ``source.on_event(fd)``."""
        self._epoll.register(fd, select.EPOLLIN)
        self._by_fd[fd] = source

    def unregister(self, fd):
        """Forget ``fd`` (before it is closed, or after: a closed descriptor
        has left epoll by itself)."""
        if self._by_fd.pop(fd, None) is not None:
            try:
                self._epoll.unregister(fd)
            except OSError:
                pass

    def again(self, source):
        """Call ``source.serve_buffered()`` in the next round."""
        self._again.append(source)

    def _select(self, timeout):
        """[(source, fd)] of the descriptors ready within ``timeout`` s."""
        by_fd = self._by_fd
        return [(by_fd[fd], fd) for fd, _ in self._epoll.poll(timeout) if fd in by_fd]

    # ---- the loop ------------------------------------------------------------------
    def run(self, *, sessions=None, timeout=60.0, deadline=None):
        """Answer requests until ``sessions`` sessions have ended (None: no
        limit), every interface's watched compiler process has exited, no
        request came for ``timeout`` seconds (returning if a session has
        ended, raising mlbridge.TimeoutError otherwise), or the
        ``time.monotonic()`` ``deadline`` passes (TimeoutError). Returns the
        number of requests answered.

        A policy exception or a malformed stream closes that compiler's
        session and propagates (``failed`` is then the interface it came
        from; the other channels keep their sessions: run() again to
        continue).
        """
        if timeout is None or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.failed = None
        self._current = None
        try:
            return self._run(sessions, timeout, deadline)
        except BaseException:
            self.failed = None if self._current is None else self._current.iface
            raise

    def _run(self, sessions, timeout, deadline):
        sources = self._sources
        # Shared-memory sources show requests in memory (polled, and told
        # before the loop sleeps); pipe sources only through descriptors.
        in_memory = [s for s in sources if s.in_memory]
        poll_fds = len(in_memory) < len(sources)
        answered0 = sum(s.stats.answered for s in sources)
        ended0 = self.ended
        monotonic = time.monotonic
        select = self._select
        now = monotonic()
        idle_deadline = now + timeout
        waiting_since = None  # out of requests: how long until the next one came?
        polled_at = now
        spinner = self._spinner
        events = ()
        while True:
            progress = 0
            if self._again:
                again, self._again = self._again, []
                for source in again:
                    self._current = source
                    progress += source.serve_buffered()
            for source, fd in events:
                self._current = source
                progress += source.on_event(fd)
            for source in in_memory:
                if source.ready():
                    self._current = source
                    progress += source.serve_ready()
            now = monotonic()
            if not progress or now - polled_at > _POLL_EVERY:
                for source in sources:
                    if source.due is not None and source.due <= now:
                        self._current = source
                        progress += source.on_timer()
            self._current = None
            if progress:
                if sessions is not None and self.ended - ended0 >= sessions:
                    break
                if waiting_since is not None:
                    if spinner is not None:
                        spinner.update(now - waiting_since)
                    waiting_since = None
                idle_deadline = now + timeout
                if deadline is not None and now > deadline:
                    raise TimeoutError("the deadline passed")
                # While busy, still look at every descriptor (and timer) now
                # and then, so no channel waits for the others to pause.
                if now - polled_at > _POLL_EVERY:
                    events = select(0)
                    polled_at = now
                    continue
                events = ()
                if in_memory or self._again:
                    continue
                # Only descriptors, all drained: wait for the next request.
            for source in sources:
                if not source.finished():
                    break
            else:
                break
            if waiting_since is None:
                waiting_since = now
                if spinner is not None:
                    found = self._spin(spinner.next(), in_memory, poll_fds)
                    if found:
                        events = () if found is True else found
                        continue
            wait = idle_deadline - now
            if wait <= 0:
                if self.ended > ended0:
                    break
                raise TimeoutError(f"no request from a compiler within {timeout:g} s")
            if deadline is not None:
                if deadline <= now:
                    raise TimeoutError("the deadline passed")
                wait = min(wait, deadline - now)
            for source in sources:
                if source.due is not None:
                    wait = min(wait, max(0.0, source.due - now))
            if in_memory:
                events = self._sleep_on_rings(in_memory, wait)
            else:
                events = select(wait)
            polled_at = monotonic()
        return sum(s.stats.answered for s in sources) - answered0

    def _sleep_on_rings(self, in_memory, wait):
        """Sleep like select(), but tell the shared-memory peers first (so
        they wake us) and look at the rings once more after that."""
        for source in in_memory:
            source.before_sleep()
        try:
            full_fence()
            for source in in_memory:
                if source.ready():
                    return ()
            return self._select(wait)
        finally:
            for source in in_memory:
                source.after_sleep()

    def _spin(self, budget, in_memory, poll_fds):
        """Poll every channel for ``budget`` seconds: the events when a
        descriptor is ready, True when a ring is, () if nothing came."""
        if not budget:
            return ()
        now = time.monotonic()
        end = now + budget
        yield_from = now + PAUSE_ONLY
        while True:
            for s in in_memory:
                if s.ready():
                    return True
            if poll_fds:
                events = self._select(0)
                if events:
                    return events
            now = time.monotonic()
            if now >= end:
                return ()
            if now >= yield_from:
                os.sched_yield()
