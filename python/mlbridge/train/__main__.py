"""Command line of mlbridge.train.

    python -m mlbridge.train inliner --out runs/inliner            # train on the corpus
    python -m mlbridge.train inliner --address auto ...            # on a running Ray cluster
    python -m mlbridge.train throughput --workers 1 2              # compiles/s by worker count
    python -m mlbridge.train evaluate --split heldout --out r.json # deployed plugin vs clang -Oz
    python -m mlbridge.train phase-order --out runs/phase-order    # phase ordering on .text
    python -m mlbridge.train evaluate --pass phase-order ...       # its deployed plugin vs -Oz

Guide: docs/training.md.
"""

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path


class _IRModule:
    """A module given as an IR file on the command line (no corpus)."""

    def __init__(self, path, library=None):
        self.path = Path(path)
        self.name = str(self.path)
        self.library = library or self.path.stem

    def ir(self, build_dir=None):
        return self.path


def _corpus_modules(split, args):
    from ..corpus import Corpus
    corpus = Corpus.load(args.manifest) if args.manifest else Corpus.load()
    mods = corpus.modules(split=split)
    if args.libraries:
        mods = [m for m in mods if m.library in args.libraries]
    return mods


def _select(mods, args, limit):
    """Modules small enough to train on (bitcode size cap), at most limit."""
    out = []
    for m in mods:
        if not getattr(m, "ir_matches", True):
            continue  # its IR does not compile to the -Oz object: no valid reward
        try:
            ir = Path(m.ir(args.build_dir))
        except Exception as e:  # a TU the corpus cannot build: leave it out, say so
            logging.getLogger("mlbridge.train").warning("%s: %s", m.name, e)
            continue
        if args.max_ir_kb and ir.stat().st_size > args.max_ir_kb * 1024:
            continue
        out.append(m)
    if limit:
        import random
        random.Random(0).shuffle(out)
        out = sorted(out[:limit], key=lambda m: m.name)
    return out


def cmd_inliner(args):
    from .inliner import TrainConfig, train
    if args.train_ir:
        train_mods = [_IRModule(p) for p in args.train_ir]
        val_mods = [_IRModule(p) for p in (args.validation_ir or [])]
    else:
        train_mods = _select(_corpus_modules("train", args), args, args.max_train)
        val_mods = _select(_corpus_modules("validation", args), args, args.max_validation)
    if not train_mods or not val_mods:
        sys.exit("mlbridge.train: no training or validation modules")
    cfg = TrainConfig(iterations=args.iterations, flips_per_module=args.flips,
                      later_flips=args.later_flips,
                      rates=args.rates, hidden=args.hidden, seed=args.seed)
    summary = train(train_mods, val_mods, args.out, workers=args.workers,
                    address=args.address, config=cfg, build_dir=args.build_dir,
                    progress=not args.quiet, cache_dir=args.cache,
                    labels_from=args.labels_from or ())
    print(json.dumps(summary, indent=2))


def cmd_phase_order(args):
    from ..llvm.plugins import find_plugins
    from .phase_order import train
    train_mods = _select(_corpus_modules("train", args), args, args.max_train)
    val_mods = _select(_corpus_modules("validation", args), args, args.max_validation)
    if not train_mods or not val_mods:
        sys.exit("mlbridge.train: no training or validation modules")
    plugin = args.plugin or find_plugins(args.plugin_build_dir)
    summary = train(train_mods, val_mods, plugin=plugin, out_dir=args.out,
                    workers=args.workers, address=args.address, max_steps=args.max_steps,
                    data_from=args.data_from, thresholds=args.thresholds,
                    hidden=args.hidden, seed=args.seed, progress_bars=not args.quiet)
    print(json.dumps(summary, indent=2))


def cmd_throughput(args):
    """Compiles per second of the -Oz rollout of the same modules with each
    worker count (Ray started once per count)."""
    from .cluster import TaskFailed, WorkerPool
    if args.train_ir:
        mods = [_IRModule(p) for p in args.train_ir]
    else:
        mods = _select(_corpus_modules("train", args), args, args.max_train)
    from .compile import make_task
    tasks = [make_task(m.ir(args.build_dir), key=m.name, timeout=900.0) for m in mods]
    tasks = tasks * args.repeat
    rows = []
    for n in args.workers:
        with WorkerPool(n, address=args.address) as pool:
            pool.map(tasks[: max(2, n)])  # warm: workers started, caches filled
            t0 = time.monotonic()
            res = pool.map(tasks)
            dt = time.monotonic() - t0
        ok = sum(not isinstance(r, TaskFailed) for r in res)
        rows.append({"workers": n, "compiles": ok, "seconds": dt, "compiles_per_second": ok / dt})
        print(f"{n} worker(s): {ok} compiles in {dt:.1f} s = {ok / dt:.2f} compiles/s", flush=True)
    if len(rows) > 1:
        print(f"speed-up {rows[-1]['workers']} vs {rows[0]['workers']} workers: "
              f"{rows[-1]['compiles_per_second'] / rows[0]['compiles_per_second']:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"modules": len(mods), "repeat": args.repeat, "rows": rows,
                       "load": os.getloadavg()}, f, indent=2)


def cmd_evaluate(args):
    from ..llvm.plugins import find_plugins
    from . import evaluate
    mods = _corpus_modules(args.split, args)
    if args.max_modules:
        mods = mods[: args.max_modules]
    plugins = find_plugins(args.plugin_build_dir) if not args.plugin else None
    bar = None
    if not args.quiet:
        from tqdm import tqdm
        bar = tqdm(total=len(mods), desc=f"{args.split}: -Oz vs plugin", unit="unit")
    with tempfile.TemporaryDirectory(prefix="mlbridge-evaluate-") as tmp:
        if args.pass_name == "phase-order":
            from .phase_order import plugin_env
            plugin = args.plugin or str(plugins.phase_order)
            model, steps = args.model, args.max_steps
            if args.fixed_action is not None:
                model, steps = _fixed_action_model(args.fixed_action, tmp), 1
            rows = evaluate.evaluate_modules(mods, plugin, env=plugin_env(model, steps),
                                             jobs=args.jobs,
                                             progress=bar.update if bar else None)
        else:
            plugin = args.plugin or str(plugins.inline_advisor)
            rows = evaluate.evaluate_modules(mods, plugin, model=args.model, jobs=args.jobs,
                                             progress=bar.update if bar else None)
    if bar:
        bar.close()
    summary = evaluate.write(rows, args.out) if args.out else evaluate.summarize(rows)
    print(evaluate.markdown_table(summary))
    for e in summary["errors"]:
        print(f"error: {e['module']}: {e['error'][:300]}", file=sys.stderr)


def _fixed_action_model(action, folder):
    """An ONNX policy (written into ``folder``) that always takes ``action``
    (with one step: the trivial baselines, e.g. 15 = "-Oz twice")."""
    import numpy as np
    from .phase_order import NUM_OBSERVATIONS, NUM_PASS_ACTIONS, PhasePolicy
    hidden = 1
    b2 = np.full(NUM_PASS_ACTIONS, -1.0, dtype=np.float32)
    b2[action] = 1.0
    pol = PhasePolicy(np.zeros((hidden, NUM_OBSERVATIONS)), np.zeros(hidden),
                      np.zeros((NUM_PASS_ACTIONS, hidden)), b2, threshold=0.0)
    path = os.path.join(folder, f"action{action}.onnx")
    pol.to_onnx(path)
    return path


def cmd_oracle(args):
    """Budgeted per-module search (evaluate.search_oracle) on a split."""
    from .cluster import WorkerPool
    from .evaluate import search_oracle
    mods = [m for m in _corpus_modules(args.split, args) if m.library not in args.exclude]
    with WorkerPool(args.workers, address=args.address) as pool:
        rows = search_oracle(pool, mods, reversals=args.reversals)
    oz = sum(r["oz_text"] for r in rows)
    best = sum(r["oracle_text"] for r in rows)
    print(f"{len(rows)} units: -Oz {oz:,} bytes, search oracle {best:,} bytes "
          f"({100.0 * (best - oz) / oz:+.2f} %)")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"reversals": args.reversals, "rows": rows, "oz_text": oz,
                       "oracle_text": best}, f, indent=1)


def build_parser():
    p = argparse.ArgumentParser(prog="python -m mlbridge.train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    def common(q):
        q.add_argument("--address", default=None,
                       help="Ray cluster address ('auto' or host:port); default: local Ray")
        q.add_argument("--manifest", default=None, help="corpus manifest (default: the repo's)")
        q.add_argument("--build-dir", default=None, help="where the corpus IR is built")
        q.add_argument("--libraries", nargs="*", default=None, help="only these libraries")
        q.add_argument("--max-ir-kb", type=int, default=600,
                       help="leave out modules whose bitcode is larger (training speed)")
        q.add_argument("--max-train", type=int, default=None)
        q.add_argument("--train-ir", nargs="*", default=None,
                       help="train on these IR files instead of the corpus")

    q = sub.add_parser("inliner", help="train the inlining-for-size policy")
    common(q)
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
    q.set_defaults(func=cmd_inliner)

    q = sub.add_parser("throughput", help="compiles/s by number of Ray workers")
    common(q)
    q.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    q.add_argument("--repeat", type=int, default=1)
    q.add_argument("--json", default=None, help="write the numbers here")
    q.set_defaults(func=cmd_throughput)
    q = sub.add_parser("oracle", help="budgeted per-module search against the measured size")
    q.add_argument("--split", default="heldout", choices=["train", "validation", "heldout"])
    q.add_argument("--manifest", default=None)
    q.add_argument("--libraries", nargs="*", default=None)
    q.add_argument("--exclude", nargs="*", default=[], help="libraries to leave out")
    q.add_argument("--reversals", type=int, default=6, help="single reversals tried per module")
    q.add_argument("--workers", type=int, default=2)
    q.add_argument("--address", default=None)
    q.add_argument("--out", default=None)
    q.set_defaults(func=cmd_oracle)

    q = sub.add_parser("phase-order", help="train the phase-ordering policy on .text")
    common(q)
    q.add_argument("--out", required=True, help="output folder (log, oracle data, policy)")
    q.add_argument("--workers", type=int, default=2)
    q.add_argument("--max-steps", type=int, default=3, help="actions per episode")
    q.add_argument("--max-validation", type=int, default=None)
    q.add_argument("--thresholds", type=float, nargs="+", default=[0.05, 0.1, 0.2, 0.4, 0.8],
                   help="validation candidates: the predicted gain (percent of .text) an "
                        "action needs before the policy takes it")
    q.add_argument("--hidden", type=int, default=32)
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--data-from", default=None, help="oracle.npz of an earlier run")
    q.add_argument("--plugin", default=None, help="MLBridgePhaseOrder.so (default: the build's)")
    q.add_argument("--plugin-build-dir", default=None)
    q.add_argument("--quiet", action="store_true")
    q.set_defaults(func=cmd_phase_order)

    q = sub.add_parser("evaluate", help="deployed plugin vs clang-19 -Oz, per library")
    q.add_argument("--pass", dest="pass_name", default="inliner",
                   choices=["inliner", "phase-order"], help="which plugin")
    q.add_argument("--max-steps", type=int, default=3,
                   help="phase-order: actions per episode")
    q.add_argument("--fixed-action", type=int, default=None,
                   help="phase-order: one step of this action (a trivial baseline: "
                        "15 = -Oz twice, 16 = mergefunc)")
    q.add_argument("--split", default="heldout", choices=["train", "validation", "heldout"])
    q.add_argument("--manifest", default=None)
    q.add_argument("--libraries", nargs="*", default=None)
    q.add_argument("--max-modules", type=int, default=None)
    q.add_argument("--plugin", default=None, help="the plugin (default: the build's)")
    q.add_argument("--plugin-build-dir", default=None)
    q.add_argument("--model", default=None,
                   help="an ONNX policy run by ONNX Runtime (default: the built-in compiled model)")
    q.add_argument("--jobs", type=int, default=2)
    q.add_argument("--out", default=None, help="write rows and summary (JSON) here")
    q.add_argument("--quiet", action="store_true")
    q.set_defaults(func=cmd_evaluate)
    return p


def main(argv=None):
    logging.basicConfig(level=logging.WARNING, format="mlbridge.train: %(message)s")
    args = build_parser().parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
