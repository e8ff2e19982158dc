"""ShmCompilerInterface: the model side of a shared-memory channel (docs/shm.md).

The interface listens on a Unix socket. A compiler (``mlbridge::ShmModelRunner``)
connects; the interface answers with a fresh memory file holding two byte
rings -- requests to the model, replies to the compiler -- and two eventfds
that wake the other side. Each connection is one session; its end (or the
compiler's death) is the socket's hang-up.

Observations are decoded in place: a bitstream observation's arrays are
read-only numpy views of the shared memory, valid until the observation is
answered (``populate_buffer``); copy what you keep longer.

Waiting for a request spins for up to ``spin_us`` microseconds when that has
proved faster (measured), then sleeps on the eventfd and the socket, so an
idle channel costs no CPU and a dead compiler ends the session at once.

The hot path of a small request -- finding a record that is one bitstream
observation, and writing a reply that fits -- is done by the CPython module
``mlbridge_shm_native`` when it is built (``fast_path``); anything else, and
everything without the module, is done here.

Threads: one thread at a time per interface.
"""

import array
import logging
import mmap
import os
import platform
import select
import shutil
import socket
import stat
import struct
import tempfile
import time
import weakref

from . import _native
from . import serdes as _serdes
from .serdes import bitstream as _bitstream
from ._model_side import StreamInterface
from ._spin import PAUSE_ONLY, SpinBudget, full_fence
from .errors import MessageTooLarge, MLBridgeError, PeerClosed, ProtocolError, TimeoutError
from .event_loop import ChannelStats
from .messages import (DEFAULT_MAX_HEADER_BYTES, DEFAULT_MAX_MESSAGE_BYTES, Header,
                       Observation, SessionState)

__all__ = ["ShmCompilerInterface", "DEFAULT_CAPACITY"]

_log = logging.getLogger("mlbridge.shm")

# docs/shm.md §2. Word indices into the control block (8-byte words).
_MAGIC = 0x31304D4853424C4D  # "MLBSHM01"
_VERSION = 1
_CONTROL_BYTES = 4096
_REQ_HEAD, _REQ_TAIL, _REP_HEAD, _REP_TAIL = 8, 16, 24, 32
_MODEL_SLEEPING, _COMPILER_SLEEPING = 40, 48
_WRAP = (1 << 64) - 1
_HELLO = struct.Struct("<QIIQ")
_U64 = struct.Struct("<Q")
_ONE = _U64.pack(1)

DEFAULT_CAPACITY = 64 << 20  # per ring; the memory file is sparse until used
_MIN_CAPACITY = 4096
_DEFAULT = object()
# With a compiler process to watch, sleeps are cut into slices this long.
_ALIVE_SLICE_MS = 20
# Rounds of one request per compiler that an event loop's serve_ready() makes
# before returning to the loop.
_MAX_PASSES = 16


def _pad8(n):
    return (n + 7) & ~7


class _Session:
    """One connected compiler: the mapping, both rings and the wake-ups.

    Implements the reader interface the decoders use (``read_line``,
    ``read_exact``, ``deadline``) over the request ring, and ``write`` of
    one reply record into the reply ring.
    """

    # read_exact returns the same view object for the same bytes of the
    # ring, so decoders may keep what they derived from it (bitstream keeps
    # the feature arrays: a request written where an earlier one was needs
    # no new ones).
    stable_buffers = True
    _MAX_SLICES = 16

    def __init__(self, conn, capacity, spin, alive, native):
        self.conn = conn
        self.capacity = capacity
        self.spinner = SpinBudget(spin)
        self.alive = alive
        self.deadline = None
        self.state = None         # decoding state, when served by the event loop
        self.nonblocking = False  # the event loop never waits inside a message
        self.mm = None
        self.ring = None
        self.wake_self = self.wake_peer = -1
        size = _CONTROL_BYTES + 2 * capacity
        memfd = os.memfd_create("mlbridge-shm", os.MFD_CLOEXEC)
        try:
            os.ftruncate(memfd, size)
            self.mm = mmap.mmap(memfd, size)
            self.wake_self = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
            self.wake_peer = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
            if native is not None:  # the native fast path (None: all in Python)
                self.ring = native.Ring(self.mm, capacity, self.wake_peer)
            _U64.pack_into(self.mm, 0, _MAGIC)
            struct.pack_into("<I", self.mm, 8, _VERSION)
            _U64.pack_into(self.mm, 16, capacity)
            conn.sendmsg([_HELLO.pack(_MAGIC, _VERSION, 0, capacity)],
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
        self.ctl = memoryview(self.mm)[:_CONTROL_BYTES].cast("Q")
        self.view = memoryview(self.mm).toreadonly()
        self.req_base = _CONTROL_BYTES
        self.rep_base = _CONTROL_BYTES + capacity
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

    # ---- waiting ------------------------------------------------------------------
    def has_request(self):
        """True when unread request bytes are there (no waiting)."""
        return self.pos < self.end or self.ctl[_REQ_HEAD] != self.next

    def _wait(self, deadline, what, partial):
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
                if now - start >= PAUSE_ONLY:
                    os.sched_yield()
        # About to sleep: whatever was read is free for the compiler again.
        self.release()
        # Announce the sleep, then look once more: the compiler checks the
        # flag after publishing, so one of the two sees the other.
        ctl[_MODEL_SLEEPING] = 1
        full_fence()
        try:
            self._sleep(deadline, what, partial, target)
        finally:
            ctl[_MODEL_SLEEPING] = 0
            self.spinner.update(time.monotonic() - start)

    def _sleep(self, deadline, what, partial, target):
        ctl = self.ctl
        conn_fd = self.conn.fileno()
        while ctl[_REQ_HEAD] == target:
            if deadline is None:
                ms = -1
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"no {what} from the compiler before the deadline")
                ms = max(1, int(remaining * 1000))
            if self.alive is not None:
                ms = _ALIVE_SLICE_MS if ms < 0 else min(ms, _ALIVE_SLICE_MS)
            hung_up = False
            for fd, _ in self.poll.poll(ms):
                if fd == conn_fd:
                    hung_up = True
                else:
                    try:
                        os.eventfd_read(self.wake_self)
                    except BlockingIOError:
                        pass
            if ctl[_REQ_HEAD] != target:
                return
            if hung_up or (self.alive is not None and not self.alive()):
                raise PeerClosed("the compiler closed the channel" if not partial else
                                 f"the compiler closed the channel inside a message "
                                 f"({partial} bytes of {what})", clean=not partial)

    def _next_record(self, deadline, what, partial):
        """Make the next request record current."""
        cap = self.capacity
        while True:
            self.read = self.next
            self._wait(deadline, what, partial)
            head = self.ctl[_REQ_HEAD]
            off = self.read % cap
            length = _U64.unpack_from(self.mm, self.req_base + off)[0]
            avail = head - self.read
            if length == _WRAP and avail >= cap - off:
                self.next = self.read + cap - off
                continue
            need = 8 + ((length + 7) & ~7)
            if avail > cap or length > cap - off - 8 or need > avail:
                raise ProtocolError("corrupt record in the request ring")
            self.pos = self.req_base + off + 8
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
            self._next_record(deadline, "a line", 0)
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
            self._next_record(deadline, "a line", len(parts))
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
            self._next_record(deadline, f"{n} bytes", 0)
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
            self._next_record(deadline, f"{n} bytes", got)

    def observation(self, state):
        """The next request in one step when its record is exactly one
        bitstream observation line and payload for the current header (what
        mlbridge's compilers write between headers); None for any other
        record, which is then current and unread for decode_message."""
        layout = state.cache
        if layout is None or self.pos < self.end:
            return None
        if self.ring is not None and not layout.strings and not layout.bools:
            if self.ctl[_REQ_HEAD] == self.next:
                self._wait(self.deadline, "a message", 0)
            taken = self.ring.take(self.next, layout.nbytes)
            if taken is not None:
                return self._native_observation(state, layout, *taken)
        self._next_record(self.deadline, "a message", 0)
        pos = self.pos
        end = self.end
        mm = self.mm
        nl = mm.find(b"\n", pos, min(end, pos + 40))  # 40 > the longest such line
        if nl < 0 or end - nl != layout.nbytes + 2:
            return None
        index = _bitstream.observation_index(mm[pos:nl])
        if index is None:
            return None
        self.pos = nl + 1
        return _bitstream.read_observation(self, state, index)

    def _native_observation(self, state, layout, index, pos, record, next_record):
        """The observation the native take() found (what read_observation
        makes for the same record, with views kept per ring position)."""
        self.read = record
        self.next = next_record
        self.pos = self.end = pos + layout.nbytes + 1
        if self.fast_layout is not layout:
            self.fast_layout = layout
            self.fast_views = {}
        seen = self.fast_views.get(pos)
        if seen is None:
            if len(self.fast_views) >= layout.MAX_VIEWS:
                self.fast_views.clear()
            seen = self.fast_views[pos] = (self.view[pos:pos + layout.nbytes], {})
        raw = seen[0]
        return Observation(index, state.context, layout.specs, state.advice_spec,
                           values=seen[1], raw=raw, layout=layout.entries, buf=raw,
                           names=layout.names)

    # ---- replies ----------------------------------------------------------------------
    def write(self, data, timeout, state=None):
        """Append ``data`` as one reply record -- behind the reply frame of
        ``state``'s session when given and the session has frames (protocol
        §5.1) -- waiting at most ``timeout`` seconds for room."""
        if self.ring is not None and type(data) is bytes:
            head = (self.ring.reply(self.rep_head, data, 0, 0) if state is None else
                    self.ring.reply(self.rep_head, data, state.session, state.requests))
            if head is not None:
                self.rep_head = head
                return
        frame = 0 if state is None else state.frame_bytes
        n = frame + len(data)
        cap = self.capacity
        if n > cap - 8:
            raise MessageTooLarge(f"reply of {n} bytes exceeds the ring capacity "
                                  f"({cap - 8} bytes)")
        need = 8 + _pad8(n)
        head = self.rep_head
        off = head % cap
        ctl = self.ctl
        # Wrap also when the compiler has read everything and the record fits
        # before the marker: replies reuse the same pages (flat RSS).
        empty = ctl[_REP_TAIL] == head
        skip = cap - off if off + need > cap or (empty and need <= off) else 0
        deadline = None
        while not empty and head + skip + need - ctl[_REP_TAIL] > cap:  # rare
            if deadline is None:
                deadline = time.monotonic() + timeout
                conn_fd = self.conn.fileno()
            if time.monotonic() > deadline:
                raise TimeoutError("the compiler did not read its replies in time")
            for fd, _ in self.poll.poll(1):
                if fd == conn_fd:
                    raise PeerClosed("the compiler closed the channel")
                try:
                    os.eventfd_read(self.wake_self)
                except BlockingIOError:
                    pass
        base = self.rep_base
        if skip:
            _U64.pack_into(self.mm, base + off, _WRAP)
            head += skip
            off = 0
        at = base + off + 8
        _U64.pack_into(self.mm, at - 8, n)
        if frame:
            state.frame_into(self.mm, at, n - frame)
        self.mm[at + frame:at + n] = data
        head += need
        self.rep_head = head
        ctl[_REP_HEAD] = head  # published after the bytes (x86-64 store order)
        full_fence()
        if ctl[_COMPILER_SLEEPING]:
            os.write(self.wake_peer, _ONE)


class ShmCompilerInterface(StreamInterface):
    """Serve compilers connecting to the Unix socket ``path``.

    ``path=None`` creates a private directory (0700) holding
    ``channel.sock`` (0600); give the compiler ``iface.path``. ``serdes``:
    "bitstream" (zero-copy observations), "json" or "protobuf".
    ``timeout``: default seconds for evaluate() and for writing a reply.
    ``capacity``: bytes of each ring (largest message + 8). ``spin_us``:
    how long a wait polls the ring before sleeping. ``process``: optional
    ``subprocess.Popen`` of the compiler, watched while waiting.
    ``max_message_bytes``/``max_header_bytes``: limits of protocol §4.
    ``fast_path``: None (default) uses the native module
    ``mlbridge_shm_native`` when it loads, False never, True requires it
    (MLBridgeError saying why it is missing); the ``fast_path`` attribute
    says whether sessions use it.

    Use as a context manager, or call close(); both remove what was created.
    """

    def __init__(self, path=None, serdes="bitstream", *, timeout=60.0,
                 capacity=DEFAULT_CAPACITY, spin_us=50,
                 max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES,
                 max_header_bytes=DEFAULT_MAX_HEADER_BYTES, process=None, fast_path=None):
        if platform.machine() not in ("x86_64", "AMD64"):
            # The rings rely on x86-64's store order from Python code.
            raise MLBridgeError(f"the shared-memory channel needs x86-64 on the model "
                                f"side (this is {platform.machine()}); use pipes")
        self._codec = _serdes.get(serdes)
        if timeout is None or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        capacity = int(capacity)
        if capacity < _MIN_CAPACITY or capacity % 8:
            raise ValueError(f"capacity must be a multiple of 8 and at least "
                             f"{_MIN_CAPACITY}, got {capacity}")
        if spin_us < 0:
            raise ValueError(f"spin_us must not be negative, got {spin_us}")
        self._native = None
        if fast_path is None or fast_path:
            self._native, why = _native.load("mlbridge_shm_native")
            if self._native is None and fast_path:
                raise MLBridgeError(f"fast_path=True but {why}")
        self.timeout = float(timeout)
        self.capacity = capacity
        self.spin = spin_us / 1e6
        self._spin_us = spin_us
        self._process = process
        self._state = SessionState(max_message_bytes, max_header_bytes)
        self._session = None
        self._parked = []  # connected sessions a finished serve() left to continue
        self._pending = None
        self._closed = False
        self._dir = None
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        self._finalizer = weakref.finalize(self, ShmCompilerInterface._cleanup,
                                           self._listener, None, None)
        try:
            if path is None:
                self._dir = tempfile.mkdtemp(prefix="mlbridge-shm-")
                os.chmod(self._dir, 0o700)
                path = os.path.join(self._dir, "channel.sock")
            self._path = os.fspath(path)
            old_umask = os.umask(0o177)  # the socket is created 0600
            try:
                self._listener.bind(self._path)
            except OSError as e:
                raise MLBridgeError(f"cannot listen at {self._path}: {e.strerror}") from None
            finally:
                os.umask(old_umask)
            self._listener.listen(8)
            self._listener.setblocking(False)
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, ShmCompilerInterface._cleanup,
                                               self._listener, self._path, self._dir)
        except BaseException:
            self._finalizer()
            raise

    @staticmethod
    def _cleanup(listener, path, directory):
        listener.close()
        if path is not None:
            try:
                os.unlink(path)
            except OSError:
                pass
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)

    # ---- properties ---------------------------------------------------------------
    @property
    def path(self):
        """The socket path to give the compiler."""
        return self._path

    @property
    def fast_path(self):
        """True when sessions use the native module for the hot path."""
        return self._native is not None

    @property
    def session_open(self):
        """True while a compiler is connected."""
        return self._session is not None

    def _process_changed(self):
        if self._session is not None:
            self._session.alive = self._alive_check()

    # ---- lifecycle ------------------------------------------------------------------
    def close(self):
        """End the session and remove the socket (and directory) created."""
        self._closed = True
        self._drop_session()
        self._finalizer()

    def _drop_session(self):
        session, self._session = self._session, None
        self._pending = None
        if session is not None:
            session.close()
        if self._closed:
            parked, self._parked = self._parked, []
            for p in parked:
                p.close()

    def _new_session(self, conn, state):
        session = _Session(conn, self.capacity, self.spin, self._alive_check(), self._native)
        session.state = state
        _log.debug("session opened on %s", self._path)
        return session

    def _accept(self, deadline):
        """The next compiler's connection; None if the watched process exited."""
        poller = select.poll()
        poller.register(self._listener.fileno(), select.POLLIN)
        while True:
            try:
                conn, _ = self._listener.accept()
                break
            except BlockingIOError:
                pass
            if self._process_exited():
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no compiler connected to {self._path} before the deadline")
            poller.poll(min(max(1, int(remaining * 1000)), _ALIVE_SLICE_MS))
        conn.setblocking(True)
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        if struct.unpack("3i", creds)[1] != os.getuid():
            conn.close()
            raise MLBridgeError(f"a process of another user connected to {self._path}")
        return conn

    # ---- requests ----------------------------------------------------------------------
    def evaluate(self, timeout=None):
        """Wait for the next observation and return it (None when the
        compiler ends the session). Same contract as
        PipeCompilerInterface.evaluate."""
        self._check_can_evaluate()
        seconds = self.timeout if timeout is None else float(timeout)
        deadline = time.monotonic() + seconds
        state = self._state
        if self._session is None and self._parked:  # left by serve()
            self._session = self._parked.pop(0)
            self._state = state = self._session.state
            self._session.nonblocking = False
        if self._session is None:
            conn = self._accept(deadline)
            if conn is None:
                return None
            state.reset()
            self._session = self._new_session(conn, state)
        session = self._session
        session.deadline = deadline
        decode = self._codec.decode_message
        fast = self._codec is _bitstream
        try:
            while True:
                msg = session.observation(state) if fast else None
                if msg is None:
                    msg = decode(session, state)
                if type(msg) is Observation:
                    if state.advice_spec is None:
                        raise ProtocolError("observation without an advice spec")
                    self._pending = msg
                    return msg
                if type(msg) is Header and not msg.continues:
                    state.context = None
        except PeerClosed as e:
            _log.debug("session ended: %s", e)
            self._drop_session()
            return None
        except TimeoutError:
            if state.in_message:
                self._drop_session()
            raise TimeoutError(f"no message from the compiler on {self._path} within "
                               f"{seconds:g} s") from None
        except BaseException:  # ProtocolError, MessageTooLarge, KeyboardInterrupt
            self._drop_session()
            raise

    def _send(self, data):
        session = self._session
        state = self._state
        try:
            session.release()
            session.write(data, self.timeout, state)
        except (TimeoutError, PeerClosed, OSError):
            self._drop_session()
            raise
        self._pending = None
        state.requests += 1
        return True

    # ---- the event loop ------------------------------------------------------------------
    def _loop_source(self, loop, policy, on_header):
        """Every connected compiler is served at once: the loop polls each
        ring for a bounded time, then one ``select`` waits on all their
        eventfds and sockets and the listener. Sessions still connected
        when the loop lets go are continued by the next serve() or
        evaluate()."""
        sessions = self._parked
        self._parked = []
        if self._session is not None:
            self._session.state = self._state
            sessions.insert(0, self._session)
            self._session = None
        return _ShmSource(self, loop, policy, on_header, sessions)


class _ShmSource:
    """A ShmCompilerInterface in an EventLoop: its listener and every
    connected compiler's ring, eventfd and socket. Methods return their
    progress (requests answered, sessions opened or ended)."""

    in_memory = True  # a request shows in its ring without a system call

    def __init__(self, iface, loop, policy, on_header, sessions):
        self.iface = iface
        self.loop = loop
        self.policy = policy
        self.on_header = on_header
        self.stats = ChannelStats()
        self.sessions = []
        self.due = None if iface._process is None else time.monotonic() + _ALIVE_SLICE_MS / 1e3
        loop.register(iface._listener.fileno(), self)
        for session in sessions:
            self.add(session)

    def add(self, session):
        session.nonblocking = True
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

    def detach(self):
        self.loop.unregister(self.iface._listener.fileno())
        for session in self.sessions:
            self._unregister(session)
            session.nonblocking = False
        self.iface._parked += [s for s in self.sessions if s.conn.fileno() >= 0]
        self.sessions = []

    def accept(self):
        iface = self.iface
        accepted = 0
        while True:
            try:
                conn, _ = iface._listener.accept()
            except BlockingIOError:
                return accepted
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            if struct.unpack("3i", creds)[1] != os.getuid():
                conn.close()
                _log.warning("refused a process of another user on %s", iface._path)
                continue
            conn.setblocking(True)
            state = SessionState(iface._state.max_message_bytes, iface._state.max_header_bytes)
            try:
                session = iface._new_session(conn, state)
            except OSError as e:  # it gave up waiting for us
                _log.debug("a compiler left before its session began: %s", e)
                conn.close()
                continue
            self.add(session)
            accepted += 1

    # ---- the source interface of EventLoop -----------------------------------------
    def ready(self):
        for session in self.sessions:
            if session.has_request():
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
        it; 1 if answered or the session ended, else 0."""
        iface = self.iface
        codec = iface._codec
        state = session.state
        try:
            while session.has_request():
                msg = session.observation(state) if codec is _bitstream else None
                if msg is None:
                    msg = codec.decode_message(session, state)
                if type(msg) is not Observation:
                    if type(msg) is Header:
                        if not msg.continues:
                            state.context = None
                        if self.on_header is not None:
                            self.on_header(msg.feature_specs, msg.advice_spec)
                    continue
                if state.advice_spec is None:
                    raise ProtocolError("observation without an advice spec")
                reply = codec.encode_advice(msg.advice_spec, self.policy(msg))
                session.release()
                session.write(reply, iface.timeout, state)
                state.requests += 1
                self.stats.answered += 1
                return 1
        except (PeerClosed, TimeoutError, OSError) as e:
            _log.debug("session ended: %s", e)
            self.drop(session)
            self.stats.ended += 1
            self.loop.ended += 1
            return 1
        except BaseException:
            self.drop(session)
            raise
        session.release()
        return 0

    def on_event(self, fd):
        if fd == self.iface._listener.fileno():
            return self.accept()
        for session in self.sessions:
            if fd == session.conn.fileno():
                if session.has_request():
                    return 0  # served first; the hang-up stays readable
                self.drop(session)  # hang-up: the compiler ended
                self.stats.ended += 1
                self.loop.ended += 1
                return 1
            if fd == session.wake_self:
                try:
                    os.eventfd_read(session.wake_self)
                except BlockingIOError:
                    pass
                return 0
        return 0

    def on_timer(self):
        self.due = time.monotonic() + _ALIVE_SLICE_MS / 1e3
        return 0

    def before_sleep(self):
        for session in self.sessions:
            session.ctl[_MODEL_SLEEPING] = 1

    def after_sleep(self):
        for session in self.sessions:
            session.ctl[_MODEL_SLEEPING] = 0

    def finished(self):
        return not self.sessions and self.iface._process_exited()
