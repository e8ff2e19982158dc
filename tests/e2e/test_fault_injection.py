"""Fault injection at every step of a pipe session, both directions.

* Model faults: the real C++ compiler (mlbridge-e2e-compiler, 3 requests)
  against a fault-injecting fake model (tools/fault_injecting_model.py)
  that kills itself, stops (SIGSTOP), delays, truncates or duplicates at
  one step. The compiler must get its own answer or a clear error within
  its deadline, and exit.
* Compiler faults: a fault-injecting fake compiler
  (tools/fault_injecting_compiler.py) against the real Python model side;
  afterwards a real compiler session on the same interface must be served
  correctly (the model side is ready for the next session). A compiler
  frozen mid-message under an EventLoop must cost only its own session.

The shared-memory and gRPC matrices are test_fault_injection_shm.py and
test_fault_injection_grpc.py; docs/reliability.md lists every case and its
outcome.
"""
import sys
from pathlib import Path

import pytest

from mlbridge import PipeCompilerInterface

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import fault_matrix as F  # noqa: E402


@pytest.mark.parametrize("step,fault,serdes", F.STREAM_MODEL_CASES)
def test_model_fault_gives_own_answer_or_clear_error(tmp_path, step, fault, serdes):
    outcome = F.run_stream_model_fault("pipe", tmp_path / "ch", step, fault, serdes)
    if fault == "duplicate":
        assert outcome == "malformed"


@pytest.mark.parametrize("step,fault", F.STREAM_COMPILER_FAULTS)
def test_model_side_is_ready_after_a_compiler_fault(step, fault):
    with PipeCompilerInterface(serdes="bitstream", timeout=1.0) as iface:
        F.check_ready_after_compiler_fault("pipe", iface, iface.base, step, fault)


@pytest.mark.parametrize("step,fault", F.FROZEN_PEER_FAULTS["pipe"])
def test_a_frozen_compiler_under_the_event_loop_costs_only_its_session(step, fault):
    """Frozen in the middle of a message, with good compilers on pipes and
    shared memory in the same EventLoop: they are all served in time."""
    F.check_frozen_peers_cost_only_their_sessions([("pipe", step, fault)], good_per_transport=1)
