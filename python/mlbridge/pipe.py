"""PipeCompilerInterface: the model side of a named-pipe channel (protocol §5).

The interface owns the FIFO pair ``B.in`` (advice, model -> compiler) and
``B.out`` (observations, compiler -> model). It opens them in the order
LLVM's InteractiveModelRunner expects (``B.in`` for writing, then ``B.out``
for reading), never blocks without a deadline, and serves any number of
consecutive compiler sessions: each ends with EOF on ``B.out`` and the next
begins with a new header.

Threads: one thread at a time per interface. Serve several channels (e.g.
two advisors in one clang process, or many compilers) from one thread with
:class:`mlbridge.EventLoop`.
"""

import errno
import fcntl
import logging
import os
import select
import shutil
import stat
import struct
import tempfile
import termios
import time
import weakref

from . import serdes as _serdes
from ._model_side import PendingDeadline, StreamInterface, answer, decode_next
from ._spin import SpinBudget
from .errors import MLBridgeError, PeerClosed, ProtocolError, TimeoutError
from .event_loop import ChannelStats
from .messages import (DEFAULT_MAX_HEADER_BYTES, DEFAULT_MAX_MESSAGE_BYTES, Header,
                       Observation, SessionState)
from .reader import FdReader, WouldBlock

__all__ = ["PipeCompilerInterface"]

_log = logging.getLogger("mlbridge.pipe")

_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_PIPE_SIZE = 1 << 20
_OPEN_BACKOFF_MIN = 0.001
_OPEN_BACKOFF_MAX = 0.02
# With a compiler process to watch, an event loop looks at it this often.
_WATCH_EVERY = 0.02
# How often an event loop retries a reply the pipe had no room for.
_RETRY_REPLY_EVERY = 0.001


def _check_private_fifo(st, path):
    """Refuse anything but a FIFO of ours that no other user may open: they
    could read the compiler's features or answer in the model's place."""
    if stat.S_ISLNK(st.st_mode):
        raise MLBridgeError(f"{path} is a symbolic link; refusing to follow it "
                            f"(give the FIFO's own path)")
    if not stat.S_ISFIFO(st.st_mode):
        raise MLBridgeError(f"{path} exists and is not a FIFO")
    if st.st_uid != os.geteuid():
        raise MLBridgeError(f"FIFO {path} belongs to user {st.st_uid}, not to this "
                            f"process; refusing it (another user could read the "
                            f"features or answer in the model's place)")
    if st.st_mode & 0o077:
        raise MLBridgeError(f"FIFO {path} has mode {stat.S_IMODE(st.st_mode):04o}; "
                            f"refusing it (other users could read or write it): it "
                            f"must be mode 0600")


def _make_fifo(path):
    """Create ``path`` as a 0600 FIFO; True if created, False if a private
    FIFO of ours exists (anything else is refused with MLBridgeError)."""
    try:
        os.mkfifo(path, 0o600)
    except FileExistsError:
        try:
            st = os.lstat(path)
        except OSError as e:
            raise MLBridgeError(f"cannot inspect {path}: {e.strerror}") from None
        _check_private_fifo(st, path)
        return False
    except OSError as e:
        raise MLBridgeError(f"cannot create FIFO {path}: {e.strerror}") from None
    os.chmod(path, 0o600)  # mkfifo's mode is filtered by the umask
    return True


def _open_fifo(path, flags):
    """Open one of our FIFOs, checking the file actually opened (the path
    may have been replaced since it was created or checked)."""
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        _check_private_fifo(os.fstat(fd), path)
    except BaseException:
        os.close(fd)
        raise
    return fd


class _Resources:
    """Everything that must be released; also run by a finalizer on GC."""

    def __init__(self):
        self.fds = []
        self.paths = []
        self.dir = None
        self.trace = None  # a trace file we opened ourselves

    def close_fds(self):
        # Reverse order: B.out (reader) before B.in (writer), so a compiler
        # reconnecting right now waits for our next open instead of writing
        # into a pipe we are about to abandon.
        fds, self.fds = self.fds, []
        for fd in reversed(fds):
            try:
                os.close(fd)
            except OSError:
                pass

    def close_fd(self, fd):
        if fd in self.fds:
            self.fds.remove(fd)
            try:
                os.close(fd)
            except OSError:
                pass

    def __call__(self):
        self.close_fds()
        paths, self.paths = self.paths, []
        for p in paths:
            try:
                os.unlink(p)
            except OSError:
                pass
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        if self.trace is not None:
            try:
                self.trace.close()
            except OSError:
                pass
            self.trace = None


class PipeCompilerInterface(StreamInterface):
    """Serve a compiler over the FIFO pair ``<base>.in`` / ``<base>.out``.

    ``base=None`` creates a private directory (0700) holding ``channel.in``
    and ``channel.out`` (0600); a given ``base`` gets its FIFOs created 0600
    if missing. ``serdes``: "bitstream" (LLVM's format) or "json".
    ``timeout``: default seconds for evaluate() and for writing a reply.
    ``max_message_bytes``/``max_header_bytes``: limits of protocol §4.
    ``process``: optional ``subprocess.Popen`` of the compiler; when it exits
    while we wait, the session ends (evaluate returns None) within ~20 ms.
    As the compiler needs the channel's path, ``process`` may also be a
    function ``base -> Popen``, called once the FIFOs exist (what it raises
    propagates, nothing left behind).
    ``trace``: optional binary file object (or path) receiving a copy of
    every byte read from the compiler. ``spin_us``: how long a read may poll
    the empty pipe before sleeping, used only while that measurably
    shortens the waits (0: never spin; see docs/pipes.md).

    Use as a context manager, or call close(); both remove what was created.
    """

    def __init__(self, base=None, serdes="bitstream", *, timeout=60.0,
                 max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES,
                 max_header_bytes=DEFAULT_MAX_HEADER_BYTES, process=None, trace=None,
                 spin_us=50):
        self._codec = _serdes.get(serdes)
        if spin_us < 0:
            raise ValueError(f"spin_us must not be negative, got {spin_us}")
        self._spin_us = spin_us
        self._spinner = SpinBudget(spin_us / 1e6) if spin_us else None
        if timeout is None or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.timeout = float(timeout)
        self._process = process
        self._state = SessionState(max_message_bytes, max_header_bytes)
        self._res = _Resources()
        self._finalizer = weakref.finalize(self, self._res)
        self._reader = None
        self._wfd = None
        self._wpoll = None
        self._pending = None
        self._queue_replies = False  # an event loop's: never wait for room
        self._unsent = None  # what a queued reply has left to write
        self._renew_fifos = False  # a broken session left FIFOs to replace
        self._session_started = False  # a message of this session was read
        self._in_session = False
        self._closed = False
        self._generation = 0  # counts every change of our descriptors
        try:
            if base is None:
                self._res.dir = tempfile.mkdtemp(prefix="mlbridge-")
                os.chmod(self._res.dir, 0o700)
                base = os.path.join(self._res.dir, "channel")
            base = os.fspath(base)
            self._base = base
            self._in_path = base + ".in"
            self._out_path = base + ".out"
            for path in (self._in_path, self._out_path):
                if _make_fifo(path):
                    self._res.paths.append(path)
            if isinstance(trace, (str, bytes, os.PathLike)):
                trace = open(trace, "wb")
                self._res.trace = trace
            self._trace = trace
            if callable(process) and not hasattr(process, "poll"):
                self._process = process(base)
        except BaseException:
            self._finalizer()
            raise

    # ---- properties ---------------------------------------------------------------
    @property
    def base(self):
        return self._base

    @property
    def in_path(self):
        """``<base>.in``: advice, model -> compiler."""
        return self._in_path

    @property
    def out_path(self):
        """``<base>.out``: observations, compiler -> model."""
        return self._out_path

    @property
    def session_open(self):
        """True while a compiler session is connected (between its opening
        and the EOF or new header that ends it)."""
        return self._reader is not None and self._in_session

    def _process_changed(self):
        if self._reader is not None:
            self._reader.alive = self._alive_check()

    # ---- lifecycle ------------------------------------------------------------------
    def _drop_session(self, broken=False):
        """End the session and close our ends of the FIFOs.

        ``broken``: the stream failed (malformed input, partial message,
        policy error) while the compiler may still hold its ends, which
        keep the pipes -- and the rest of the broken stream -- alive. The
        FIFOs are then replaced by new ones, so the next session can only
        be a fresh connection, never the remainder of this one.
        """
        self._reader = None
        self._pending = None
        self._unsent = None
        self._wfd = None
        self._wpoll = None
        self._generation += 1
        if broken:
            # New FIFOs first, then close: the compiler sees EOF only once
            # the new FIFOs exist, so its reconnection can only find them
            # (not the old ones, where it would wait for a model that never
            # comes back).
            self._renew_fifos = True
            try:
                self._replace_fifos()
            except MLBridgeError as e:  # retried (and reported) by the next evaluate()
                _log.debug("could not replace the FIFOs yet: %s", e)
        self._res.close_fds()

    def _await_next_session(self):
        """End a session at EOF while keeping the channel open for the next.

        A compiler may reopen its ends right after closing them (LLVM does,
        between two inliner runs) and write its next header at once. Closing
        our last reader of B.out then would discard that header and kill
        the compiler with EPIPE, and closing our writer of B.in would make
        its first read see EOF. So a new reader of B.out is opened before
        the old one is closed, and the B.in writer stays open. Bytes still
        unread in B.in are replies the old session never read: drained, so
        they cannot answer the next session's first request.
        """
        try:
            unread = struct.unpack("i", fcntl.ioctl(self._wfd, termios.FIONREAD, b"\0" * 4))[0]
            if unread:
                drain = os.open(self._in_path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
                try:
                    os.read(drain, unread)
                finally:
                    os.close(drain)
            old = self._reader.fd
            new = _open_fifo(self._out_path, os.O_RDONLY)
        except (OSError, MLBridgeError) as e:
            _log.debug("cannot keep the channel open (%s); reopening", e)
            self._drop_session()
            return
        self._res.fds.append(new)
        self._reader.rebind(new)
        self._generation += 1
        self._res.close_fd(old)
        try:
            fcntl.fcntl(new, _F_SETPIPE_SZ, _PIPE_SIZE)
        except OSError:
            pass
        self._pending = None
        self._session_started = self._in_session = False

    def _replace_fifos(self):
        for path in (self._in_path, self._out_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as e:
                raise MLBridgeError(f"cannot replace FIFO {path}: {e.strerror}") from None
            _make_fifo(path)
        self._renew_fifos = False

    def _open_session(self, deadline):
        """Open B.in for writing (waiting for the compiler's reader), then
        B.out for reading. PeerClosed if the compiler process exits first."""
        delay = _OPEN_BACKOFF_MIN
        while not self._try_open():
            if self._process_exited():
                raise PeerClosed("compiler process exited before opening the pipes")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no compiler opened {self._in_path} before the deadline")
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, _OPEN_BACKOFF_MAX)

    def _try_open(self):
        """One attempt at opening a session; False while no compiler has
        opened B.in for reading (there is nothing to wait on for that)."""
        if self._renew_fifos:
            self._replace_fifos()
        try:
            wfd = _open_fifo(self._in_path, os.O_WRONLY)
        except OSError as e:
            if e.errno == errno.ENXIO:  # no reader yet
                return False
            if e.errno == errno.ELOOP:
                raise MLBridgeError(f"{self._in_path} is now a symbolic link; "
                                    f"refusing to follow it") from None
            if e.errno == errno.ENOENT:
                raise MLBridgeError(f"FIFO {self._in_path} no longer exists") from None
            raise MLBridgeError(f"cannot open {self._in_path}: {e.strerror}") from None
        self._res.fds.append(wfd)
        try:
            rfd = _open_fifo(self._out_path, os.O_RDONLY)
        except OSError as e:
            self._drop_session()
            raise MLBridgeError(f"cannot open {self._out_path}: {e.strerror}") from None
        except MLBridgeError:
            self._drop_session()
            raise
        self._res.fds.append(rfd)
        for fd in (wfd, rfd):
            try:
                fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_SIZE)
            except OSError:
                pass  # larger pipes are only an optimization
        alive = self._alive_check()
        self._wfd = wfd
        self._wpoll = select.poll()
        self._wpoll.register(wfd, select.POLLOUT)
        self._reader = FdReader(rfd, alive=alive, tee=self._trace, spinner=self._spinner)
        self._state.reset()
        self._session_started = False
        self._in_session = True
        self._generation += 1
        _log.debug("session opened on %s", self._base)
        return True

    # ---- requests ----------------------------------------------------------------------
    def evaluate(self, timeout=None):
        """Wait for the next observation and return it.

        Headers and contexts on the way update ``feature_specs``,
        ``advice_spec`` and ``context``. Returns None when the compiler ends
        the session (EOF, or its process exited); the next call then waits
        for a new session. Raises mlbridge.TimeoutError when nothing arrives
        within ``timeout`` seconds (default: the interface's), ProtocolError
        on malformed input (the session is dropped), MLBridgeError when the
        previous observation has not been answered.
        """
        self._check_can_evaluate()
        seconds = self.timeout if timeout is None else float(timeout)
        deadline = time.monotonic() + seconds
        if self._reader is None:
            try:
                self._open_session(deadline)
            except PeerClosed:
                self._drop_session()
                return None
            except TimeoutError:
                raise TimeoutError(f"no compiler opened {self._in_path} within "
                                   f"{seconds:g} s") from None
        self._reader.deadline = deadline
        while True:
            msg = self._read_message(seconds)
            if msg is None or type(msg) is Observation:
                return msg

    def _read_message(self, seconds):
        """Decode the next message of the open session (waiting for it until
        the reader's deadline): a Header or Context, an Observation (then
        pending), or None when the session has ended."""
        state = self._state
        try:
            msg = decode_next(self._codec, self._reader, state)
            if type(msg) is Observation:
                self._pending = msg
                return msg
            if type(msg) is Header:
                _log.debug("header: %d features, advice %s", len(msg.feature_specs),
                           msg.advice_spec.describe())
                if not msg.continues and self._session_started:
                    # The compiler closed and reopened its ends before we
                    # saw EOF (LLVM does so between inliner runs): this
                    # header is already the next session's.
                    return None
            self._session_started = self._in_session = True
            return msg
        except WouldBlock:  # the event loop's: the rest of the message is not here yet
            raise
        except PeerClosed as e:
            _log.debug("session ended: %s", e)
            if e.clean and not self._process_exited():
                self._await_next_session()
            else:
                self._drop_session()
            return None
        except TimeoutError:
            if state.in_message:  # a partial message: the stream is unusable
                self._drop_session(broken=True)
            raise TimeoutError(f"no message from the compiler on {self._out_path} within "
                               f"{seconds:g} s") from None
        except ProtocolError:  # also MessageTooLarge
            self._drop_session(broken=True)
            raise
        except BaseException:  # e.g. KeyboardInterrupt: only a partial message breaks
            if state.in_message:
                self._drop_session(broken=True)
            raise

    def _send(self, data):
        """Write the reply ``data`` whole (one syscall when the pipe has room;
        in an event loop, what does not fit is queued), framed when the
        session asked for it (protocol §5.1). Returns False,
        writing nothing, when the requester has moved on; PeerClosed when it
        has closed the channel."""
        gone = self._reader.input_state()
        if gone is not None:
            # A compiler never writes while it waits for a reply: input, or
            # the end of its stream, means it timed out or exited, and the
            # next compiler may already be connecting. This answer must not
            # reach it.
            index = self._pending.index
            self._pending = None
            if gone == "data":  # the next messages: read them next
                _log.debug("observation %d: the compiler moved on; reply dropped", index)
                return False
            self._await_next_session()
            raise PeerClosed(f"the compiler closed {self._out_path} without waiting for "
                             f"the reply to observation {index}")
        state = self._state
        data = state.frame(data)
        try:
            written = os.write(self._wfd, data)  # the usual case: the pipe has room
        except BlockingIOError:
            written = 0
        except BrokenPipeError:
            self._drop_session(broken=True)
            raise PeerClosed(f"the compiler closed {self._in_path}") from None
        if written < len(data):
            if self._queue_replies:
                self._unsent = memoryview(data)[written:]
            else:
                self._write_rest(data, written)
        self._pending = None
        state.requests += 1
        return True

    def _flush_unsent(self):
        """Write what the pipe had no room for when the reply was queued;
        True once all is written. PeerClosed if the compiler closed B.in."""
        try:
            n = os.write(self._wfd, self._unsent)
        except BlockingIOError:
            return False
        except BrokenPipeError:
            self._drop_session(broken=True)
            raise PeerClosed(f"the compiler closed {self._in_path}") from None
        self._unsent = self._unsent[n:] if n < len(self._unsent) else None
        return self._unsent is None

    def _write_rest(self, data, written):
        """Finish a reply the pipe had no room for, within the timeout."""
        fd = self._wfd
        deadline = time.monotonic() + self.timeout
        view = memoryview(data)
        try:
            while written < len(data):
                try:
                    written += os.write(fd, view[written:])
                    continue
                except BlockingIOError:
                    pass
                while True:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise TimeoutError(f"the compiler did not read the reply on "
                                           f"{self._in_path} within {self.timeout:g} s")
                    if self._wpoll.poll(min(max(1, int(remaining * 1000)), 20)):
                        break
                    if self._process_exited():
                        raise PeerClosed("compiler process exited before reading the reply")
        except BrokenPipeError:
            self._drop_session(broken=True)
            raise PeerClosed(f"the compiler closed {self._in_path}") from None
        except (TimeoutError, PeerClosed):
            self._drop_session(broken=True)
            raise

    # ---- the event loop ------------------------------------------------------------------
    def _loop_source(self, loop, policy, on_header):
        return _PipeSource(self, loop, policy, on_header)


class _PipeSource:
    """A PipeCompilerInterface in an EventLoop: waits on B.out while a
    session is open; before that, tries to open one with the blocking
    path's backoff (a FIFO offers nothing to wait on until both ends
    meet). Methods return their progress (requests answered, sessions
    opened or ended).

    Nothing here waits for the compiler (docs/event-loop.md): B.out is read
    without blocking, a message is decoded only once all of it is buffered
    (a partial one is decoded again when more came), and a reply the pipe
    has no room for is queued. A message begun or a reply queued must be
    finished within the interface's timeout, or that session ends."""

    in_memory = False

    def __init__(self, iface, loop, policy, on_header):
        self.iface = iface
        self.loop = loop
        self.policy = policy
        self.on_header = on_header
        self.stats = ChannelStats()
        self.fd = None
        self.generation = None
        self.seen = iface._state.feature_specs
        self.delay = _OPEN_BACKOFF_MIN
        self.due = time.monotonic()
        self.watch_due = None  # next look at the watched compiler process
        self.waiting = PendingDeadline(iface.timeout)  # a message begun, a reply queued
        self.ended_in = None  # the generation whose session end was counted
        iface._queue_replies = True
        self._sync()
        if iface._reader is not None and iface._reader.buffered:
            loop.again(self)  # read before this loop existed: no event will come

    def _sync(self):
        """Keep the selector on the current B.out descriptor (it changes at
        session boundaries; a closed one has left epoll by itself)."""
        iface = self.iface
        if iface._generation == self.generation:
            return
        self.generation = iface._generation
        self._unregister()
        self.waiting.clear()
        reader = iface._reader
        if reader is not None:
            reader.nonblocking = True
            self._register()
            self.watch_due = (time.monotonic() + _WATCH_EVERY
                              if iface._process is not None else None)
            self._schedule()
        else:
            self.delay = _OPEN_BACKOFF_MIN
            self.due = time.monotonic()

    def _schedule(self):
        """The next timer of an open session: the earliest of the process
        watch, the session's deadline and, with a reply queued, a retry."""
        dues = [d for d in (self.watch_due, self.waiting.due) if d is not None]
        if self.iface._unsent is not None:
            dues.append(time.monotonic() + _RETRY_REPLY_EVERY)
        self.due = min(dues) if dues else None

    def on_event(self, fd):
        """B.out is readable: answer every whole message there."""
        iface = self.iface
        reader = iface._reader
        if reader is None:  # an event from before the session ended
            return 0
        stats = self.stats
        progress = 0
        try:
            while True:
                if iface._unsent is not None:
                    # The queued reply goes first: B.out is not watched until
                    # it is written (it may stay readable meanwhile).
                    self._unregister()
                    return progress
                reader.begin()
                try:
                    msg = iface._read_message(iface.timeout)
                except WouldBlock:
                    reader.rewind()
                    if reader.buffered:  # a message begun: its deadline runs
                        self.waiting.waiting()
                    self._schedule()
                    return progress
                reader.commit()
                self.waiting.clear()
                if iface._state.feature_specs is not self.seen:
                    self.seen = iface._state.feature_specs
                    if self.on_header is not None and self.seen is not None:
                        self.on_header(self.seen, iface._state.advice_spec)
                if msg is None:
                    return progress + self._ended()
                if type(msg) is Observation:
                    try:
                        stats.answered += iface._send(answer(iface._codec, self.policy, msg))
                    except PeerClosed:
                        return progress + self._ended()
                    except BaseException:
                        iface._drop_session(broken=True)
                        raise
                    if iface._unsent is not None:
                        self.waiting.waiting()
                        self._schedule()
                    progress += 1
                if not reader.buffered:
                    return progress
        finally:
            if iface._generation != self.generation:
                self._sync()

    def _ended(self):
        """A session ended. The next one may have begun in what is already
        buffered: the loop comes back for it (after checking its session
        limit), as epoll will not signal bytes we have read."""
        self.stats.ended += 1
        self.loop.ended += 1
        self.ended_in = self.iface._generation
        reader = self.iface._reader
        if reader is not None and reader.buffered:
            self.loop.again(self)
        return 1

    def serve_buffered(self):
        """on_event() for bytes already buffered, if they still are."""
        reader = self.iface._reader
        if reader is None or not reader.buffered:
            return 0
        return self.on_event(self.fd)

    def on_timer(self):
        iface = self.iface
        now = time.monotonic()
        if iface._reader is not None:
            return self._session_timer(now)
        if iface._process_exited():
            self.due = None  # finished
            return 0
        try:
            opened = iface._try_open()
        finally:
            self._sync()
        if opened:
            return 1
        self.due = now + self.delay
        self.delay = min(self.delay * 2, _OPEN_BACKOFF_MAX)
        return 0

    def _session_timer(self, now):
        """An open session's timer: the queued reply retried, the session's
        deadline kept, the compiler process watched."""
        iface = self.iface
        if iface._unsent is not None:
            try:
                if iface._flush_unsent():
                    self.waiting.clear()
                    self._register()
                    if iface._reader.buffered:
                        self.loop.again(self)
            except PeerClosed:
                self._sync()
                return self._ended()
        if self.waiting.passed(now):
            _log.debug("session ended: the compiler did not %s within %g s",
                       "read its reply" if iface._unsent is not None else
                       "finish its message", iface.timeout)
            iface._drop_session(broken=True)
            self._sync()
            return self._ended()
        if self.watch_due is not None and now >= self.watch_due:
            self.watch_due = now + _WATCH_EVERY
            if iface._process_exited() and iface._reader.input_state() is None:
                # A compiler that exits after its session's EOF was counted
                # (the channel was kept open for a next session that did
                # not begin) ends nothing more.
                counted = self.ended_in == iface._generation and not iface._session_started
                iface._drop_session()
                self._sync()
                self.due = None
                return 0 if counted else self._ended()
        self._schedule()
        return 0

    def finished(self):
        iface = self.iface
        return iface._reader is None and iface._process_exited()

    def _register(self):
        if self.fd is None:
            self.fd = self.iface._reader.fd
            self.loop.register(self.fd, self)

    def _unregister(self):
        if self.fd is not None:
            self.loop.unregister(self.fd)
            self.fd = None

    def detach(self):
        """Leave the loop; the session continues with evaluate() or serve()
        (a queued reply is finished first, within the timeout)."""
        self._unregister()
        iface = self.iface
        iface._queue_replies = False
        if iface._reader is not None:
            iface._reader.nonblocking = False
        if iface._unsent is not None:
            rest, iface._unsent = bytes(iface._unsent), None
            try:
                iface._write_rest(rest, 0)
            except (PeerClosed, TimeoutError) as e:
                _log.debug("session ended: %s", e)
