"""The training registry: every problem the command line offers is a
package with the registry's interface and one command-line shape
(``<problem> <verb>``); unknown names are refused clearly."""

import json
import os
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


def test_every_problem_has_one_command_shape_with_train_first():
    verbs = {p.name: list(p.commands()) for p in PROBLEMS.values()}
    assert all(v[0] == "train" for v in verbs.values()), verbs
    for name in ("inliner", "phase-order", "loop-distribution", "regalloc"):
        assert "heldout" in verbs[name], (name, verbs[name])
    for name in ("loop-distribution", "regalloc"):
        assert "demo" in verbs[name] and "evaluate" in verbs[name], (name, verbs[name])
    assert {"kernels", "programs", "callgrind", "losses"} <= set(verbs["regalloc"])
    res = subprocess.run([sys.executable, "-m", "mlbridge.train", "loop-distribution", "--help"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "{train,evaluate,heldout," in res.stdout, res.stdout


def test_a_verb_named_train_besides_the_training_run_is_refused(monkeypatch):
    from types import SimpleNamespace
    from mlbridge.train.registry import Command, Problem
    pkg = SimpleNamespace(add_arguments=lambda q: None, main=lambda a: None,
                          COMMANDS={"train": Command("again", lambda q: None, lambda a: 0)})
    p = Problem("twice", "a problem with two training verbs", "nowhere")
    monkeypatch.setattr(Problem, "load", lambda self: pkg)
    with pytest.raises(ValueError, match="problem twice: 'train' is the training run's verb"):
        p.commands()


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


def _outside_distribution(root):
    """A real installed distribution (a dist-info folder on the path, as pip
    leaves it) registering two problems: "toy-size", and one that tries to
    take the in-tree name "inliner"."""
    (root / "toy_problem.py").write_text(
        "def add_arguments(parser):\n"
        "    parser.add_argument('--steps', type=int, default=2)\n"
        "def main(args):\n"
        "    return {'problem': args.command, 'steps': args.steps}\n"
        "def _measure(args):\n"
        "    print('measured', args.split)\n"
        "from mlbridge.train.registry import Command\n"
        "COMMANDS = {'heldout': Command('the held-out report',\n"
        "    lambda q: q.add_argument('--split', default='heldout'), _measure)}\n")
    info = root / "toy_problem-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-problem\nVersion: 0.1\n"
                                   "Summary: a toy problem from outside mlbridge\n")
    (info / "entry_points.txt").write_text("[mlbridge.problems]\ntoy-size = toy_problem\n"
                                           "inliner = toy_problem\n")


def test_problems_registered_from_outside_the_package(tmp_path, monkeypatch):
    from mlbridge.train import registry
    assert "toy-size" not in PROBLEMS
    _outside_distribution(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(RuntimeWarning, match="problem 'inliner' of toy-problem left out: "
                                            "the name is mlbridge's own"):
        found = registry.outside_problems()
    assert list(found) == ["toy-size"]   # "inliner" stays mlbridge's
    toy = found["toy-size"]
    assert (toy.summary, toy.package, toy.distribution) == \
        ("a toy problem from outside mlbridge", "toy_problem", "toy-problem")
    assert callable(toy.load().main)
    # The command line offers it beside the in-tree problems and runs it.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    res = subprocess.run([sys.executable, "-m", "mlbridge.train", "toy-size", "--steps", "5"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"problem": "toy-size", "steps": 5}
    assert "problem 'inliner' of toy-problem left out: the name is mlbridge's own" in res.stderr
    for argv, out in ((["train", "--steps", "3"], '"steps": 3'),
                      (["heldout", "--split", "x"], "measured x\n")):
        res = subprocess.run([sys.executable, "-m", "mlbridge.train", "toy-size", *argv],
                             capture_output=True, text=True, timeout=60, env=env)
        assert res.returncode == 0 and out in res.stdout, (argv, res.stdout, res.stderr)
    res = subprocess.run([sys.executable, "-m", "mlbridge.train", "--help"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert "toy-size" in res.stdout and "inliner" in res.stdout
