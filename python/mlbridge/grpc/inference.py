"""Inference mode: this process hosts ``mlbridge.v1.ModelService``.

Any number of compilers (C++ ``GrpcModelRunner``) connect concurrently.
Their requests are queued and handed out one at a time by ``evaluate()``;
``populate_buffer()`` answers exactly the request ``evaluate()`` returned,
so replies never cross between compilers. The server is the C++ server core
(``mlbridge_grpc_native``, built with the library) when it can be imported,
else grpcio's; :attr:`GrpcInferenceInterface.server_kind` says which. A
port that is taken is an error, never shared (``grpc.so_reuseport`` is off
and the bound port is checked); servers listen on loopback unless
``allow_remote=True``.
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

import grpc

from google.protobuf.message import DecodeError

from ..errors import MessageTooLarge, MLBridgeError, PeerClosed, ProtocolError, TimeoutError
from . import _native
from ._proto import pb2, pb2_grpc
from .interface import (DEFAULT_MAX_MESSAGE_BYTES, GrpcCompilerInterface, is_loopback_address,
                        message_size_options, read_pem)
from .tensors import encode_advice, observation_from_pb

__all__ = ["GrpcInferenceInterface", "SERVER_ENV"]

_log = logging.getLogger("mlbridge.grpc")

#: Environment variable naming the default inference server ("native" or
#: "grpcio") when the constructor's ``server`` is None.
SERVER_ENV = "MLBRIDGE_GRPC_SERVER"
_SERVER_KINDS = ("native", "grpcio")
# The native server's answers (1: the compiler is gone) and method kinds
# (src/python_ext/grpc_server_module.cpp).
_SENT, _TOO_LARGE = 0, 2
_REQUEST, _SESSION_END = 0, 1


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


# Interfaces not closed yet: closed when the interpreter exits.
_serving = weakref.WeakSet()


def _close_serving():
    for iface in list(_serving):
        iface.close()


# Before the interpreter joins its threads: grpcio's server threads waiting
# for an answer would otherwise hold the exit up to their timeout.
# (threading's hook is what concurrent.futures uses; atexit runs too late.)
getattr(threading, "_register_atexit", atexit.register)(_close_serving)


class _Slot:
    """Where a queued request waits for its answer (grpcio's server).
    ``deadline`` (monotonic) is when the compiler stops waiting: past it,
    the request is dead even before gRPC's cancellation callback has run."""

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


class _UserError(str):
    """An error answer to a user-defined method."""


class _Direct:
    """serve() on grpcio's server: the policy runs on the gRPC threads."""

    __slots__ = ("policy", "lock", "answered", "last", "error")

    def __init__(self, policy):
        self.policy = policy
        self.lock = threading.Lock()
        self.answered = 0
        self.last = 0.0
        self.error = None


class _ModelService(pb2_grpc.ModelServiceServicer):
    """Runs on gRPC's worker threads; hands requests to the interface."""

    def __init__(self, iface):
        self._iface = iface

    def Evaluate(self, request, context):
        return self._iface._handle_request(request, context, None)

    def EndSession(self, request, context):
        self._iface._queue.put(_SessionEnded(request.session))
        return pb2.Empty()


class GrpcInferenceInterface(GrpcCompilerInterface):
    """Serve compilers: ``GrpcCompilerInterface(address, mode="inference")``.

    ``address`` is where to listen (``"127.0.0.1:0"`` picks a free port:
    read :attr:`port` / :attr:`address`). ``allow_remote``: listen on a
    non-loopback address. ``max_workers``: requests waiting for an answer
    at a time (one per connected compiler); more are refused with
    RESOURCE_EXHAUSTED. ``user_service``: serve a user-defined method
    instead (:class:`mlbridge.grpc.UserService`). ``server``: ``"native"``
    (the C++ server core; an error when it is not built), ``"grpcio"``
    (grpcio's server), or None: ``$MLBRIDGE_GRPC_SERVER`` if set, else
    native when available. :attr:`server_kind` tells which serves.
    ``timeout``, ``max_message_bytes``, ``tls``: see
    :class:`~mlbridge.grpc.GrpcCompilerInterface`.
    """

    mode = "inference"

    def __init__(self, address="127.0.0.1:0", *, mode=None, timeout=60.0,
                 max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES, tls=None, allow_remote=False,
                 max_workers=64, user_service=None, server=None):
        super().__init__(mode=mode, timeout=timeout, max_message_bytes=max_message_bytes,
                         tls=tls)
        self._server = None    # grpcio's server
        self._executor = None  # its threads
        self._core = None      # the native server
        self._sibling = None   # the other loopback address, held (see _start)
        self._queue = queue.SimpleQueue()   # grpcio: requests and session ends
        self._slots = set()
        self._slots_lock = threading.Lock()
        self._user = user_service
        self._direct = None
        self.server_kind = None
        self.port = 0
        self.address = None
        self._start(address, allow_remote, max_workers, server)
        _serving.add(self)

    # ---- lifecycle ----------------------------------------------------------------
    def _start(self, address, allow_remote, max_workers, kind):
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
            tls = (read_pem(t.key_file, "private key"), read_pem(t.cert_file, "certificate"),
                   read_pem(t.root_cert_file, "root certificate") if t.require_client_cert
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
                             options=message_size_options(self.max_message_bytes)
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
                    [(read_pem(t.key_file, "private key"), read_pem(t.cert_file, "certificate"))],
                    root_certificates=(read_pem(t.root_cert_file, "root certificate")
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
        _serving.discard(self)
        super().close()

    def _detach(self):
        kept = (self._server, self._executor, self._core)
        self._server = self._executor = self._core = None
        return kept

    def _shut_down(self):
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

    # ---- the loop ------------------------------------------------------------------------
    def _next(self, deadline, seconds):
        if self._core is not None:
            return self._next_native(deadline, seconds)
        return self._next_request(deadline, seconds)

    def _reply(self, obs, advice):
        """Raises PeerClosed when the compiler no longer waits for ``obs``
        (it gave up at its deadline, or died)."""
        if self._user is not None:
            reply = self._user._encode_reply(obs, advice)
        else:
            reply = encode_advice(obs.advice_spec, advice)
        self._answer(obs, reply)

    def _reply_error(self, obs, message):
        if self._user is None:
            self._answer(obs, pb2.Advice(error=message))
            return
        self._pending = None
        if self._core is not None:
            self._core.fail(obs._slot, grpc.StatusCode.UNKNOWN.value[0],
                            f"the model reported an error: {message}")
        else:
            obs._slot.deliver(_UserError(message))

    def _policy_failed(self, obs, error):
        if self._core is None:
            super()._policy_failed(obs, error)
            return
        self._pending = None
        self._core.fail(obs._slot, grpc.StatusCode.UNKNOWN.value[0],
                        f"the model failed on this request: {type(error).__name__}: {error}")

    def serve(self, policy, *, sessions=None, timeout=None):
        """See :meth:`GrpcCompilerInterface.serve`. With grpcio's server,
        ``policy`` runs on the gRPC thread that received the request (one
        call at a time, never concurrently), which saves two thread switches
        per request over evaluate()/populate_buffer(); the native server
        hands requests to this thread directly."""
        if self._pending is None and self._core is None:
            return self._serve_direct(policy, sessions, timeout)
        return super().serve(policy, sessions=sessions, timeout=timeout)

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
                    self._session_ended(item.session)
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

    def _session_ended(self, session):
        self.ended_sessions += 1
        self.last_ended_session = session

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
                self._session_ended(item.session)
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
                try:
                    session = pb2.SessionEnd.FromString(payload).session
                except DecodeError:
                    session = ""
                self._session_ended(session)
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
