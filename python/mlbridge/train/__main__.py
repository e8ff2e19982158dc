"""Command line of mlbridge.train: one subcommand per training problem of
the registry (:mod:`mlbridge.train.registry`), and the measuring tools.

    python -m mlbridge.train inliner --out runs/inliner            # train on the corpus
    python -m mlbridge.train inliner --address auto ...            # on a running Ray cluster
    python -m mlbridge.train phase-order --out runs/phase-order    # phase ordering on .text
    python -m mlbridge.train mlir-unroll                           # the MLIR unroll policy
    python -m mlbridge.train throughput --workers 1 2              # compiles/s by worker count
    python -m mlbridge.train evaluate --split heldout --out r.json # deployed plugin vs clang -Oz
    python -m mlbridge.train evaluate --pass phase-order ...       # its deployed plugin vs -Oz
    python -m mlbridge.train oracle --split heldout                # inlining search bound

Guide: docs/training.md.
"""

import argparse
import json
import logging
import os
import sys
import tempfile
import time

from .registry import PROBLEMS


def cmd_problem(args):
    from ..toolchain import CompileError
    from .results import TrainingError
    try:
        summary = PROBLEMS[args.command].load().main(args)
    except (TrainingError, CompileError) as e:
        sys.exit(f"mlbridge.train {args.command}: {e}")
    print(json.dumps(summary, indent=2))


def cmd_reserved(args):
    sys.exit(f"mlbridge.train: {args.command} is a reserved problem slot, not implemented yet "
             f"(docs/training.md, 'Add a problem')")


def cmd_throughput(args):
    """Compiles per second of the -Oz rollout of the same modules with each
    worker count (Ray started once per count)."""
    from .cluster import TaskFailed, WorkerPool
    from .inliner import make_task
    from .modules import IRModule, corpus_modules, select_modules
    if args.train_ir:
        mods = [IRModule(p) for p in args.train_ir]
    else:
        mods = select_modules(corpus_modules("train", args), args, args.max_train)
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
    from .modules import corpus_modules
    mods = corpus_modules(args.split, args)
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
    from ..llvm.plugins import NUM_OBSERVATIONS
    from .phase_order import NUM_PASS_ACTIONS, PhasePolicy
    hidden = 1
    b2 = np.full(NUM_PASS_ACTIONS, -1.0, dtype=np.float32)
    b2[action] = 1.0
    pol = PhasePolicy(np.zeros((hidden, NUM_OBSERVATIONS)), np.zeros(hidden),
                      np.zeros((NUM_PASS_ACTIONS, hidden)), b2, threshold=0.0)
    path = os.path.join(folder, f"action{action}.onnx")
    pol.to_onnx(path)
    return path


def cmd_oracle(args):
    """Greedy per-module search (inliner.oracle.search_oracle) on a split."""
    from .cluster import WorkerPool
    from .inliner.oracle import search_oracle
    from .modules import corpus_modules
    mods = [m for m in corpus_modules(args.split, args) if m.library not in args.exclude]
    with WorkerPool(args.workers, address=args.address) as pool:
        rows = search_oracle(pool, mods, passes=args.passes, max_requests=args.max_requests,
                             max_seconds=args.max_minutes and 60.0 * args.max_minutes)
    searched = [r for r in rows if "skipped" not in r]
    oz = sum(r["oz_text"] for r in searched)
    best = sum(r["oracle_text"] for r in searched)
    print(f"{len(searched)} units searched ({len(rows) - len(searched)} left out): -Oz "
          f"{oz:,} bytes, search oracle {best:,} bytes ({100.0 * (best - oz) / max(oz, 1):+.2f} %)")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"passes": args.passes, "max_requests": args.max_requests,
                       "max_minutes": args.max_minutes, "rows": rows,
                       "oz_text": oz, "oracle_text": best}, f, indent=1)


def build_parser():
    from .modules import add_module_arguments
    p = argparse.ArgumentParser(prog="python -m mlbridge.train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    for prob in PROBLEMS.values():
        q = sub.add_parser(prob.name, help=prob.summary)
        if prob.package is not None:
            prob.load().add_arguments(q)
        q.set_defaults(func=cmd_problem if prob.package else cmd_reserved)

    q = sub.add_parser("throughput", help="inliner compiles/s by number of Ray workers")
    add_module_arguments(q)
    q.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    q.add_argument("--repeat", type=int, default=1)
    q.add_argument("--json", default=None, help="write the numbers here")
    q.set_defaults(func=cmd_throughput)
    q = sub.add_parser("oracle", help="greedy per-module inlining search against the measured "
                                      "size")
    q.add_argument("--split", default="heldout", choices=["train", "validation", "heldout"])
    q.add_argument("--manifest", default=None)
    q.add_argument("--libraries", nargs="*", default=None)
    q.add_argument("--exclude", nargs="*", default=[], help="libraries to leave out")
    q.add_argument("--passes", type=int, default=2,
                   help="passes over every call site of each module")
    q.add_argument("--max-requests", type=int, default=None,
                   help="leave out modules with more inlining requests (budget)")
    q.add_argument("--max-minutes", type=float, default=None,
                   help="start no search step after this time (rows then say complete: false)")
    q.add_argument("--workers", type=int, default=2)
    q.add_argument("--address", default=None)
    q.add_argument("--out", default=None)
    q.set_defaults(func=cmd_oracle)

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
