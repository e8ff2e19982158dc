"""EventLoop with pipe peers that are slow in the middle of a message or do
not read their reply (docs/event-loop.md, "Never waiting on one
compiler"): the others are served meanwhile, the slow one gets exactly its
own answer once it goes on, or loses only its session at its deadline.
The peers are compiler_peer.PeerThread."""

import threading
import time

import numpy as np

from compiler_peer import PeerThread
from mlbridge import EventLoop, PipeCompilerInterface, TensorSpec

X = TensorSpec("x", "int64_t", [1])
ADVICE = TensorSpec("y", "int64_t", [1])
# A reply larger than the pipe (1 MiB) holds: 4 MiB of float64.
BIG_ADVICE = TensorSpec("y", "double", [1 << 19])


def twice(obs):
    return 2 * int(obs["x"][0])


def good_peer(count, first=0):
    def fn(peer):
        peer.header([X], ADVICE)
        return [int(peer.observe([first + k])[0]) for k in range(count)]
    return fn


def run_loop(loop, seconds):
    """loop.run() in a thread for ``seconds``; returns the thread."""
    t = threading.Thread(target=lambda: _run_quietly(loop, seconds), daemon=True)
    t.start()
    return t


def _run_quietly(loop, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            loop.run(timeout=seconds, deadline=end)
        except Exception:  # the deadline (TimeoutError): done
            return


def test_a_message_sent_in_two_halves_is_answered_once_whole_and_others_meanwhile():
    """The slow peer sends half of an observation and waits 2 s; the loop
    serves the other peer's 50 requests meanwhile, then decodes the whole
    message and answers it right."""
    slow_iface, good_iface = (PipeCompilerInterface(timeout=10) for _ in range(2))
    half_sent = threading.Event()
    good_done = []

    def slow(peer):
        peer.header([X], ADVICE)
        data = peer.codec.encode_observation(0, [(X, 21)])
        peer.send(data[:len(data) // 2])
        half_sent.set()
        time.sleep(2.0)
        done_while_waiting = len(good_done)
        peer.send(data[len(data) // 2:])
        return int(peer.read_advice()[0]), done_while_waiting

    with EventLoop() as loop:
        loop.add(slow_iface, twice)
        loop.add(good_iface, twice)
        slow_peer = PeerThread(slow_iface.base, "bitstream", slow)
        server = run_loop(loop, 6)
        assert half_sent.wait(10)
        good = PeerThread(good_iface.base, "bitstream", lambda p: good_done.extend(good_peer(50)(p)) or good_done)
        assert good.join() == [2 * k for k in range(50)]
        answer, done_while_waiting = slow_peer.join()
        server.join(10)
    assert answer == 42
    assert done_while_waiting == 50  # served while the slow message was half there
    for iface in (slow_iface, good_iface):
        iface.close()


def test_a_message_never_finished_ends_its_session_at_the_deadline():
    slow_iface = PipeCompilerInterface(timeout=0.5)
    good_iface = PipeCompilerInterface(timeout=10)

    def slow(peer):
        peer.header([X], ADVICE)
        data = peer.codec.encode_observation(0, [(X, 21)])
        peer.send(data[:len(data) // 2])
        time.sleep(2.0)

    with EventLoop() as loop:
        slow_stats = loop.add(slow_iface, twice)
        loop.add(good_iface, twice)
        slow_peer = PeerThread(slow_iface.base, "bitstream", slow)
        server = run_loop(loop, 3)
        good = PeerThread(good_iface.base, "bitstream", good_peer(20))
        assert good.join() == [2 * k for k in range(20)]
        slow_peer.join()
        server.join(10)
    assert slow_stats.ended == 1 and slow_stats.answered == 0
    for iface in (slow_iface, good_iface):
        iface.close()


def test_a_reply_larger_than_the_pipe_waits_while_the_others_are_served():
    """4 MiB of advice for a peer that reads it only after 2 s: the
    loop queues what does not fit and serves the other peer meanwhile; the
    slow peer then gets all of it, right."""
    big_iface, good_iface = (PipeCompilerInterface(timeout=10) for _ in range(2))
    good_done = []
    advice = np.arange(1 << 19, dtype=np.float64)

    def slow(peer):
        peer.header([X], BIG_ADVICE)
        peer.send_observation([1])
        time.sleep(2.0)
        done_while_waiting = len(good_done)
        return peer.read_advice(), done_while_waiting

    with EventLoop() as loop:
        loop.add(big_iface, lambda obs: advice)
        loop.add(good_iface, twice)
        slow_peer = PeerThread(big_iface.base, "bitstream", slow)
        server = run_loop(loop, 6)
        time.sleep(0.3)  # the big reply is queued
        good = PeerThread(good_iface.base, "bitstream", lambda p: good_done.extend(good_peer(50)(p)) or good_done)
        assert good.join() == [2 * k for k in range(50)]
        got, done_while_waiting = slow_peer.join()
        server.join(10)
    assert done_while_waiting == 50
    assert np.array_equal(got, advice)
    for iface in (big_iface, good_iface):
        iface.close()
