"""Training mode: each compiler hosts ``mlbridge.v1.CompilerService`` (C++
``GrpcModelRunner`` in ``GrpcMode::Training``); this trainer drives a list
of them concurrently with the same ``evaluate()`` / ``populate_buffer()``
loop as inference mode.

One slow or broken compiler never holds up the others: actions are sent
without waiting, and a compiler that fails (not reached, gone, frozen,
sending garbage) is dropped with the reason while the others go on.
"""

import logging
import queue
import time

import grpc

from ..errors import MLBridgeError, PeerClosed, ProtocolError, TimeoutError
from ._proto import pb2, pb2_grpc
from .interface import (DEFAULT_MAX_MESSAGE_BYTES, GrpcCompilerInterface, message_size_options,
                        read_pem)
from .tensors import encode_advice, observation_from_pb

__all__ = ["GrpcTrainingInterface"]

_log = logging.getLogger("mlbridge.grpc")

# One GetObservation long-poll lasts at most this long.
_POLL_SLICE = 5.0


class _Worker:
    """One compiler the trainer drives. At most one call is in flight to
    it: a GetObservation (``fetch``) or a SendAction (``send``)."""

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


class GrpcTrainingInterface(GrpcCompilerInterface):
    """Drive compilers: ``GrpcCompilerInterface(mode="training",
    compilers=[...])``.

    ``compilers`` lists the compilers' addresses (:meth:`add_compiler` adds
    more). ``tls`` (:class:`~mlbridge.grpc.TlsFiles`): ``root_cert_file``
    verifies the compilers' servers; ``cert_file`` + ``key_file`` add a
    client certificate. ``timeout``, ``max_message_bytes``: see
    :class:`~mlbridge.grpc.GrpcCompilerInterface`.

    A compiler that fails is dropped and reported like a session end
    (``evaluate()`` returns None), with the reason in ``last_ended_error``
    and ``compiler_errors[address]`` (a normal end leaves
    ``last_ended_error`` None).
    """

    mode = "training"
    server_kind = None  # no server on this side
    _serves_until_all_ended = True

    def __init__(self, *, mode=None, compilers=(), timeout=60.0,
                 max_message_bytes=DEFAULT_MAX_MESSAGE_BYTES, tls=None):
        super().__init__(mode=mode, timeout=timeout, max_message_bytes=max_message_bytes,
                         tls=tls)
        self.last_ended_error = None   # why the last ended compiler was dropped
        self.compiler_errors = {}      # address -> why it was dropped
        self._actions_taken = 0        # SendActions the compilers accepted
        self._workers = []
        self._ready = queue.SimpleQueue()   # workers whose call completed
        for c in compilers:
            self.add_compiler(c)

    def _detach(self):
        kept, self._workers = self._workers, []
        return kept

    def _shut_down(self):
        for w in self._workers:
            for call in (w.fetch, w.send):
                if call is not None:
                    call.cancel()
            w.channel.close()

    @property
    def compilers(self):
        """The addresses driven, in order."""
        return [w.address for w in self._workers]

    def add_compiler(self, address):
        """Drive one more compiler at ``address``."""
        opts = message_size_options(self.max_message_bytes) + [
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
                root_certificates=read_pem(t.root_cert_file, "root certificate"),
                private_key=read_pem(t.key_file, "private key") if t.key_file else None,
                certificate_chain=read_pem(t.cert_file, "certificate") if t.cert_file else None)
            if t.server_name:
                opts.append(("grpc.ssl_target_name_override", t.server_name))
            channel = grpc.secure_channel(address, creds, options=opts)
        self._workers.append(_Worker(address, channel, time.monotonic() + self.timeout))

    def end_episode(self, compiler=None, reason=""):
        """End the episode of one compiler (its address), or of all. Its
        pending and later requests fail, so it uses its own fallback
        decisions and ends its session."""
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
        """See :meth:`GrpcCompilerInterface.evaluate`; also raises
        PeerClosed once every compiler has ended.

        Dropped (None, the reason in ``compiler_errors``): a compiler not
        reached within the timeout (not listening, or dead before its first
        observation), one gone without ending its session, one that did not
        take an action within the timeout, one whose observation is
        malformed or whose reply is not a CompilerService reply. Those still
        listening get EndEpisode with the reason, so their pending request
        fails at once. The others go on.
        """
        return super().evaluate(timeout)

    def _reply(self, obs, advice):
        """The action is sent without waiting (one slow compiler never
        holds up the others); a compiler that does not take it within the
        timeout, or is gone, is dropped (see :meth:`evaluate`)."""
        action = pb2.Action(id=obs.id, session=obs.session)
        encode_advice(obs.advice_spec, advice, action.advice)
        self._send_action(obs, action)

    def _reply_error(self, obs, message):
        self._send_action(obs, pb2.Action(id=obs.id, session=obs.session,
                                          advice=pb2.Advice(error=message)))

    def serve(self, policy, *, sessions=None, timeout=None):
        """See :meth:`GrpcCompilerInterface.serve`: runs until every
        compiler ended (or ``sessions`` ended); returns the actions the
        compilers took (those still on their way are waited for)."""
        taken = self._actions_taken
        super().serve(policy, sessions=sessions, timeout=timeout)
        self._settle_actions()
        return self._actions_taken - taken

    def _next(self, deadline, seconds):
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
                # It stopped waiting (its own deadline) and went on, or a
                # new session took its place on the address.
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
