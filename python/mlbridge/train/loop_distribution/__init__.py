"""Loop distribution: which ordered partition of each innermost loop's
dependence graph ``MLBridgeLoopDistribution.so`` should make, learned from
measured callgrind Ir (``python -m mlbridge.train loop-distribution train``;
docs/loop-distribution.md, "Training and results").

* :mod:`.partitions` -- valid ordered partitions, their enumeration and the
  agents' moves that build one;
* :mod:`.policy` -- :class:`GraphPolicy`, the gated graph network whose
  ``scores`` answer both agents, its imitation fit and ONNX export;
* :mod:`.episodes` -- the agents' walk over a loop graph in Python;
* :mod:`.task` -- builds and measurements on the Ray workers;
* :mod:`.trainer` -- probe, oracle, imitation, selection on validation;
* :mod:`.evaluate` -- the results table of a split;
* :mod:`.commands` -- the verbs besides ``train`` (``python -m
  mlbridge.train loop-distribution evaluate|heldout|compile-cost|coverage|demo``).
"""

from .partitions import decisions, enumerate_partitions, format_partition, is_valid, parse
from .policy import MAX_NODES, GraphPolicy
from .task import run_task
from .commands import COMMANDS

__all__ = ["COMMANDS", "GraphPolicy", "MAX_NODES", "decisions", "enumerate_partitions",
           "format_partition", "is_valid", "parse", "run_task", "add_arguments", "main"]


def add_arguments(q):
    from ...cli import existing_file, output_folder, positive_int
    q.add_argument("--out", required=True, type=output_folder,
                   help="output folder (log, curve, oracle, policy)")
    q.add_argument("--workers", type=positive_int, default=2)
    q.add_argument("--address", default=None, help="a running Ray cluster (default: local)")
    q.add_argument("--iterations", type=int, default=2)
    q.add_argument("--max-train", type=int, default=None, help="training kernels (first N)")
    q.add_argument("--families", nargs="*", default=None,
                   help="only these training families")
    q.add_argument("--mutations", type=int, default=0,
                   help="generated mutations per mutable training kernel (corpus.loops.generate)")
    q.add_argument("--max-validation", type=int, default=None)
    q.add_argument("--max-partitions", type=int, default=8,
                   help="ordered partitions measured per loop by the oracle")
    q.add_argument("--margin", type=float, default=0.01,
                   help="a distribution is a label only if it cuts Ir by more than this")
    q.add_argument("--biases", type=float, nargs="+", default=[-1e4, -2.0, -1.0, 0.0, 1.0],
                   help="validation candidates: new_loop_bias (-1e4: never distribute)")
    q.add_argument("--hidden", type=int, default=24)
    q.add_argument("--epochs", type=int, default=300)
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--cache", default=None, help="measurement cache folder")
    q.add_argument("--reuse-oracle", default=None,
                   help="a previous run's oracle.json: its measured partitions are reused")
    q.add_argument("--embedding-dims", type=int, nargs="+", default=[0],
                   help="networks to train and select between: 0 reads the count features "
                   "only, d > 0 also the IR2Vec node embeddings projected to d dimensions")
    q.add_argument("--seeds", type=int, nargs="+", default=None,
                   help="fit each network with each of these seeds (default: --seed); "
                   "validation selects")
    q.add_argument("--max-kernel-ratio", type=float, default=None,
                   help="reject a validation candidate that makes any kernel slower than "
                   "this many times -O3")
    q.add_argument("--plugin", default=None, type=existing_file,
                   help="MLBridgeLoopDistribution.so (default: the build's)")
    q.add_argument("--quiet", action="store_true")


def kernel_sets(args, out_dir):
    """(training kernels with their mutations, validation kernels)."""
    import os
    from ...corpus import loops as corpus
    train = corpus.kernels("train")
    if args.families:
        train = [k for k in train if k.family in args.families]
    if args.max_train:
        train = train[: args.max_train]
    if args.mutations:
        mut = corpus.generate(os.path.join(out_dir, "mutations"), args.mutations,
                              seed=args.seed, split="train")
        names = {k.name for k in train}
        train += [m for m in mut if m.name.rsplit("_m", 1)[0] in names]
    val = corpus.kernels("validation")
    if args.max_validation:
        val = val[: args.max_validation]
    return train, val


def find_plugin(path=None):
    """MLBridgeLoopDistribution.so: ``path`` or the build's."""
    if path:
        return path
    from ...llvm.plugins.loop_distribution import plugin
    return str(plugin())


def main(args):
    from .trainer import train
    tr, val = kernel_sets(args, args.out)
    return train(tr, val, args.out, plugin=find_plugin(args.plugin), workers=args.workers,
                 address=args.address, iterations=args.iterations,
                 max_partitions=args.max_partitions, margin=args.margin,
                 biases=tuple(args.biases), hidden=args.hidden, epochs=args.epochs,
                 seed=args.seed, cache_dir=args.cache, progress=not args.quiet,
                 reuse_oracle=args.reuse_oracle, embedding_dims=tuple(args.embedding_dims),
                 max_kernel_ratio=args.max_kernel_ratio, seeds=args.seeds)
