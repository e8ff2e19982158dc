"""Phase ordering for code size, trained on real ``.text`` (``python -m
mlbridge.train phase-order``; docs/training.md).

* :mod:`.policy` -- :class:`PhasePolicy`, the regression network and its
  ONNX export (the plugin's model);
* :mod:`.task` -- oracle episodes and compiles with the plugin, on workers;
* :mod:`.trainer` -- oracle data, fit, threshold selection on validation.
"""

from .policy import NUM_PASS_ACTIONS, STOP, PhasePolicy
from .task import compile_task, oracle_task, plugin_env, run_task
from .trainer import collect, labels, select_threshold, shipped_start, train

__all__ = ["PhasePolicy", "NUM_PASS_ACTIONS", "STOP", "oracle_task", "compile_task",
           "plugin_env", "run_task", "collect", "labels", "select_threshold", "train",
           "shipped_start",
           "add_arguments", "main"]


def add_arguments(q):
    from ..modules import add_module_arguments
    add_module_arguments(q)
    q.add_argument("--out", required=True, help="output folder (log, oracle data, policy)")
    q.add_argument("--workers", type=int, default=2)
    q.add_argument("--max-steps", type=int, default=4, help="actions per episode")
    q.add_argument("--max-validation", type=int, default=None)
    q.add_argument("--thresholds", type=float, nargs="+", default=[0.05, 0.1, 0.2, 0.4, 0.8],
                   help="validation candidates: the predicted gain (percent of .text) an "
                        "action needs before the policy takes it")
    q.add_argument("--hidden", type=int, default=32)
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--variants", nargs="+", default=["counts", "counts+ir2vec"],
                   choices=["counts", "counts+ir2vec"],
                   help="the observations the networks compared on validation use")
    q.add_argument("--start", nargs="*", default=None, metavar="FLAG",
                   help="the stock size flags the episodes start from (names of "
                        "mlbridge.train.baselines.FLAGS; default: the best flags chosen on "
                        "validation; none given: where -Oz ends)")
    q.add_argument("--oracle-minutes", type=float, default=None,
                   help="time box of the oracle episodes (modules in a fixed random order; "
                        "no new batch starts after it)")
    q.add_argument("--data-from", default=None, help="oracle.npz of an earlier run")
    q.add_argument("--plugin", default=None, help="MLBridgePhaseOrder.so (default: the build's)")
    q.add_argument("--plugin-build-dir", default=None)
    q.add_argument("--quiet", action="store_true")


def main(args):
    from ...llvm.plugins import find_plugins
    from ..modules import training_modules
    from ..results import TrainingError
    train_mods, val_mods = training_modules(args)
    if not train_mods or not val_mods:
        raise TrainingError("no training or validation modules")
    plugin = args.plugin or find_plugins(args.plugin_build_dir)
    if args.start is None:
        from ..baselines import load_best_flags
        args.start = load_best_flags()
    return train(train_mods, val_mods, plugin=plugin, out_dir=args.out,
                 workers=args.workers, address=args.address, max_steps=args.max_steps,
                 data_from=args.data_from, thresholds=args.thresholds,
                 hidden=args.hidden, seed=args.seed, variants=args.variants, start=args.start,
                 oracle_minutes=args.oracle_minutes,
                 progress_bars=not args.quiet)
