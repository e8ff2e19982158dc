"""Inlining for size: where LLVM's ``-Oz`` inlining decision should be
reversed, learned from measured ``.text`` (``python -m mlbridge.train
inliner``; docs/training.md).

* :mod:`.policy` -- the network (numpy; ONNX export for the plugin);
* :mod:`.task` -- one compile of one module with a policy, on a worker;
* :mod:`.trainer` -- the search-then-imitate loop and model selection;
* :mod:`.oracle` -- a budgeted search bounding what a policy could gain.
"""

from .policy import MODEL_FEATURES, InlinePolicy, feature_matrix
from .task import execute as run_task, make_task
from .trainer import TrainConfig, train

__all__ = ["MODEL_FEATURES", "InlinePolicy", "feature_matrix", "make_task", "run_task",
           "TrainConfig", "train", "add_arguments", "main"]


def add_arguments(q):
    from ..modules import add_module_arguments
    add_module_arguments(q)
    q.add_argument("--out", required=True, help="output folder (log, curve, policy)")
    q.add_argument("--workers", type=int, default=2)
    q.add_argument("--iterations", type=int, default=3)
    q.add_argument("--flips", type=int, default=6,
                   help="reversed decisions per module in the first iteration")
    q.add_argument("--later-flips", type=int, default=None,
                   help="per module in later iterations (default: flips // 3, at least 2)")
    q.add_argument("--rates", type=float, nargs="+", default=[0.0005, 0.001, 0.002, 0.005],
                   help="validation candidates: the share of training requests reversed")
    q.add_argument("--hidden", type=int, default=16)
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--max-validation", type=int, default=None)
    q.add_argument("--validation-ir", nargs="*", default=None)
    q.add_argument("--cache", default=None,
                   help="folder caching -Oz rollouts and reversals of LLVM's decisions "
                        "between runs (keyed by module content and clang version)")
    q.add_argument("--labels-from", nargs="*", default=None,
                   help="labels.npz of earlier runs to start from")
    q.add_argument("--quiet", action="store_true")


def main(args):
    from ..modules import IRModule, training_modules
    from ..results import TrainingError
    if args.train_ir:
        train_mods = [IRModule(p) for p in args.train_ir]
        val_mods = [IRModule(p) for p in (args.validation_ir or [])]
    else:
        train_mods, val_mods = training_modules(args)
    if not train_mods or not val_mods:
        raise TrainingError("no training or validation modules")
    cfg = TrainConfig(iterations=args.iterations, flips_per_module=args.flips,
                      later_flips=args.later_flips,
                      rates=args.rates, hidden=args.hidden, seed=args.seed)
    return train(train_mods, val_mods, args.out, workers=args.workers,
                 address=args.address, config=cfg, build_dir=args.build_dir,
                 progress=not args.quiet, cache_dir=args.cache,
                 labels_from=args.labels_from or ())
