r"""Command line of the real-project builds.

    python -m mlbridge.builds list
    python -m mlbridge.builds fetch [--projects zlib,libyaml]
    python -m mlbridge.builds run [--projects ...] [--configs size,Oz] [--llvm 19,22]
                                  [--results FILE] [--table FILE] [--work DIR] [--keep]
                                  [--again]
    python -m mlbridge.builds runtime [--projects ...] [--configs O3,loopdist,O2,regalloc]
                                      [--llvm 19] [--results FILE] [--table FILE] [--again]
    python -m mlbridge.builds table [--results FILE] [--runtime [FILE]]

``run`` builds every project × configuration × LLVM version asked for (LLVM
versions in the order given, so ``--llvm 19,22`` finishes 19 first),
writing each result into ``--results`` as soon as it is measured; a
passing result already there is kept unless ``--again`` (a failed one is
built again). The plugins are copied into ``<work>/plugins-llvm<N>`` first,
so the whole run uses one set of plugin files while the build tree changes. A configuration whose
plugin the build manifest says is not built is reported and left out.
Exit status: 0 when every build and every test passed, 1 otherwise.

``runtime`` builds each project that has run-time workloads
(:mod:`.runtime`) in each configuration, runs its tests, then its own
programs on fixed inputs under callgrind (Ir of the whole process, every
output kept as sha256), writing each result into ``--results`` (default
``tests/real-builds/runtime.json``); projects one after another, each in
every configuration, so a partial run has whole comparisons. Exit status 1
when a build, a test or a workload failed, or a workload's output differs
from its base configuration's.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .. import cli
from ..build_manifest import NotBuilt
from ..llvm.plugins import PluginNotFound
from . import configs, projects, report, runtime
from .build import build_project
from .fetch import cache_dir, fetch

DEFAULT_RESULTS = Path("tests/real-builds/results.json")
DEFAULT_RUNTIME = Path("tests/real-builds/runtime.json")


def _names(value):
    return [v for v in value.split(",") if v] if value else None


def build_parser():
    p = cli.ArgumentParser(prog="python -m mlbridge.builds",
                           description="Real Debian projects built with each plugin "
                                       "configuration through their own build systems, "
                                       "tested with their own test suites, measured.")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the projects and configurations")
    q = sub.add_parser("fetch", help="download and verify the sources")
    q.add_argument("--projects", help="comma-separated (default: all)")
    q.add_argument("--cache", type=Path, help="download folder (default $MLBRIDGE_BUILDS_CACHE "
                                              "or ~/.cache/mlbridge/debian-sources)")
    q = sub.add_parser("run", help="build, test and measure")
    q.add_argument("--projects", help="comma-separated (default: all)")
    q.add_argument("--configs", help="comma-separated (default: all)")
    q.add_argument("--llvm", default="19,22", help="LLVM versions, in order (default 19,22)")
    q.add_argument("--results", type=Path, default=DEFAULT_RESULTS,
                   help=f"results JSON, updated after each build (default {DEFAULT_RESULTS})")
    q.add_argument("--work", type=Path, default=Path("build/builds-work"),
                   help="build folders (default build/builds-work)")
    q.add_argument("--build-dir", type=Path, help="mlbridge build with the plugins "
                                                  "(default $MLBRIDGE_BUILD_DIR or build)")
    q.add_argument("--cache", type=Path, help="download folder")
    q.add_argument("--table", type=Path, help="also write the tables (markdown) here at the end")
    q.add_argument("--keep", action="store_true", help="keep the build trees")
    q.add_argument("--again", action="store_true", help="rebuild results already there")
    q = sub.add_parser("runtime", help="build, test, and measure the run time of the "
                                       "projects' own programs under callgrind")
    q.add_argument("--projects", help="comma-separated (default: every project with "
                                      "workloads)")
    q.add_argument("--configs", default=",".join(runtime.CONFIGS),
                   help=f"comma-separated (default {','.join(runtime.CONFIGS)})")
    q.add_argument("--llvm", default="19", help="LLVM versions, in order (default 19)")
    q.add_argument("--results", type=Path, default=DEFAULT_RUNTIME,
                   help=f"results JSON, updated after each build (default {DEFAULT_RUNTIME})")
    q.add_argument("--work", type=Path, default=Path("build/runtime-work"),
                   help="build and run folders (default build/runtime-work)")
    q.add_argument("--build-dir", type=Path, help="mlbridge build with the plugins")
    q.add_argument("--cache", type=Path, help="download folder")
    q.add_argument("--table", type=Path, help="also write the tables (markdown) here at the end")
    q.add_argument("--again", action="store_true", help="measure results already there again")
    q.add_argument("--reuse-plugins", action="store_true",
                   help="use the plugins already copied into <work>/plugins-llvm<N> as they are "
                        "(continue a run with the plugins it measured)")
    q = sub.add_parser("table", help="print the tables of a results file")
    q.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    q.add_argument("--runtime", type=Path, nargs="?", const=DEFAULT_RUNTIME,
                   help=f"print the run-time tables of this file instead "
                        f"(default {DEFAULT_RUNTIME})")
    return p


def _run(args) -> int:
    if args.command == "list":
        for pr in projects.PROJECTS:
            print(f"{pr.name:<10} {pr.version:<18} {pr.build_system:<9} tests: "
                  f"{pr.test_format}")
        for c in configs.CONFIGS:
            env = " ".join(f"{k}={v}" for k, v in c.env.items())
            print(f"{c.name:<15} {c.level} compile={','.join(c.compile) or '-'} "
                  f"link={','.join(c.link) or '-'} {env}")
        return 0
    if args.command == "fetch":
        for pr in projects.select(_names(args.projects)):
            print(f"{pr.name}: {fetch(pr, args.cache or cache_dir())}")
        return 0
    if args.command == "table":
        if args.runtime is not None:
            print(runtime.table(report.load(args.runtime)))
        else:
            print(report.table(report.load(args.results)))
        return 0
    if args.command == "runtime":
        return _run_runtime(args)
    return _run_matrix(args)


def _run_runtime(args) -> int:
    names = _names(args.projects)
    chosen = [p for p in projects.select(names) if runtime.for_project(p.name)]
    if names and len(chosen) != len(names):
        missing = sorted(set(names) - {p.name for p in chosen})
        print(f"no run-time workloads for {', '.join(missing)}", file=sys.stderr)
        return 2
    cfgs = configs.select(_names(args.configs))
    records = report.load(args.results)
    done = {report.key(r) for r in records if r.get("measured")}
    failures = 0
    for llvm in [int(v) for v in _names(args.llvm)]:
        comp = _compilers(args, llvm, reuse=args.reuse_plugins)
        if comp is None:
            continue
        for pr in chosen:
            for cfg in cfgs:
                if (pr.name, cfg.name, llvm) in done and not args.again:
                    continue
                t0 = time.monotonic()
                try:
                    rec = runtime.measure_build(pr, cfg, comp, args.work / str(llvm) / pr.name,
                                                cache=args.cache)
                except NotBuilt as e:
                    print(f"{pr.name} {cfg.name} LLVM {llvm}: skipped: {e}", file=sys.stderr)
                    continue
                records = [r for r in records if report.key(r) != report.key(rec)] + [rec]
                report.save(args.results, records)
                row = next(r for r in runtime.compare(records) if report.key(r) == report.key(rec))
                bad = (not rec["measured"] or rec["tests_failed"] or row["differ"])
                failures += bool(bad)
                ir = sum(w["ir"] for w in rec.get("workloads", {}).values())
                ratio = "" if row["ratio"] is None else f" {row['ratio']:.4f} x {row['base']}"
                differ = f" OUTPUTS DIFFER: {row['differ']}" if row["differ"] else ""
                print(f"{pr.name} {cfg.name} LLVM {llvm}: "
                      f"{'measured' if rec['measured'] else 'FAILED: ' + rec['error'][-300:]} "
                      f"tests {rec['tests_passed']}/{rec['tests_total']} Ir {ir:,}{ratio}{differ} "
                      f"({time.monotonic() - t0:.0f}s)", flush=True)
    if args.table:
        with cli.naming(args.table):
            args.table.write_text(runtime.table(records))
    return 1 if failures else 0


def _compilers(args, llvm, reuse=False):
    """LLVM ``llvm``'s compilers with their plugins copied into the work
    folder (``reuse``: the copies already there), or None, said why, when
    that LLVM's plugins are not built."""
    try:
        return configs.compilers(llvm, args.build_dir, snapshot=args.work / f"plugins-llvm{llvm}",
                                 reuse=reuse)
    except (NotBuilt, PluginNotFound) as e:
        print(f"LLVM {llvm}: skipped: {e}", file=sys.stderr)
        return None


def _run_matrix(args) -> int:
    chosen = projects.select(_names(args.projects))
    cfgs = configs.select(_names(args.configs))
    records = report.load(args.results)
    done = {report.key(r) for r in records if r["ok"] and not r["tests_failed"]}
    failures = 0
    for llvm in [int(v) for v in _names(args.llvm)]:
        comp = _compilers(args, llvm)
        if comp is None:
            continue
        for cfg in cfgs:
            for pr in chosen:
                if (pr.name, cfg.name, llvm) in done and not args.again:
                    continue
                t0 = time.monotonic()
                try:
                    rec = build_project(pr, cfg, comp, args.work / str(llvm) / pr.name / cfg.name,
                                        cache=args.cache, keep=args.keep)
                except NotBuilt as e:
                    print(f"{pr.name} {cfg.name} LLVM {llvm}: skipped: {e}", file=sys.stderr)
                    break
                records = [r for r in records if report.key(r) != report.key(rec)] + [rec]
                report.save(args.results, records)
                bad = not rec["ok"] or rec["tests_failed"] or rec["tests_total"] == 0
                failures += bool(bad)
                print(f"{pr.name} {cfg.name} LLVM {llvm}: "
                      f"{'ok' if rec['ok'] else 'FAILED at ' + str(rec['failed_step'])} "
                      f"tests {rec['tests_passed']}/{rec['tests_total']} "
                      f".text {rec['text_total']} cpu {rec['cpu']:.1f}s "
                      f"({time.monotonic() - t0:.0f}s)", flush=True)
    if args.table:
        with cli.naming(args.table):
            args.table.write_text(report.table(records) + "\n")
    return 1 if failures else 0


def main(argv=None):
    args = build_parser().parse_args(argv)
    return cli.run(f"mlbridge.builds {args.command}", _run, args)


if __name__ == "__main__":
    sys.exit(main())
