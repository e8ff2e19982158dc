"""Measures UnrollCount.so with its compiled-in model against plain -O3 on
the loop kernels of one split (default `held_out`), with no model side:
clang loads the plugin and nothing else answers.

    python evaluate.py <UnrollCount.so> [--clang clang-19] [--split held_out]
                       [--kernels N] [--out results/unroll/heldout]

Per kernel file, two builds (docs/loop-kernels.md):

    <clang> -O3 -I corpus/loops -rdynamic corpus/loops/driver.c <file> -o <exe>
    <clang> -O3 -fpass-plugin=<UnrollCount.so> -I corpus/loops -rdynamic ... -o <exe>

and per kernel callgrind's Ir of the kernel (`loops.measure`) and its
checksums, which must be equal. Writes <out>.json and <out>.md (the table,
geomean, worst, the commands); exit status 1 when a checksum differs."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path

from mlbridge.corpus import loops
from mlbridge.toolchain import toolchain

BUILD = ("{clang} -O3{plugin} -I corpus/loops -rdynamic corpus/loops/driver.c "
         "corpus/loops/kernels/<family>.c -o <exe>")
MEASURE = ("valgrind --tool=callgrind --callgrind-out-file=<out> --collect-atstart=no "
           "--toggle-collect=<kernel> <exe> <kernel>")


def measure(plugin, clang, kernels, work):
    rows = {}
    groups = {}
    for k in kernels:
        groups.setdefault(k.source, []).append(k)
    for source, group in groups.items():
        o3, ml = work / f"{source.stem}.O3", work / f"{source.stem}.plugin"
        loops.build(source, ["-O3"], o3, clang=clang)
        loops.build(source, ["-O3", f"-fpass-plugin={plugin}"], ml, clang=clang)
        for k in group:
            (ir0, out0), (ir1, out1) = loops.measure(o3, k.name), loops.measure(ml, k.name)
            rows[k.name] = {"family": k.family, "O3": ir0, "plugin": ir1,
                            "ratio": ir1 / ir0, "same_output": out0 == out1}
        print(f"{source.stem}: {len(group)} kernels", file=sys.stderr, flush=True)
    return rows


def summary(rows):
    ratios = [r["ratio"] for r in rows.values()]
    worst = max(rows, key=lambda k: rows[k]["ratio"])
    return {"kernels": len(rows),
            "geomean": math.exp(sum(map(math.log, ratios)) / len(ratios)),
            "worst": rows[worst]["ratio"], "worst_kernel": worst,
            "best": min(ratios),
            "changed": sum(r["plugin"] != r["O3"] for r in rows.values()),
            "better": sum(r["plugin"] < r["O3"] for r in rows.values()),
            "worse": sum(r["plugin"] > r["O3"] for r in rows.values()),
            "outputs_differ": sorted(k for k, r in rows.items() if not r["same_output"])}


def markdown(doc):
    s = doc["summary"]
    lines = [f"# UnrollCount.so (compiled-in model) vs -O3, {doc['split']} kernels, "
             f"{doc['clang_version']}", "",
             f"Ir = callgrind instructions of the kernel and its callees (4 calls). "
             f"{s['kernels']} kernels: **geomean {s['geomean']:.4f} x -O3**, worst "
             f"{s['worst']:.4f} x (`{s['worst_kernel']}`), best {s['best']:.4f} x; "
             f"{s['changed']} changed ({s['better']} better, {s['worse']} worse); "
             + ("every checksum equal to -O3's." if not s["outputs_differ"] else
                f"**checksums differ: {', '.join(s['outputs_differ'])}**."), "",
             "Commands (repository root):", "", "```"]
    lines += doc["commands"] + ["```", "", "| kernel | family | Ir -O3 | Ir plugin | ratio | "
                                "same output |", "|---|---|---:|---:|---:|---|"]
    for k, r in doc["kernels"].items():
        lines.append(f"| {k} | {r['family']} | {r['O3']} | {r['plugin']} | {r['ratio']:.4f} | "
                     f"{'yes' if r['same_output'] else '**no**'} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("plugin", type=Path, help="UnrollCount.so built with -DUNROLL_MODEL")
    p.add_argument("--clang", default="clang-19")
    p.add_argument("--split", default="held_out", choices=loops.SPLITS)
    p.add_argument("--kernels", type=int, help="only the first N kernels")
    p.add_argument("--out", type=Path, default=Path("results/unroll/heldout"))
    p.add_argument("--command", action="append", default=[],
                   help="a command to record in the report (how the plugin was built)")
    args = p.parse_args(argv)
    for var in [v for v in os.environ if v.startswith("UNROLL_")]:
        del os.environ[var]  # the compiled-in model, nothing else
    plugin = args.plugin.resolve()
    kernels = loops.kernels(args.split)[:args.kernels]
    with tempfile.TemporaryDirectory(prefix="unroll-eval-") as work:
        rows = measure(plugin, args.clang, kernels, Path(work))
    doc = {"split": args.split, "clang": args.clang,
           "clang_version": toolchain(args.clang).version.splitlines()[0],
           "commands": args.command + [
               BUILD.format(clang=args.clang, plugin=""),
               BUILD.format(clang=args.clang, plugin=" -fpass-plugin=UnrollCount.so"),
               MEASURE,
               "python examples/new-optimization/evaluate.py " + " ".join(
                   map(str, argv if argv is not None else sys.argv[1:]))],
           "summary": summary(rows), "kernels": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown(doc))
    s = doc["summary"]
    print(f"{s['kernels']} {args.split} kernels: geomean {s['geomean']:.4f} x -O3, worst "
          f"{s['worst']:.4f} ({s['worst_kernel']}), {s['changed']} changed, "
          f"outputs {'equal' if not s['outputs_differ'] else 'DIFFER'}")
    return 1 if s["outputs_differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
