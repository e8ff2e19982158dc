"""Buffered, deadline-bounded reading from a file descriptor.

:class:`FdReader` is what decoders read from: ``read_line`` and
``read_exact`` wait at most until an absolute ``time.monotonic()`` deadline
(:class:`~mlbridge.TimeoutError`), report end of stream as
:class:`~mlbridge.PeerClosed`, and never block without a bound when a
deadline is set. :class:`BufferReader` offers the same interface over bytes
already in memory (tests, captured streams).
"""

import math
import os
import select
import time

import numpy as _np

from ._spin import PAUSE_ONLY
from .errors import MessageTooLarge, PeerClosed, TimeoutError

__all__ = ["FdReader", "BufferReader", "WouldBlock", "poll_ms", "ALIVE_SLICE_MS"]

_DEFAULT = object()
_CHUNK = 64 << 10
# While a liveness callback is set, waits are cut into slices this long so a
# dead peer process is noticed promptly.
ALIVE_SLICE_MS = 20


def poll_ms(deadline, watching, what):
    """The milliseconds one poll() of a wait may take: until the monotonic
    ``deadline`` (None: -1, no bound), at most ALIVE_SLICE_MS while
    ``watching`` a peer process. TimeoutError naming ``what`` once the
    deadline has passed."""
    if deadline is None:
        ms = -1
    else:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"deadline passed while waiting for {what}")
        ms = max(1, math.ceil(remaining * 1000))
    if watching:
        ms = ALIVE_SLICE_MS if ms < 0 else min(ms, ALIVE_SLICE_MS)
    return ms


class WouldBlock(Exception):
    """A non-blocking FdReader has not received all of what was asked for
    (not an error: the caller rewinds and tries again when more came)."""


class FdReader:
    """Reads from ``fd`` (made non-blocking) through an internal buffer.

    ``deadline``: default absolute monotonic deadline for every call (None =
    no bound; callers that must not hang always set one). ``spinner``:
    optional :class:`mlbridge._spin.SpinBudget`; an empty read then polls
    the fd for its budget before sleeping, where that measurably pays. ``alive``: optional
    callable; when it returns False during a wait, the wait ends with
    PeerClosed (e.g. the compiler process exited). ``tee``: optional binary
    file object that receives a copy of every byte read, in order.
    The reader does not own ``fd``.

    ``nonblocking``: instead of waiting, a read raises :class:`WouldBlock`.
    An event loop decodes a message between ``begin()`` and ``commit()``,
    and on WouldBlock calls ``rewind()``: every byte since ``begin()`` is
    still buffered, and decoding starts over when more arrived.
    """

    def __init__(self, fd, *, deadline=None, alive=None, tee=None, chunk_size=_CHUNK,
                 spinner=None):
        self.fd = fd
        self.deadline = deadline
        self.alive = alive
        self.tee = tee
        self.spinner = spinner
        self.nonblocking = False
        self._mark = None  # buffer position of begin(), kept until commit()
        self._chunk = int(chunk_size)
        self._buf = bytearray(self._chunk)
        self._start = 0
        self._end = 0
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN | select.POLLPRI)
        os.set_blocking(fd, False)

    @property
    def buffered(self):
        """Bytes received but not yet returned."""
        return self._end - self._start

    def input_state(self):
        """Without waiting: "data" if bytes are buffered or readable,
        "closed" if the writer has closed (POLLHUP) with nothing left to
        read, else None."""
        if self._end > self._start:
            return "data"
        ready = self._poll.poll(0)
        if not ready:
            return None
        return "data" if ready[0][1] & (select.POLLIN | select.POLLPRI) else "closed"

    # ---- a message read without waiting -----------------------------------------
    def begin(self):
        """Keep every byte read from here until commit() (or rewind())."""
        self._mark = self._start

    def rewind(self):
        """Back to the position of begin(): what was read since is unread."""
        self._start, self._mark = self._mark, None

    def commit(self):
        self._mark = None
        if self._start >= self._end:
            self._consume_to(self._end)

    # ---- public reads ----------------------------------------------------------
    def read_line(self, max_bytes, deadline=_DEFAULT):
        """Bytes up to the next ``\\n`` (excluded; the ``\\n`` is consumed).

        Raises MessageTooLarge as soon as more than ``max_bytes`` bytes arrive
        without a newline (nothing larger is buffered), PeerClosed on EOF
        (``clean`` when no byte of the line had arrived), TimeoutError when
        the deadline passes (the partial line stays buffered).
        """
        if deadline is _DEFAULT:
            deadline = self.deadline
        scanned = 0  # bytes after _start already known to hold no newline
        while True:
            i = self._buf.find(b"\n", self._start + scanned, self._end)
            if i >= 0:
                if i - self._start > max_bytes:
                    raise MessageTooLarge(f"line of {i - self._start} bytes exceeds the "
                                          f"{max_bytes}-byte limit")
                with memoryview(self._buf) as mv:
                    line = mv[self._start:i].tobytes()
                self._consume_to(i + 1)
                return line
            pending = self._end - self._start
            if pending > max_bytes:
                raise MessageTooLarge(f"line exceeds the {max_bytes}-byte limit "
                                      f"(no newline in the first {pending} bytes)")
            scanned = pending
            # Never grow past what proves the line too long: max_bytes + 1.
            self._reserve(min(self._chunk, max_bytes + 1 - pending), max_bytes + 1)
            if self._fill(deadline, "a line", pending) == 0:
                if pending == 0:
                    raise PeerClosed("end of stream")
                raise PeerClosed(f"stream ended inside a line ({pending} bytes without "
                                 f"a newline)", clean=False)

    def read_exact(self, n, deadline=_DEFAULT):
        """Exactly ``n`` bytes, as a new ``bytearray`` owned by the caller.

        Large reads go straight into the returned buffer (no intermediate
        copy). PeerClosed on EOF (``clean`` when none of the ``n`` bytes had
        arrived); TimeoutError when the deadline passes (what arrived stays
        buffered for the next call).
        """
        if deadline is _DEFAULT:
            deadline = self.deadline
        start = self._start
        avail = self._end - start
        if avail >= n:
            out = self._buf[start:start + n]
            self._consume_to(start + n)
            return out
        if n - avail <= self._chunk or self.nonblocking:
            self._reserve(n - avail)
            while self._end - self._start < n:
                if self._fill(deadline, f"{n} bytes", self._end - self._start) == 0:
                    got = self._end - self._start
                    raise PeerClosed(
                        "end of stream" if got == 0 else
                        f"stream ended after {got} of {n} bytes", clean=got == 0)
            start = self._start
            out = self._buf[start:start + n]
            self._consume_to(start + n)
            return out
        out = bytearray(n)
        out[:avail] = self._buf[start:self._end]
        self._consume_to(self._end)
        got = avail
        try:
            with memoryview(out) as mv:
                while got < n:
                    k = self._recv(mv[got:], deadline, f"{n} bytes", got)
                    if k == 0:
                        raise PeerClosed(
                            "end of stream" if got == 0 else
                            f"stream ended after {got} of {n} bytes", clean=got == 0)
                    got += k
        except TimeoutError:
            # Keep what arrived so a later call can resume where this one stopped.
            # (A copy: the traceback may still hold views of ``out``.)
            self._buf, self._start, self._end = out[:got] + bytearray(self._chunk), 0, got
            raise
        return out

    def drain(self, deadline=_DEFAULT):
        """Discard everything until end of stream (returns normally at EOF
        or when the peer process exits); TimeoutError if the deadline
        passes first."""
        if deadline is _DEFAULT:
            deadline = self.deadline
        self._start = self._end = 0
        try:
            while True:
                self._start = self._end = 0
                if self._fill(deadline, "the end of the stream", 0) == 0:
                    return
        except PeerClosed:
            return
        finally:
            self._start = self._end = 0

    def rebind(self, fd):
        """Continue reading from ``fd`` instead (same stream, new descriptor;
        used across a FIFO session boundary). Buffered bytes are kept."""
        self._poll.unregister(self.fd)
        self.fd = fd
        self._poll.register(fd, select.POLLIN | select.POLLPRI)
        os.set_blocking(fd, False)

    # ---- internals ---------------------------------------------------------------
    def _consume_to(self, pos):
        if pos >= self._end and self._mark is None:
            self._start = self._end = 0
            if len(self._buf) > 4 * self._chunk:
                # Do not keep a huge buffer around after one long line.
                self._buf = bytearray(self._chunk)
        else:
            self._start = pos

    def _reserve(self, need, cap=None):
        """Make room for ``need`` more bytes after ``_end``; a new buffer
        grows by doubling, but not past ``cap`` bytes (when given)."""
        if len(self._buf) - self._end >= need:
            return
        keep = self._start if self._mark is None else self._mark  # kept from here
        pending = self._end - keep
        if pending + need <= len(self._buf):
            # Same-size slice assignment: never resizes, safe with live views.
            self._buf[:pending] = self._buf[keep:self._end]
        else:
            if cap is not None:
                cap += self._start - keep
            grown = 2 * len(self._buf) if cap is None else min(2 * len(self._buf), cap)
            new = bytearray(max(grown, pending + need))
            # numpy copies buffer to buffer; a bytearray slice assignment
            # would first copy the source (a third buffer of that size).
            _np.frombuffer(new, _np.uint8, pending)[:] = _np.frombuffer(
                self._buf, _np.uint8, pending, keep)
            self._buf = new
        if self._mark is not None:
            self._mark = 0
        self._start, self._end = self._start - keep, pending

    def _fill(self, deadline, what, partial):
        with memoryview(self._buf) as mv:
            n = self._recv(mv[self._end:], deadline, what, partial)
        self._end += n
        return n

    def _recv(self, view, deadline, what, partial):
        """One successful read into ``view`` (waiting if needed); 0 at EOF.

        ``partial``: bytes of the current item already received, so a dead
        peer process is reported as a clean end only between items.
        """
        waiting_since = None  # nothing to read: time the wait for the spinner
        while True:
            try:
                n = os.readv(self.fd, [view])
            except BlockingIOError:
                if self.nonblocking:
                    raise WouldBlock() from None
                spinner = self.spinner
                if spinner is not None:
                    now = time.monotonic()
                    if waiting_since is None:
                        waiting_since = now
                        spin_end = now + spinner.next()
                        if deadline is not None:
                            spin_end = min(spin_end, deadline)
                    if now < spin_end:
                        if now - waiting_since >= PAUSE_ONLY:
                            os.sched_yield()
                        continue  # spinning: read again
                if not self._wait(deadline, what):
                    raise PeerClosed("peer process exited" if partial == 0 else
                                     f"peer process exited after {partial} bytes of "
                                     f"{what}", clean=partial == 0)
                continue
            if n == 0 and not self._poll.poll(0):
                # A FIFO reads as EOF before its first writer connects, but
                # polls as idle (no POLLHUP) until one has: keep waiting.
                if self.nonblocking:
                    raise WouldBlock()
                if not self._wait(deadline, what):
                    raise PeerClosed("peer process exited" if partial == 0 else
                                     f"peer process exited after {partial} bytes of "
                                     f"{what}", clean=partial == 0)
                continue
            if waiting_since is not None:
                self.spinner.update(time.monotonic() - waiting_since)
            if n and self.tee is not None:
                self.tee.write(view[:n])
            return n

    def _wait(self, deadline, what):
        """True when readable; False when the peer process died."""
        alive = self.alive
        while True:
            if self._poll.poll(poll_ms(deadline, alive is not None, what)):
                return True
            if alive is not None and not alive():
                # Data written just before the exit is still readable; only
                # give up once a final poll shows nothing.
                return bool(self._poll.poll(0))


class BufferReader:
    """The FdReader interface over bytes in memory; the end of the data is EOF."""

    def __init__(self, data):
        self._data = bytes(data)
        self._pos = 0
        self.deadline = None

    @property
    def buffered(self):
        return len(self._data) - self._pos

    @property
    def at_end(self):
        return self._pos == len(self._data)

    def read_line(self, max_bytes, deadline=None):
        i = self._data.find(b"\n", self._pos)
        if i < 0:
            pending = len(self._data) - self._pos
            if pending > max_bytes:
                raise MessageTooLarge(f"line exceeds the {max_bytes}-byte limit "
                                      f"(no newline in the first {pending} bytes)")
            if pending == 0:
                raise PeerClosed("end of stream")
            raise PeerClosed(f"stream ended inside a line ({pending} bytes without "
                             f"a newline)", clean=False)
        if i - self._pos > max_bytes:
            raise MessageTooLarge(f"line of {i - self._pos} bytes exceeds the "
                                  f"{max_bytes}-byte limit")
        line = self._data[self._pos:i]
        self._pos = i + 1
        return line

    def read_exact(self, n, deadline=None):
        got = min(n, len(self._data) - self._pos)
        if got < n:
            self._pos = len(self._data)
            raise PeerClosed("end of stream" if got == 0 else
                             f"stream ended after {got} of {n} bytes", clean=got == 0)
        out = bytearray(self._data[self._pos:self._pos + n])
        self._pos += n
        return out
