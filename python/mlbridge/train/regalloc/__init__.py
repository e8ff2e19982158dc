"""Register allocation trained against the allocation score (``python -m
mlbridge.train regalloc train``; docs/register-allocation.md, "Training and
results").

* ``--mode alloc``: the policy of ``-regalloc=mlbridge``
  (``MLBridgeRegAlloc.so``), exported to ONNX for the plugin;
* ``--mode evict``: LLVM greedy's own eviction advisor, served over pipes
  (:mod:`.evict`);
* :mod:`.trainer` -- imitation, evolution strategies, validation selection;
* :mod:`.allocator` -- the policy network of ``-regalloc=mlbridge``;
* :mod:`.task` -- the machine-function corpus and the compiles on workers.

``python -m mlbridge.train regalloc heldout|demo`` (:mod:`.commands`) measures a trained
policy on the held-out libraries.
"""

from .commands import COMMANDS
from .task import PROBLEM, run_task

__all__ = ["COMMANDS", "PROBLEM", "run_task", "add_arguments", "main", "MODES"]

MODES = ("alloc", "evict")


def add_arguments(q):
    from ...cli import output_folder, positive_int
    from ..modules import add_module_arguments
    add_module_arguments(q)
    q.add_argument("--mode", choices=MODES, default="alloc",
                   help="alloc: -regalloc=mlbridge's policy (ONNX); evict: LLVM greedy's "
                        "eviction advisor over pipes")
    q.add_argument("--out", required=True, type=output_folder,
                   help="output folder (log, curve, policy)")
    q.add_argument("--workers", type=positive_int, default=2)
    q.add_argument("--max-validation", type=int, default=None)
    q.add_argument("--iterations", type=int, default=6, help="ES iterations")
    q.add_argument("--population", type=int, default=4, help="antithetic pairs per iteration")
    q.add_argument("--sigma", type=float, default=0.3, help="ES perturbation scale")
    q.add_argument("--lr", type=float, default=0.2, help="ES step size")
    q.add_argument("--batch", type=int, default=16, help="training modules per ES iteration")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--cache", default=None, help="rollout cache folder (greedy's scores)")
    q.add_argument("--quiet", action="store_true")


def main(args):
    from ..modules import training_modules
    from ..results import TrainingError
    from .trainer import load_items, train
    train_mods, val_mods = training_modules(args)
    if not train_mods or not val_mods:
        raise TrainingError("no training or validation modules")
    return train(load_items(train_mods), load_items(val_mods), args.out, mode=args.mode,
                 workers=args.workers, address=args.address, iterations=args.iterations,
                 population=args.population, sigma=args.sigma, lr=args.lr, batch=args.batch,
                 seed=args.seed, cache_dir=args.cache, progress=not args.quiet)
