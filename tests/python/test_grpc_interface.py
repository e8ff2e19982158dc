"""GrpcCompilerInterface with Python clients standing in for compilers:
inference loop, concurrent clients, cancellation, validation, bind
failures, loopback, and user-defined services through reflection.

Every test runs with both inference servers: the C++ server core
(``native``, what the interface picks when it is built) and grpcio's."""

import socket
import threading
import time
from pathlib import Path

import grpc
import numpy as np
import pytest

from mlbridge import MLBridgeError, PeerClosed, TensorSpec, TimeoutError
from mlbridge.grpc import GrpcCompilerInterface, UserService, load_proto, pb2, pb2_grpc
from mlbridge.grpc.tensors import decode_advice, spec_to_pb, tensor_to_pb

USER_PROTO = Path(__file__).resolve().parents[1] / "e2e" / "tools" / "grpc_user.proto"


# Every test runs on both inference servers (the fixture is in conftest.py).
pytestmark = pytest.mark.usefixtures("server")


def request(session, index, value, advice=TensorSpec("y", "int64_t")):
    req = pb2.Observation(session=session, index=index, context="f")
    tensor_to_pb(TensorSpec("x", "int64_t"), value, req.features.add(), "feature")
    spec_to_pb(advice, req.advice)
    return req


def stub(iface):
    return pb2_grpc.ModelServiceStub(grpc.insecure_channel(iface.address))


def test_evaluate_populate_and_session_end():
    with GrpcCompilerInterface(timeout=5) as iface:
        assert iface.port > 0 and iface.address.endswith(f":{iface.port}")
        results = []

        def compiler():
            s = stub(iface)
            for i in range(3):
                rep = s.Evaluate(request("c1", i, i), timeout=5)
                results.append(int(decode_advice(rep, TensorSpec("y", "int64_t"), 1 << 20)[0]))
            s.EndSession(pb2.SessionEnd(session="c1"), timeout=5)

        t = threading.Thread(target=compiler)
        t.start()
        served = iface.serve(lambda obs: 10 * int(obs["x"][0]), sessions=1, timeout=5)
        t.join(5)
        assert served == 3 and results == [0, 10, 20]
        assert iface.last_ended_session == "c1" and iface.ended_sessions == 1


def test_concurrent_clients_never_get_crossed_replies():
    n_clients, n_req = 6, 30
    with GrpcCompilerInterface(timeout=5) as iface:
        bad = []

        def compiler(c):
            s = stub(iface)
            for i in range(n_req):
                v = c * 1000 + i
                rep = s.Evaluate(request(f"c{c}", i, v), timeout=5)
                got = int(decode_advice(rep, TensorSpec("y", "int64_t"), 1 << 20)[0])
                if got != -v:
                    bad.append((c, i, got))
            s.EndSession(pb2.SessionEnd(session=f"c{c}"), timeout=5)

        threads = [threading.Thread(target=compiler, args=(c,)) for c in range(n_clients)]
        for t in threads:
            t.start()
        served = iface.serve(lambda obs: -int(obs["x"][0]), sessions=n_clients, timeout=5)
        for t in threads:
            t.join(5)
        assert served == n_clients * n_req and not bad


def test_a_request_the_compiler_gave_up_on_is_not_answered():
    with GrpcCompilerInterface(timeout=5) as iface:
        errors = []

        def compiler():
            try:
                stub(iface).Evaluate(request("c", 0, 1), timeout=0.2)
            except grpc.RpcError as e:
                errors.append(e.code())

        t = threading.Thread(target=compiler)
        t.start()
        obs = iface.evaluate(timeout=5)
        t.join(5)
        assert errors == [grpc.StatusCode.DEADLINE_EXCEEDED]
        with pytest.raises(PeerClosed, match="no longer waits"):
            iface.populate_buffer(1)
        assert iface.pending is None
        # A request cancelled while queued is skipped by evaluate().
        t = threading.Thread(target=compiler)
        t.start()
        t.join(5)
        time.sleep(0.05)
        with pytest.raises(TimeoutError):
            iface.evaluate(timeout=0.2)
        del obs


def test_invalid_advice_keeps_the_request_pending_and_errors_reach_the_compiler():
    with GrpcCompilerInterface(timeout=5) as iface:
        out = []

        def compiler():
            out.append(stub(iface).Evaluate(request("c", 0, 1), timeout=5))
            out.append(stub(iface).Evaluate(request("c", 1, 1), timeout=5))

        t = threading.Thread(target=compiler)
        t.start()
        iface.evaluate(timeout=5)
        with pytest.raises(TypeError):
            iface.populate_buffer(1.5)
        with pytest.raises(ValueError):
            iface.populate_buffer([1, 2])
        assert iface.pending is not None
        with pytest.raises(MLBridgeError, match="not been answered"):
            iface.evaluate(timeout=1)
        iface.populate_buffer(5)
        iface.evaluate(timeout=5)
        iface.send_error("cannot decide")
        t.join(5)
        assert out[0].WhichOneof("result") == "tensor"
        assert decode_advice(out[0], TensorSpec("y", "int64_t"), 1 << 20).tolist() == [5]
        assert out[1].error == "cannot decide"


def test_malformed_requests_are_rejected():
    with GrpcCompilerInterface(timeout=5) as iface:
        req = request("c", 0, 1)
        req.features[0].dtype = 0
        errors = []

        def compiler():
            try:
                stub(iface).Evaluate(req, timeout=5)
            except grpc.RpcError as e:
                errors.append(e)

        t = threading.Thread(target=compiler)
        t.start()
        # Rejected when it arrives (grpcio) or when the model takes it
        # (native): evaluate() never returns it.
        with pytest.raises(TimeoutError):
            iface.evaluate(timeout=1)
        t.join(5)
        assert errors[0].code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "dtype is not set" in errors[0].details()


def test_without_the_native_module_grpcio_serves(monkeypatch):
    from mlbridge.grpc import _native
    monkeypatch.setattr(_native, "load", lambda: (None, "not built here (test)"))
    monkeypatch.delenv("MLBRIDGE_GRPC_SERVER")
    with GrpcCompilerInterface() as iface:
        assert iface.server_kind == "grpcio"
    with pytest.raises(MLBridgeError, match="not available: not built here"):
        GrpcCompilerInterface(server="native")


def test_the_chosen_server_serves(server):
    with GrpcCompilerInterface() as iface:
        assert iface.server_kind == server
    with pytest.raises(ValueError, match="server must be one of"):
        GrpcCompilerInterface(server="asyncio")
    with pytest.raises(ValueError, match="inference mode"):
        GrpcCompilerInterface(mode="training", server="grpcio")


def test_port_in_use_fails_loudly():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        with pytest.raises(MLBridgeError, match="cannot listen"):
            GrpcCompilerInterface(f"127.0.0.1:{port}")
    with GrpcCompilerInterface() as first:
        with pytest.raises(MLBridgeError, match="in use"):
            GrpcCompilerInterface(first.address)


def test_port_served_on_the_other_loopback_family_is_refused():
    # A client of localhost:P may reach 127.0.0.1:P or [::1]:P: never two servers.
    with GrpcCompilerInterface("127.0.0.1:0") as v4:
        with pytest.raises(MLBridgeError, match="in use|other loopback"):
            GrpcCompilerInterface(f"[::1]:{v4.port}")
    with socket.socket() as foreign:  # a listener that is not ours
        foreign.bind(("127.0.0.1", 0))
        foreign.listen(1)
        port = foreign.getsockname()[1]
        with pytest.raises(MLBridgeError, match="other loopback address"):
            GrpcCompilerInterface(f"[::1]:{port}")


def test_loopback_by_default_and_argument_checks():
    with pytest.raises(MLBridgeError, match="loopback"):
        GrpcCompilerInterface("0.0.0.0:0")
    with GrpcCompilerInterface("0.0.0.0:0", allow_remote=True) as remote:
        assert remote.port > 0
    with pytest.raises(ValueError):
        GrpcCompilerInterface(mode="both")
    with pytest.raises(ValueError):
        GrpcCompilerInterface(timeout=0)
    with GrpcCompilerInterface(mode="training") as t:
        with pytest.raises(PeerClosed, match="no compilers"):
            t.evaluate(timeout=0.1)
    iface = GrpcCompilerInterface()
    iface.close()
    with pytest.raises(MLBridgeError, match="closed"):
        iface.evaluate()


def test_the_mode_picks_the_class():
    """GrpcCompilerInterface(mode=...) is the mode's class; each mode refuses
    the other's arguments."""
    from mlbridge.grpc import GrpcInferenceInterface, GrpcTrainingInterface
    with GrpcCompilerInterface() as i, GrpcCompilerInterface(mode="training") as t:
        assert type(i) is GrpcInferenceInterface and i.mode == "inference"
        assert type(t) is GrpcTrainingInterface and t.mode == "training"
        assert isinstance(i, GrpcCompilerInterface) and isinstance(t, GrpcCompilerInterface)
    with GrpcTrainingInterface(compilers=[]) as t:
        assert t.compilers == []
    with pytest.raises(ValueError, match="training mode"):
        GrpcCompilerInterface(compilers=["127.0.0.1:1"])
    with pytest.raises(ValueError, match="inference mode"):
        GrpcCompilerInterface(mode="training", user_service=object())
    with pytest.raises(ValueError, match="is the training mode"):
        GrpcTrainingInterface(mode="inference")


def test_training_mode_waits_for_a_compiler_within_its_timeout():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with GrpcCompilerInterface(mode="training", compilers=[f"127.0.0.1:{port}"]) as t:
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            t.evaluate(timeout=0.5)
        assert 0.4 < time.monotonic() - start < 3


def test_user_service_through_reflection():
    pb = load_proto(str(USER_PROTO))
    assert load_proto(str(USER_PROTO)) is pb
    with pytest.raises(MLBridgeError, match="has no field 'unrol'"):
        UserService("/usertest.LoopOptimizer/Advise", pb.LoopFeatures, pb.LoopAdvice,
                    "decision.unrol")
    svc = UserService("/usertest.LoopOptimizer/Advise", pb.LoopFeatures, pb.LoopAdvice,
                      "decision.order")
    assert svc.advice_spec == TensorSpec("decision.order", "int64_t", (-1,))
    with GrpcCompilerInterface(timeout=5, user_service=svc) as iface:
        reply = []

        def compiler():
            ch = grpc.insecure_channel(iface.address)
            call = ch.unary_unary("/usertest.LoopOptimizer/Advise",
                                  request_serializer=pb.LoopFeatures.SerializeToString,
                                  response_deserializer=pb.LoopAdvice.FromString)
            req = pb.LoopFeatures(function="f", weights=[1.0, 2.0], mode=1, ratio=0.5)
            req.loop.trip_count = 9
            req.blocks.add(size=3)
            reply.append(call(req, timeout=5))

        t = threading.Thread(target=compiler)
        t.start()
        obs = iface.evaluate(timeout=5)
        assert obs["loop.trip_count"].tolist() == [9]
        assert obs["weights"].dtype == np.float32
        assert obs["blocks[0].size"].tolist() == [3]
        assert obs["mode"].tolist() == [1] and obs["ratio"].tolist() == [0.5]
        assert obs["function"] == "f"
        iface.populate_buffer([3, 1, 2])
        t.join(5)
        assert list(reply[0].decision.order) == [3, 1, 2]
        assert not reply[0].decision.HasField("unroll")


def test_serve_sends_a_policy_exception_to_the_compiler_and_raises_it():
    with GrpcCompilerInterface(timeout=5) as iface:
        errors = []

        def compiler():
            s = stub(iface)
            try:
                s.Evaluate(request("c", 0, 1), timeout=5)
            except grpc.RpcError as e:
                errors.append(e)

        t = threading.Thread(target=compiler)
        t.start()

        def policy(obs):
            raise ZeroDivisionError("bad model")

        with pytest.raises(ZeroDivisionError, match="bad model"):
            iface.serve(policy, sessions=1, timeout=5)
        t.join(5)
        assert len(errors) == 1
        assert errors[0].code() == grpc.StatusCode.UNKNOWN
        assert "ZeroDivisionError: bad model" in errors[0].details()


def test_serve_answers_requests_queued_before_it_started_and_times_out():
    with GrpcCompilerInterface(timeout=5) as iface:
        got = []

        def compiler():
            got.append(stub(iface).Evaluate(request("c", 0, 21), timeout=5))

        t = threading.Thread(target=compiler)
        t.start()
        time.sleep(0.2)  # queued for evaluate(), before serve() begins
        with pytest.raises(TimeoutError):
            iface.serve(lambda obs: 2 * int(obs["x"][0]), timeout=0.5)
        t.join(5)
        assert decode_advice(got[0], TensorSpec("y", "int64_t"), 1 << 20).tolist() == [42]
