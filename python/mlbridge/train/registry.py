"""The training problems: one package per problem under
:mod:`mlbridge.train`, listed here once. The command line
(``python -m mlbridge.train <problem>``) and the compiler workers read this
table; nothing else names the problems.

A problem package provides:

* ``add_arguments(parser)`` -- the options of its training run;
* ``main(args)`` -- the training run (returns the summary dict, raises
  :class:`mlbridge.train.results.TrainingError` when it cannot produce a
  meaningful result);
* ``COMMANDS`` (optional) -- its other verbs, ``{verb: Command}``: the
  usual ones are ``evaluate`` (the deployed model on a split),
  ``heldout`` (the held-out report) and ``demo`` (one small example);
* ``run_task(task, workdir)`` -- if it compiles on the Ray workers
  (:mod:`mlbridge.train.cluster`): one task dict, in a worker's scratch
  folder, to a result dict.

Every problem has one command-line shape, ``python -m mlbridge.train
<problem> <verb> [options]``, ``train`` being the training run.

Problems from outside the package are Python entry points of the group
``mlbridge.problems``: the name is the problem's, the value the module that
provides the functions above (``myproblem = "my_pkg.problem"`` in a
``pyproject.toml``'s ``[project.entry-points."mlbridge.problems"]``); the
summary is the distribution's. They join the in-tree ones here; an outside
problem cannot take an in-tree name (it is left out with a warning), and a
name two distributions claim goes to the first found.
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass
from importlib import metadata
from typing import Callable, Dict, Optional

__all__ = ["Problem", "Command", "PROBLEMS", "problem", "ENTRY_POINT_GROUP",
           "outside_problems"]

#: The entry-point group of problems registered from outside the package.
ENTRY_POINT_GROUP = "mlbridge.problems"


@dataclass(frozen=True)
class Command:
    """One verb of a problem besides ``train``: its one-line help, a
    function adding its options to an argparse parser, and ``run(args)``
    (returns the exit status, or None for 0)."""
    help: str
    add_arguments: Callable
    run: Callable


#: The verb of the training run, which every problem has.
TRAIN = "train"


@dataclass(frozen=True)
class Problem:
    name: str
    summary: str
    package: str
    #: The installed distribution registering it (None: in tree).
    distribution: Optional[str] = None

    def load(self):
        """The problem's package (imported on first use)."""
        return importlib.import_module(self.package)

    def commands(self) -> Dict[str, Command]:
        """Every verb of the problem: ``train`` and the package's ``COMMANDS``."""
        pkg = self.load()
        verbs = {TRAIN: Command("train the policy (writes the model, log and curve in --out)",
                                pkg.add_arguments, pkg.main)}
        for verb, command in getattr(pkg, "COMMANDS", {}).items():
            if verb in verbs:
                raise ValueError(f"problem {self.name}: {verb!r} is the training run's verb")
            verbs[verb] = command
        return verbs


IN_TREE = {p.name: p for p in (
    Problem("inliner", "inlining for size (LLVM's inliner, .text of clang -Oz)",
            "mlbridge.train.inliner"),
    Problem("phase-order", "phase ordering for size (MLBridgePhaseOrder.so, .text)",
            "mlbridge.train.phase_order"),
    Problem("mlir-unroll", "affine loop unrolling (mlbridge-affine-unroll, instructions "
            "retired)", "mlbridge.train.mlir_unroll"),
    Problem("loop-distribution", "loop distribution (MLBridgeLoopDistribution.so, callgrind "
            "Ir of the loop kernels)", "mlbridge.train.loop_distribution"),
    Problem("regalloc", "register allocation against the allocation score (greedy's "
            "eviction advisor over pipes)", "mlbridge.train.regalloc"),
)}


def outside_problems(in_tree=IN_TREE) -> Dict[str, Problem]:
    """The problems of the installed distributions' ``mlbridge.problems``
    entry points (none is imported here)."""
    found: Dict[str, Problem] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist is not None else "an unknown distribution"
        taken = in_tree.get(ep.name) or found.get(ep.name)
        if taken is not None:
            owner = f"taken by {taken.distribution}" if taken.distribution else "mlbridge's own"
            warnings.warn(f"problem {ep.name!r} of {dist} left out: the name is {owner}",
                          RuntimeWarning, stacklevel=2)
            continue
        if ep.attr:
            warnings.warn(f"problem {ep.name!r} of {dist} left out: its entry point "
                          f"{ep.value!r} must name a module, not an attribute",
                          RuntimeWarning, stacklevel=2)
            continue
        summary = ep.dist.metadata.get("Summary") if ep.dist is not None else None
        found[ep.name] = Problem(ep.name, summary or f"from {dist}", ep.module, dist)
    return found


PROBLEMS = {**IN_TREE, **outside_problems()}


def problem(name: str) -> Problem:
    try:
        return PROBLEMS[name]
    except KeyError:
        raise KeyError(f"unknown training problem {name!r}; known: "
                       f"{', '.join(PROBLEMS)}") from None
