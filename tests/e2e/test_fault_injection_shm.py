"""Fault injection at every step of a shared-memory session, both
directions: the matrix of test_fault_injection.py (pipes) over
ShmModelRunner and ShmCompilerInterface (docs/shm.md).

* Model faults: the real C++ compiler (mlbridge-e2e-compiler --shm, 3
  requests) against the fault-injecting fake model
  (tools/fault_injecting_model.py shm: the real interface's session with a
  fault at one step). A reply is one ring record, published whole: a
  truncated reply is a short record, a duplicated one two records.
* Compiler faults: the fault-injecting fake compiler
  (tools/fault_injecting_compiler.py shm: the rings written from Python)
  against the real ShmCompilerInterface; then a real compiler session must
  be served correctly. Also corrupt ring indices, and a compiler that
  never reads its replies under an EventLoop with good compilers.
* The model's listen queue full: real compilers against the real
  ShmCompilerInterface while it accepts nobody.

docs/reliability.md lists every case and its outcome.
"""
import sys
import threading
import time
from pathlib import Path

import pytest

from mlbridge import EventLoop, ShmCompilerInterface
from mlbridge.shm import interface as shm_interface

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import fault_matrix as F  # noqa: E402

# What each model fault must give the compiler. Shared memory reports a
# dead model at once (the socket hangs up), a frozen or slow one at the
# deadline, and a wrong reply record as malformed.
EXPECTED = {"kill": {"peer-closed"}, "stop": {"timeout"}, "delay": {"timeout"},
            "truncate": {"malformed"}, "duplicate": {"malformed"}}


def expected(step, fault):
    if step == "close":
        return {"answers"}  # all three answers were in before the fault
    if step == "open" and fault == "kill":
        # Nobody listens any more (not-found at the open deadline), or the
        # connection was queued on the listener before it closed.
        return {"not-found", "peer-closed"}
    return EXPECTED[fault]


@pytest.mark.parametrize("step,fault,serdes", F.STREAM_MODEL_CASES)
def test_model_fault_gives_own_answer_or_clear_error(tmp_path, step, fault, serdes):
    outcome = F.run_stream_model_fault("shm", tmp_path / "model.sock", step, fault, serdes)
    assert outcome in expected(step, fault)


@pytest.mark.parametrize("step,fault", F.STREAM_COMPILER_FAULTS)
def test_model_side_is_ready_after_a_compiler_fault(step, fault):
    with ShmCompilerInterface(serdes="bitstream", timeout=1.0) as iface:
        F.check_ready_after_compiler_fault("shm", iface, iface.path, step, fault)


def test_model_killed_while_the_compiler_waits_for_its_hello(tmp_path):
    """The compiler's connection waits on the model's listener (the model
    never accepts); the model dies: the compiler reports peer-closed at
    once, as for a model dying at any later step."""
    path = tmp_path / "model.sock"
    model = F.spawn([sys.executable, F.TOOLS / "fault_injecting_model.py", "shm", path,
                     "bitstream", "open", "delay", "30"], env=F.ENV)
    try:
        assert model.stdout.readline() == "ready\n", model.stderr.read()
        proc = F.spawn([F.STREAM_COMPILER, "--shm", path, "--scenario", "requests",
                        "--open-timeout-ms", 10000])
        time.sleep(0.5)  # connected, queued on the listener
        killed = time.monotonic()
        model.kill()
        lines, err = F.json_lines(proc)
    finally:
        F.end(model)
    first = next(e for e in lines if e["event"] == "error")
    assert first["code"] == "peer-closed", first
    assert time.monotonic() - killed < 2.0


@pytest.mark.parametrize("step,fault", F.RING_CORRUPTION_FAULTS)
def test_corrupt_ring_indices_end_only_that_session(step, fault):
    """The fake compiler publishes a wrap marker at the ring's start with a
    head far ahead instead of its message: the model side refuses it at
    once (the fake sees the hang-up; before, the model walked the ring at
    100 % CPU), then serves the next compiler."""
    with ShmCompilerInterface(serdes="bitstream", timeout=1.0) as iface:
        assert F.check_ready_after_compiler_fault("shm", iface, iface.path, step, fault) == 0


@pytest.mark.parametrize("step,fault", F.FROZEN_PEER_FAULTS["shm"])
def test_a_frozen_compiler_under_the_event_loop_costs_only_its_session(step, fault):
    F.check_frozen_peers_cost_only_their_sessions([("shm", step, fault)], good_per_transport=1)


# ---- the model's listen queue full ------------------------------------------------
# The model side takes one compiler at a time (evaluate()) or is held in a
# slow policy (EventLoop): it accepts nobody meanwhile, and the compilers
# that come queue in its listen backlog until it is full.

QUEUEING = shm_interface._LISTEN_BACKLOG + 4  # more than the queue holds


def serve_by_evaluate(iface, policy, done):
    """Two sessions, one at a time (evaluate() / populate_buffer())."""
    ended = 0
    while ended < 2:
        obs = iface.evaluate(timeout=10)
        if obs is None:
            ended += 1
        else:
            iface.populate_buffer(policy(obs))
    done.update(ended=ended)


def serve_by_event_loop(iface, policy, done):
    """Until two sessions have ended, under an EventLoop."""
    with EventLoop() as loop:
        stats = loop.add(iface, policy)
        loop.run(sessions=2, timeout=10)
    done.update(ended=stats.ended)


@pytest.mark.parametrize("serve", [serve_by_evaluate, serve_by_event_loop],
                         ids=["evaluate", "event-loop"])
def test_a_full_listen_queue_is_a_timeout_at_the_open_deadline(serve):
    """Compiler A's first request holds the model (its policy waits); the
    real compilers that come meanwhile, more than the listen queue holds,
    each end with `timeout` at their 400 ms open deadline: those beyond
    the queue in connect ("listen queue is full"; a connect that ignored
    OpenTimeout would wait in the kernel until the model accepts: the test
    then times out waiting for them), those in it waiting for the hello.
    Once A is answered, the model passes over the queued compilers that
    gave up and serves the next one; it saw only A's and B's requests."""
    seen, done, failed = [], {}, []
    busy, release = threading.Event(), threading.Event()

    def policy(obs):
        i = int(obs["i"][0])
        seen.append(i)
        if len(seen) == 1:
            busy.set()
            release.wait(F.FAKE_PATIENCE_S)
        return 2 * i

    def model():
        try:
            serve(iface, policy, done)
        except BaseException as e:  # reported to the test
            failed.append(e)

    def compiler(first, open_ms, reply_ms):
        return F.spawn([F.STREAM_COMPILER, "--shm", iface.path, "--serdes", "bitstream",
                        "--scenario", "requests", "--first", first,
                        "--open-timeout-ms", open_ms, "--reply-timeout-ms", reply_ms])

    procs = []
    with ShmCompilerInterface(serdes="bitstream", timeout=10) as iface:
        server = threading.Thread(target=model, daemon=True)
        server.start()
        try:
            procs.append(compiler(100, 5000, 10000))  # A
            assert busy.wait(10), "compiler A's first request never came"
            procs += [compiler(1000 * (k + 1), F.DEADLINE_MS, F.DEADLINE_MS)
                      for k in range(QUEUEING)]
            queued = [F.json_lines(p, timeout=5) for p in procs[1:]]
            release.set()
            a_lines, a_err = F.json_lines(procs[0])
            procs.append(compiler(300, 2000, 1000))  # B
            b_lines, b_err = F.json_lines(procs[-1])
            server.join(10)
        finally:
            release.set()
            for p in procs:
                F.end(p)
        assert not failed, failed
        assert not server.is_alive(), "the model side still serves"
        assert not iface.session_open

    full, in_queue = [], []
    for lines, err in queued:
        assert F.check_requests_outcome(lines, err) == "timeout", (lines, err)
        error = next(e for e in lines if e["event"] == "error")
        assert error["elapsed_ms"] >= F.DEADLINE_MS - 5, error
        (full if "listen queue is full" in error["message"] else in_queue).append(error)
    assert full, "the listen queue never filled"
    assert in_queue and all("did not accept the connection" in e["message"]
                            for e in in_queue), in_queue
    assert [e["value"] for e in a_lines if e["event"] == "advice"] == [200, 202, 204], \
        (a_lines, a_err)
    assert [e["value"] for e in b_lines if e["event"] == "advice"] == [600, 602, 604], \
        (b_lines, b_err)
    assert b_lines[-1] == {"event": "done", "ok": True}
    # Nothing of a compiler that gave up: no request, no session.
    assert seen == [100, 101, 102, 300, 301, 302]
    assert done["ended"] == 2
