"""Fault injection at every step of a gRPC session in training mode (the
compiler, GrpcModelRunner in GrpcMode::Training, serves CompilerService;
the Python trainer drives it), both directions; inference mode is
test_fault_injection_grpc.py.

* Model faults: the real C++ compiler (mlbridge-grpc-e2e-compiler --mode
  training, 3 requests, 400 ms to wait for each action, 400 ms linger)
  against a fault-injecting fake trainer
  (tools/fault_injecting_grpc_model.py training). The trainer is a
  client: its death is only seen as silence, so the compiler's outcome is
  its own answers or a timeout.
* Compiler faults: a fault-injecting fake compiler server
  (tools/fault_injecting_grpc_compiler.py training) driven by the real
  GrpcCompilerInterface(mode="training"); then a real compiler added to
  the same trainer must be served correctly, and the fake itself must
  never get a wrong answer.

docs/reliability.md lists every case and its outcome.
"""
import re
import socket
import subprocess
import sys
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import fault_matrix as F  # noqa: E402
import grpc_helpers as H  # noqa: E402  (skips this module when gRPC is off)
import mlbridge  # noqa: E402
from mlbridge.grpc import GrpcCompilerInterface, pb2, pb2_grpc  # noqa: E402

# (step, fault, what the compiler must get)
MODEL_CASES = [(s, f, "timeout") for s in ("open", "first", "observation")
               for f in ("kill", "stop", "delay")]
MODEL_CASES += [("reply", f, "timeout") for f in ("delay", "truncate", "wrongtype", "empty")]
MODEL_CASES += [("reply", "duplicate", "answers")]
MODEL_CASES += [("close", f, "answers") for f in ("kill", "stop", "delay")]

COMPILER_FAULTS = [("open", f) for f in ("kill", "stop")]
COMPILER_FAULTS += [(s, f) for s in ("first", "observation")
                    for f in ("kill", "stop", "truncate", "duplicate")]
COMPILER_FAULTS += [(s, f) for s in ("reply", "close") for f in ("kill", "stop")]

TRAINER_TIMEOUT = 0.5


def training_compiler(call_timeout_ms=F.DEADLINE_MS):
    proc = F.spawn(H.compiler_cmd("--mode", "training", "--scenario", "requests",
                                  "--count", 3, "--call-timeout-ms", call_timeout_ms,
                                  "--linger-ms", F.DEADLINE_MS))
    return proc, H.listening_address(proc)


@pytest.mark.parametrize("step,fault,expected", MODEL_CASES)
def test_trainer_fault_gives_own_answer_or_clear_error(step, fault, expected):
    # The trainer is up before the compiler starts asking (it reads the
    # compiler's address from stdin).
    trainer = F.spawn([sys.executable, F.TOOLS / "fault_injecting_grpc_model.py", "training",
                       "-", step, fault, "1.0"], env=F.ENV, stdin=subprocess.PIPE)
    try:
        assert trainer.stdout.readline() == "ready\n", trainer.stderr.read()
        proc, address = training_compiler()
        started = time.monotonic()
        trainer.stdin.write(address + "\n")
        trainer.stdin.flush()
        lines, err = F.json_lines(proc)
        took_ms = (time.monotonic() - started) * 1000
    finally:
        F.end(trainer)
    assert F.check_requests_outcome(lines, err) == expected
    # Three waits for an action and the linger, each bounded.
    assert took_ms < 4 * F.DEADLINE_MS + 2 * F.SLACK_MS


def serve_for_a_while(iface):
    """serve() until every compiler ended or none spoke for the timeout; a
    fault may end it with a clear error instead."""
    try:
        iface.serve(F.twice, timeout=TRAINER_TIMEOUT)
    except mlbridge.MLBridgeError:
        pass


@pytest.mark.parametrize("step,fault", COMPILER_FAULTS)
def test_trainer_is_ready_after_a_compiler_fault(step, fault):
    faulty = F.spawn([sys.executable, F.TOOLS / "fault_injecting_grpc_compiler.py",
                      "training", "-", step, fault], env=F.ENV)
    try:
        fake_address = faulty.stdout.readline().strip()
        assert fake_address, faulty.stderr.read()
        with GrpcCompilerInterface(mode="training", compilers=[fake_address],
                                   timeout=TRAINER_TIMEOUT) as iface:
            started = time.monotonic()
            serve_for_a_while(iface)
            assert time.monotonic() - started < 10 * TRAINER_TIMEOUT + F.SLACK_MS / 1000
            # The next compiler (patient: only the trainer is tested here).
            proc, address = training_compiler(call_timeout_ms=5000)
            iface.add_compiler(address)
            serve_for_a_while(iface)
            lines, err = F.json_lines(proc)
        if fault not in ("kill", "stop"):
            faulty.wait(F.FAKE_PATIENCE_S)
    finally:
        F.end(faulty)
    assert [e["value"] for e in lines if e["event"] == "advice"] == [0, 2, 4], (lines, err)
    assert lines[-1] == {"event": "done", "ok": True}
    if fault not in ("kill", "stop"):
        assert faulty.returncode == 0, faulty.stderr.read()  # never a wrong answer


def test_a_compiler_dying_while_the_trainer_answers_counts_as_ended():
    """The compiler dies as the trainer's action reaches it: the trainer
    counts its session as ended, as for a compiler that dies between
    observations."""
    faulty = F.spawn([sys.executable, F.TOOLS / "fault_injecting_grpc_compiler.py",
                      "training", "-", "reply", "kill"], env=F.ENV)
    try:
        fake_address = faulty.stdout.readline().strip()
        assert fake_address, faulty.stderr.read()
        with GrpcCompilerInterface(mode="training", compilers=[fake_address],
                                   timeout=TRAINER_TIMEOUT) as iface:
            assert iface.serve(F.twice, timeout=TRAINER_TIMEOUT) == 1
            assert iface.ended_sessions == 1
            assert iface.last_ended_session == fake_address
    finally:
        F.end(faulty)


# ---- one compiler failing never holds up or stops the others ---------------------------

def fake_compiler(step, fault):
    faulty = F.spawn([sys.executable, F.TOOLS / "fault_injecting_grpc_compiler.py",
                      "training", "-", step, fault], env=F.ENV)
    address = faulty.stdout.readline().strip()
    assert address, faulty.stderr.read()
    return faulty, address


def served_correctly(proc):
    lines, err = F.json_lines(proc)
    assert [e["value"] for e in lines if e["event"] == "advice"] == [0, 2, 4], (lines, err)
    assert lines[-1] == {"event": "done", "ok": True}


def test_a_frozen_compiler_does_not_delay_the_actions_to_the_others():
    """The fake freezes as the trainer's second action reaches it. The
    action is not waited for, so the real compiler (3 s to wait for each
    action, the trainer's timeout is 4 s) gets every answer in time; the
    frozen one is dropped at the trainer's timeout, with the reason."""
    faulty, fake_address = fake_compiler("reply", "stop")
    try:
        proc, address = training_compiler(call_timeout_ms=3000)
        with GrpcCompilerInterface(mode="training", compilers=[fake_address, address],
                                   timeout=4.0) as iface:
            started = time.monotonic()
            taken = iface.serve(F.twice, timeout=10)
            took = time.monotonic() - started
            served_correctly(proc)
            assert taken == 4  # 1 by the fake, 3 by the compiler
            assert took < 4.0 + F.SLACK_MS / 1000
            assert iface.ended_sessions == 2
            assert "did not take the action within 4 s" in iface.compiler_errors[fake_address]
            assert address not in iface.compiler_errors
    finally:
        F.end(faulty)


def test_a_compiler_dead_before_its_first_observation_ends_with_an_error():
    """Reached, then killed while the trainer waits for its first
    observation; and one that never listens: both end (with the reason)
    within the trainer's timeout instead of being polled forever."""
    faulty, fake_address = fake_compiler("first", "kill")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        nobody = f"127.0.0.1:{s.getsockname()[1]}"
    try:
        with GrpcCompilerInterface(mode="training", compilers=[fake_address, nobody],
                                   timeout=1.0) as iface:
            started = time.monotonic()
            assert iface.serve(F.twice, timeout=10) == 0
            assert time.monotonic() - started < 1.0 + F.SLACK_MS / 1000
            assert iface.ended_sessions == 2
            assert "not reached within 1 s" in iface.compiler_errors[nobody]
            # Gone while asked (or, when gRPC reported the connection late,
            # not reached): either way a clear reason.
            assert re.search("gone without ending its session|not reached",
                             iface.compiler_errors[fake_address])
    finally:
        F.end(faulty)


def test_a_compiler_sending_garbage_is_dropped_and_the_others_go_on():
    """A malformed observation, and a server that is not a compiler (a
    model's ModelService): each is dropped with a clear error (the fake is
    told by EndEpisode) while the real compiler is served to its end."""
    faulty, fake_address = fake_compiler("first", "truncate")
    try:
        with GrpcCompilerInterface(timeout=5) as not_a_compiler:
            proc, address = training_compiler(call_timeout_ms=5000)
            with GrpcCompilerInterface(mode="training", timeout=5.0,
                                       compilers=[fake_address, not_a_compiler.address,
                                                  address]) as iface:
                assert iface.serve(F.twice, timeout=10) == 3
                assert iface.ended_sessions == 3
                errors = iface.compiler_errors
                assert "is malformed" in errors[fake_address], errors
                assert "UNIMPLEMENTED" in errors[not_a_compiler.address], errors
                assert address not in errors
            served_correctly(proc)
        faulty.wait(F.FAKE_PATIENCE_S)
        assert faulty.returncode == 0, faulty.stderr.read()
    finally:
        F.end(faulty)


def test_a_dropped_compiler_is_told_why():
    """A compiler whose observations are malformed (a feature without a
    dtype, every time) is dropped once, and its EndEpisode carries the
    reason."""
    told = []
    ended = threading.Event()

    class Garbage(pb2_grpc.CompilerServiceServicer):
        def GetObservation(self, request, context):
            obs = pb2.Observation(session="garbage", id=1)
            obs.features.add(name="i")  # no dtype, no data
            return pb2.ObservationReply(observation=obs)

        def EndEpisode(self, request, context):
            told.append(request.reason)
            ended.set()
            return pb2.Empty()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb2_grpc.add_CompilerServiceServicer_to_server(Garbage(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        address = f"127.0.0.1:{port}"
        with GrpcCompilerInterface(mode="training", compilers=[address], timeout=5) as iface:
            assert iface.serve(F.twice, timeout=5) == 0
            assert ended.wait(5)
            assert iface.ended_sessions == 1 and "is malformed" in iface.last_ended_error
        assert len(told) == 1 and told[0] == iface.compiler_errors[address]
    finally:
        server.stop(None)


# ---- late actions across sessions ---------------------------------------------------------

def pending_session(address, timeout=10):
    """The session of the observation pending at ``address`` (asking again
    returns the same pending observation: nothing is taken from the trainer)."""
    with grpc.insecure_channel(address) as channel:
        reply = pb2_grpc.CompilerServiceStub(channel).GetObservation(
            pb2.ObservationRequest(), timeout=timeout, wait_for_ready=True)
    assert reply.WhichOneof("result") == "observation", reply
    return reply.observation.session


def test_late_actions_across_sessions():
    """Compiler A (fixed port, 300 ms to wait for each action) gives up on
    its first observation and exits; compiler B starts on the same port and
    publishes its own first observation, with the same id (ids restart at 1
    in every runner). The trainer's late action for A's observation must be
    refused by B, never taken as B's answer; B then gets its own."""
    address = f"127.0.0.1:{H.free_port()}"

    def compiler(offset, call_timeout_ms):
        proc = F.spawn(H.compiler_cmd("--mode", "training", "--address", address,
                                      "--scenario", "requests", "--count", 1,
                                      "--offset", offset, "--call-timeout-ms", call_timeout_ms,
                                      "--linger-ms", 300))
        assert H.listening_address(proc) == address
        return proc

    a = compiler(offset=10, call_timeout_ms=300)
    b = None
    try:
        with GrpcCompilerInterface(mode="training", compilers=[address], timeout=5.0) as iface:
            late = iface.evaluate()
            assert late.id == 1 and int(late["i"][0]) == 10
            lines, err = F.json_lines(a)  # A gives up and exits
            assert [e["code"] for e in lines if e["event"] == "error"][:1] == ["timeout"], \
                (lines, err)
            b = compiler(offset=20, call_timeout_ms=5000)
            session_b = pending_session(address)
            assert session_b != late.session
            iface.populate_buffer(F.twice(late))  # 20: A's answer, late
            assert iface.serve(F.twice, timeout=5) == 1  # B's own answer, 40
            assert iface.ended_sessions == 1 and iface.last_ended_session == session_b
            lines, err = F.json_lines(b)
    finally:
        for p in (a, b):
            if p is not None:
                F.end(p)
    assert [(e["i"], e["value"]) for e in lines if e["event"] == "advice"] == [(20, 40)], \
        (lines, err)
    assert lines[-1] == {"event": "done", "ok": True}
