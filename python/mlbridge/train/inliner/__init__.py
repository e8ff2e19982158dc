"""Inlining for size: a policy that makes every inlining decision, from
LLVM's inliner features and optionally IR2Vec vectors, trained against
measured ``.text`` (``python -m mlbridge.train inliner train``; docs/training.md).

* :mod:`.policy` -- the network (numpy; ONNX export for the plugin);
* :mod:`.task` -- one compile of one module with a policy, on a worker;
* :mod:`.trainer` -- behavioural cloning, evolution strategies, selection;
* :mod:`.oracle` -- a per-module search bounding what a policy could gain.
"""

from .policy import EMBEDDINGS, MODEL_FEATURES, InlinePolicy, feature_matrix
from .task import execute as run_task, make_task
from .trainer import TrainConfig, train
from ..size_cli import commands as size_commands
from . import rllib

__all__ = ["COMMANDS", "EMBEDDINGS", "MODEL_FEATURES", "InlinePolicy", "feature_matrix",
           "make_task", "run_task", "TrainConfig", "train", "add_arguments", "main"]


#: ``evaluate`` and ``heldout``: the deployed plugin against ``clang-19 -Oz``;
#: ``rllib``: RLlib PPO through the kit's PluginEnv.
COMMANDS = {**size_commands("inliner"), "rllib": rllib.COMMAND}


def add_arguments(q):
    from ...cli import output_folder, positive_int
    from ..modules import add_module_arguments
    add_module_arguments(q)
    q.add_argument("--out", required=True, type=output_folder,
                   help="output folder (log, curve, policy)")
    q.add_argument("--workers", type=positive_int, default=2)
    q.add_argument("--iterations", type=int, default=12, help="ES iterations")
    q.add_argument("--pairs", type=int, default=6,
                   help="antithetic perturbation pairs per ES iteration")
    q.add_argument("--modules-per-iteration", type=int, default=16,
                   help="training modules compiled per perturbation and ES iteration")
    q.add_argument("--change", type=float, default=0.02,
                   help="share of decisions a perturbation changes (sets sigma)")
    q.add_argument("--lr", type=float, default=None, help="Adam step (default sigma / 10)")
    q.add_argument("--hidden", type=int, default=32)
    q.add_argument("--project", type=int, default=8,
                   help="numbers each IR2Vec vector is projected to (with --embeddings)")
    q.add_argument("--embeddings", action="store_true",
                   help="also read the caller's and callee's IR2Vec vectors (compiles "
                        "through MLBridgeInlineAdvisor.so)")
    q.add_argument("--eval-every", type=int, default=3,
                   help="validate every N-th ES iterate (and the last)")
    q.add_argument("--defer-shares", type=float, nargs="*", default=[0.02, 0.05, 0.2],
                   help="deferral-margin candidates: shares of the training requests, the "
                        "policy's least confident, on which LLVM's decision stands")
    q.add_argument("--warm-start", default=None,
                   help="start from this policy.json instead of cloning LLVM's decisions")
    q.add_argument("--max-minutes", type=float, default=None,
                   help="time box: no ES iteration starts after this many minutes")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--max-validation", type=int, default=None)
    q.add_argument("--cache", default=None,
                   help="folder caching LLVM's own trajectories between runs (keyed by "
                        "module content and clang version)")
    q.add_argument("--quiet", action="store_true")


def main(args):
    from ..modules import training_modules
    from ..results import TrainingError
    train_mods, val_mods = training_modules(args)
    if not train_mods or not val_mods:
        raise TrainingError("no training or validation modules")
    cfg = TrainConfig(iterations=args.iterations, pairs=args.pairs,
                      modules_per_iteration=args.modules_per_iteration, change=args.change,
                      lr=args.lr, hidden=args.hidden, project=args.project,
                      embeddings=args.embeddings, eval_every=args.eval_every, seed=args.seed,
                      defer_shares=args.defer_shares, warm_start=args.warm_start,
                      max_minutes=args.max_minutes)
    return train(train_mods, val_mods, args.out, workers=args.workers,
                 address=args.address, config=cfg, build_dir=args.build_dir,
                 progress=not args.quiet, cache_dir=args.cache)
