"""Command line of mlbridge.train: ``<problem> <verb>`` for every training
problem of the registry (:mod:`mlbridge.train.registry`; ``train`` and the
problem's own verbs such as ``evaluate``, ``heldout``, ``demo``), and the
measuring tools that span problems.

    python -m mlbridge.train inliner train --out runs/inliner      # train on the corpus
    python -m mlbridge.train inliner train --address auto ...      # on a running Ray cluster
    python -m mlbridge.train phase-order train --out runs/po       # phase ordering on .text
    python -m mlbridge.train phase-order heldout                   # its deployed plugin vs -Oz
    python -m mlbridge.train loop-distribution demo                # one held-out kernel
    python -m mlbridge.train regalloc heldout --out heldout.json   # score per held-out library
    python -m mlbridge.train mlir-unroll train                     # the MLIR unroll policy
    python -m mlbridge.train throughput --workers 1 2              # compiles/s by worker count
    python -m mlbridge.train evaluate --split heldout --out r.json # deployed plugin vs clang -Oz
    python -m mlbridge.train evaluate --pass phase-order ...       # its deployed plugin vs -Oz
    python -m mlbridge.train evaluate --pass phase-order --flags mergefunc --policy p.json
                                        # + -Oz with stock flags, p.json at --thresholds/--margins
    python -m mlbridge.train oracle --split heldout                # inlining search bound
    python -m mlbridge.train size-report                           # the held-out size tables

Guide: docs/training.md.
"""

import argparse
import json
import logging
import os
import sys
import time

from .. import cli
from . import size_cli
from .registry import PROBLEMS, TRAIN


def cmd_train(args):
    summary = PROBLEMS[args.command].load().main(args)
    print(json.dumps(summary, indent=2))


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
        cli.write_json(args.json, {"modules": len(mods), "repeat": args.repeat, "rows": rows,
                                   "load": os.getloadavg()}, indent=2)


def corpus_of(args):
    from ..corpus import Corpus
    return Corpus.load(args.manifest) if args.manifest else Corpus.load()


def cmd_size_report(args):
    """docs/results.md's size tables: best flags chosen on validation (once,
    or again with --select-flags), then held-out per unit and under LTO."""
    from ..toolchain import toolchain
    from . import baselines, evaluate, phase_order
    from .modules import corpus_modules
    if args.tables_from:
        for title, table in baselines.doc_tables_from(args.tables_from).items():
            print(f"\n{title}:\n{table}")
        return
    cache = None if args.no_cache else evaluate.default_cache_dir()
    major = toolchain().major

    def fetched(split, libraries):
        mods = corpus_modules(split, argparse.Namespace(manifest=args.manifest,
                                                        libraries=libraries))
        corpus_of(args).fetch(libraries=sorted({m.library for m in mods}))
        return mods
    if args.select_flags or not baselines.best_flags_file().exists():
        val = fetched("validation", None)
        print(f"choosing the best flags on {len(val)} validation units ...", flush=True)
        rec = baselines.select_flags(val, jobs=args.jobs, cache=cache)
        for name, text in sorted(rec["validation_text"].items(), key=lambda kv: kv[1]):
            print(f"  {name}: {text:,}")
        print(f"best flags: {rec['best_name']} -> {baselines.best_flags_file()}", flush=True)
    mods = fetched(args.split, args.libraries)
    configs = [c for c in baselines.report_configs(single_flags=args.single_flags)
               if c.name not in args.skip]
    names = [c.name for c in configs]
    print(f"{args.split}: {len(mods)} units x {len(configs)} configurations "
          f"(best flags: {baselines.load_best_flags()}) ...", flush=True)
    rows = evaluate.measure(mods, configs, jobs=args.jobs, cache=cache)
    summary = evaluate.summarize(rows, names)
    out = {"compiler": toolchain().version, "split": args.split,
           "best_flags": baselines.load_best_flags(),
           "configs": {c.name: {"flags": list(c.flags), "plugins": list(c.plugins),
                                "settings": c.settings(),
                                **({"phase_order_start": list(phase_order.episode_start(c))}
                                   if "phase-order" in c.plugins else {})}
                       for c in configs},
           "per_unit": evaluate.as_json(summary), "rows": rows}
    if args.lto:
        lto_configs = [c for c in configs if c.name in baselines.LTO_CONFIGS]
        lto_mods = [m for m in mods if m.library not in args.lto_skip]
        print(f"\nfull LTO per library, {len(lto_configs)} configurations ...", flush=True)
        lto = evaluate.measure_lto(lto_mods, lto_configs, jobs=args.jobs, cache=cache)
        lto_summary = evaluate.summarize_lto(lto, [c.name for c in lto_configs])
        out["lto"] = evaluate.as_json(lto_summary)
        out["lto_results"] = lto
    else:
        lto_summary = None
    for title, table in baselines.doc_tables(summary, lto_summary).items():
        print(f"\n{title}:\n{table}")
    path = args.out or str(baselines.RESULTS_DIR / f"{args.split}_llvm{major}.json")
    cli.write_json(path, out, indent=1)
    print(f"wrote {path}")
    for e in summary["errors"]:
        print(f"error: {e['module']}: {e['errors']}", file=sys.stderr)


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
        cli.write_json(args.out, {"passes": args.passes, "max_requests": args.max_requests,
                                  "max_minutes": args.max_minutes, "rows": rows,
                                  "oz_text": oz, "oracle_text": best}, indent=1)


def build_parser():
    from .modules import add_module_arguments
    p = cli.ArgumentParser(prog="python -m mlbridge.train", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    for prob in PROBLEMS.values():
        q = sub.add_parser(prob.name, help=prob.summary, description=prob.summary)
        verbs = q.add_subparsers(dest="verb", required=True)
        for verb, command in prob.commands().items():
            v = verbs.add_parser(verb, help=command.help, description=command.help)
            command.add_arguments(v)
            v.set_defaults(func=cmd_train if verb == TRAIN else command.run)

    q = sub.add_parser("throughput", help="inliner compiles/s by number of Ray workers")
    add_module_arguments(q)
    q.add_argument("--workers", type=cli.positive_int, nargs="+", default=[1, 2])
    q.add_argument("--repeat", type=int, default=1)
    q.add_argument("--json", default=None, type=cli.output_file, help="write the numbers here")
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
    q.add_argument("--workers", type=cli.positive_int, default=2)
    q.add_argument("--address", default=None)
    q.add_argument("--out", default=None, type=cli.output_file)
    q.set_defaults(func=cmd_oracle)

    q = sub.add_parser("evaluate", help="deployed plugin vs clang-19 -Oz, per library")
    size_cli.add_evaluate_arguments(q)
    q.set_defaults(func=size_cli.cmd_evaluate)

    q = sub.add_parser("size-report", help="held-out .text: -Oz, best flags, the plugins, "
                                           "combined, LTO (docs/results.md)")
    q.add_argument("--select-flags", action="store_true",
                   help="choose the best flags on the validation split again")
    q.add_argument("--split", default="heldout", choices=["validation", "heldout"])
    q.add_argument("--manifest", default=None)
    q.add_argument("--libraries", nargs="*", default=None)
    q.add_argument("--single-flags", action="store_true", help="also each flag alone")
    q.add_argument("--skip", nargs="*", default=[], metavar="CONFIG",
                   help='configurations to leave out (e.g. "inliner")')
    q.add_argument("--no-lto", dest="lto", action="store_false", help="skip the LTO table")
    q.add_argument("--lto-skip", nargs="*", default=[], metavar="LIBRARY",
                   help="libraries to leave out of the LTO table")
    q.add_argument("--no-cache", action="store_true", help="measure everything again")
    q.add_argument("--jobs", type=cli.positive_int, default=2)
    q.add_argument("--out", default=None, type=cli.output_file,
                   help="results JSON (default: results/size/<split>_llvm<major>.json)")
    q.add_argument("--tables-from", default=None, metavar="JSON",
                   help="only print the Markdown tables of a results file it wrote")
    q.set_defaults(func=cmd_size_report)
    return p


def _with_verb(argv):
    """``<problem> [options]`` as it was before verbs: ``<problem> train [options]``."""
    if len(argv) >= 1 and argv[0] in PROBLEMS:
        verbs = PROBLEMS[argv[0]].commands()
        if len(argv) == 1 or (argv[1] not in verbs and argv[1] not in ("-h", "--help")):
            return [argv[0], TRAIN, *argv[1:]]
    return argv


def main(argv=None):
    logging.basicConfig(level=logging.WARNING, format="mlbridge.train: %(message)s")
    args = build_parser().parse_args(_with_verb(sys.argv[1:] if argv is None else list(argv)))
    name = " ".join(filter(None, (args.command, getattr(args, "verb", None))))
    return cli.run(f"mlbridge.train {name}", lambda _: args.func(args))


if __name__ == "__main__":
    sys.exit(main())
