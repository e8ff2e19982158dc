"""The training registry: every problem the command line offers is a
package with the registry's interface; unknown names are refused clearly."""

import subprocess
import sys

import pytest

from mlbridge.train.registry import PROBLEMS, problem


def test_every_implemented_problem_has_the_registry_interface():
    implemented = list(PROBLEMS.values())
    assert {p.name for p in implemented} == {"inliner", "phase-order", "mlir-unroll",
                                             "loop-distribution", "regalloc"}
    for p in implemented:
        pkg = p.load()
        assert callable(pkg.add_arguments) and callable(pkg.main), p.name
    for name in ("inliner", "phase-order", "loop-distribution", "regalloc"):   # Ray workers
        assert callable(problem(name).load().run_task)


def test_unknown_names_are_refused_clearly():
    with pytest.raises(KeyError, match="unknown training problem 'nope'; known: inliner"):
        problem("nope")
    res = subprocess.run([sys.executable, "-m", "mlbridge.train", "nope"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert "invalid choice: 'nope'" in res.stderr and "Traceback" not in res.stderr


def test_worker_tasks_name_their_problem():
    from mlbridge.train.inliner import make_task
    from mlbridge.train.phase_order import compile_task
    assert make_task(b"ir")["problem"] == "inliner"
    assert compile_task(b"ir", plugin="p.so")["problem"] == "phase-order"
    from mlbridge.train.loop_distribution.task import measure_task
    assert measure_task("void k(void) {}", "k", ["k"])["problem"] == "loop-distribution"
    from mlbridge.train.regalloc.task import evict_task
    assert evict_task(b"ir")["problem"] == "regalloc"
