"""Measuring trained register-allocation policies on the held-out libraries.

    python -m mlbridge.train.regalloc heldout --out heldout.json   # per library, vs greedy
    python -m mlbridge.train.regalloc demo                         # one library, two lines

Training itself is ``python -m mlbridge.train regalloc`` (docs/training.md).
"""

import argparse
import json
import sys

from ...corpus import Corpus
from ..cluster import Workdir
from .evict import SHIPPED_POLICY, LinearEviction
from .task import evict_task, run_task
from .train_evict import by_library, load_items

DEMO_LIBRARY = "snappy"


def _modules(split, libraries):
    mods = Corpus.load().modules(split=split)
    return [m for m in mods if not libraries or m.library in libraries]


def _evict_totals(items, theta, *, pool=None, progress=None):
    """``{name: total}`` of greedy with eviction policy ``theta`` (None:
    LLVM's default advisor), on Ray workers or, without a pool, here."""
    if pool is not None:
        from .train_evict import measure
        return {k: r["total"] for k, r in measure(pool, items, theta=theta,
                                                   progress=progress).items()}
    wd = Workdir()
    try:
        out = {}
        for it in items:
            out[it.name] = run_task(evict_task(it.ir, theta=theta, key=it.name), wd)["total"]
            if progress:
                progress(1)
        return out
    finally:
        wd.close()


def cmd_heldout(args):
    from ..cluster import WorkerPool
    items = load_items(_modules("heldout", args.libraries))
    theta = LinearEviction.load(args.policy).theta
    bar = None
    if not args.quiet:
        from tqdm import tqdm
        bar = tqdm(total=2 * len(items), desc="heldout: greedy, trained eviction", unit="unit")
    with WorkerPool(args.workers, address=args.address) as pool:
        base = _evict_totals(items, None, pool=pool, progress=bar.update if bar else None)
        ours = _evict_totals(items, theta, pool=pool, progress=bar.update if bar else None)
    if bar:
        bar.close()
    rows, total = by_library(items, ours, base)
    print("| library | units | greedy (default advisor) | trained eviction advisor | ratio |")
    print("|---|---:|---:|---:|---:|")
    for r in rows + [total]:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
        print(f"| {r['library']} | {r['modules']} | {r['greedy']:,.1f} | {r['policy']:,.1f} | "
              f"{ratio} |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"policy": str(args.policy), "rows": rows, "total": total,
                       "units": {it.name: {"library": it.library, "greedy": base[it.name],
                                           "trained": ours[it.name]} for it in items}},
                      f, indent=1)


def cmd_demo(args):
    items = load_items(_modules("heldout", [args.library]))
    theta = LinearEviction.load(args.policy).theta
    base = _evict_totals(items, None)
    ours = _evict_totals(items, theta)
    _, total = by_library(items, ours, base)
    print(f"regalloc score on held-out {args.library} ({total['modules']} units, llc-19 -O2, "
          f"lower is better): greedy {total['greedy']:,.1f}, greedy + trained eviction advisor "
          f"over pipes {total['policy']:,.1f} ({total['ratio']:.3f}x)")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m mlbridge.train.regalloc", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    q = sub.add_parser("heldout", help="per held-out library: greedy vs the trained policy")
    q.add_argument("--libraries", nargs="*", default=None)
    q.add_argument("--policy", default=str(SHIPPED_POLICY), help="evict_policy.json")
    q.add_argument("--workers", type=int, default=2)
    q.add_argument("--address", default=None)
    q.add_argument("--out", default=None, help="write the rows (JSON) here")
    q.add_argument("--quiet", action="store_true")
    q.set_defaults(func=cmd_heldout)
    q = sub.add_parser("demo", help="one held-out library, score vs greedy")
    q.add_argument("--library", default=DEMO_LIBRARY)
    q.add_argument("--policy", default=str(SHIPPED_POLICY), help="evict_policy.json")
    q.set_defaults(func=cmd_demo)
    args = p.parse_args(argv)
    try:
        args.func(args)
    except FileNotFoundError as e:
        sys.exit(f"mlbridge.train.regalloc: {e}")


if __name__ == "__main__":
    main()
