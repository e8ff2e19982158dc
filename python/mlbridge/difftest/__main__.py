r"""Command line of the differential tests (docs: tests/differential/README.md).

    python -m mlbridge.difftest campaign --csmith 20 --stress 20 --thinlto 2 \
        --llvm 19,22 --jobs 2 --out results.json
    python -m mlbridge.difftest build --config ld-random-O3 --llvm 19 -- \
        clang-19 -O3 -fpass-plugin=... k.c -o k          # a reproducer of a served config
    python -m mlbridge.difftest reduce --config ra-model --llvm 19 --csmith-seed 12 \
        --name ra-model-csmith12 --time 600
    python -m mlbridge.difftest configs
    python -m mlbridge.difftest snapshot build/difftest-plugins   # then MLBRIDGE_BUILD_DIR=...

``campaign`` prints one summary (inputs x configurations x LLVM versions,
each kind of failure) and writes every result to ``--out``; it exits 3 when
a check failed. Errors are one line on stderr (:mod:`mlbridge.cli`: exit 1,
2 for bad arguments).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .. import cli
from ..errors import MLBridgeError
from .configs import CONFIGS, HOSTS

PROG = "python -m mlbridge.difftest"
#: The exit status of a campaign in which a check failed.
EXIT_FAILURES = 3
_NAMES = [c.name for c in CONFIGS]


def _versions(text):
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of LLVM versions: {text!r}") from None


def _count(text):
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected a count >= 0, got {text!r}")
    return n


def build_parser():
    p = cli.ArgumentParser(prog=PROG,
                                description="Differential tests of the shipped LLVM plugins.")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("campaign", help="run a campaign and summarize it")
    c.add_argument("--csmith", type=_count, default=0, metavar="N",
                   help="csmith programs (seeds from --seed)")
    c.add_argument("--stress", type=_count, default=0, metavar="N",
                   help="llvm-stress modules (seeds from --seed)")
    c.add_argument("--thinlto", type=_count, default=0, metavar="N",
                   help="multi-unit ThinLTO programs")
    c.add_argument("--units", type=cli.positive_int, default=4, help="units per ThinLTO program")
    c.add_argument("--kernels", type=_count, default=0, metavar="N",
                   help="generated loop kernels (seeds from --seed)")
    c.add_argument("--kernel-units", type=_count, default=0, metavar="N",
                   help="a ThinLTO program of N units of distributable loops")
    c.add_argument("--cases", action="store_true",
                   help="also the kept cases of tests/differential/cases")
    c.add_argument("--programs", action="store_true",
                   help="also the project's own programs (tests/e2e/programs), alone and as "
                        "one ThinLTO program")
    c.add_argument("--project", action="store_true",
                   help="also bzip2 built by its own Makefile with each configuration and its "
                        "own 'make test' (the corpus's pinned source; slow)")
    c.add_argument("--seed", type=_count, default=1, help="first seed (default 1)")
    c.add_argument("--max-funcs", type=cli.positive_int, default=8, help="csmith --max-funcs")
    c.add_argument("--llvm", type=_versions, default=None,
                   help="LLVM versions, e.g. 19,22 (default: every version built)")
    c.add_argument("--config", action="append", default=None, choices=_NAMES, metavar="NAME",
                   help="only these configurations (repeat; default all: see 'configs')")
    c.add_argument("--jobs", type=cli.positive_int, default=2)
    c.add_argument("--out", type=cli.output_file, help="write every result (JSON) here")
    c.add_argument("--keep-dir", type=Path,
                   help="work here and keep the files of failing inputs (default: temporary)")
    c.add_argument("--quiet", action="store_true", help="no progress lines")
    b = sub.add_parser("build", help="run a compiler command with a configuration's "
                                     "settings (and its served policy)")
    b.add_argument("--config", required=True, choices=_NAMES)
    b.add_argument("--llvm", type=int, default=19)
    b.add_argument("--host", choices=HOSTS, default="clang",
                   help="what the command runs (default clang; lld: a link through clang)")
    b.add_argument("cmd", nargs=argparse.REMAINDER, help="-- then the command")
    r = sub.add_parser("reduce", help="reduce a failing csmith program with cvise")
    r.add_argument("--config", required=True, choices=_NAMES)
    r.add_argument("--llvm", type=int, default=19)
    src = r.add_mutually_exclusive_group(required=True)
    src.add_argument("--csmith-seed", type=_count)
    src.add_argument("--source", type=Path)
    r.add_argument("--max-funcs", type=cli.positive_int, default=8)
    r.add_argument("--name", required=True, help="name of the kept case")
    r.add_argument("--time", type=cli.positive_int, default=900, help="seconds for cvise")
    r.add_argument("--known", metavar="WHY",
                   help="the case still fails there (the bug it awaits): the test marks it")
    r.add_argument("--out-dir", type=Path, help="where to keep it (default "
                                                "tests/differential/cases)")
    sub.add_parser("configs", help="list the configurations")
    n = sub.add_parser("snapshot", help="copy the built plugins and a manifest naming them "
                                        "(MLBRIDGE_BUILD_DIR=DIR then tests that copy)")
    n.add_argument("dir", type=cli.output_folder)
    return p


def cmd_campaign(args) -> int:
    from .campaign import Plan, format_summary, run_campaign, summarize
    from ..build_manifest import load as load_manifest
    from .configs import select, toolsets
    s = args.seed
    plan = Plan(configs=select(args.config), toolsets=toolsets(args.llvm),
                csmith=range(s, s + args.csmith), stress=range(s, s + args.stress),
                thinlto=[tuple(range(s + i * args.units, s + (i + 1) * args.units))
                         for i in range(args.thinlto)],
                cases=args.cases, programs=args.programs,
                lto_programs=args.programs, kernels=range(s, s + args.kernels),
                kernel_units=args.kernel_units, project=args.project, max_funcs=args.max_funcs, jobs=args.jobs)
    t0 = time.monotonic()
    done = []
    # which plugins: the build's manifest, or what a snapshot copied
    manifest = load_manifest()
    built = manifest.data.get("snapshot") or {"of": str(manifest.path.parent)}

    def write(results, partial):
        summary = summarize(results)
        summary["seconds"] = round(time.monotonic() - t0)
        summary["command"] = "python -m mlbridge.difftest " + " ".join(sys.argv[1:])
        summary["plugins"] = built
        if partial:
            summary["partial"] = True
        if args.out:
            cli.write_json(args.out, {"summary": summary,
                                      "results": [r.to_json() for r in results]}, indent=1)
        return summary

    def progress(results):
        done.extend(results)
        # A long campaign's counts so far are on disk while it runs.
        if len(done) % 50 < len(results):
            write(done, partial=True)
        if not args.quiet:
            for r in results:
                if r.failed:
                    print(f"{r.status}: {r.check} {r.case} {r.config} LLVM {r.llvm}: "
                          f"{' '.join(r.detail.split())[:200]}", file=sys.stderr, flush=True)

    summary = write(run_campaign(plan, workdir=args.keep_dir, progress=progress), partial=False)
    print(format_summary(summary))
    return EXIT_FAILURES if any(summary["failures"].values()) else 0


def cmd_build(args) -> int:
    from .checks import compile_with
    from .configs import by_name, toolset
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise MLBridgeError("build: no command after --")
    r = compile_with(toolset(args.llvm), by_name(args.config), cmd, timeout=3600,
                     host=args.host)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    return 124 if r.timed_out else (r.returncode if r.returncode >= 0 else 128 - r.returncode)


def cmd_reduce(args) -> int:
    from .configs import by_name, toolset
    from .reduce import reduce_program
    kept = reduce_program(toolset(args.llvm), by_name(args.config), seed=args.csmith_seed,
                          source=args.source, max_funcs=args.max_funcs, name=args.name,
                          seconds=args.time, out_dir=args.out_dir, known=args.known)
    print(kept)
    return 0


def cmd_configs(args) -> int:
    for c in CONFIGS:
        env = " ".join(f"{k}={v}" for k, v in c.env.items())
        served = f" served:{c.served}(seed {c.seed})" if c.served else ""
        print(f"{c.name:<14} {c.level:<4} {'+'.join(c.plugins):<30} {env}{served}")
    return 0


def cmd_snapshot(args) -> int:
    from .campaign import snapshot_plugins
    snap = snapshot_plugins(Path(args.dir))
    print(f"{len(snap['sha256'])} plugins of {snap['of']} (commit {snap['head'][:12]}) in "
          f"{args.dir}")
    return 0


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return {"campaign": cmd_campaign, "build": cmd_build, "reduce": cmd_reduce,
            "configs": cmd_configs, "snapshot": cmd_snapshot}[args.command](args)


if __name__ == "__main__":
    sys.exit(cli.run(PROG, main))
