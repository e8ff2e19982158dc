"""The training registry: every problem the command line offers is a
package with the registry's interface; reserved slots are named and refused
with a pointer to the guide."""

import subprocess
import sys

import pytest

from mlbridge.train.registry import PROBLEMS, problem


def test_every_implemented_problem_has_the_registry_interface():
    implemented = [p for p in PROBLEMS.values() if p.package is not None]
    assert {p.name for p in implemented} == {"inliner", "phase-order", "mlir-unroll",
                                                "regalloc"}
    for p in implemented:
        pkg = p.load()
        assert callable(pkg.add_arguments) and callable(pkg.main), p.name
    for name in ("inliner", "phase-order", "regalloc"):   # they compile on the Ray workers
        assert callable(problem(name).load().run_task)


def test_reserved_slots_and_unknown_names_are_refused_clearly():
    for name in ("loop-distribution",):
        with pytest.raises(NotImplementedError, match="reserved but not implemented"):
            problem(name).load()
    with pytest.raises(KeyError, match="unknown training problem 'nope'; known: inliner"):
        problem("nope")
    res = subprocess.run([sys.executable, "-m", "mlbridge.train", "loop-distribution"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert "loop-distribution is a reserved problem slot" in res.stderr and "Traceback" not in res.stderr


def test_worker_tasks_name_their_problem():
    from mlbridge.train.inliner import make_task
    from mlbridge.train.phase_order import compile_task
    assert make_task(b"ir")["problem"] == "inliner"
    assert compile_task(b"ir", plugin="p.so")["problem"] == "phase-order"
    from mlbridge.train.regalloc.task import evict_task
    assert evict_task(b"ir")["problem"] == "regalloc"
