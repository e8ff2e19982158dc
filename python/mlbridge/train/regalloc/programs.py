"""Register allocation at run time on real programs: the Brotli command-line
tool (a held-out library of the corpus) or LZ4's (a validation library: for
selection) built from its Debian source with each allocator as a user builds
it, compressing and decompressing under callgrind.

    python -m mlbridge.train regalloc programs --out results/regalloc/runtime-brotli-llvm19.json
    python -m mlbridge.train regalloc programs --program lz4 --out runtime-lz4-llvm19.json

Columns as ``python -m mlbridge.train regalloc kernels`` (:mod:`.kernels`):
``clang -O2`` (greedy), ``-mllvm -regalloc=basic``, and ours with
``-fpass-plugin=MLBridgeRegAlloc.so`` and ``MLBRIDGE_RA_ENABLE=1`` (model:
nothing else; heuristic: ``MLBRIDGE_RA_POLICY=heuristic``). Every unit of
``c/common``, ``c/dec``, ``c/enc`` and ``c/tools/brotli.c`` is compiled with
those flags and linked with ``-lm``. Workloads (the input is this
repository's docs and loop kernels, concatenated, deterministic for a
checkout): ``-q 6`` of all of it, ``-q 11`` of its first 200,000 bytes,
and ``-d`` of greedy's ``-q 6`` output. Ir of the whole process
(:func:`mlbridge.toolchain.callgrind`); every output must equal greedy's.
"""

from __future__ import annotations

import hashlib
import math
import sys
import tarfile
import tempfile
from pathlib import Path

from ... import cli
from ...corpus.manifest import REPO_ROOT
from .kernels import COLUMNS, OURS, column_flags, column_settings

SOURCES = Path.home() / ".cache/mlbridge/debian-sources"
#: Per program: its Debian source tarball (as the real-builds harness fetches
#: it), its split in the corpus, the units and include folder (relative to
#: the unpacked source), the tool, and its workloads (argument templates;
#: {out} is where the tool writes, compared with greedy's; "compress" is the
#: workload whose greedy output {compressed} names).
PROGRAMS = {
    "brotli": {"tarball": SOURCES / "brotli/brotli_1.0.9.orig.tar.gz", "split": "heldout",
               "units": ["c/common/*.c", "c/dec/*.c", "c/enc/*.c", "c/tools/brotli.c"],
               "include": "c/include", "tool": "brotli", "compress": "q6",
               "workloads": {"q6": ["-q", "6", "{input}", "-f", "-o", "{out}"],
                             "q11": ["-q", "11", "{input200k}", "-f", "-o", "{out}"],
                             "decompress": ["-d", "{compressed}", "-f", "-o", "{out}"]}},
    "lz4": {"tarball": SOURCES / "lz4/lz4_1.9.4.orig.tar.gz", "split": "validation",
            "units": ["lib/*.c", "programs/*.c"], "include": "lib", "tool": "lz4",
            "compress": "hc9",
            "workloads": {"fast1": ["-q", "-1", "-f", "{input}", "{out}"],
                          "hc9": ["-q", "-9", "-f", "{input}", "{out}"],
                          "decompress": ["-q", "-d", "-f", "{compressed}", "{out}"]}},
}
DEFAULT_TARBALL = PROGRAMS["brotli"]["tarball"]
WORKLOADS = PROGRAMS["brotli"]["workloads"]


def _input(work: Path) -> Path:
    parts = sorted((REPO_ROOT / "docs").glob("*.md")) + \
        sorted((REPO_ROOT / "corpus/loops/kernels").glob("*.c"))
    data = b"".join(p.read_bytes() for p in parts)
    out = work / "input.txt"
    out.write_bytes(data)
    (work / "input200k.txt").write_bytes(data[:200_000])
    return out


def build(src: Path, column: str, out_dir: Path, *, clang: str, plugins,
          program: str = "brotli") -> dict:
    from ...llvm.plugins.regalloc import settings_env
    from ...toolchain import compile as compile_cmd
    out_dir.mkdir(parents=True, exist_ok=True)
    env = settings_env(plugins, **column_settings(column))
    spec = PROGRAMS[program]
    units = [u for pattern in spec["units"] for u in sorted(src.glob(pattern))]
    cpu, objs = 0.0, []
    for u in units:
        o = out_dir / f"{u.parent.name}_{u.stem}.o"
        cpu += compile_cmd([clang, *column_flags(column, plugins.regalloc), "-c", "-I",
                            str(src / spec["include"]), str(u), "-o", str(o)],
                           output=o, measure_text=False, env=env).cpu_seconds
        objs.append(str(o))
    exe = out_dir / spec["tool"]
    compile_cmd([clang, *objs, "-lm", "-o", str(exe)], output=exe, measure_text=False)
    return {"exe": exe, "units": len(units), "cpu_seconds": round(cpu, 2)}


def run(tarball: Path = None, *, program: str = "brotli", llvm: int = 19, plugin=None,
        build_dir=None, log=print) -> dict:
    import dataclasses
    from ...llvm.plugins import find_plugins
    from ...toolchain import callgrind, toolchain
    plugins = find_plugins(build_dir, llvm=llvm)
    if plugin is not None:
        plugins = dataclasses.replace(plugins, regalloc=Path(plugin).resolve())
    clang = toolchain(plugins.tool("clang"))
    spec = PROGRAMS[program]
    tarball = Path(tarball or spec["tarball"])
    with tempfile.TemporaryDirectory(prefix=f"mlbridge-ra-{program}-") as tmp:
        work = Path(tmp)
        with tarfile.open(tarball) as tf:
            tf.extractall(work)  # noqa: S202 - a pinned Debian source (sha256 recorded)
        src = next(p for p in work.iterdir() if (p / spec["include"]).is_dir())
        inp = _input(work)
        builds = {c: build(src, c, work / c, clang=clang.clang, plugins=plugins, program=program)
                  for c in COLUMNS}
        log("built: " + ", ".join(f"{c} {b['cpu_seconds']} s" for c, b in builds.items()))
        compressed = work / "greedy.compressed"
        rows = {}
        for name, args in spec["workloads"].items():
            row, ref = {}, None
            for c in COLUMNS:
                out = work / f"{c}.{name}.out"
                a = [x.format(input=inp, input200k=work / "input200k.txt",
                              compressed=compressed, out=out) for x in args]
                res = callgrind([builds[c]["exe"], *a], timeout=3600)
                if name == spec["compress"] and c == "greedy":
                    compressed.write_bytes(out.read_bytes())
                digest = hashlib.sha256(out.read_bytes()).hexdigest()
                ref = ref or digest
                row[c] = res.ir
                row[f"{c}_same_output"] = digest == ref
            rows[name] = row
            log(f"{name}: " + ", ".join(f"{c} {row[c] / row['greedy']:.4f}" for c in COLUMNS))
    summary = {}
    for c in COLUMNS:
        if c == "greedy":
            continue
        rs = [r[c] / r["greedy"] for r in rows.values()]
        summary[f"{c}/greedy geomean"] = round(math.exp(sum(map(math.log, rs)) / len(rs)), 4)
    return {"about": f"{program}'s command-line tool built with each allocator as a user "
                     "builds it, Ir of whole runs under callgrind "
                     "(python -m mlbridge.train regalloc programs).",
            "program": program, "split": spec["split"],
            "clang": clang.version, "llvm": llvm, "tarball": str(tarball),
            "tarball_sha256": hashlib.sha256(Path(tarball).read_bytes()).hexdigest(),
            "plugin": str(plugins.regalloc),
            "plugin_sha256": hashlib.sha256(Path(plugins.regalloc).read_bytes()).hexdigest(),
            "ours": list(OURS),
            "compile_cpu_seconds": {c: b["cpu_seconds"] for c, b in builds.items()},
            "workloads": {k: " ".join(v) for k, v in spec["workloads"].items()},
            "summary": summary, "runs": rows}


def markdown(doc: dict) -> str:
    lines = ["| workload | greedy Ir | basic / greedy | ours, heuristic / greedy | "
             "**ours, model / greedy** | same output |", "|---|---:|---:|---:|---:|---|"]
    for name, r in doc["runs"].items():
        same = all(r[f"{c}_same_output"] for c in COLUMNS)
        lines.append(f"| `{doc.get('program', 'brotli')} {doc['workloads'][name]}` | "
                     f"{r['greedy']:,} | "
                     f"{r['basic'] / r['greedy']:.4f} | {r['heuristic'] / r['greedy']:.4f} | "
                     f"**{r['model'] / r['greedy']:.4f}** | {'yes' if same else '**no**'} |")
    s = doc["summary"]
    lines.append(f"| **geomean** | | {s['basic/greedy geomean']:.4f} | "
                 f"{s['heuristic/greedy geomean']:.4f} | **{s['model/greedy geomean']:.4f}** | |")
    return "\n".join(lines)


def add_arguments(p):
    """The options of ``python -m mlbridge.train regalloc programs``."""
    p.add_argument("--program", choices=sorted(PROGRAMS), default="brotli",
                   help="brotli (a held-out library) or lz4 (a validation library)")
    p.add_argument("--tarball", default=None, type=cli.existing_file,
                   help="the program's source tarball (default: where the real-builds "
                        "harness keeps it)")
    p.add_argument("--llvm", type=int, choices=(19, 22), default=19)
    p.add_argument("--plugin", default=None, type=cli.existing_file)
    p.add_argument("--out", default=None, type=cli.output_file)


def command(args):
    """The ``programs`` verb: the table, the JSON; status 1 if an output differs."""
    doc = run(args.tarball, program=args.program, llvm=args.llvm, plugin=args.plugin,
              log=lambda m: print(m, file=sys.stderr, flush=True))
    print(markdown(doc))
    if args.out:
        cli.write_json(args.out, doc, indent=1)
    bad = [n for n, r in doc["runs"].items()
           if not all(r[f"{c}_same_output"] for c in COLUMNS)]
    return 1 if bad else 0
