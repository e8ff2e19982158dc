"""GrpcCompilerInterface: the model side over gRPC, what both modes share.

* ``mode="inference"`` (default, :mod:`.inference`): this process hosts
  ``mlbridge.v1.ModelService`` and compilers (C++ ``GrpcModelRunner``)
  connect to it.
* ``mode="training"`` (:mod:`.training`): each compiler hosts
  ``mlbridge.v1.CompilerService`` (``GrpcMode::Training``) and this trainer
  drives a list of them.

``GrpcCompilerInterface(mode=...)`` returns the mode's class (both are
subclasses of it); both run the same ``evaluate()`` / ``populate_buffer()``
/ ``serve()`` loop. Every wait and every call has a deadline; TLS is
optional (:class:`TlsFiles`).
"""

import logging
import os
import time
from dataclasses import dataclass
from typing import Optional

from ..errors import MLBridgeError, PeerClosed, TimeoutError

__all__ = ["GrpcCompilerInterface", "TlsFiles", "DEFAULT_MAX_MESSAGE_BYTES",
           "is_loopback_address"]

_log = logging.getLogger("mlbridge.grpc")

#: Largest message in either direction; the C++ side's default is the same.
DEFAULT_MAX_MESSAGE_BYTES = 64 << 20

# The constructor arguments only one mode takes.
_MODE_OF_ARGUMENT = {"compilers": "training", "user_service": "inference",
                     "server": "inference", "allow_remote": "inference",
                     "max_workers": "inference"}

# A forked child's inherited servers and channels (see close()).
_inherited = []


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


def read_pem(path, what):
    """The bytes of a TLS file; a clear error when missing or empty."""
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


def message_size_options(max_message_bytes):
    """grpcio channel/server options: the message limit both ways."""
    return [("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_receive_message_length", max_message_bytes)]


class GrpcCompilerInterface:
    """Serve (inference) or drive (training) compilers over gRPC.

    ``GrpcCompilerInterface(address, mode="inference", ...)`` is a
    :class:`~mlbridge.grpc.inference.GrpcInferenceInterface`,
    ``GrpcCompilerInterface(mode="training", compilers=[...], ...)`` a
    :class:`~mlbridge.grpc.training.GrpcTrainingInterface`; their
    docstrings list the arguments of each mode. Shared: ``timeout``, the
    default seconds for :meth:`evaluate` and for every call this side makes;
    ``max_message_bytes``, both directions, equal to the C++ default;
    ``tls``, :class:`TlsFiles` (None: plaintext).

    Use as a context manager (or call :meth:`close`): servers stop and
    channels close without waiting on anything unbounded.
    """

    mode = None

    def __new__(cls, *args, mode=None, **kwargs):
        if cls is GrpcCompilerInterface:
            mode = "inference" if mode is None else mode
            if mode == "inference":
                from .inference import GrpcInferenceInterface as cls
            elif mode == "training":
                from .training import GrpcTrainingInterface as cls
            else:
                raise ValueError(f"mode must be 'inference' or 'training', got {mode!r}")
            for name in kwargs:
                if _MODE_OF_ARGUMENT.get(name, mode) != mode:
                    raise ValueError(f"{name}= is for {_MODE_OF_ARGUMENT[name]} mode")
        return super().__new__(cls)

    def __init__(self, *, mode, timeout, max_message_bytes, tls):
        if mode is not None and mode != self.mode:
            raise ValueError(f"{type(self).__name__} is the {self.mode} mode, not {mode!r}")
        if timeout is None or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if tls is not None and not isinstance(tls, TlsFiles):
            raise TypeError("tls must be a mlbridge.grpc.TlsFiles or None")
        self._pid = os.getpid()
        self.timeout = float(timeout)
        self.max_message_bytes = int(max_message_bytes)
        self.tls = tls
        self._pending = None
        self._closed = False
        self._cache = {}  # decoded specs, reused across observations
        self.ended_sessions = 0
        self.last_ended_session = None

    # ---- lifecycle ----------------------------------------------------------------
    def close(self):
        """Stop serving / driving; what still waits is cancelled."""
        if self._closed:
            return
        self._closed = True
        if os.getpid() != self._pid:
            # A forked child: the servers and channels run on the parent's
            # gRPC threads (absent here), and stopping them would shut the
            # parent's sockets down. Kept, never stopped or freed here.
            _inherited.append(self._detach())
            return
        self._shut_down()
        self._pending = None

    def _detach(self):
        """Forgets (and returns) what runs on gRPC's threads."""
        raise NotImplementedError

    def _shut_down(self):
        raise NotImplementedError

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

    # ---- the loop ------------------------------------------------------------------------
    def evaluate(self, timeout=None):
        """The next observation from any compiler, or None when a compiler
        session ended (``last_ended_session`` names it).

        Raises mlbridge.TimeoutError when nothing arrives within ``timeout``
        seconds (default: the interface's), MLBridgeError when the previous
        observation was not answered. Each mode adds its own cases.
        """
        if self._closed:
            raise MLBridgeError("the interface is closed")
        if self._pending is not None:
            raise MLBridgeError(f"observation {self._pending.index} has not been answered; "
                                f"call populate_buffer() first")
        seconds = self.timeout if timeout is None else float(timeout)
        return self._next(time.monotonic() + seconds, seconds)

    def populate_buffer(self, advice):
        """Answer the observation evaluate() returned. ``advice`` is checked
        against its advice spec first (TypeError / ValueError; the
        observation stays pending)."""
        self._reply(self._pending_or_raise(), advice)

    def send_error(self, message):
        """Answer the pending observation with an error: the compiler gets
        an error status (and uses its fallback)."""
        self._reply_error(self._pending_or_raise(), str(message))

    def _pending_or_raise(self):
        if self._pending is None:
            raise MLBridgeError("no pending observation; call evaluate() first")
        return self._pending

    # Set by a mode whose evaluate() raises PeerClosed once nothing is left
    # to serve (serve() then returns).
    _serves_until_all_ended = False

    def serve(self, policy, *, sessions=None, timeout=None):
        """Answer requests with ``policy(observation) -> advice`` until
        ``sessions`` compiler sessions have ended (None: until a wait times
        out, or, in training mode, every compiler ended). A wait with no
        request at all for ``timeout`` seconds returns if a session has
        ended, else raises TimeoutError. A compiler that gave up on one
        request does not stop the loop; a policy exception is sent to that
        compiler as an error and re-raised. Returns the number of requests
        answered (training mode: actions the compilers took)."""
        answered = 0
        ended = 0
        while sessions is None or ended < sessions:
            try:
                obs = self.evaluate(timeout)
            except TimeoutError:
                if ended:
                    break
                raise
            except PeerClosed:
                if self._serves_until_all_ended:
                    break
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
                if self._pending is obs:
                    self._policy_failed(obs, e)
                raise
            answered += 1
        return answered

    def _policy_failed(self, obs, error):
        """The compiler of ``obs`` learns that the policy failed on it."""
        try:
            self.send_error("the model failed on this request")
        except MLBridgeError:
            pass
