"""One connected compiler on the model side: the memory file, its two rings
and the wake-ups (docs/shm.md).

:class:`Session` offers the reader interface the decoders use
(``read_line``, ``read_exact``, ``deadline``) over the request ring, and
writes reply records into the reply ring. Every index the compiler wrote
is checked against the ring before it is followed, so a corrupt one is a
ProtocolError naming it, never a walk through the ring.
"""

import array
import mmap
import os
import select
import socket
import struct
import time

from .. import _spin
from ..errors import MessageTooLarge, PeerClosed, ProtocolError, TimeoutError
from ..reader import poll_ms
from . import layout as L

__all__ = ["Session"]

_DEFAULT = object()
_ONE = L.U64.pack(1)

_REQ_HEAD, _REQ_TAIL = L.word(L.REQUEST_HEAD), L.word(L.REQUEST_TAIL)
_REP_HEAD, _REP_TAIL = L.word(L.REPLY_HEAD), L.word(L.REPLY_TAIL)
_MODEL_SLEEPING = L.word(L.MODEL_SLEEPING)
_COMPILER_SLEEPING = L.word(L.COMPILER_SLEEPING)


class Session:
    """A compiler's channel: created on an accepted connection, it sends the
    hello with the memory file and eventfds (``native``: the fast-path
    module, or None)."""

    # read_exact returns the same view object for the same bytes of the
    # ring, so decoders may keep what they derived from it (bitstream keeps
    # the feature arrays: a request written where an earlier one was needs
    # no new ones).
    stable_buffers = True
    _MAX_SLICES = 16

    def __init__(self, conn, capacity, spin, alive, native):
        self.conn = conn
        self.capacity = capacity
        self.spinner = _spin.SpinBudget(spin)
        self.alive = alive
        self.deadline = None
        self.state = None         # decoding state, when served by the event loop
        self.nonblocking = False  # the event loop never waits inside a message
        self.pending_reply = None  # the event loop's reply waiting for room
        self.waiting = None  # the event loop's PendingDeadline of this session
        self.mm = None
        self.ring = None
        self.wake_self = self.wake_peer = -1
        memfd = os.memfd_create("mlbridge-shm", os.MFD_CLOEXEC)
        try:
            os.ftruncate(memfd, L.file_size(capacity))
            self.mm = mmap.mmap(memfd, L.file_size(capacity))
            self.wake_self = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
            self.wake_peer = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
            if native is not None:  # the native fast path (None: all in Python)
                self.ring = native.Ring(self.mm, capacity, self.wake_peer)
            L.U64.pack_into(self.mm, L.MAGIC_OFFSET, L.MAGIC)
            struct.pack_into("<I", self.mm, L.VERSION_OFFSET, L.VERSION)
            L.U64.pack_into(self.mm, L.CAPACITY_OFFSET, capacity)
            conn.sendmsg([L.HELLO.pack(L.MAGIC, L.VERSION, 0, capacity)],
                         [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                           array.array("i", [memfd, self.wake_self, self.wake_peer]))])
        except BaseException:
            self.close()
            raise
        finally:
            os.close(memfd)
        # Payload views of the native fast path: ring position -> (read-only
        # view, {name: array}), for fast_layout.
        self.fast_layout = None
        self.fast_views = {}
        self.ctl = memoryview(self.mm)[:L.CONTROL_BYTES].cast("Q")
        self.view = memoryview(self.mm).toreadonly()
        self.req_base = L.CONTROL_BYTES
        self.rep_base = L.reply_ring(capacity)
        # Request ring: [pos, end) unread bytes of the current record, which
        # starts at ring position `read` and is followed by `next`.
        self.read = self.next = 0
        self.pos = self.end = 0
        self.rep_head = 0
        self.slices = {}  # (start, length) -> read-only view of the ring
        self.poll = select.poll()
        self.poll.register(self.wake_self, select.POLLIN)
        self.poll.register(conn.fileno(), select.POLLIN)

    def close(self):
        for fd in (self.wake_self, self.wake_peer):
            if fd >= 0:
                os.close(fd)
        self.wake_self = self.wake_peer = -1
        # What holds views of the mapping goes first, so it can be unmapped.
        self.slices = {}
        self.fast_views = {}
        if self.ring is not None:
            self.ring.close()
        if self.state is not None:
            self.state.cache = None
        for name in ("ctl", "view"):
            v = getattr(self, name, None)
            if v is not None:
                v.release()
                setattr(self, name, None)
        if self.mm is not None:
            try:
                self.mm.close()
            except BufferError:  # observations still hold views; GC unmaps later
                pass
            self.mm = None
        self.conn.close()

    @property
    def open(self):
        return self.conn.fileno() >= 0

    # ---- waiting ------------------------------------------------------------------
    def has_request(self):
        """True when unread request bytes are there (no waiting)."""
        return self.pos < self.end or self.ctl[_REQ_HEAD] != self.next

    def wait_for_request(self, deadline, what, partial):
        """Until the compiler published bytes past ``next``."""
        ctl = self.ctl
        target = self.next
        if ctl[_REQ_HEAD] != target:
            return
        if self.nonblocking:  # mlbridge writes whole messages in one record
            raise ProtocolError(f"a message ends inside {what} (split across ring records)")
        start = time.monotonic()
        spin = self.spinner.next()
        if spin:
            spin_end = start + spin
            if deadline is not None:
                spin_end = min(spin_end, deadline)
            while True:
                if ctl[_REQ_HEAD] != target:
                    self.spinner.update(time.monotonic() - start)
                    return
                now = time.monotonic()
                if now >= spin_end:
                    break
                if now - start >= _spin.PAUSE_ONLY:
                    os.sched_yield()
        # About to sleep: whatever was read is free for the compiler again.
        self.release()
        # Announce the sleep, then look once more: the compiler checks the
        # flag after publishing, so one of the two sees the other.
        self.sleeping(True)
        try:
            self._sleep(deadline, what, partial, target)
        finally:
            self.sleeping(False)
            self.spinner.update(time.monotonic() - start)

    def sleeping(self, asleep):
        """Announce (True) or end the model's sleep on the wake-up eventfd."""
        self.ctl[_MODEL_SLEEPING] = int(asleep)
        if asleep:
            _spin.full_fence()

    def _sleep(self, deadline, what, partial, target):
        ctl = self.ctl
        conn_fd = self.conn.fileno()
        while ctl[_REQ_HEAD] == target:
            hung_up = False
            for fd, _ in self.poll.poll(poll_ms(deadline, self.alive is not None,
                                                f"{what} from the compiler")):
                if fd == conn_fd:
                    hung_up = True
                else:
                    self.drain_wake_up()
            if ctl[_REQ_HEAD] != target:
                return
            if hung_up or (self.alive is not None and not self.alive()):
                raise PeerClosed("the compiler closed the channel" if not partial else
                                 f"the compiler closed the channel inside a message "
                                 f"({partial} bytes of {what})", clean=not partial)

    def drain_wake_up(self):
        try:
            os.eventfd_read(self.wake_self)
        except BlockingIOError:
            pass

    def next_record(self, deadline, what, partial):
        """Make the next request record current. The compiler's head is
        checked before anything it points at is read: at most the ring's
        capacity ahead, a wrap marker only where a record could not fit,
        and then one record at offset 0 -- so this loop follows at most one
        marker, whatever the memory holds."""
        cap = self.capacity
        while True:
            self.read = self.next
            self.wait_for_request(deadline, what, partial)
            head = self.ctl[_REQ_HEAD]
            off = self.read % cap
            avail = head - self.read
            if avail > cap or avail < 0:
                raise ProtocolError(f"corrupt request ring: its head ({head}) is {avail} "
                                    f"bytes from the model's read position ({self.read}); "
                                    f"a ring of {cap} bytes holds at most {cap}")
            length = L.U64.unpack_from(self.mm, self.req_base + off)[0]
            if length == L.WRAP_MARKER:
                if off == 0 or avail < cap - off:
                    raise ProtocolError(f"corrupt request ring: a wrap marker at offset "
                                        f"{off} with {avail} bytes published")
                self.next = self.read + cap - off
                continue
            need = L.record_bytes(length)
            if length > cap - off - L.LENGTH_BYTES or need > avail:
                raise ProtocolError(f"corrupt request ring: a record of {length} bytes at "
                                    f"offset {off} with {avail} bytes published")
            self.pos = self.req_base + off + L.LENGTH_BYTES
            self.end = self.pos + length
            self.next = self.read + need
            return

    def release(self):
        """Let the compiler reuse everything before the current record (and
        the current one once it is fully read)."""
        if self.ctl is not None:
            self.ctl[_REQ_TAIL] = self.next if self.pos >= self.end else self.read

    # ---- the reader interface of the decoders -----------------------------------------
    def read_line(self, max_bytes, deadline=_DEFAULT):
        if deadline is _DEFAULT:
            deadline = self.deadline
        if self.pos >= self.end:
            self.next_record(deadline, "a line", 0)
        i = self.mm.find(b"\n", self.pos, min(self.end, self.pos + max_bytes + 1))
        if i >= 0:
            line = self.mm[self.pos:i]
            self.pos = i + 1
            return line
        if self.end - self.pos > max_bytes:
            raise MessageTooLarge(f"line exceeds the {max_bytes}-byte limit")
        # A line split across records (never written so by mlbridge).
        parts = bytearray(self.mm[self.pos:self.end])
        self.pos = self.end
        while True:
            self.next_record(deadline, "a line", len(parts))
            i = self.mm.find(b"\n", self.pos, self.end)
            stop = self.end if i < 0 else i
            if len(parts) + stop - self.pos > max_bytes:
                raise MessageTooLarge(f"line exceeds the {max_bytes}-byte limit")
            parts += self.mm[self.pos:stop]
            self.pos = stop if i < 0 else i + 1
            if i >= 0:
                return bytes(parts)

    def read_exact(self, n, deadline=_DEFAULT):
        """``n`` bytes: a read-only view of the shared memory when they lie in
        one record (always, for what mlbridge writes), else a copy."""
        if deadline is _DEFAULT:
            deadline = self.deadline
        if self.pos >= self.end and n:
            self.next_record(deadline, f"{n} bytes", 0)
        pos = self.pos
        if self.end - pos >= n:
            v = self.slices.get((pos, n))
            if v is None:
                if len(self.slices) >= self._MAX_SLICES:
                    self.slices.clear()
                v = self.slices[(pos, n)] = self.view[pos:pos + n]
            self.pos = pos + n
            return v
        out = bytearray(n)
        got = 0
        while True:
            k = min(n - got, self.end - self.pos)
            out[got:got + k] = self.view[self.pos:self.pos + k]
            got += k
            self.pos += k
            if got == n:
                return out
            self.next_record(deadline, f"{n} bytes", got)

    # ---- replies ----------------------------------------------------------------------
    def try_write(self, data, state=None):
        """Append ``data`` as one reply record -- behind the reply frame of
        ``state``'s session when given and the session has frames (protocol
        §5.1) -- if the ring has room now; False (nothing written) if not."""
        if self.ring is not None and type(data) is bytes:
            head = (self.ring.reply(self.rep_head, data, 0, 0) if state is None else
                    self.ring.reply(self.rep_head, data, state.session, state.requests))
            if head is not None:
                self.rep_head = head
                return True
        frame = 0 if state is None else state.frame_bytes
        n = frame + len(data)
        cap = self.capacity
        if n > cap - L.LENGTH_BYTES:
            raise MessageTooLarge(f"reply of {n} bytes exceeds the ring capacity "
                                  f"({cap - L.LENGTH_BYTES} bytes)")
        need = L.record_bytes(n)
        head = self.rep_head
        off = head % cap
        ctl = self.ctl
        tail = ctl[_REP_TAIL]
        if tail > head or head - tail > cap:
            raise ProtocolError(f"corrupt reply ring: the compiler's tail ({tail}) is not "
                                f"within {cap} bytes before the head ({head})")
        # Wrap also when the compiler has read everything and the record fits
        # before the marker: replies reuse the same pages (flat RSS).
        empty = tail == head
        skip = cap - off if off + need > cap or (empty and need <= off) else 0
        if not empty and head + skip + need - tail > cap:
            return False
        base = self.rep_base
        if skip:
            L.U64.pack_into(self.mm, base + off, L.WRAP_MARKER)
            head += skip
            off = 0
        at = base + off + L.LENGTH_BYTES
        L.U64.pack_into(self.mm, at - L.LENGTH_BYTES, n)
        if frame:
            state.frame_into(self.mm, at, n - frame)
        self.mm[at + frame:at + n] = data
        head += need
        self.rep_head = head
        ctl[_REP_HEAD] = head  # published after the bytes (x86-64 store order)
        _spin.full_fence()
        if ctl[_COMPILER_SLEEPING]:
            os.write(self.wake_peer, _ONE)
        return True

    def write(self, data, timeout, state=None):
        """try_write(), waiting at most ``timeout`` seconds for room."""
        if self.try_write(data, state):
            return
        deadline = time.monotonic() + timeout
        conn_fd = self.conn.fileno()
        while not self.try_write(data, state):
            if time.monotonic() > deadline:
                raise TimeoutError("the compiler did not read its replies in time")
            self.check_hang_up(conn_fd)

    def check_hang_up(self, conn_fd, ms=1):
        """Wait up to ``ms`` for a wake-up; PeerClosed if the socket hung up."""
        for fd, _ in self.poll.poll(ms):
            if fd == conn_fd:
                raise PeerClosed("the compiler closed the channel")
            self.drain_wake_up()
