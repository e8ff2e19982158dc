"""The shared-memory model side against compilers that break the rules:
corrupt ring indices, compilers that leave before their session begins
(docs/reliability.md). The compiler is compiler_peer.RingCompiler."""

import socket
import threading
import time

import numpy as np
import pytest

from compiler_peer import RingCompiler
from mlbridge import EventLoop, MLBridgeError, ProtocolError, ShmCompilerInterface, TensorSpec
from mlbridge.serdes import bitstream as bs
from mlbridge.shm import layout as L

X = TensorSpec("x", "int64_t", [1])
ADVICE = TensorSpec("y", "int64_t", [1])


def request(k):
    return (bs.encode_header([X], ADVICE) if k == 0 else b"") + \
        bs.encode_observation(k, [(X, np.array([k]))])


def run_bounded(target, seconds):
    """target() in a thread; what it returned or raised, or "still running"
    after ``seconds`` (the thread is left behind: a daemon)."""
    result = {}

    def run():
        try:
            result["value"] = target()
        except BaseException as e:  # reported to the test
            result["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    return "still running" if t.is_alive() else result


def served_compiler(iface, requests=1):
    """A RingCompiler whose first ``requests`` requests ``iface`` answered
    (the compiler connects in a thread: its hello waits for evaluate())."""
    made = []

    def connect():
        made.append(RingCompiler(iface.path))
        made[0].send(request(0))
    t = threading.Thread(target=connect, daemon=True)
    t.start()
    for k in range(requests):
        assert iface.evaluate() is not None
        iface.populate_buffer(k)
        t.join(10)
        made[0].reply()
        if k + 1 < requests:
            made[0].send(request(k + 1))
    return made[0]


CORRUPTIONS = RingCompiler.CORRUPTIONS


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_corrupt_ring_indices_are_a_clear_error_at_once(how):
    with ShmCompilerInterface(serdes="bitstream", timeout=30, capacity=4096,
                              fast_path=False) as iface:
        # Two requests: the second record restarts at the ring's start.
        compiler = served_compiler(iface, requests=2)
        try:
            compiler.corrupt(how)
            started = time.monotonic()
            outcome = run_bounded(iface.evaluate, 5)
        finally:
            compiler.close()
    assert outcome != "still running", "the model side walks the corrupt ring"
    assert isinstance(outcome.get("error"), ProtocolError), outcome
    assert "corrupt request ring" in str(outcome["error"])
    assert time.monotonic() - started < 1.0
    assert not iface.session_open


def test_a_corrupt_ring_in_an_event_loop_ends_that_session_only_with_a_clear_error():
    with ShmCompilerInterface(serdes="bitstream", timeout=30, capacity=4096) as iface:
        compilers = []
        with EventLoop() as loop:
            loop.add(iface, lambda obs: 2 * int(obs["x"][0]))
            for _ in range(2):
                t = threading.Thread(target=lambda: compilers.append(RingCompiler(iface.path)))
                t.start()
                run_bounded(lambda: loop.run(timeout=0.3), 5)  # accepts it
                t.join(10)
            bad, good = compilers
            try:
                bad.corrupt(CORRUPTIONS[0])
                good.send(request(0))
                outcome = run_bounded(lambda: loop.run(timeout=3), 5)
                assert outcome != "still running", "the loop walks the corrupt ring"
                assert isinstance(outcome.get("error"), ProtocolError), outcome
                assert "corrupt request ring" in str(outcome["error"])
                assert loop.failed is iface
                rest = threading.Thread(target=lambda: run_bounded(
                    lambda: loop.run(timeout=0.5), 5))
                rest.start()
                assert np.frombuffer(good.reply(), "<i8")[-1] == 0
                rest.join(10)
            finally:
                bad.close()
                good.close()


def test_a_compiler_that_left_while_queued_is_passed_over():
    """The first compiler in the listener's queue gave up before the model
    took it (its connection is closed): evaluate() must not fail with the
    socket's BrokenPipeError but serve the next compiler."""
    with ShmCompilerInterface(serdes="bitstream", timeout=10) as iface:
        gone = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        gone.connect(iface.path)
        gone.close()
        replies = []

        def compiler():
            c = RingCompiler(iface.path)
            try:
                c.send(request(0))
                replies.append(c.reply())
            finally:
                c.close()
        t = threading.Thread(target=compiler, daemon=True)
        t.start()
        try:
            obs = iface.evaluate()
        except MLBridgeError:
            raise
        except OSError as e:  # what the fix replaces
            pytest.fail(f"evaluate() raised {e!r}, not served the next compiler")
        assert obs is not None and int(obs["x"][0]) == 0
        iface.populate_buffer(7)
        t.join(10)
    assert np.frombuffer(replies[0], "<i8")[-1] == 7


def test_a_corrupt_reply_ring_tail_is_a_clear_error():
    """The compiler's reply-ring tail ahead of the model's head (it read
    replies that were never written): the model refuses to write over what
    it cannot know is free."""
    with ShmCompilerInterface(serdes="bitstream", timeout=10, fast_path=False) as iface:
        compiler = served_compiler(iface)
        try:
            compiler.send(request(1))
            assert iface.evaluate() is not None
            compiler.word(L.REPLY_TAIL, 1 << 40)
            with pytest.raises(ProtocolError, match="corrupt reply ring"):
                iface.populate_buffer(1)
            assert not iface.session_open
        finally:
            compiler.close()
