r"""Command line of the corpus.

    python -m mlbridge.corpus fetch [--libraries zlib,bzip2]
    python -m mlbridge.corpus build [-j 2] [--split train]
    python -m mlbridge.corpus baseline [--output baseline.json]
    python -m mlbridge.corpus check [-j 2]
    python -m mlbridge.corpus list [--split heldout] [--units]
    python -m mlbridge.corpus manifest [--libraries zlib]   # regenerate from corpus/recipes.toml

Exit status: 0 on success, 1 when a check fails or a unit does not build,
2 for bad arguments or a broken manifest / download. ``fetch``, ``build`` and
``baseline`` restore a source that differs from its pin (a warning names
it); ``check`` reports it and does not measure that library.
"""

from __future__ import annotations

import csv
import json
import logging
import sys
import time
from collections import defaultdict
from pathlib import Path

from .. import cli
from . import SPLITS, Corpus, FetchError
from .fetch import SourceMismatch
from .jobs import DEFAULT_JOBS, baseline, build_ir, measure, run_parallel


def _libraries(value):
    return [v for v in value.split(",") if v] if value else None


def build_parser():
    p = cli.ArgumentParser(prog="python -m mlbridge.corpus",
                                description="The real-code corpus: fetch, build IR, measure "
                                            "the clang-19 -Oz baseline, check.")
    p.add_argument("--manifest", type=Path, help="manifest path (default corpus/manifest.json)")
    p.add_argument("--cache-dir", type=Path, help="downloads (default .deps/corpus or "
                                                  "$MLBRIDGE_CORPUS_CACHE)")
    p.add_argument("--build-dir", type=Path, help="IR and baselines (default build-corpus or "
                                                  "$MLBRIDGE_CORPUS_BUILD)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    sub = p.add_subparsers(dest="command", required=True)

    def common(q, jobs=True):
        q.add_argument("--libraries", help="comma-separated library names (default: all)")
        q.add_argument("--split", choices=SPLITS, help="only the libraries of this split")
        if jobs:
            q.add_argument("-j", "--jobs", type=cli.positive_int, default=DEFAULT_JOBS,
                           help=f"compiler processes at once (default {DEFAULT_JOBS})")

    common(sub.add_parser("fetch", help="download and verify the sources"), jobs=False)
    common(sub.add_parser("build", help="build the bitcode of every unit"))
    q = sub.add_parser("baseline", help="measure clang-19 -Oz .text per unit and library")
    common(q)
    q.add_argument("--output", type=Path, help="per-library table (.json or .csv)")
    q.add_argument("--units-output", type=Path, help="per-unit table (.json or .csv)")
    common(sub.add_parser("check", help="verify the sources, -Oz attributes, IR-vs-source "
                                        ".text and the recorded baselines"))
    q = sub.add_parser("list", help="libraries (or units) with split and counts")
    common(q, jobs=False)
    q.add_argument("--units", action="store_true", help="one line per unit")
    q.add_argument("--markdown", action="store_true",
                   help="per-library and per-split tables in Markdown (docs/corpus.md)")
    q = sub.add_parser("manifest", help="regenerate the manifest from the recipes")
    q.add_argument("--libraries", help="only these (others are kept as they are)")
    q.add_argument("-j", "--jobs", type=cli.positive_int, default=DEFAULT_JOBS)
    return p


def _selected(corpus, args):
    libs = corpus.select(_libraries(args.libraries))
    return [lib for lib in libs if args.split is None or lib.split == args.split]


def _modules(corpus, args):
    names = [lib.name for lib in _selected(corpus, args)]
    return corpus.modules(libraries=names, include_mismatched=True)


def _write_table(path: Path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".csv":
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    else:
        path.write_text(json.dumps(rows, indent=1) + "\n")


def cmd_fetch(corpus, args):
    started = time.monotonic()
    libs = _selected(corpus, args)
    corpus.fetch([lib.name for lib in libs], progress=not args.no_progress)
    print(f"fetched and verified {len(libs)} libraries in {time.monotonic() - started:.1f} s")
    return 0


def _run_units(corpus, args, fn, desc, leave_out=()):
    """``fn`` run on every selected unit (but those of the ``leave_out``
    libraries), their libraries fetched and verified first: (units,
    results, seconds)."""
    mods = [m for m in _modules(corpus, args) if m.library not in leave_out]
    corpus.fetch(sorted({m.library for m in mods}))
    started = time.monotonic()
    results = run_parallel(fn, mods, jobs=args.jobs, desc=desc, progress=not args.no_progress)
    return mods, results, time.monotonic() - started


def cmd_build(corpus, args):
    mods, results, seconds = _run_units(corpus, args, build_ir, "IR")
    failed = [(name, err) for name, _, err in results if err]
    for name, err in failed:
        print(f"FAILED {name}: {err}", file=sys.stderr)
    print(f"built {len(mods) - len(failed)} of {len(mods)} units into {corpus.build_dir} "
          f"in {seconds:.1f} s")
    return 1 if failed else 0


def cmd_baseline(corpus, args):
    mods, results, seconds = _run_units(corpus, args, baseline, "baseline")
    per_lib = defaultdict(lambda: {"units": 0, "text": 0, "failed": 0})
    unit_rows = []
    for m, (name, text, err) in zip(mods, results):
        row = per_lib[m.library]
        if err:
            row["failed"] += 1
            print(f"FAILED {name}: {err}", file=sys.stderr)
            continue
        row["units"] += 1
        row["text"] += text
        unit_rows.append({"library": m.library, "unit": name, "split": m.split,
                          "lang": m.lang, "text": text})
    table = [{"library": lib, "split": corpus.libraries[lib].split,
              "lang": corpus.libraries[lib].lang, **row} for lib, row in per_lib.items()]
    total = {"library": "TOTAL", "split": "", "lang": "",
             "units": sum(r["units"] for r in table), "text": sum(r["text"] for r in table),
             "failed": sum(r["failed"] for r in table)}
    print(f"{'library':<16} {'split':<10} {'lang':<4} {'units':>6} {'.text bytes':>12}")
    for r in table + [total]:
        print(f"{r['library']:<16} {r['split']:<10} {r['lang']:<4} {r['units']:>6} "
              f"{r['text']:>12}")
    print(f"measured in {seconds:.1f} s (cached units are not recompiled)")
    if args.output:
        _write_table(args.output, table + [total])
    if args.units_output and unit_rows:
        _write_table(args.units_output, unit_rows)
    return 1 if total["failed"] else 0


def cmd_check(corpus, args):
    problems, unverified = [], set()
    libs = _selected(corpus, args)
    for lib in libs:  # every source file its units read, as pinned (not restored here)
        try:
            corpus.fetch([lib.name], repair=False)
        except FetchError as e:
            hint = "; `fetch` restores it" if isinstance(e, SourceMismatch) else ""
            problems.append(f"{lib.name}: {e}{hint}")
            unverified.add(lib.name)
    mods, results, seconds = _run_units(corpus, args, measure, "check", leave_out=unverified)
    mismatched = 0
    for m, res in zip(mods, results):
        if "error" in res:
            problems.append(f"{m.name}: {res['error']}")
            continue
        if res["missing_size_attributes"]:
            problems.append(f"{m.name}: functions without minsize/optsize: "
                            f"{', '.join(res['missing_size_attributes'][:5])}")
        if res["text"] != m.manifest_text:
            problems.append(f"{m.name}: baseline .text {res['text']} != {m.manifest_text} "
                            f"recorded in the manifest")
        if res["ir_text"] != res["text"]:
            mismatched += 1
            if m.ir_matches:
                problems.append(f"{m.name}: .text from IR {res['ir_text']} != from source "
                                f"{res['text']} (not flagged in the manifest)")
    for p in problems:
        print(f"FAILED {p}", file=sys.stderr)
    if unverified:
        print(f"not measured: {', '.join(sorted(unverified))}", file=sys.stderr)
    print(f"checked {len(mods)} units of {len(libs) - len(unverified)} libraries in "
          f"{seconds:.1f} s: {len(problems)} problems, "
          f"{mismatched} IR-vs-source mismatches (flagged in the manifest)")
    return 1 if problems else 0


def _markdown(libs):
    print("| library | crate | split | lang | units | skipped | `-Oz` `.text` (bytes) |")
    print("|---|---|---|---|---:|---:|---:|")
    for lib in libs:
        origin = f"{lib.crate} {lib.version}" if lib.crate else lib.csmith["version"]
        print(f"| {lib.name} | {origin} | {lib.split} | {lib.lang.upper()} | {len(lib.units)} "
              f"| {len(lib.skipped)} | {sum(u['text'] for u in lib.units):,} |")
    print()
    print("| split | libraries | C / C++ units | units | `-Oz` `.text` (bytes) |")
    print("|---|---|---:|---:|---:|")
    for split in SPLITS:
        group = [lib for lib in libs if lib.split == split]
        c = sum(len(lib.units) for lib in group if lib.lang == "c")
        cxx = sum(len(lib.units) for lib in group if lib.lang == "c++")
        print(f"| {split} | {', '.join(lib.name for lib in group)} | {c} / {cxx} | {c + cxx} "
              f"| {sum(u['text'] for lib in group for u in lib.units):,} |")


def cmd_list(corpus, args):
    if args.markdown:
        _markdown(_selected(corpus, args))
        return 0
    for lib in _selected(corpus, args):
        if args.units:
            for m in corpus.modules(libraries=[lib.name], include_mismatched=True):
                flag = "" if m.ir_matches else "  (IR mismatch: excluded)"
                print(f"{m.split:<10} {m.name}  {m.manifest_text}{flag}")
            continue
        origin = f"{lib.crate} {lib.version}" if lib.crate else "csmith"
        print(f"{lib.name:<16} {lib.split:<10} {lib.lang:<4} {len(lib.units):>5} units "
              f"{len(lib.skipped):>4} skipped  {sum(u['text'] for u in lib.units):>9} B  "
              f"{origin}")
    return 0


def main(argv=None):
    args = build_parser().parse_args(argv)
    logging.basicConfig(format="warning: %(message)s")  # e.g. a source restored by fetch
    return cli.run(f"mlbridge.corpus {args.command}", _run, args)


def _run(args):
    if args.command == "manifest":
        from .generate import generate
        from .manifest import DEFAULT_MANIFEST
        generate(args.manifest or DEFAULT_MANIFEST, libraries=_libraries(args.libraries),
                 jobs=args.jobs, cache_dir=args.cache_dir, build_dir=args.build_dir,
                 progress=not args.no_progress)
        return 0
    corpus = Corpus.load(args.manifest, cache_dir=args.cache_dir, build_dir=args.build_dir)
    return {"fetch": cmd_fetch, "build": cmd_build, "baseline": cmd_baseline,
            "check": cmd_check, "list": cmd_list}[args.command](corpus, args)


if __name__ == "__main__":
    sys.exit(main())
