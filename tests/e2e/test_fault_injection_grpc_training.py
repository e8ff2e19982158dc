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
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import fault_matrix as F  # noqa: E402
import grpc_helpers as H  # noqa: E402  (skips this module when gRPC is off)
import mlbridge  # noqa: E402
from mlbridge.grpc import GrpcCompilerInterface  # noqa: E402

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
