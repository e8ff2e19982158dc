"""Phase ordering for code size, trained on real ``.text`` (``python -m
mlbridge.train phase-order train``; docs/training.md).

* :mod:`.policy` -- :class:`PhasePolicy`, the regression network and its
  ONNX export (the plugin's model);
* :mod:`.task` -- oracle episodes and compiles with the plugin, on workers;
* :mod:`.trainer` -- oracle data, fit, threshold selection on validation;
* :mod:`.finetune` -- evolution-strategies fine-tuning of a fitted policy
  against the measured ``.text`` of its episodes (``--warm-start``).
"""

from .policy import NUM_PASS_ACTIONS, STOP, PhasePolicy
from .task import compile_task, oracle_task, plugin_env, run_task
from .trainer import (collect, episode_start, labels, select_threshold, shipped_max_steps,
                      shipped_start, train)
from ..size_cli import commands as size_commands

__all__ = ["COMMANDS", "PhasePolicy", "NUM_PASS_ACTIONS", "STOP", "oracle_task", "compile_task",
           "plugin_env", "run_task", "collect", "labels", "select_threshold", "train",
           "shipped_start", "shipped_max_steps", "episode_start",
           "add_arguments", "main"]


#: ``evaluate`` and ``heldout``: the deployed plugin against ``clang-19 -Oz``.
COMMANDS = size_commands("phase-order")


def add_arguments(q):
    from ...cli import existing_file, output_folder, positive_int
    from ..modules import add_module_arguments
    add_module_arguments(q)
    q.add_argument("--out", required=True, type=output_folder,
                   help="output folder (log, oracle data, policy)")
    q.add_argument("--workers", type=positive_int, default=2)
    q.add_argument("--max-steps", type=int, default=None,
                   help="actions per episode (default 4; with --warm-start: its policy's)")
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
    q.add_argument("--plugin", default=None, type=existing_file,
                   help="MLBridgePhaseOrder.so (default: the build's)")
    q.add_argument("--plugin-build-dir", default=None)
    q.add_argument("--quiet", action="store_true")
    es = q.add_argument_group("ES fine-tuning (instead of the fit; docs/training.md)")
    es.add_argument("--warm-start", default=None, metavar="POLICY_JSON",
                    help="fine-tune this policy.json (its threshold, margins, start flags "
                         "and max_steps as shipped) with evolution strategies")
    es.add_argument("--es-iterations", type=int, default=40)
    es.add_argument("--es-pairs", type=int, default=4, help="antithetic pairs per iteration")
    es.add_argument("--es-modules", type=int, default=8,
                    help="training modules sampled per iteration")
    es.add_argument("--es-change", type=float, default=0.05,
                    help="share of the oracle states' decisions a perturbation changes "
                         "(sets sigma)")
    es.add_argument("--es-lr", type=float, default=None, help="Adam step (default sigma/5)")
    es.add_argument("--es-eval-every", type=int, default=5,
                    help="validate every N-th iterate (and the last)")
    es.add_argument("--es-minutes", type=float, default=None,
                    help="time box: no iteration starts after it")
    q.add_argument("--validation-max-ir-kb", type=int, default=None,
                   help="bitcode cap of the validation modules (default: --max-ir-kb; "
                        "0: every validation module)")


def main(args):
    from ...llvm.plugins import find_plugins
    from ..modules import training_modules
    from ..results import TrainingError
    train_mods, val_mods = training_modules(args)
    if args.validation_max_ir_kb is not None and not args.validation_ir:
        import argparse
        from ..modules import corpus_modules, select_modules
        val_mods = select_modules(corpus_modules("validation", args), argparse.Namespace(
            **dict(vars(args), max_ir_kb=args.validation_max_ir_kb)), args.max_validation)
    if not train_mods or not val_mods:
        raise TrainingError("no training or validation modules")
    plugin = args.plugin or find_plugins(args.plugin_build_dir)
    warm, es = None, None
    if args.warm_start:
        import json
        from .finetune import ESConfig
        with open(args.warm_start) as f:
            d = json.load(f)
        warm = PhasePolicy.from_dict(d)
        args.start = d.get("start", []) if args.start is None else args.start
        args.max_steps = d.get("max_steps", 3) if args.max_steps is None else args.max_steps
        es = ESConfig(iterations=args.es_iterations, pairs=args.es_pairs,
                      modules_per_iteration=args.es_modules, change=args.es_change,
                      lr=args.es_lr, eval_every=args.es_eval_every,
                      max_minutes=args.es_minutes, seed=args.seed)
    if args.max_steps is None:
        args.max_steps = 4
    if args.start is None:
        from ..baselines import load_best_flags
        args.start = load_best_flags()
    return train(train_mods, val_mods, plugin=plugin, out_dir=args.out,
                 workers=args.workers, address=args.address, max_steps=args.max_steps,
                 data_from=args.data_from, thresholds=args.thresholds,
                 hidden=args.hidden, seed=args.seed, variants=args.variants, start=args.start,
                 oracle_minutes=args.oracle_minutes,
                 progress_bars=not args.quiet, warm_start=warm, es=es)
