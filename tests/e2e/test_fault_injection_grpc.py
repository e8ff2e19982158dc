"""Fault injection at every step of a gRPC session in inference mode (the
compiler, GrpcModelRunner, calls the model's ModelService), both
directions; training mode is test_fault_injection_grpc_training.py.

* Model faults: the real C++ compiler (mlbridge-grpc-e2e-compiler, 3
  requests, 400 ms call and connect deadlines) against a fault-injecting
  fake model server (tools/fault_injecting_grpc_model.py inference).
* Compiler faults: a fault-injecting fake compiler
  (tools/fault_injecting_grpc_compiler.py inference) against the real
  GrpcCompilerInterface, on each of its servers (the C++ server core and
  grpcio's); afterwards a real compiler session on it must be served
  correctly, and the fake itself must never get a wrong answer.

gRPC has no separate header or context message (both travel in every
request), so those steps are the "first" request; a unary call carries
one reply, so a duplicated reply cannot be sent, and HTTP/2 frames a
truncated message away: the reply faults are replies of the wrong shape,
type or kind. docs/reliability.md lists every case and its outcome.
"""
import sys
import threading
import time
from pathlib import Path

import pytest
from build_components import built_components

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import fault_matrix as F  # noqa: E402
import grpc_helpers as H  # noqa: E402  (skips this module when gRPC is off)
from mlbridge.grpc import GrpcCompilerInterface  # noqa: E402

# (step, fault, what the compiler must get)
MODEL_CASES = [("open", f, "unavailable") for f in ("kill", "stop", "delay")]
MODEL_CASES += [(s, "kill", "peer-closed") for s in ("first", "observation")]
MODEL_CASES += [(s, f, "timeout") for s in ("first", "observation") for f in ("stop", "delay")]
MODEL_CASES += [("reply", "delay", "timeout"), ("reply", "truncate", "malformed"),
                ("reply", "wrongtype", "type-mismatch"), ("reply", "empty", "malformed")]
MODEL_CASES += [("close", f, "answers") for f in ("kill", "stop", "delay")]

COMPILER_FAULTS = [("open", f) for f in ("kill", "stop")]
COMPILER_FAULTS += [(s, f) for s in ("first", "observation")
                    for f in ("kill", "stop", "truncate", "duplicate")]
COMPILER_FAULTS += [("reply", "giveup")]
COMPILER_FAULTS += [("close", f) for f in ("kill", "stop", "duplicate")]


def requests(*args, call_timeout_ms=F.DEADLINE_MS, count=3):
    return F.spawn(H.compiler_cmd("--scenario", "requests", "--count", count,
                                  "--call-timeout-ms", call_timeout_ms, *args))


@pytest.mark.parametrize("step,fault,expected", MODEL_CASES)
def test_model_fault_gives_own_answer_or_clear_error(step, fault, expected):
    model = F.spawn([sys.executable, F.TOOLS / "fault_injecting_grpc_model.py", "inference",
                     "-", step, fault, "1.0"], env=F.ENV)
    try:
        address = model.stdout.readline().strip()
        assert address, model.stderr.read()
        started = time.monotonic()
        lines, err = F.json_lines(requests("--address", address,
                                           "--connect-timeout-ms", F.DEADLINE_MS))
        took_ms = (time.monotonic() - started) * 1000
    finally:
        F.end(model)
    # A reply of the wrong shape or type fails that call only (each call
    # is its own stream); every other error breaks the runner.
    assert F.check_requests_outcome(lines, err,
                                    usable_after={"malformed", "type-mismatch"}) == expected
    # Connect + three calls + EndSession, each bounded by its deadline.
    assert took_ms < 5 * F.DEADLINE_MS + 2 * F.SLACK_MS


@pytest.mark.parametrize("server", ["native", "grpcio"])
@pytest.mark.parametrize("step,fault", COMPILER_FAULTS)
def test_model_side_is_ready_after_a_compiler_fault(step, fault, server):
    if server == "native" and not built_components()["grpc_python_core"]:
        pytest.skip("the build says component 'grpc_python_core' is off")
    with GrpcCompilerInterface(timeout=1.0, server=server) as iface:
        stop = threading.Event()
        server = F.serve_in_background(lambda: iface.serve(F.twice, timeout=0.5), stop)
        faulty = F.spawn([sys.executable, F.TOOLS / "fault_injecting_grpc_compiler.py",
                          "inference", iface.address, step, fault], env=F.ENV)
        try:
            F.wait_for_fault(faulty, fault, frozen_for=0.1)
            # The next compiler (patient: only the model side is tested here).
            lines, err = F.json_lines(requests("--address", iface.address,
                                               call_timeout_ms=5000), timeout=20)
        finally:
            F.end(faulty)
            stop.set()
            server.join(5)
    assert [e["value"] for e in lines if e["event"] == "advice"] == [0, 2, 4], (lines, err)
    assert lines[-1] == {"event": "done", "ok": True}
    if fault not in ("kill", "stop"):
        assert faulty.returncode == 0, faulty.stderr.read()  # never a wrong answer


@pytest.mark.parametrize("server", ["native", "grpcio"])
def test_sixteen_compilers_one_slow_policy(server):
    """16 compiler processes against one model whose policy takes 2 ms:
    each compiler gets exactly its own answers (the queue of one slow
    model mixes them all)."""
    if server == "native" and not built_components()["grpc_python_core"]:
        pytest.skip("the build says component 'grpc_python_core' is off")
    count = 10

    def slow_twice(obs):
        time.sleep(0.002)
        return F.twice(obs)

    with GrpcCompilerInterface(timeout=10.0, server=server) as iface:
        procs = [requests("--address", iface.address, "--offset", w * 1000, count=count,
                          call_timeout_ms=10000) for w in range(16)]
        served = iface.serve(slow_twice, sessions=16, timeout=10)
        outcomes = [F.json_lines(p, timeout=20) for p in procs]
    assert served == 16 * count
    for w, (lines, err) in enumerate(outcomes):
        advice = [(e["i"], e["value"]) for e in lines if e["event"] == "advice"]
        assert advice == [(w * 1000 + i, 2 * (w * 1000 + i)) for i in range(count)], (lines, err)
        assert lines[-1] == {"event": "done", "ok": True}
