"""The training problems: one package per problem under
:mod:`mlbridge.train`, listed here once. The command line
(``python -m mlbridge.train <problem>``) and the compiler workers read this
table; nothing else names the problems.

A problem package provides:

* ``add_arguments(parser)`` -- its command-line options;
* ``main(args)`` -- the training run (returns the summary dict, raises
  :class:`mlbridge.train.results.TrainingError` when it cannot produce a
  meaningful result);
* ``run_task(task, workdir)`` -- if it compiles on the Ray workers
  (:mod:`mlbridge.train.cluster`): one task dict, in a worker's scratch
  folder, to a result dict.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

__all__ = ["Problem", "PROBLEMS", "problem"]


@dataclass(frozen=True)
class Problem:
    name: str
    summary: str
    package: str

    def load(self):
        """The problem's package (imported on first use)."""
        return importlib.import_module(self.package)


PROBLEMS = {p.name: p for p in (
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


def problem(name: str) -> Problem:
    try:
        return PROBLEMS[name]
    except KeyError:
        raise KeyError(f"unknown training problem {name!r}; known: "
                       f"{', '.join(PROBLEMS)}") from None
