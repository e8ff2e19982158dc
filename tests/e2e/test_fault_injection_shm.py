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

docs/reliability.md lists every case and its outcome.
"""
import sys
import time
from pathlib import Path

import pytest

from mlbridge import ShmCompilerInterface

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
