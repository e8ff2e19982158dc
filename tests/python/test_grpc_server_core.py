"""GrpcCompilerInterface on the C++ server core (server="native"): what the
core adds to the behaviour tests/python/test_grpc_interface.py checks on
both servers: bounded idle waits that cost no CPU, a compiler killed in the
middle of a request, size limits in both directions, the model's own answer
timeout, and closing with requests pending."""

import os
import signal
import subprocess
import sys
import threading
import time

import grpc
import pytest
from build_components import require_component

from mlbridge import MessageTooLarge, MLBridgeError, PeerClosed, TensorSpec, TimeoutError
from mlbridge.grpc import GrpcCompilerInterface, pb2, pb2_grpc
from mlbridge.grpc.tensors import decode_advice, spec_to_pb, tensor_to_pb

require_component("grpc_python_core")

PYTHON_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "python")


def request(value, advice=TensorSpec("y", "int64_t")):
    req = pb2.Observation(session="s", index=0)
    tensor_to_pb(TensorSpec("x", "int64_t", (len(value),)), value, req.features.add(),
                 "feature")
    spec_to_pb(advice, req.advice)
    return req


def call_in_thread(iface, req, timeout=10):
    """Starts one Evaluate; returns (thread, results: [reply or RpcError])."""
    out = []

    def run():
        s = pb2_grpc.ModelServiceStub(grpc.insecure_channel(iface.address))
        try:
            out.append(s.Evaluate(req, timeout=timeout))
        except grpc.RpcError as e:
            out.append(e)

    t = threading.Thread(target=run)
    t.start()
    return t, out


def native(**kwargs):
    iface = GrpcCompilerInterface(server="native", **kwargs)
    assert iface.server_kind == "native"
    return iface


def test_an_idle_evaluate_waits_its_timeout_and_uses_no_cpu():
    with native(timeout=5) as iface:
        cpu, start = time.process_time(), time.monotonic()
        with pytest.raises(TimeoutError, match="no request"):
            iface.evaluate(timeout=1.0)
        waited, used = time.monotonic() - start, time.process_time() - cpu
        assert 1.0 <= waited < 3.0
        assert used < 0.1, f"an idle second cost {used:.3f} s of CPU"


def test_a_compiler_killed_mid_request_is_an_error_and_the_model_serves_on():
    client = f"""
import sys
sys.path.insert(0, {PYTHON_DIR!r})
import grpc
from mlbridge.grpc import pb2, pb2_grpc
req = pb2.Observation.FromString(bytes.fromhex(sys.argv[2]))
pb2_grpc.ModelServiceStub(grpc.insecure_channel(sys.argv[1])).Evaluate(req, timeout=30)
"""
    with native(timeout=10) as iface:
        proc = subprocess.Popen([sys.executable, "-c", client, iface.address,
                                 request([7]).SerializeToString().hex()])
        try:
            obs = iface.evaluate(timeout=20)
            assert obs["x"].tolist() == [7]
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        time.sleep(0.5)  # the server sees the connection drop
        with pytest.raises(PeerClosed, match="no longer waits"):
            iface.populate_buffer(1)
        t, out = call_in_thread(iface, request([8]))
        obs = iface.evaluate(timeout=10)
        iface.populate_buffer(int(obs["x"][0]) * 2)
        t.join(10)
        assert decode_advice(out[0], TensorSpec("y", "int64_t"), 1 << 20).tolist() == [16]


def test_messages_beyond_the_limit_are_refused_in_both_directions():
    with native(timeout=5, max_message_bytes=4096) as iface:
        t, out = call_in_thread(iface, request(list(range(1000))))  # 8000 bytes of data
        with pytest.raises(TimeoutError):
            iface.evaluate(timeout=0.5)
        t.join(10)
        assert out[0].code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        t, out = call_in_thread(iface, request([1], TensorSpec("y", "int64_t", (-1,))))
        iface.evaluate(timeout=10)
        with pytest.raises(MessageTooLarge, match="4096-byte limit"):
            iface.populate_buffer(list(range(1000)))
        assert iface.pending is None
        t.join(10)
        assert out[0].code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_a_request_the_model_does_not_answer_ends_at_the_model_timeout():
    with native(timeout=0.5) as iface:
        t, out = call_in_thread(iface, request([1]), timeout=None)  # no client deadline
        iface.evaluate(timeout=10)
        t.join(10)
        assert out[0].code() == grpc.StatusCode.DEADLINE_EXCEEDED
        with pytest.raises(PeerClosed):
            iface.populate_buffer(1)


def test_closing_with_requests_pending_ends_them_and_wakes_evaluate():
    iface = native(timeout=10)
    calls = [call_in_thread(iface, request([i])) for i in range(3)]
    iface.evaluate(timeout=10)  # one taken, the others queued
    time.sleep(0.2)
    start = time.monotonic()
    iface.close()
    assert time.monotonic() - start < 6
    for t, out in calls:
        t.join(10)
        assert out[0].code() == grpc.StatusCode.UNAVAILABLE
    with pytest.raises(MLBridgeError, match="closed"):
        iface.evaluate(timeout=1)
    # A thread waiting in evaluate() when another closes the interface.
    other = native(timeout=10)
    errors = []

    def wait():
        try:
            other.evaluate(timeout=10)
        except MLBridgeError as e:
            errors.append(e)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.2)
    start = time.monotonic()
    other.close()
    waiter.join(10)
    assert not waiter.is_alive() and time.monotonic() - start < 6
    assert "closed" in str(errors[0])
