"""GrpcCompilerInterface (inference mode) at the edges, with both servers
(the C++ server core and grpcio's): compilers that leave while their
request is queued or taken, deadlines shorter than the queueing time, a
late answer never reaching another compiler, messages exactly at the size
limit and one byte over, malformed requests, Ctrl-C inside evaluate(),
interpreter exit without close(), and fork."""

import os
import subprocess
import sys
import textwrap
import threading
import time

import grpc
import pytest

from mlbridge import PeerClosed, TensorSpec, TimeoutError
from mlbridge.grpc import GrpcCompilerInterface, pb2, pb2_grpc
from mlbridge.grpc.tensors import decode_advice, spec_to_pb, tensor_to_pb

PYTHON_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "python")
ADVICE = TensorSpec("y", "int64_t")
EVALUATE = "/mlbridge.v1.ModelService/Evaluate"


# Every test runs on both inference servers (the fixture is in conftest.py).
pytestmark = pytest.mark.usefixtures("server")


def request(value, session="s"):
    req = pb2.Observation(session=session, index=0)
    tensor_to_pb(TensorSpec("x", "int64_t"), value, req.features.add(), "feature")
    spec_to_pb(ADVICE, req.advice)
    return req


def call_in_thread(address, payload, timeout=10.0):
    """One Evaluate of raw bytes on its own channel; (thread, [reply bytes or RpcError])."""
    out = []

    def run():
        with grpc.insecure_channel(address) as ch:
            call = ch.unary_unary(EVALUATE)  # bytes in, bytes out
            try:
                out.append(call(payload, timeout=timeout))
            except grpc.RpcError as e:
                out.append(e)

    t = threading.Thread(target=run, daemon=True)  # never holds up an exit
    t.start()
    return t, out


def answer_of(reply):
    return int(decode_advice(pb2.Advice.FromString(reply), ADVICE, 1 << 20)[0])


def serve_one(iface, value):
    """A client asks with x = value, the model answers 2 x; what the client
    got."""
    t, out = call_in_thread(iface.address, request(value).SerializeToString())
    obs = iface.evaluate(timeout=10)
    assert obs["x"].tolist() == [value]
    iface.populate_buffer(2 * value)
    t.join(10)
    return answer_of(out[0])


def queued_client(address, value, seconds=30):
    """A compiler process with one request on its way (killed by the test)."""
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {PYTHON_DIR!r})
        import grpc
        from mlbridge.grpc import pb2, pb2_grpc
        req = pb2.Observation.FromString(bytes.fromhex(sys.argv[2]))
        pb2_grpc.ModelServiceStub(grpc.insecure_channel(sys.argv[1])).Evaluate(
            req, timeout={seconds})
    """)
    return subprocess.Popen([sys.executable, "-c", code, address,
                             request(value).SerializeToString().hex()])


def test_a_compiler_gone_while_queued_is_never_handed_out():
    with GrpcCompilerInterface(timeout=10) as iface:
        proc = queued_client(iface.address, 7)
        time.sleep(1.0)  # its request is queued; nobody takes it
        proc.kill()
        proc.wait(10)
        time.sleep(0.5)  # the server sees the connection drop
        with pytest.raises(TimeoutError):
            iface.evaluate(timeout=0.5)
        assert serve_one(iface, 8) == 16


def test_a_late_answer_never_reaches_the_next_compiler():
    """A takes its request, gives up (deadline); B asks. The answer meant
    for A is refused (PeerClosed) and B gets exactly its own answer."""
    with GrpcCompilerInterface(timeout=10) as iface:
        ta, out_a = call_in_thread(iface.address, request(1, "A").SerializeToString(),
                                   timeout=0.3)
        obs_a = iface.evaluate(timeout=10)
        ta.join(10)
        assert out_a[0].code() == grpc.StatusCode.DEADLINE_EXCEEDED
        tb, out_b = call_in_thread(iface.address, request(2, "B").SerializeToString())
        time.sleep(0.3)  # B's request is queued before A is answered
        with pytest.raises(PeerClosed, match="no longer waits"):
            iface.populate_buffer(100 + int(obs_a["x"][0]))
        obs_b = iface.evaluate(timeout=10)
        assert obs_b.session == "B"
        iface.populate_buffer(200 + int(obs_b["x"][0]))
        tb.join(10)
        assert answer_of(out_b[0]) == 202


def test_deadlines_shorter_than_the_queueing_time():
    """Requests whose compilers give up while the model is busy are never
    handed out; each compiler gets DEADLINE_EXCEEDED, none an answer."""
    with GrpcCompilerInterface(timeout=10) as iface:
        calls = [call_in_thread(iface.address, request(i).SerializeToString(), timeout=0.2)
                 for i in range(5)]
        for t, _ in calls:
            t.join(10)
        with pytest.raises(TimeoutError):
            iface.evaluate(timeout=0.5)
        assert all(out[0].code() == grpc.StatusCode.DEADLINE_EXCEEDED for _, out in calls)


def padded(req, size):
    """req's bytes grown to exactly ``size`` with an unknown field (15,
    length-delimited), which protobuf parsers keep and skip."""
    body = req.SerializeToString()
    for length_bytes in range(1, 6):
        n = size - len(body) - 1 - length_bytes
        varint = bytearray()
        v = n
        while True:
            b, v = v & 0x7F, v >> 7
            varint.append(b | (0x80 if v else 0))
            if not v:
                break
        if len(varint) == length_bytes:
            return body + bytes([15 << 3 | 2]) + bytes(varint) + b"\0" * n
    raise AssertionError("cannot pad")


def test_a_request_exactly_at_the_limit_is_served_one_byte_over_is_refused():
    limit = 4096
    with GrpcCompilerInterface(timeout=10, max_message_bytes=limit) as iface:
        at = padded(request(5), limit)
        assert len(at) == limit
        t, out = call_in_thread(iface.address, at)
        obs = iface.evaluate(timeout=10)
        assert obs["x"].tolist() == [5]
        iface.populate_buffer(10)
        t.join(10)
        assert answer_of(out[0]) == 10
        t, out = call_in_thread(iface.address, padded(request(6), limit + 1))
        with pytest.raises(TimeoutError):
            iface.evaluate(timeout=0.5)
        t.join(10)
        assert out[0].code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_a_malformed_request_is_refused_and_the_next_one_served(server):
    """Malformed requests queued before a good one: evaluate() refuses them
    (INVALID_ARGUMENT; grpcio's server as they arrive) and returns the good
    one."""
    with GrpcCompilerInterface(timeout=10) as iface:
        bad_calls = [call_in_thread(iface.address, payload)
                     for payload in (b"\xff\xff\xff", b"\x0a\x7f")]  # not protobuf; cut short
        time.sleep(0.3)
        assert serve_one(iface, 3) == 6
        for tb, bad in bad_calls:
            tb.join(10)
            # grpcio's own deserializer fails the call before the interface sees it.
            assert bad[0].code() == (grpc.StatusCode.INVALID_ARGUMENT if server == "native"
                                     else grpc.StatusCode.INTERNAL), bad[0]


def run_python(body, timeout=30):
    """Runs PRELUDE + body in a fresh interpreter."""
    return subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
                          capture_output=True, text=True, timeout=timeout)


PRELUDE = f"""
import os, sys, signal, threading, time
sys.path.insert(0, {PYTHON_DIR!r})
sys.path[:0] = {[os.path.dirname(os.path.abspath(__file__)),
                 os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]!r}
import grpc
from mlbridge.grpc import GrpcCompilerInterface, pb2
from test_grpc_edge_cases import call_in_thread, request, answer_of
"""


def test_ctrl_c_inside_evaluate_raises_keyboard_interrupt_and_the_interface_serves_on():
    r = run_python("""
        iface = GrpcCompilerInterface(timeout=30)
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        start = time.monotonic()
        try:
            iface.evaluate(timeout=20)
        except KeyboardInterrupt:
            print("interrupted after", round(time.monotonic() - start, 1), flush=True)
        t, out = call_in_thread(iface.address, request(4).SerializeToString())
        obs = iface.evaluate(timeout=10)
        iface.populate_buffer(8)
        t.join(10)
        print("answer", answer_of(out[0]), iface.server_kind, flush=True)
        iface.close()
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("interrupted after") and float(lines[0].split()[-1]) < 2.0
    assert lines[1] == f"answer 8 {os.environ['MLBRIDGE_GRPC_SERVER']}"


def test_interpreter_exit_without_close_neither_hangs_nor_aborts():
    """Compilers' requests taken and queued, a daemon thread blocked in
    evaluate() of a second interface: the process exits at once, with
    status 0, and the compilers get UNAVAILABLE (grpcio's server held the
    exit up to the compilers' deadline)."""
    started = time.monotonic()
    r = run_python(f"""
        from test_grpc_edge_cases import queued_client
        iface = GrpcCompilerInterface(timeout=30)
        compilers = [queued_client(iface.address, i, seconds=20) for i in range(3)]
        iface.evaluate(timeout=10)  # one taken, two queued
        other = GrpcCompilerInterface(timeout=30)
        threading.Thread(target=other.evaluate, args=(25,), daemon=True).start()
        time.sleep(0.5)
        print(" ".join(str(c.pid) for c in compilers), flush=True)
    """)
    took = time.monotonic() - started
    assert r.returncode == 0, r.stderr
    assert "abort" not in r.stderr.lower() and "terminate called" not in r.stderr, r.stderr
    assert took < 10, f"the exit took {took:.1f} s"
    for pid in map(int, r.stdout.split()):  # the compilers end soon after
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{pid}") or \
            open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    assert r.stderr.count("StatusCode.UNAVAILABLE") == 3, r.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_fork_after_creating_the_interface_the_parent_serves_on():
    """A child forked after the interface exists exits normally (its exit
    closes the inherited interface: a no-op there); the parent serves on,
    new connections included. (It crashed the child and broke the parent's
    listener with the native server, and hung with grpcio's.) The child
    must not use the parent's interface (docs/grpc.md)."""
    r = run_python("""
        iface = GrpcCompilerInterface(timeout=30)
        pid = os.fork()
        if pid == 0:
            sys.exit(7)  # a child that does its own work and exits
        _, status = os.waitpid(pid, 0)
        t, out = call_in_thread(iface.address, request(9).SerializeToString())
        obs = iface.evaluate(timeout=10)
        iface.populate_buffer(18)
        t.join(10)
        print(os.waitstatus_to_exitcode(status), answer_of(out[0]), flush=True)
        iface.close()
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "7 18\n", r.stderr


def test_close_with_a_compiler_still_connected_is_quick():
    """A compiler's channel stays open after its call (grpcio's stubs do
    not act on the server's GOAWAY while idle): close() still returns
    within about a second (the native server waited 5 s)."""
    iface = GrpcCompilerInterface(timeout=10)
    channel = grpc.insecure_channel(iface.address)
    try:
        stub = pb2_grpc.ModelServiceStub(channel)
        t = threading.Thread(target=stub.Evaluate, args=(request(1),), kwargs={"timeout": 30},
                             daemon=True)
        t.start()
        iface.evaluate(timeout=10)
        iface.populate_buffer(2)
        t.join(10)
        start = time.monotonic()
        iface.close()
        assert time.monotonic() - start < 2.5
    finally:
        channel.close()

