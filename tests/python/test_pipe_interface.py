"""PipeCompilerInterface end to end against a Python compiler-side peer."""

import builtins
import os
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import mlbridge
from compiler_peer import ADVICE, SPECS, CompilerPeer, PeerThread
from mlbridge import (MLBridgeError, PeerClosed, PipeCompilerInterface, ProtocolError,
                      TensorSpec)

HERE = os.path.dirname(os.path.abspath(__file__))
PEER_SCRIPT = os.path.join(HERE, "compiler_peer.py")
PYTHON_DIR = os.path.abspath(os.path.join(HERE, "..", "..", "python"))
MATRIX = [[1, 2, 3], [4, 5, 6]]
SERDES = ["bitstream", "json"]


def spawn_peer(base, serdes, scenario):
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    return subprocess.Popen([sys.executable, PEER_SCRIPT, base, serdes, scenario],
                            stdout=subprocess.PIPE, text=True, env=env)


@pytest.fixture(params=SERDES)
def iface(request):
    with PipeCompilerInterface(serdes=request.param, timeout=5) as iface:
        yield iface


# ---- FIFOs and cleanup --------------------------------------------------------------
def test_private_fifos_permissions_and_cleanup():
    old = os.umask(0)  # even a permissive umask must not widen the modes
    try:
        iface = PipeCompilerInterface()
    finally:
        os.umask(old)
    directory = os.path.dirname(iface.base)
    assert iface.in_path == iface.base + ".in" and iface.out_path == iface.base + ".out"
    assert os.path.basename(iface.base) == "channel"
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    for path in (iface.in_path, iface.out_path):
        st = os.stat(path)
        assert stat.S_ISFIFO(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    iface.close()
    assert not os.path.exists(directory)
    iface.close()  # idempotent
    with pytest.raises(MLBridgeError, match="closed"):
        iface.evaluate()


def test_context_manager_cleans_up_on_exception():
    with pytest.raises(RuntimeError):
        with PipeCompilerInterface() as iface:
            base = iface.base
            raise RuntimeError("boom")
    assert not os.path.exists(os.path.dirname(base))


def test_explicit_base_creates_and_reuses_fifos(tmp_path):
    base = str(tmp_path / "chan")
    with PipeCompilerInterface(base) as iface:
        assert iface.base == base
        assert stat.S_IMODE(os.stat(base + ".in").st_mode) == 0o600
    assert not os.path.exists(base + ".in") and not os.path.exists(base + ".out")
    os.mkfifo(base + ".in", 0o600)
    os.mkfifo(base + ".out", 0o600)
    with PipeCompilerInterface(base):
        pass
    assert os.path.exists(base + ".in")  # not ours: left in place
    (tmp_path / "file.in").write_text("not a fifo")
    with pytest.raises(MLBridgeError, match="exists and is not a FIFO"):
        PipeCompilerInterface(str(tmp_path / "file"))
    with pytest.raises(MLBridgeError, match="cannot create FIFO"):
        PipeCompilerInterface(str(tmp_path / "missing" / "chan"))
    with pytest.raises(ValueError, match="unknown serdes"):
        PipeCompilerInterface(serdes="xml")


# ---- timeouts and dead peers ----------------------------------------------------------
def test_evaluate_times_out_when_nobody_opens():
    with PipeCompilerInterface(timeout=30) as iface:
        start = time.monotonic()
        with pytest.raises(mlbridge.TimeoutError) as info:
            iface.evaluate(timeout=0.5)
        elapsed = time.monotonic() - start
    assert 0.45 <= elapsed < 1.5
    assert isinstance(info.value, builtins.TimeoutError)
    assert isinstance(info.value, MLBridgeError)
    assert "no compiler opened" in str(info.value) and "0.5 s" in str(info.value)


def test_evaluate_times_out_when_the_compiler_goes_quiet(iface):
    def peer(p):
        p.header(SPECS, ADVICE)
        time.sleep(1.0)

    t = PeerThread(iface.base, iface.serdes, peer)
    start = time.monotonic()
    with pytest.raises(mlbridge.TimeoutError, match="no message from the compiler"):
        iface.evaluate(timeout=0.3)
    assert time.monotonic() - start < 1.0
    assert iface.session_open  # a timeout between messages keeps the session
    assert iface.evaluate(timeout=5) is None  # the peer closes after its sleep
    t.join()


@pytest.mark.parametrize("serdes", SERDES)
def test_peer_killed_mid_session_returns_none(serdes):
    with PipeCompilerInterface(serdes=serdes, timeout=10) as iface:
        proc = spawn_peer(iface.base, serdes, "hang_after_one")
        try:
            obs = iface.evaluate()
            assert obs["a"].tolist() == [7]
            iface.populate_buffer(3)
            assert proc.stdout.readline() == "advice [3]\n"
            proc.kill()
            start = time.monotonic()
            assert iface.evaluate() is None
            assert time.monotonic() - start < 1.0
            assert not iface.session_open
        finally:
            proc.kill()
            proc.wait()


def test_process_exit_before_opening_returns_none_promptly(tmp_path):
    proc = spawn_peer(str(tmp_path / "unused"), "bitstream", "never_open")  # exits after 0.3 s
    with PipeCompilerInterface(timeout=10, process=proc) as iface:
        start = time.monotonic()
        assert iface.evaluate() is None
        assert time.monotonic() - start < 3.0
        proc.wait()
        start = time.monotonic()
        assert iface.evaluate() is None  # stays prompt once the process is gone
        assert iface.serve(lambda obs: 0) == 0  # and serve() stops instead of spinning
        assert time.monotonic() - start < 0.5


def test_process_exit_after_opening_returns_none(tmp_path):
    base = str(tmp_path / "chan")
    os.mkfifo(base + ".in", 0o600)
    os.mkfifo(base + ".out", 0o600)
    with PipeCompilerInterface(base, timeout=10) as iface:
        proc = spawn_peer(base, "bitstream", "open_and_exit")
        iface.process = proc  # the usual order: the compiler needs iface.base first
        start = time.monotonic()
        assert iface.evaluate() is None
        assert time.monotonic() - start < 3.0
    proc.wait()


def test_process_given_at_construction_as_a_function_of_the_base(tmp_path):
    # docs/pipes.md: the compiler needs the channel's path, so process= may be
    # a function of the base, called once the FIFOs exist.
    bases = []

    def start(base):
        bases.append(base)
        return spawn_peer(base, "bitstream", "open_and_exit")
    with PipeCompilerInterface(timeout=10, process=start) as iface:
        assert bases == [iface.base] and iface.process.args[-3] == iface.base
        start_t = time.monotonic()
        assert iface.evaluate() is None   # the compiler's exit is seen
        assert time.monotonic() - start_t < 3.0
        iface.process.wait()
    with pytest.raises(RuntimeError, match="cannot start"):
        PipeCompilerInterface(process=lambda base: (_ for _ in ()).throw(
            RuntimeError("cannot start")))


# ---- sessions ------------------------------------------------------------------------
def test_several_requests_contexts_and_specs(iface):
    def peer(p):
        p.header(SPECS, ADVICE)
        p.context("f1")
        got = [p.observe([i, MATRIX]).tolist() for i in range(3)]
        p.context("f2")  # a context with no observation
        return got

    t = PeerThread(iface.base, iface.serdes, peer)
    seen = []
    while (obs := iface.evaluate()) is not None:
        assert obs.context == "f1" and obs.advice_spec == ADVICE
        assert obs["b"].tolist() == MATRIX and obs["b"].dtype == np.float32
        seen.append(obs.index)
        iface.populate_buffer(int(obs["a"][0]) * 10)
    assert t.join() == [[0], [10], [20]]
    assert seen == [0, 1, 2]
    assert iface.context == "f2"
    assert iface.feature_specs == tuple(SPECS) and iface.advice_spec == ADVICE


def test_two_consecutive_sessions_with_different_specs(iface):
    float_advice = TensorSpec("priority", "float", [1])
    vec = TensorSpec("v", "int32_t", [4])

    def peer(p):
        p.header(SPECS, ADVICE)
        first = p.observe([1, MATRIX]).tolist()
        p.close()
        p.open()
        p.header([vec], float_advice)
        second = [p.observe([[1, 2, 3, 4]]).tolist(), p.observe([[5, 6, 7, 8]]).tolist()]
        return first, second

    t = PeerThread(iface.base, iface.serdes, peer)
    obs = iface.evaluate()
    iface.populate_buffer(1)
    assert iface.evaluate() is None
    answers = []
    while (obs := iface.evaluate()) is not None:
        assert obs.advice_spec == float_advice and list(obs) == ["v"]
        answers.append(float(obs["v"].sum()) / 2)
        iface.populate_buffer(answers[-1])
    assert t.join() == ([1], [[5.0], [13.0]])


def test_serve_counts_requests_and_sessions(iface):
    def peer(p):
        for session in range(2):
            if session:
                p.open()
            p.header(SPECS, ADVICE)
            for i in range(3):
                assert p.observe([i, MATRIX]).tolist() == [i + 1]
            p.close()

    t = PeerThread(iface.base, iface.serdes, peer)
    assert iface.serve(lambda obs: int(obs["a"][0]) + 1, sessions=2) == 6
    t.join()


def test_serve_returns_on_timeout_after_a_session(iface):
    def peer(p):
        p.header(SPECS, ADVICE)
        p.observe([0, MATRIX])

    t = PeerThread(iface.base, iface.serdes, peer)
    start = time.monotonic()
    assert iface.serve(lambda obs: 0, timeout=0.5) == 1
    assert time.monotonic() - start < 3
    t.join()
    with pytest.raises(mlbridge.TimeoutError):
        iface.serve(lambda obs: 0, timeout=0.2)  # no session at all: raise


def test_serve_propagates_policy_errors(iface):
    def peer(p):
        p.header(SPECS, ADVICE)
        with pytest.raises(PeerClosed):
            p.observe([0, MATRIX])

    t = PeerThread(iface.base, iface.serdes, peer)

    def policy(obs):
        raise KeyError("no such feature")

    with pytest.raises(KeyError):
        iface.serve(policy)
    assert not iface.session_open
    t.join()


# ---- replies ---------------------------------------------------------------------------
def test_populate_buffer_validation_sends_nothing(iface):
    received = []
    ready = threading.Event()

    def peer(p):
        p.header(SPECS, ADVICE)
        p.send_observation([0, MATRIX])
        ready.wait(5)
        # nothing may have been written for the rejected values
        with pytest.raises(mlbridge.TimeoutError):
            p.read_advice(timeout=0.2)
        received.append(p.read_advice().tolist())

    t = PeerThread(iface.base, iface.serdes, peer)
    obs = iface.evaluate()
    for bad, exc in [(1.5, TypeError), (True, TypeError), ([1, 2], ValueError),
                     (2 ** 64, ValueError), ("x", TypeError)]:
        with pytest.raises(exc):
            iface.populate_buffer(bad)
        assert iface.pending is obs
    ready.set()
    time.sleep(0.3)
    iface.populate_buffer(np.int64(4))
    assert iface.pending is None
    t.join()
    assert received == [[4]]


def test_call_order_errors(iface):
    with pytest.raises(MLBridgeError, match="no pending observation"):
        iface.populate_buffer(1)

    def peer(p):
        p.header(SPECS, ADVICE)
        return p.observe([0, MATRIX]).tolist()

    t = PeerThread(iface.base, iface.serdes, peer)
    obs = iface.evaluate()
    with pytest.raises(MLBridgeError, match=f"observation {obs.index} has not been answered"):
        iface.evaluate()
    iface.populate_buffer(0)
    assert t.join() == [0]


def test_send_error(iface):
    def peer(p):
        p.header(SPECS, ADVICE)
        with pytest.raises(mlbridge.ModelError, match="cannot decide"):
            p.observe([0, MATRIX])
        return True

    def bitstream_peer(p):
        p.header(SPECS, ADVICE)
        return p.observe([0, MATRIX]).tolist()

    bitstream = iface.serdes == "bitstream"
    t = PeerThread(iface.base, iface.serdes, bitstream_peer if bitstream else peer)
    iface.evaluate()
    if bitstream:
        with pytest.raises(MLBridgeError, match="no error channel"):
            iface.send_error("cannot decide")
        iface.populate_buffer(0)  # still pending, still answerable
        assert t.join() == [0]
    else:
        iface.send_error("cannot decide")
        assert iface.pending is None
        assert t.join()


def test_reply_to_vanished_compiler_raises_peer_closed(iface):
    def peer(p):
        p.header(SPECS, ADVICE)
        p.send_observation([0, MATRIX])
        os.close(p.in_fd)  # gone without reading the reply
        p.in_fd = None

    t = PeerThread(iface.base, iface.serdes, peer)
    iface.evaluate()
    t.join()
    with pytest.raises(PeerClosed):
        iface.populate_buffer(1)
    assert not iface.session_open and iface.pending is None


def test_dynamic_advice_over_pipe(iface):
    spec = TensorSpec("order", "int32_t", [-1])

    def peer(p):
        p.header(SPECS, spec)
        return p.observe([0, MATRIX]).tolist()

    t = PeerThread(iface.base, iface.serdes, peer)
    iface.evaluate()
    iface.populate_buffer([3, 1, 2, 0])
    assert t.join() == [3, 1, 2, 0]


def test_malformed_input_drops_the_session(iface):
    def peer(p):
        p.header(SPECS, ADVICE)
        p.send(b"this is not a message\n")
        time.sleep(0.2)
        p.close()
        p.open()  # a fresh session is served normally
        p.header(SPECS, ADVICE)
        return p.observe([5, MATRIX]).tolist()

    t = PeerThread(iface.base, iface.serdes, peer)
    inodes = [os.stat(p).st_ino for p in (iface.in_path, iface.out_path)]
    with pytest.raises(ProtocolError, match="malformed message"):
        iface.evaluate()
    assert not iface.session_open
    # New FIFOs: the next session cannot attach to the rest of the broken stream.
    assert [os.stat(p).st_ino for p in (iface.in_path, iface.out_path)] != inodes
    assert stat.S_IMODE(os.stat(iface.in_path).st_mode) == 0o600
    obs = iface.evaluate()
    iface.populate_buffer(int(obs["a"][0]))
    assert t.join() == [5]


def test_timeout_inside_a_message_drops_the_session():
    with PipeCompilerInterface(timeout=5) as iface:
        def peer(p):
            p.header(SPECS, ADVICE)
            p.send(b'{"observation":0}\n' + bytes(10))  # 22 payload bytes missing
            time.sleep(0.6)

        t = PeerThread(iface.base, "bitstream", peer)
        with pytest.raises(mlbridge.TimeoutError):
            iface.evaluate(timeout=0.3)
        assert not iface.session_open
        t.join()


def test_large_observations_and_trace(tmp_path):
    big = TensorSpec("big", "float", [1 << 20])  # 4 MiB payload
    small = TensorSpec("n", "int64_t", [1])
    data = np.arange(1 << 20, dtype=np.float32)
    trace = tmp_path / "trace.bin"
    with PipeCompilerInterface(timeout=10, trace=str(trace)) as iface:
        def peer(p):
            p.header([small, big], ADVICE)
            out = [p.observe([i, data + i]).tolist() for i in range(3)]
            p.close()
            return out

        t = PeerThread(iface.base, "bitstream", peer)
        n = iface.serve(lambda obs: int(obs["big"][-1] - obs["big"][0] + obs["n"][0]),
                        sessions=1)
        assert n == 3
        assert t.join() == [[(1 << 20) - 1 + i] for i in range(3)]
    expected = mlbridge.serdes.bitstream.encode_header([small, big], ADVICE) + b"".join(
        mlbridge.serdes.bitstream.encode_observation(i, [(small, i), (big, data + i)])
        for i in range(3))
    assert trace.read_bytes() == expected


def test_json_large_vector():
    vec = TensorSpec("v", "double", [100_000])
    data = np.linspace(-1, 1, 100_000)
    with PipeCompilerInterface(serdes="json", timeout=10) as iface:
        def peer(p):
            p.header([vec], TensorSpec("s", "double", [1]))
            return p.observe([data]).tolist()

        t = PeerThread(iface.base, "json", peer)
        obs = iface.evaluate()
        assert np.array_equal(obs["v"], data)
        iface.populate_buffer(float(obs["v"].sum()))
        assert t.join() == [pytest.approx(float(data.sum()))]


def test_demo_model_serves_sessions_and_exits_zero(tmp_path):
    base = str(tmp_path / "demo")
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    proc = subprocess.Popen([sys.executable, "-m", "mlbridge.examples.demo_model",
                             "--base", base, "--sessions", "2", "--timeout", "10"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(base + ".out") and time.monotonic() < deadline:
            time.sleep(0.01)
        answers = []
        for session in range(2):
            peer = CompilerPeer(base, "bitstream", timeout=10).open(blocking=True)
            peer.header(SPECS, ADVICE)
            answers += [peer.observe([i, MATRIX]).tolist() for i in range(2)]
            peer.close()
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert out == b""  # never writes to stdout
    # score = 1.0 * a - 0.5/2 * mean(b) = a - 0.875 -> int() % 10
    assert answers == [[0], [0], [0], [0]] or all(0 <= a[0] < 10 for a in answers)


@pytest.mark.parametrize("spec", [
    TensorSpec("d", "int64_t", [1]), TensorSpec("d", "uint8_t", [4]),
    TensorSpec("d", "float", [1]), TensorSpec("d", "double", [-1, 2]),
    TensorSpec("d", "bool", [2]), TensorSpec("d", "string", [-1]),
    TensorSpec("d", "string", [3]), TensorSpec("d", "int8_t", [0]),
])
def test_demo_policy_answers_every_advice_spec(spec):
    from mlbridge.examples import demo_model
    from mlbridge.serdes import bitstream, json as js
    specs = [TensorSpec("i", "int32_t", [3]), TensorSpec("s", "string", [2]),
             TensorSpec("f", "float", [2])]
    stream = bitstream.encode_header(specs, spec) + bitstream.encode_observation(
        0, zip(specs, [[1, 2, 3], "ab", [np.nan, 1e30]]))
    from cases import decode_all
    obs = decode_all(bitstream, stream)[1]
    advice = demo_model.policy(obs)
    assert bitstream.encode_advice(spec, advice) is not None
    assert js.encode_advice(spec, advice).startswith(b'{"advice":')


# ---- FdReader ------------------------------------------------------------------------
def test_fd_reader_lines_exact_reads_and_limits():
    r, w = os.pipe()
    data = b"".join(b"line %d\n" % i for i in range(2000)) + bytes(range(256)) * 800 + b"end\n"
    tee = __import__("io").BytesIO()

    def writer():
        for i in range(0, len(data), 999):  # odd-sized pieces across buffer boundaries
            os.write(w, data[i:i + 999])
        os.close(w)

    t = threading.Thread(target=writer)
    t.start()
    reader = mlbridge.FdReader(r, tee=tee, chunk_size=1024)
    reader.deadline = time.monotonic() + 10
    for i in range(2000):
        assert reader.read_line(100) == b"line %d" % i
    block = reader.read_exact(256 * 800)  # larger than the buffer: read straight into it
    assert bytes(block) == bytes(range(256)) * 800
    assert reader.read_line(10) == b"end"
    with pytest.raises(PeerClosed) as info:
        reader.read_line(10)
    assert info.value.clean
    t.join()
    assert tee.getvalue() == data
    os.close(r)

    r, w = os.pipe()
    os.write(w, b"x" * 5000)
    reader = mlbridge.FdReader(r, chunk_size=1024)
    with pytest.raises(mlbridge.MessageTooLarge, match="2000-byte limit"):
        reader.read_line(2000, deadline=time.monotonic() + 5)
    start = time.monotonic()
    with pytest.raises(mlbridge.TimeoutError):
        reader.read_exact(10000, deadline=time.monotonic() + 0.2)
    assert time.monotonic() - start < 1
    assert reader.buffered == 5000  # nothing lost: a later call resumes
    os.write(w, b"y" * 5000)
    assert bytes(reader.read_exact(10000, deadline=time.monotonic() + 5)) == b"x" * 5000 + b"y" * 5000
    os.write(w, b"z")
    os.close(w)
    with pytest.raises(PeerClosed) as info:
        reader.read_exact(10, deadline=time.monotonic() + 5)
    assert not info.value.clean and "after 1 of 10 bytes" in str(info.value)
    os.close(r)
