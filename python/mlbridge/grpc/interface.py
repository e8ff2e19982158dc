"""GrpcCompilerInterface: the model side over gRPC, in both modes.

* ``mode="inference"`` (default): this process hosts
  ``mlbridge.v1.ModelService``; any number of compilers (C++
  ``GrpcModelRunner``) connect concurrently. Their requests are queued and
  handed out one at a time by :meth:`evaluate`; :meth:`populate_buffer`
  answers exactly the request :meth:`evaluate` returned, so replies never
  cross between compilers. The server is the C++ server core
  (``mlbridge_grpc_native``, built with the library) when it can be
  imported, else grpcio's; :attr:`GrpcCompilerInterface.server_kind` says
  which.
* ``mode="training"``: each compiler hosts ``mlbridge.v1.CompilerService``
  (C++ ``GrpcModelRunner`` in ``GrpcMode::Training``); this trainer drives a
  list of them concurrently (``compilers=[...]``), with the same loop.

Every wait and every call has a deadline; a port that is taken is an error,
never shared (``grpc.so_reuseport`` is off and the bound port is checked);
servers listen on loopback unless ``allow_remote=True``; TLS is optional
(:class:`TlsFiles`).
"""

import atexit
import logging
import os
import queue
import socket
import threading
import time
import weakref
# Imported first: its exit hook (joining the pool's threads) must be
# registered before _close_serving's, so that it runs after it.
from concurrent.futures.thread import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional

import grpc

from google.protobuf.message import DecodeError

from ..errors import MessageTooLarge, MLBridgeError, PeerClosed, ProtocolError, TimeoutError
from . import _native
from ._proto import pb2, pb2_grpc
from .tensors import encode_advice, observation_from_pb

__all__ = ["GrpcCompilerInterface", "TlsFiles", "DEFAULT_MAX_MESSAGE_BYTES",
           "is_loopback_address"]

_log = logging.getLogger("mlbridge.grpc")

#: Largest message in either direction; the C++ side's default is the same.
DEFAULT_MAX_MESSAGE_BYTES = 64 << 20
# Training mode: one GetObservation long-poll lasts at most this long.
_POLL_SLICE = 5.0
#: Environment variable naming the default inference server ("native" or
#: "grpcio") when the constructor's ``server`` is None.
SERVER_ENV = "MLBRIDGE_GRPC_SERVER"
_SERVER_KINDS = ("native", "grpcio")
# The native server's answers (1: the compiler is gone) and method kinds
# (src/python_ext/grpc_server_module.cpp).
_SENT, _TOO_LARGE = 0, 2
_REQUEST, _SESSION_END = 0, 1


@dataclass(frozen=True)
class TlsFiles:
    """PEM files. Server (inference mode here): ``cert_file`` + ``key_file``
    are required; ``root_cert_file`` with ``require_client_cert`` demands
    client certificates. Client (training mode here): ``root_cert_file``
    verifies the compilers' servers; ``cert_file`` + ``key_file`` add a
    client certificate. ``server_name``: the name the server certificate
    must carry when it differs from the host in the address."""

    cert_file: Optional[str] = None
    key_file: Optional[str] = None
    root_cert_file: Optional[str] = None
    require_client_cert: bool = False
    server_name: Optional[str] = None


def _read(path, what):
    if not path:
        raise ValueError(f"TLS: no {what} file given")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise MLBridgeError(f"TLS: cannot read {what} {path!r}: {e.strerror}") from None
    if not data:
        raise MLBridgeError(f"TLS: {what} {path!r} is empty")
    return data


def is_loopback_address(address):
    """True for 127.x.x.x, localhost, [::1] and unix: addresses."""
    if address.startswith(("unix:", "unix-abstract:")):
        return True
    if address.startswith("["):
        host = address[1:address.find("]")] if "]" in address else ""
    else:
        host = address.rsplit(":", 1)[0] if ":" in address else address
    return host in ("localhost", "::1") or host.startswith("127.")


def _claim_loopback_sibling(address, port):
    """A client of ``localhost:P`` may reach 127.0.0.1:P or [::1]:P, so a
    server on one must own the other too. Raises MLBridgeError when another
    server listens there; otherwise returns a bound, non-listening socket
    that keeps later servers off it (None when there is nothing to hold)."""
    addr = address[5:] if address.startswith(("ipv4:", "ipv6:")) else address
    if addr.startswith("127.0.0.1:"):
        family, sibling, shown = socket.AF_INET6, "::1", "[::1]"
    elif addr.startswith("[::1]:"):
        family, sibling, shown = socket.AF_INET, "127.0.0.1", "127.0.0.1"
    else:
        return None
    try:
        probe = socket.socket(family, socket.SOCK_STREAM)
    except OSError:
        return None  # no such family here: nothing to share with
    with probe:
        probe.settimeout(1.0)
        served = probe.connect_ex((sibling, port)) == 0
    if served:
        raise MLBridgeError(f"cannot listen on {address!r}: port {port} is already served on "
                            f"{shown} (the other loopback address), so a client of "
                            f"localhost:{port} could reach either server; use another port")
    hold = socket.socket(family, socket.SOCK_STREAM)
    try:
        if family == socket.AF_INET6:
            hold.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        hold.bind((sibling, port))
    except OSError:  # unavailable, or a TIME_WAIT: nobody can listen there now
        hold.close()
        return None
    return hold


# Inference interfaces not closed yet: closed when the interpreter exits.
_serving = weakref.WeakSet()
# A forked child's inherited servers and channels (see close()).
_inherited = []


def _close_serving():
    for iface in list(_serving):
        iface.close()


# Before the interpreter joins its threads: grpcio's server threads waiting
# for an answer would otherwise hold the exit up to their timeout.
# (threading's hook is what concurrent.futures uses; atexit runs too late.)
getattr(threading, "_register_atexit", atexit.register)(_close_serving)


def _options(max_message_bytes):
    return [("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_receive_message_length", max_message_bytes)]


class _Slot:
    """Where a queued inference request waits for its answer. ``deadline``
    (monotonic) is when the compiler stops waiting: past it, the request is
    dead even before gRPC's cancellation callback has run."""

    __slots__ = ("event", "reply", "cancelled", "deadline", "_lock")

    def __init__(self, deadline=None):
        self.event = threading.Event()
        self.reply = None
        self.cancelled = False
        self.deadline = deadline
        self._lock = threading.Lock()

    @property
    def dead(self):
        return self.cancelled or (self.deadline is not None
                                  and time.monotonic() >= self.deadline)

    def deliver(self, reply):
        with self._lock:
            if self.dead or self.event.is_set():
                return False
            self.reply = reply
            self.event.set()
            return True

    def cancel(self):
        with self._lock:
            if not self.event.is_set():
                self.cancelled = True
                self.event.set()


class _SessionEnded:
    __slots__ = ("session",)

    def __init__(self, session):
        self.session = session


class _ModelService(pb2_grpc.ModelServiceServicer):
    """Runs on gRPC's worker threads; hands requests to the interface."""

    def __init__(self, iface):
        self._iface = iface

    def Evaluate(self, request, context):
        return self._iface._handle_request(request, context, None)

    def EndSession(self, request, context):
        self._iface._queue.put(_SessionEnded(request.session))
        return pb2.Empty()


class _Worker:
    """Training mode: one compiler the trainer drives. At most one call is
    in flight to it: a GetObservation (``fetch``) or a SendAction
    (``send``)."""

    def __init__(self, address, channel, reach_by):
        self.address = address
        self.channel = channel
        self.stub = pb2_grpc.CompilerServiceStub(channel)
        self.fetch = None          # outstanding GetObservation future
        self.send = None           # outstanding SendAction future
        self.farewell = None       # EndEpisode sent when dropped (kept: a dropped
                                   # future cancels its call)
        self.reached = False       # its server was reached (channel READY or a reply)
        self.reach_by = reach_by   # monotonic: dropped if not reached by then
        self.ended = False
        self.watch = self._on_state  # kept: unsubscribe compares callbacks
        channel.subscribe(self.watch, try_to_connect=True)

    def _on_state(self, state):  # a gRPC thread
        if state == grpc.ChannelConnectivity.READY:
            self.reached = True

    def __repr__(self):
        return f"<compiler {self.address}>"


class GrpcCompilerInterface:
    """Serve (inference) or drive (training) compilers over gRPC.

    Inference mode: ``address`` is where to listen (``"127.0.0.1:0"`` picks
    a free port: read :attr:`port` / :attr:`address`). Training mode:
    ``compilers`` lists the compilers' addresses (``add_compiler`` adds
    more). ``timeout``: default seconds for :meth:`evaluate` and for every
    call this side makes. ``max_message_bytes``: both directions, equal to
    the C++ default. ``tls``: :class:`TlsFiles` (None: plaintext).
    ``allow_remote``: listen on a non-loopback address. ``max_workers``:
    inference requests waiting for an answer at a time (one per connected
    compiler); more are refused with RESOURCE_EXHAUSTED.
    ``user_service``: serve a user-defined method instead
    (:class:`mlbridge.grpc.UserService`). ``server`` (inference mode):
    ``"native"`` (the C++ server core; an error when it is not built),
    ``"grpcio"`` (grpcio's server), or None: ``$MLBRIDGE_GRPC_SERVER`` if
    set, else native when available. :attr:`server_kind` tells which
    serves (None in training mode).

    Use as a context manager (or call :meth:`close`): the server stops and
    channels close without waiting on anything unbounded.
    """

    def __init__(self, address="127.0.0.1:0", *, mode="inference", compilers=(),
                 timeout=60.0, max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES, tls=None,
                 allow_remote=False, max_workers=64, user_service=None, server=None):
        if mode not in ("inference", "training"):
            raise ValueError(f"mode must be 'inference' or 'training', got {mode!r}")
        if timeout is None or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if tls is not None and not isinstance(tls, TlsFiles):
            raise TypeError("tls must be a mlbridge.grpc.TlsFiles or None")
        self.mode = mode
        self._pid = os.getpid()
        self.timeout = float(timeout)
        self.max_message_bytes = int(max_message_bytes)
        self.tls = tls
        self._pending = None
        self._closed = False
        self._cache = {}
        self.ended_sessions = 0
        self.last_ended_session = None
        self.last_ended_error = None   # training: why the last ended compiler was dropped
        self.compiler_errors = {}      # training: address -> why it was dropped
        self._actions_taken = 0        # training: SendActions the compilers accepted
        self._server = None
        self._sibling = None  # the other loopback address, held (see _start_server)
        self._executor = None
        self._workers = []
        self._ready = queue.SimpleQueue()   # training: workers whose fetch completed
        self._queue = queue.SimpleQueue()   # inference: requests and session ends
        self._slots = set()
        self._slots_lock = threading.Lock()
        self._user = user_service
        self._direct = None
        self._core = None      # inference: the native server
        self.server_kind = None
        self.port = 0
        self.address = None
        if mode == "inference":
            if compilers:
                raise ValueError("compilers= is for training mode")
            self._start_server(address, allow_remote, max_workers, server)
            _serving.add(self)
        else:
            if user_service is not None:
                raise ValueError("user_service is for inference mode")
            if server is not None:
                raise ValueError("server= is for inference mode")
            for c in compilers:
                self.add_compiler(c)

    # ---- lifecycle ----------------------------------------------------------------
    def _start_server(self, address, allow_remote, max_workers, kind):
        if not allow_remote and not is_loopback_address(address):
            raise MLBridgeError(f"refusing to listen on {address!r}: not a loopback address "
                                f"(pass allow_remote=True, preferably with TLS)")
        native = self._native_module(kind)
        if native is not None:
            self._start_native(native, address, max_workers)
        else:
            self._start_grpcio(address, max_workers)
        if address.startswith("unix"):
            self.address = address
        else:
            self.address = address.rsplit(":", 1)[0] + f":{self.port}"
        _log.debug("serving %s on %s with the %s server",
                   "user service" if self._user else "ModelService", self.address,
                   self.server_kind)

    @staticmethod
    def _native_module(kind):
        """The native server's module, or None for grpcio's server."""
        explicit = kind is not None
        if kind is None:
            kind = os.environ.get(SERVER_ENV) or "native"
        if kind not in _SERVER_KINDS:
            source = "server" if explicit else f"${SERVER_ENV}"
            raise ValueError(f"{source} must be one of {', '.join(_SERVER_KINDS)}, "
                             f"got {kind!r}")
        if kind == "grpcio":
            return None
        module, why = _native.load()
        if module is None:
            if explicit or os.environ.get(SERVER_ENV):
                raise MLBridgeError(f"the native gRPC server is not available: {why}")
            _log.debug("serving with grpcio's server: %s", why)
        return module

    def _start_native(self, native, address, max_workers):
        if self._user is not None:
            methods = {self._user.method: _REQUEST}
        else:
            service = "/" + pb2.DESCRIPTOR.services_by_name["ModelService"].full_name
            methods = {service + "/Evaluate": _REQUEST, service + "/EndSession": _SESSION_END}
        tls = None
        if self.tls is not None:
            t = self.tls
            tls = (_read(t.key_file, "private key"), _read(t.cert_file, "certificate"),
                   _read(t.root_cert_file, "root certificate") if t.require_client_cert
                   else b"", t.require_client_cert)
        try:
            core = native.Server(address, min(self.max_message_bytes, 2**31 - 1),
                                 self.timeout, max_workers, methods, tls)
        except OSError as e:
            raise MLBridgeError(str(e)) from None
        try:
            self._sibling = _claim_loopback_sibling(address, core.port)
        except MLBridgeError:
            core.close()
            raise
        self._core = core
        self.port = core.port
        self.server_kind = "native"

    def _start_grpcio(self, address, max_workers):
        self._executor = ThreadPoolExecutor(max_workers=max_workers,
                                                    thread_name_prefix="mlbridge-grpc")
        server = grpc.server(self._executor,
                             options=_options(self.max_message_bytes)
                             + [("grpc.so_reuseport", 0)],
                             maximum_concurrent_rpcs=max_workers)
        try:
            if self._user is not None:
                server.add_generic_rpc_handlers((self._user._handler(self),))
            else:
                pb2_grpc.add_ModelServiceServicer_to_server(_ModelService(self), server)
            if self.tls is None:
                port = server.add_insecure_port(address)
            else:
                t = self.tls
                creds = grpc.ssl_server_credentials(
                    [(_read(t.key_file, "private key"), _read(t.cert_file, "certificate"))],
                    root_certificates=(_read(t.root_cert_file, "root certificate")
                                       if t.require_client_cert else None),
                    require_client_auth=t.require_client_cert)
                port = server.add_secure_port(address, creds)
        except RuntimeError as e:  # grpcio raises when the bind fails
            server.stop(None)
            self._executor.shutdown(wait=False)
            raise MLBridgeError(f"cannot listen on {address!r}: {e} (is the port in use? "
                                f"a port is never shared between two servers)") from None
        except BaseException:
            server.stop(None)
            self._executor.shutdown(wait=False)
            raise
        if not port:
            server.stop(None)
            self._executor.shutdown(wait=False)
            raise MLBridgeError(f"cannot listen on {address!r}: the port is in use or the "
                                f"address is invalid (a port is never shared)")
        try:
            self._sibling = _claim_loopback_sibling(address, port)
        except MLBridgeError:
            server.stop(None)
            self._executor.shutdown(wait=False)
            raise
        server.start()
        self._server = server
        self.port = port
        self.server_kind = "grpcio"

    def close(self):
        """Stop serving / driving. Requests still waiting are cancelled."""
        if self._closed:
            return
        self._closed = True
        _serving.discard(self)
        if os.getpid() != self._pid:
            # A forked child: the servers and channels run on the parent's
            # gRPC threads (absent here), and stopping them would shut the
            # parent's sockets down. Kept, never stopped or freed here.
            _inherited.append((self._server, self._executor, self._core, self._workers))
            self._server = self._executor = self._core = None
            self._workers = []
            return
        with self._slots_lock:
            slots, self._slots = self._slots, set()
        for s in slots:
            s.cancel()
        if self._server is not None:
            self._server.stop(grace=None).wait(5.0)
            self._executor.shutdown(wait=False)
        if self._core is not None:
            self._core.close()
        if self._sibling is not None:
            self._sibling.close()
            self._sibling = None
        for w in self._workers:
            for call in (w.fetch, w.send):
                if call is not None:
                    call.cancel()
            w.channel.close()
        self._pending = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):  # best effort; close() is the contract
        try:
            self.close()
        except Exception:
            pass

    @property
    def pending(self):
        """The observation awaiting populate_buffer(), or None."""
        return self._pending

    @property
    def compilers(self):
        """Training mode: the addresses driven, in order."""
        return [w.address for w in self._workers]

    # ---- training mode: the compilers ------------------------------------------------
    def add_compiler(self, address):
        """Training mode: drive one more compiler at ``address``."""
        if self.mode != "training":
            raise MLBridgeError("add_compiler is for training mode")
        opts = _options(self.max_message_bytes) + [
            ("grpc.enable_retries", 0),
            ("grpc.initial_reconnect_backoff_ms", 20),
            ("grpc.min_reconnect_backoff_ms", 1000),
            ("grpc.max_reconnect_backoff_ms", 1000),
            ("grpc.use_local_subchannel_pool", 1),
        ]
        if self.tls is None:
            channel = grpc.insecure_channel(address, options=opts)
        else:
            t = self.tls
            creds = grpc.ssl_channel_credentials(
                root_certificates=_read(t.root_cert_file, "root certificate"),
                private_key=_read(t.key_file, "private key") if t.key_file else None,
                certificate_chain=_read(t.cert_file, "certificate") if t.cert_file else None)
            if t.server_name:
                opts.append(("grpc.ssl_target_name_override", t.server_name))
            channel = grpc.secure_channel(address, creds, options=opts)
        self._workers.append(_Worker(address, channel, time.monotonic() + self.timeout))

    def end_episode(self, compiler=None, reason=""):
        """Training mode: end the episode of one compiler (its address), or
        of all. Its pending and later requests fail, so it uses its own
        fallback decisions and ends its session."""
        if self.mode != "training":
            raise MLBridgeError("end_episode is for training mode")
        for w in self._workers:
            if compiler is not None and w.address != compiler or w.ended:
                continue
            try:
                w.stub.EndEpisode(pb2.EndEpisodeRequest(reason=reason), timeout=self.timeout)
            except grpc.RpcError as e:
                if e.code() not in (grpc.StatusCode.UNAVAILABLE,):
                    raise MLBridgeError(f"EndEpisode on {w.address}: {e.code().name}: "
                                        f"{e.details()}") from None
            if self._pending is not None and self._pending.compiler == w.address:
                self._pending = None

    # ---- the loop ------------------------------------------------------------------------
    def evaluate(self, timeout=None):
        """The next observation from any compiler, or None when a compiler
        session ended (``last_ended_session`` names it in inference mode).

        Raises mlbridge.TimeoutError when nothing arrives within ``timeout``
        seconds (default: the interface's), MLBridgeError when the previous
        observation was not answered, PeerClosed in training mode once every
        compiler has ended.

        Training mode: a compiler that fails is dropped and reported like a
        session end (None), with the reason in ``last_ended_error`` and
        ``compiler_errors[address]`` (a normal end leaves
        ``last_ended_error`` None): one not reached within the timeout (not
        listening, or dead before its first observation), one gone without
        ending its session, one that did not take an action within the
        timeout, one whose observation is malformed or whose reply is not a
        CompilerService reply. Those still listening get EndEpisode with the
        reason, so their pending request fails at once. The others go on.
        """
        if self._closed:
            raise MLBridgeError("the interface is closed")
        if self._pending is not None:
            raise MLBridgeError(f"observation {self._pending.index} has not been answered; "
                                f"call populate_buffer() first")
        seconds = self.timeout if timeout is None else float(timeout)
        deadline = time.monotonic() + seconds
        if self._core is not None:
            return self._next_native(deadline, seconds)
        if self.mode == "inference":
            return self._next_request(deadline, seconds)
        return self._next_observation(deadline, seconds)

    def populate_buffer(self, advice):
        """Answer the observation evaluate() returned.

        ``advice`` is checked against its advice spec first (TypeError /
        ValueError; the observation stays pending). Inference mode: raises
        PeerClosed when the compiler no longer waits for it (it gave up at
        its deadline, or died). Training mode: the action is sent without
        waiting (one slow compiler never holds up the others); a compiler
        that does not take it within the timeout, or is gone, is dropped
        (see :meth:`evaluate`).
        """
        obs = self._pending
        if obs is None:
            raise MLBridgeError("no pending observation; call evaluate() first")
        if self.mode == "inference":
            if self._user is not None:
                reply = self._user._encode_reply(obs, advice)
            else:
                reply = encode_advice(obs.advice_spec, advice)
            self._answer(obs, reply)
        else:
            action = pb2.Action(id=obs.id)
            encode_advice(obs.advice_spec, advice, action.advice)
            self._send_action(obs, action)

    def send_error(self, message):
        """Answer the pending observation with an error: the compiler gets
        an error status (and uses its fallback)."""
        obs = self._pending
        if obs is None:
            raise MLBridgeError("no pending observation; call evaluate() first")
        message = str(message)
        if self.mode == "inference":
            if self._user is not None:
                self._pending = None
                if self._core is not None:
                    self._core.fail(obs._slot, grpc.StatusCode.UNKNOWN.value[0],
                                    f"the model reported an error: {message}")
                else:
                    obs._slot.deliver(_UserError(message))
                return
            self._answer(obs, pb2.Advice(error=message))
        else:
            self._send_action(obs, pb2.Action(id=obs.id, advice=pb2.Advice(error=message)))

    def serve(self, policy, *, sessions=None, timeout=None):
        """Answer requests with ``policy(observation) -> advice`` until
        ``sessions`` compiler sessions have ended (None: inference mode runs
        until a wait times out; training mode until every compiler ended).
        A wait with no request at all for ``timeout`` seconds returns if a
        session has ended, else raises TimeoutError. A compiler that gave up
        on one request does not stop the loop; a policy exception is sent to
        that compiler as an error and re-raised. Returns the number of
        requests answered (training mode: actions the compilers took).

        With grpcio's server, inference mode calls ``policy`` on the gRPC
        thread that received the request (one call at a time, never
        concurrently), which saves two thread switches per request over
        evaluate()/populate_buffer(); the native server hands requests to
        this thread directly.
        """
        if self.mode == "inference" and self._pending is None and self._core is None:
            return self._serve_direct(policy, sessions, timeout)
        answered = 0
        ended = 0
        taken = self._actions_taken
        while sessions is None or ended < sessions:
            try:
                obs = self.evaluate(timeout)
            except TimeoutError:
                if ended:
                    return self._served(answered, taken)
                raise
            except PeerClosed:
                if self.mode == "training":
                    return self._served(answered, taken)  # every compiler has ended
                raise
            if obs is None:
                ended += 1
                continue
            try:
                self.populate_buffer(policy(obs))
            except PeerClosed as e:
                _log.debug("request %d of %s not answered: %s", obs.index, obs.session, e)
                continue
            except BaseException as e:
                if self._pending is obs and self._core is not None:
                    self._pending = None
                    self._core.fail(obs._slot, grpc.StatusCode.UNKNOWN.value[0],
                                    f"the model failed on this request: "
                                    f"{type(e).__name__}: {e}")
                elif self._pending is obs:
                    try:
                        self.send_error("the model failed on this request")
                    except MLBridgeError:
                        pass
                raise
            answered += 1
        return self._served(answered, taken)

    def _served(self, answered, taken_before):
        """What serve() returns: inference, the requests answered; training,
        the actions the compilers took (those still on their way are
        waited for)."""
        if self.mode == "inference":
            return answered
        self._settle_actions()
        return self._actions_taken - taken_before

    # ---- inference internals --------------------------------------------------------------
    def _serve_direct(self, policy, sessions, timeout):
        seconds = self.timeout if timeout is None else float(timeout)
        direct = _Direct(policy)
        ended = 0
        self._direct = direct
        try:
            deadline = time.monotonic() + seconds
            while sessions is None or ended < sessions:
                if direct.error is not None:
                    raise direct.error
                now = time.monotonic()
                if direct.last > deadline - seconds:
                    deadline = direct.last + seconds  # requests keep coming
                if now >= deadline:
                    if ended:
                        break
                    raise TimeoutError(f"no request from a compiler on {self.address} "
                                       f"within {seconds:g} s")
                try:
                    item = self._queue.get(timeout=min(deadline - now, 0.1))
                except queue.Empty:
                    continue
                deadline = time.monotonic() + seconds
                if type(item) is _SessionEnded:
                    ended += 1
                    self.ended_sessions += 1
                    self.last_ended_session = item.session
                    continue
                # Queued before direct mode began: answer it here.
                if item._slot.dead:
                    continue
                with direct.lock:
                    reply = self._run_policy(direct, item, None)
                if reply is not None and item._slot.deliver(reply):
                    direct.answered += 1
        finally:
            self._direct = None
        if direct.error is not None:
            raise direct.error
        return direct.answered

    def _run_policy(self, direct, obs, context):
        """The policy's reply for obs (direct.lock held); on an exception,
        an error answer, and the exception kept for serve() to raise."""
        try:
            advice = direct.policy(obs)
            if self._user is not None:
                return self._user._encode_reply(obs, advice)
            return encode_advice(obs.advice_spec, advice)
        except BaseException as e:  # noqa: B902 - re-raised by serve()
            if direct.error is None:
                direct.error = e
            message = f"the model failed on this request: {type(e).__name__}: {e}"
            if context is not None:
                context.abort(grpc.StatusCode.UNKNOWN, message)
            if obs._slot is not None:
                obs._slot.deliver(_UserError(message) if self._user is not None
                                  else pb2.Advice(error=message))
            return None

    def _handle_request(self, request, context, convert):
        """On a gRPC thread: answer directly (serve) or queue the request
        for evaluate() and wait for populate_buffer()."""
        try:
            if convert is None:
                obs = observation_from_pb(request, self.max_message_bytes, self._cache)
            else:
                obs = convert(request)
        except ProtocolError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        direct = self._direct
        if direct is not None:
            with direct.lock:
                if self._direct is direct and direct.error is None:
                    reply = self._run_policy(direct, obs, context)
                    direct.answered += 1
                    direct.last = time.monotonic()
                    return reply
        remaining = context.time_remaining()
        wait = self.timeout if remaining is None else min(remaining, self.timeout)
        slot = _Slot(None if remaining is None else time.monotonic() + remaining)
        obs._slot = slot
        with self._slots_lock:
            if self._closed:
                context.abort(grpc.StatusCode.UNAVAILABLE, "the model is shutting down")
            self._slots.add(slot)
        try:
            context.add_callback(slot.cancel)  # the compiler left or the call ended
            self._queue.put(obs)
            slot.event.wait(max(0.0, wait))
        finally:
            with self._slots_lock:
                self._slots.discard(slot)
        reply = slot.reply
        if reply is None:
            slot.cancel()
            if self._closed:
                context.abort(grpc.StatusCode.UNAVAILABLE, "the model is shutting down")
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED,
                          f"the model did not answer within {wait:g} s")
        if isinstance(reply, _UserError):
            context.abort(grpc.StatusCode.UNKNOWN, f"the model reported an error: {reply}")
        return reply

    def _next_request(self, deadline, seconds):
        while True:
            remaining = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=max(0.0, remaining)) if remaining > 0 \
                    else self._queue.get_nowait()
            except queue.Empty:
                raise TimeoutError(f"no request from a compiler on {self.address} within "
                                   f"{seconds:g} s") from None
            if type(item) is _SessionEnded:
                self.ended_sessions += 1
                self.last_ended_session = item.session
                return None
            if item._slot.dead:
                _log.debug("dropping request %d of %s: the compiler gave up", item.index,
                           item.session)
                continue
            self._pending = item
            return item

    def _next_native(self, deadline, seconds):
        while True:
            try:
                item = self._core.next(max(0.0, deadline - time.monotonic()))
            except EOFError:
                raise MLBridgeError("the interface is closed") from None
            if item is None:
                raise TimeoutError(f"no request from a compiler on {self.address} within "
                                   f"{seconds:g} s")
            kind, call, _method, payload = item
            if kind == _SESSION_END:
                self.ended_sessions += 1
                try:
                    self.last_ended_session = pb2.SessionEnd.FromString(payload).session
                except DecodeError:
                    self.last_ended_session = ""
                return None
            try:
                obs = self._decode(payload)
            except ProtocolError as e:
                self._core.fail(call, grpc.StatusCode.INVALID_ARGUMENT.value[0], str(e))
                continue
            obs._slot = call
            self._pending = obs
            return obs

    def _decode(self, payload):
        """The observation of a native server's request."""
        user = self._user
        cls = pb2.Observation if user is None else user.request_class
        try:
            request = cls.FromString(payload)
        except DecodeError:
            raise ProtocolError(f"the request is not a valid {cls.DESCRIPTOR.full_name}") \
                from None
        if user is not None:
            return user._convert(request)
        return observation_from_pb(request, self.max_message_bytes, self._cache)

    def _answer(self, obs, reply):
        self._pending = None
        if self._core is not None:
            sent = self._core.answer(obs._slot, reply.SerializeToString())
            if sent == _TOO_LARGE:
                raise MessageTooLarge(f"the reply to observation {obs.index} exceeds the "
                                      f"{self.max_message_bytes}-byte limit; the compiler "
                                      f"gets an error")
            delivered = sent == _SENT
        else:
            delivered = obs._slot.deliver(reply)
        if not delivered:
            raise PeerClosed(f"compiler session {obs.session!r} no longer waits for "
                             f"observation {obs.index} (deadline passed or disconnected)")

    # ---- training internals ---------------------------------------------------------------
    def _next_observation(self, deadline, seconds):
        while True:
            active = [w for w in self._workers if not w.ended]
            if not active:
                raise PeerClosed("every compiler has ended its session"
                                 if self._workers else "no compilers to drive (add_compiler)")
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                raise TimeoutError(f"no observation from {len(active)} compiler(s) within "
                                   f"{seconds:g} s")
            for w in active:
                if w.fetch is not None or w.send is not None:
                    continue
                if w.reached:
                    self._start_fetch(w, min(remaining, _POLL_SLICE))
                elif now >= w.reach_by:
                    return self._drop(w, f"compiler {w.address} was not reached within "
                                         f"{self.timeout:g} s (not listening, or it died "
                                         f"before its first observation)")
                else:
                    self._start_fetch(w, min(remaining, _POLL_SLICE, w.reach_by - now))
            try:
                w = self._ready.get(timeout=remaining)
            except queue.Empty:
                continue
            if w.ended:
                continue
            if w.send is not None:
                if w.send.done() and self._action_settled(w):
                    return None  # it ended
                continue
            fut, w.fetch = w.fetch, None
            if fut is None:
                continue
            try:
                reply = fut.result(timeout=0)
            except grpc.FutureCancelledError:
                continue
            except grpc.RpcError as e:
                code = e.code()
                if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                    continue  # nothing yet (or not reached yet): poll again
                if code == grpc.StatusCode.UNAVAILABLE and not w.reached:
                    continue  # not up yet; bounded by reach_by
                if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
                    return self._drop(w, f"compiler {w.address} is gone without ending its "
                                         f"session: {e.details()}", tell=False)
                return self._drop(w, f"GetObservation on {w.address}: {code.name}: "
                                     f"{e.details()}")
            w.reached = True
            which = reply.WhichOneof("result")
            if which == "session_end":
                return self._worker_ended(w, reply.session_end.session)
            if which != "observation":
                return self._drop(w, f"{w.address}: GetObservation reply is empty")
            try:
                obs = observation_from_pb(reply.observation, self.max_message_bytes,
                                          self._cache)
            except ProtocolError as e:
                return self._drop(w, f"observation {reply.observation.id} from {w.address} "
                                     f"is malformed: {e}")
            obs.compiler = w.address
            obs._slot = w
            self._pending = obs
            return obs

    def _start_fetch(self, w, seconds):
        fut = w.stub.GetObservation.future(pb2.ObservationRequest(), timeout=seconds,
                                           wait_for_ready=not w.reached)
        w.fetch = fut
        fut.add_done_callback(lambda _f, w=w: self._ready.put(w))

    def _worker_ended(self, w, session, error=None):
        w.ended = True
        self.ended_sessions += 1
        self.last_ended_session = session or w.address
        self.last_ended_error = error
        if error is not None:
            self.compiler_errors[w.address] = error
        return None

    def _drop(self, w, error, tell=True):
        """Ends a compiler that failed (its session counts as ended, with
        ``error``); the others go on. ``tell``: end its episode too (not
        waited for), so its pending and later requests fail at once."""
        _log.warning("dropping %s: %s", w, error)
        if tell:
            w.farewell = w.stub.EndEpisode.future(pb2.EndEpisodeRequest(reason=error[:1000]),
                                                  timeout=self.timeout)
        return self._worker_ended(w, "", error)

    def _send_action(self, obs, action):
        """Sends the action without waiting: the trainer goes on with the
        other compilers; the outcome is taken when it arrives
        (_action_settled), and this compiler is asked for nothing before."""
        w = obs._slot
        self._pending = None
        w.send = w.stub.SendAction.future(action, timeout=self.timeout)
        w.send.add_done_callback(lambda _f, w=w: self._ready.put(w))

    def _action_settled(self, w):
        """The outcome of w's finished SendAction; True when w ended."""
        fut, w.send = w.send, None
        try:
            fut.result(timeout=0)
        except grpc.FutureCancelledError:
            return False
        except grpc.RpcError as e:
            code = e.code()
            detail = f"SendAction to {w.address}: {code.name}: {e.details()}"
            if code == grpc.StatusCode.FAILED_PRECONDITION:
                # It stopped waiting (its own deadline) and went on.
                _log.debug("%s", detail)
                return False
            if code == grpc.StatusCode.UNAVAILABLE:
                self._drop(w, f"compiler {w.address} is gone: {detail}", tell=False)
            elif code == grpc.StatusCode.DEADLINE_EXCEEDED:
                self._drop(w, f"compiler {w.address} did not take the action within "
                              f"{self.timeout:g} s: {detail}")
            else:
                self._drop(w, detail)
            return True
        self._actions_taken += 1
        return False

    def _settle_actions(self):
        """Waits (each within its deadline) for the actions still on their
        way, so what serve() returns counts them."""
        for w in self._workers:
            if w.send is not None and not w.ended:
                try:
                    w.send.exception(timeout=self.timeout + 1.0)
                except grpc.FutureTimeoutError:
                    pass
                if w.send.done():
                    self._action_settled(w)


class _UserError(str):
    """An error answer to a user-defined method."""


class _Direct:
    """serve() in inference mode: the policy runs on the gRPC threads."""

    __slots__ = ("policy", "lock", "answered", "last", "error")

    def __init__(self, policy):
        self.policy = policy
        self.lock = threading.Lock()
        self.answered = 0
        self.last = 0.0
        self.error = None
