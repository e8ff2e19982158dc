"""mlbridge.EventLoop: many real compiler processes (tests/e2e/tools/
e2e_compiler.cpp) served by one Python thread, over pipes and shared memory
at once; replies never cross, and an idle loop uses no CPU."""
import functools
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mlbridge import EventLoop, PipeCompilerInterface, ShmCompilerInterface, TensorSpec
import stream_e2e
from stream_e2e import COMPILER, FORMATS, binary, events

start_compiler = functools.partial(stream_e2e.start_compiler, "pipe")
start_shm_compiler = functools.partial(stream_e2e.start_compiler, "shm")

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import fault_matrix as F  # noqa: E402

REQUESTS = 40


def doubling_policy(seen, channel):
    def policy(obs):
        i = int(obs["i"][0])
        seen.append((channel, i, obs.context))
        return 2 * i
    return policy


@pytest.mark.parametrize("serdes", FORMATS)
def test_eight_pipe_compilers_one_thread(serdes):
    """Eight compilers ask at the same time, each with its own numbers; each
    checks that every reply is twice what it sent (a crossed reply fails
    it), and the model sees each compiler's numbers only on its channel."""
    ifaces = [PipeCompilerInterface(serdes=serdes, timeout=20) for _ in range(8)]
    seen = []
    try:
        with EventLoop() as loop:
            stats = [loop.add(iface, doubling_policy(seen, k)) for k, iface in enumerate(ifaces)]
            procs = [start_compiler(iface.base, serdes, "requests", "--count", REQUESTS,
                                    "--first", 1000 * k) for k, iface in enumerate(ifaces)]
            for iface, proc in zip(ifaces, procs):
                iface.process = proc
            answered = loop.run(sessions=8, timeout=20)
        results = [events(proc) for proc in procs]
    finally:
        for iface in ifaces:
            iface.close()
    assert answered == 8 * REQUESTS
    assert [s.answered for s in stats] == [REQUESTS] * 8
    for k, (lines, err) in enumerate(results):
        assert lines[-1] == {"event": "done", "ok": True}, err
        advice = [e for e in lines if e["event"] == "advice"]
        assert [e["i"] for e in advice] == list(range(1000 * k, 1000 * k + REQUESTS))
        assert all(e["value"] == 2 * e["i"] for e in advice)
    for channel, i, context in seen:
        assert i // 1000 == channel and context == f"request{i % 1000}"


def test_pipes_and_shared_memory_in_one_loop():
    """Four pipe compilers and four shared-memory compilers (one interface
    serves all four) against one loop."""
    pipes = [PipeCompilerInterface(serdes="bitstream", timeout=20) for _ in range(4)]
    shm = ShmCompilerInterface(serdes="bitstream", timeout=20)
    seen = []
    try:
        with EventLoop() as loop:
            for k, iface in enumerate(pipes):
                loop.add(iface, doubling_policy(seen, k))
            shm_stats = loop.add(shm, doubling_policy(seen, "shm"))
            procs = [start_compiler(iface.base, "bitstream", "requests", "--count", REQUESTS,
                                    "--first", 1000 * k) for k, iface in enumerate(pipes)]
            procs += [start_shm_compiler(shm.path, "bitstream", "requests", "--count",
                                         REQUESTS, "--first", 1000 * k) for k in range(4, 8)]
            answered = loop.run(sessions=8, timeout=20)
        results = [events(proc) for proc in procs]
    finally:
        for iface in pipes + [shm]:
            iface.close()
    assert answered == 8 * REQUESTS and shm_stats.answered == 4 * REQUESTS
    assert shm_stats.ended == 4
    for k, (lines, err) in enumerate(results):
        assert lines[-1] == {"event": "done", "ok": True}, err
        assert sum(e["event"] == "advice" for e in lines) == REQUESTS
    for channel, i, _ in seen:
        assert i // 1000 == channel if channel != "shm" else i // 1000 >= 4


def test_idle_loop_uses_no_cpu():
    """Eight connected compilers that each pause a second between two
    requests (and are watched for exit): the loop must sleep through it."""
    ifaces = [PipeCompilerInterface(serdes="bitstream", timeout=20) for _ in range(7)]
    shm = ShmCompilerInterface(serdes="bitstream", timeout=20)
    calls = []

    def policy(obs):
        calls.append((time.monotonic(), time.process_time()))
        return 2 * int(obs["i"][0])

    try:
        with EventLoop() as loop:
            procs = []
            for iface in ifaces:
                loop.add(iface, policy)
                procs.append(start_compiler(iface.base, "bitstream", "requests", "--count", 2,
                                            "--pause-ms", 1000))
                iface.process = procs[-1]
            loop.add(shm, policy)
            procs.append(start_shm_compiler(shm.path, "bitstream", "requests", "--count", 2,
                                            "--pause-ms", 1000))
            shm.process = procs[-1]
            assert loop.run(sessions=8, timeout=20) == 16
        for proc in procs:
            lines, err = events(proc)
            assert lines[-1] == {"event": "done", "ok": True}, err
    finally:
        for iface in ifaces + [shm]:
            iface.close()
    calls.sort()
    gaps = [(b[0] - a[0], b[1] - a[1]) for a, b in zip(calls, calls[1:])]
    wall, cpu = max(gaps)
    assert wall > 0.5, calls  # the pause is in there
    assert cpu < 0.1, f"the idle loop used {cpu:.3f} s of CPU in {wall:.2f} s"


def test_a_failing_policy_ends_only_its_own_channel():
    """A policy that raises closes that compiler's session and leaves run()
    with loop.failed naming its interface; the next run() goes on serving
    the other compiler to the end."""
    bad, good = (PipeCompilerInterface(serdes="bitstream", timeout=20) for _ in range(2))

    def broken(obs):
        raise KeyError("no such feature")

    seen = []
    try:
        with EventLoop() as loop:
            loop.add(bad, broken)
            good_stats = loop.add(good, doubling_policy(seen, 1))
            bad.process = start_compiler(bad.base, "bitstream", "requests", "--count", 3)
            good.process = start_compiler(good.base, "bitstream", "requests", "--count",
                                          REQUESTS, "--first", 1000)
            with pytest.raises(KeyError):
                loop.run(timeout=20)
            assert loop.failed is bad
            loop.run(timeout=20)  # until both compilers have exited
        bad_lines, _ = events(bad.process)
        good_lines, err = events(good.process)
    finally:
        bad.close()
        good.close()
    assert good_lines[-1] == {"event": "done", "ok": True}, err
    assert good_stats.answered == REQUESTS and len(seen) == REQUESTS
    assert bad.process.returncode != 0
    assert any(e["event"] == "error" for e in bad_lines)


def test_a_session_already_read_is_served_by_the_next_run():
    """A compiler that starts its next session without reopening (LLVM does,
    between inliner runs) may have that session's header and first request
    read with the end of the last one; serve(sessions=1) stops there, and
    the next serve() must answer from what was read (epoll will not signal
    it again)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    from compiler_peer import CompilerPeer
    spec, advice = TensorSpec("i", "int64_t", [1]), TensorSpec("twice", "int64_t", [1])
    got = []

    def compiler(base):
        peer = CompilerPeer(base, "bitstream", timeout=10).open()
        try:
            peer.header([spec], advice)
            got.append(int(peer.observe([7])[0]))
            peer.counters.clear()  # the next session numbers from 0 again
            peer.send(peer.codec.encode_header([spec], advice) +
                      peer.codec.encode_observation(0, [(spec, 21)]))
            got.append(int(peer.read_advice()[0]))
        finally:
            peer.close()

    with PipeCompilerInterface(serdes="bitstream", timeout=10) as iface:
        t = threading.Thread(target=compiler, args=(iface.base,))
        t.start()
        assert iface.serve(lambda o: 2 * int(o["i"][0]), sessions=1) == 1
        assert iface.serve(lambda o: 2 * int(o["i"][0]), sessions=1, timeout=5) == 1
        t.join(10)
    assert got == [14, 42]


def test_a_compiler_that_exits_after_its_session_ends_one_session():
    """The compiler closes its ends (its session ends at EOF) but its
    process exits only later (slow exit handlers, a sanitizer's report): the
    loop counts that session once, so run(sessions=2) still waits for the
    other compiler's whole session."""
    ifaces = [PipeCompilerInterface(serdes="bitstream", timeout=20) for _ in range(2)]
    seen = []
    try:
        with EventLoop() as loop:
            stats = [loop.add(iface, doubling_policy(seen, k)) for k, iface in enumerate(ifaces)]
            lingering = subprocess.Popen(
                ["sh", "-c", '"$0" "$@"; sleep 1', str(binary(COMPILER)), "--base",
                 str(ifaces[0].base), "--serdes", "bitstream", "--scenario", "requests",
                 "--count", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            slow = start_compiler(ifaces[1].base, "bitstream", "requests", "--count", 8,
                                  "--first", 1000, "--pause-ms", 250)
            ifaces[0].process, ifaces[1].process = lingering, slow
            loop.run(sessions=2, timeout=20)
        results = [events(p) for p in (lingering, slow)]
    finally:
        for iface in ifaces:
            iface.close()
    assert [(s.answered, s.ended) for s in stats] == [(3, 1), (8, 1)]
    assert all(lines[-1] == {"event": "done", "ok": True} for lines, _ in results), results


def test_frozen_compilers_cost_only_their_own_sessions():
    """A pipe compiler frozen (SIGSTOP) in the middle of an observation and
    a shared-memory compiler that never reads its replies, under one loop
    with two good compilers on each transport: the good ones are all served
    within their 1 s reply deadline (the interfaces wait 30 s for a peer:
    a loop that waited on a frozen one would make them all miss it)."""
    stats = F.check_frozen_peers_cost_only_their_sessions(
        [("pipe", "observation", "half-stop"), ("shm", "reply", "unread")])
    # The unread compiler was answered until its reply ring was full.
    assert stats["shm"].answered >= 2 * 20 + 100
