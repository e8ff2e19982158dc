"""ShmCompilerInterface: the model side of a shared-memory channel (docs/shm.md).

The interface listens on a Unix socket. A compiler (``mlbridge::ShmModelRunner``)
connects; the interface answers with a fresh memory file holding two byte
rings -- requests to the model, replies to the compiler -- and two eventfds
that wake the other side (:mod:`.ring`). Each connection is one session;
its end (or the compiler's death) is the socket's hang-up.

Observations are decoded in place: a bitstream observation's arrays are
read-only numpy views of the shared memory, valid until the observation is
answered (``populate_buffer``); copy what you keep longer.

Waiting for a request spins for up to ``spin_us`` microseconds when that has
proved faster (measured), then sleeps on the eventfd and the socket, so an
idle channel costs no CPU and a dead compiler ends the session at once.

Threads: one thread at a time per interface.
"""

import logging
import os
import platform
import select
import shutil
import socket
import struct
import tempfile
import time
import weakref

from .. import _native
from .. import serdes as _serdes
from .._model_side import StreamInterface, decode_next
from ..errors import MessageTooLarge, MLBridgeError, PeerClosed, ProtocolError, TimeoutError
from ..messages import DEFAULT_MAX_HEADER_BYTES, DEFAULT_MAX_MESSAGE_BYTES, Observation, SessionState
from ..serdes import bitstream as _bitstream
from . import fast_path
from . import layout as L
from .loop_source import ShmSource
from ..reader import ALIVE_SLICE_MS
from .ring import Session

__all__ = ["ShmCompilerInterface", "DEFAULT_CAPACITY"]

_log = logging.getLogger("mlbridge.shm")

DEFAULT_CAPACITY = 64 << 20  # per ring; the memory file is sparse until used
_LISTEN_BACKLOG = 8


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
        if not L.MIN_CAPACITY <= capacity <= L.MAX_CAPACITY or capacity % 8:
            raise ValueError(f"capacity must be a multiple of 8 from {L.MIN_CAPACITY} to "
                             f"{L.MAX_CAPACITY}, got {capacity}")
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
            self._listener.listen(_LISTEN_BACKLOG)
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
    def _drop_session(self):
        session, self._session = self._session, None
        self._pending = None
        if session is not None:
            session.close()
        if self._closed:
            parked, self._parked = self._parked, []
            for p in parked:
                p.close()

    def _new_state(self):
        """Decoding state for another session, with this interface's limits."""
        return SessionState(self._state.max_message_bytes, self._state.max_header_bytes)

    def _next_session(self, state):
        """A session for the next compiler waiting on the listener, or None
        when none is. A process of another user is refused, and a compiler
        that left while it waited is passed over (both logged): the next
        one is taken."""
        while True:
            try:
                conn, _ = self._listener.accept()
            except BlockingIOError:
                return None
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            if struct.unpack("3i", creds)[1] != os.getuid():
                conn.close()
                _log.warning("refused a process of another user on %s", self._path)
                continue
            conn.setblocking(True)
            try:
                session = Session(conn, self.capacity, self.spin, self._alive_check(),
                                  self._native)
            except OSError as e:  # it gave up waiting for us (EPIPE, ECONNRESET)
                _log.debug("a compiler left before its session began: %s", e)
                conn.close()
                continue
            session.state = state
            _log.debug("session opened on %s", self._path)
            return session

    def _accept(self, deadline):
        """The next compiler's session; None if the watched process exited."""
        poller = select.poll()
        poller.register(self._listener.fileno(), select.POLLIN)
        while True:
            session = self._next_session(self._state)
            if session is not None:
                return session
            if self._process_exited():
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no compiler connected to {self._path} before the deadline")
            poller.poll(min(max(1, int(remaining * 1000)), ALIVE_SLICE_MS))

    # ---- requests ----------------------------------------------------------------------
    def evaluate(self, timeout=None):
        """Wait for the next observation and return it (None when the
        compiler ends the session). Same contract as
        PipeCompilerInterface.evaluate."""
        self._check_can_evaluate()
        seconds = self.timeout if timeout is None else float(timeout)
        deadline = time.monotonic() + seconds
        if self._session is None and self._parked:  # left by serve()
            self._session = self._parked.pop(0)
            self._state = self._session.state
            self._session.nonblocking = False
        if self._session is None:
            self._state.reset()
            self._session = self._accept(deadline)
            if self._session is None:
                return None
        session = self._session
        state = self._state
        session.deadline = deadline
        try:
            while True:
                msg = self._next_message(session, state)
                if type(msg) is Observation:
                    self._pending = msg
                    return msg
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

    def _next_message(self, session, state):
        """The session's next message, by the bitstream fast path when it
        applies."""
        return decode_next(self._codec, session, state,
                           fast_path.observation if self._codec is _bitstream else None)

    def _send(self, data):
        session = self._session
        state = self._state
        try:
            session.release()
            session.write(data, self.timeout, state)
        except MessageTooLarge:  # the advice is refused; the session goes on
            raise
        except (TimeoutError, PeerClosed, ProtocolError, OSError):
            self._drop_session()
            raise
        self._pending = None
        state.requests += 1
        return True

    # ---- the event loop ------------------------------------------------------------------
    def _loop_source(self, loop, policy, on_header):
        """Every connected compiler is served at once (:mod:`.loop_source`).
        Sessions still connected when the loop lets go are continued by
        the next serve() or evaluate()."""
        sessions = self._parked
        self._parked = []
        if self._session is not None:
            self._session.state = self._state
            sessions.insert(0, self._session)
            self._session = None
        return ShmSource(self, loop, policy, on_header, sessions)
