#!/usr/bin/env python3
"""The deployment cost of the LLVM plugins, as ratios measured in one run
(the paper's multithreaded compile time, its Table 3, and the bridge's cost
inside the compiler, its Table 5):

1. **ThinLTO build**: real libraries of the corpus (python -m mlbridge.corpus
   fetch; default bzip2, C, and meshoptimizer, C++) built as shared
   libraries with ``clang -flto=thin`` and lld, each plugin with its
   compiled-in model in lld's backends (settings from MLBRIDGE_*
   variables), ``--thinlto-jobs=1`` and ``2``, against the same build
   without plugins. The units are compiled once, without plugins (ThinLTO
   runs the plugins in the link); reported: the link's wall time, CPU
   (clang driver + lld) and peak RSS, each against the plain link with the
   same number of threads, and the whole build (compiles + link).
2. **The bridge in the compiler**: each plugin's file size; the time to
   load it (``opt -load-pass-plugin=P -passes=no-op-module`` on an empty
   module, minus ``opt`` alone); peak RSS and CPU of ``clang -c`` of a
   library's largest unit with the plugin against without.

    .venv/bin/python bench/plugin_deployment.py --build-dir build
    .venv/bin/python bench/plugin_deployment.py --build-dir build --llvm 22 --repeat 5
    .venv/bin/python bench/plugin_deployment.py --build-dir build --quick   # the test's run

Opt-in (tests/e2e/test_bench_deployment_quick.py runs --quick). Wall time on
a shared 2-core machine is noisy: rounds alternate the configurations and
the best of --repeat is reported; CPU and RSS are steadier.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from mlbridge.corpus import Corpus  # noqa: E402
from mlbridge.toolchain import process  # noqa: E402
from mlbridge.llvm.plugins import find_plugins  # noqa: E402
from mlbridge.toolchain.measure import elf_text_size  # noqa: E402
from mlbridge.toolchain import plugin_env  # noqa: E402

#: name -> (optimization level, plugin attributes of PluginInfo, settings).
#: The settings are the deployment's (docs/deployment.md); the logs show
#: that each plugin decided.
CONFIGS = {
    "size plugins": ("-Oz", ("inline_advisor", "phase_order"), {"MLBRIDGE_PO_ENABLE": "1"}),
    "loop distribution": ("-O2", ("loop_distribution",), {}),
    "register allocation": ("-O2", ("regalloc",), {"MLBRIDGE_RA_ENABLE": "1"}),
}
#: Each configuration's decision log: variable, and the field that counts
#: the decisions of one line (None: a line is one decision).
LOGS = {
    "inline_advisor": ("MLBRIDGE_INLINE_LOG", "asked"),
    "phase_order": ("MLBRIDGE_PO_LOG", "asked"),
    "loop_distribution": ("MLBRIDGE_LD_LOG", None),
    "regalloc": ("MLBRIDGE_RA_LOG", None),
}


def run(cmd, env=None, cwd=None) -> dict:
    """Wall seconds, CPU seconds and peak RSS (MiB) of ``cmd`` and the
    processes it waited for (the clang driver, cc1, lld), from wait4."""
    env = plugin_env(cmd, {k: v for k, v in (env or os.environ).items()})
    t0 = time.perf_counter()
    proc = process.start(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    _, err = proc.communicate(timeout=1800)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(map(str, cmd))}\n"
                         f"{err.decode(errors='replace')[-3000:]}")
    if b"warning:" in err:
        raise SystemExit(f"warnings from {' '.join(map(str, cmd))}:\n"
                         f"{err.decode(errors='replace')[-3000:]}")
    usage = proc.rusage
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
            "rss": usage.ru_maxrss / 1024.0}


def clean_env(extra=None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLBRIDGE_")}
    env.update(extra or {})
    return env


def decisions(log: Path, field) -> int:
    if not log.is_file():
        return 0
    lines = [json.loads(l) for l in log.read_text().splitlines() if l.strip()]
    return len(lines) if field is None else sum(int(l.get(field, 0)) for l in lines)


# ---- 1. ThinLTO builds -------------------------------------------------------------

def compile_units(clang, lib_modules, out: Path) -> tuple:
    """ThinLTO bitcode objects of a library's units (no plugin) and the CPU
    seconds per optimization level."""
    objects, cpu = {}, {}
    for level in sorted({c[0] for c in CONFIGS.values()}):
        objs, total = [], 0.0
        for i, m in enumerate(lib_modules):
            obj = out / f"{level[1:]}-{i}.o"
            r = run([clang, level, "-flto=thin", "-fPIC", "-w", *m.flags, "-c", str(m.source),
                     "-o", str(obj)])
            objs.append(str(obj))
            total += r["cpu"]
        objects[level], cpu[level] = objs, total
    return objects, cpu


def link(clang, level, objects, out: Path, jobs: int, plugins, env) -> dict:
    cmd = [clang, level, "-flto=thin", "-fuse-ld=lld", "-shared",
           f"-Wl,--thinlto-jobs={jobs}", "-Wl,--undefined-version",
           *[f"-Wl,--load-pass-plugin={p}" for p in plugins], *objects, "-o", str(out)]
    return run(cmd, env)


def thinlto_table(info, clang, libraries, configs, repeat, tmp: Path) -> list:
    corpus = Corpus.load()
    corpus.fetch(libraries)
    rows = []
    for name in libraries:
        mods = corpus.modules(libraries=[name], include_mismatched=True)
        if not mods:
            raise SystemExit(f"no units for {name}: python -m mlbridge.corpus fetch "
                             f"--libraries {name}")
        work = tmp / name
        work.mkdir()
        cxx = mods[0].lang == "c++"
        driver = clang.replace("clang-", "clang++-") if cxx else clang
        objects, compile_cpu = compile_units(driver, mods, work)
        for cname in configs:
            level, attrs, settings = CONFIGS[cname]
            plugins = [getattr(info, a) for a in attrs]
            for jobs in (1, 2):
                best = {"plain": None, "plugin": None}
                counts = {}
                for r in range(repeat):
                    for kind in ("plain", "plugin"):
                        extra = {}
                        if kind == "plugin":
                            extra = dict(settings)
                            for a in attrs:
                                var, _ = LOGS[a]
                                extra[var] = str(work / f"{a}.{jobs}.{r}.jsonl")
                        m = link(driver, level, objects[level], work / f"lib-{kind}.so", jobs,
                                 plugins if kind == "plugin" else [], clean_env(extra))
                        if kind == "plugin":
                            counts = {a: decisions(work / f"{a}.{jobs}.{r}.jsonl", LOGS[a][1])
                                      for a in attrs}
                        prev = best[kind]
                        best[kind] = m if prev is None else {
                            "wall": min(prev["wall"], m["wall"]),
                            "cpu": min(prev["cpu"], m["cpu"]),
                            "rss": max(prev["rss"], m["rss"])}
                p, q = best["plain"], best["plugin"]
                rows.append({"library": name, "units": len(mods), "config": cname,
                             "level": level, "jobs": jobs, "plain": p, "plugin": q,
                             "compile_cpu": compile_cpu[level], "decisions": counts,
                             "wall_ratio": q["wall"] / p["wall"],
                             "cpu_ratio": q["cpu"] / p["cpu"],
                             "rss_ratio": q["rss"] / p["rss"],
                             "build_cpu_ratio": (compile_cpu[level] + q["cpu"]) /
                                                (compile_cpu[level] + p["cpu"])})
    return rows


# ---- 2. the bridge in the compiler ---------------------------------------------------

def footprint_table(info, clang, library, repeat, tmp: Path) -> list:
    opt = info.tool("opt")
    empty = tmp / "empty.ll"
    empty.write_text("")
    mods = Corpus.load().modules(libraries=[library], include_mismatched=True)
    unit = max(mods, key=lambda m: m.source.stat().st_size)
    driver = clang.replace("clang-", "clang++-") if unit.lang == "c++" else clang

    def opt_load(plugins, env):
        cmd = [opt, *[f"-load-pass-plugin={p}" for p in plugins], "-passes=no-op-module",
               "-disable-output", str(empty)]
        return [run(cmd, env) for _ in range(repeat)]

    def compile_unit(level, plugins, env):
        cmd = [driver, level, *[f"-fpass-plugin={p}" for p in plugins], "-w", *unit.flags,
               "-c", str(unit.source), "-o", str(tmp / "unit.o")]
        return [run(cmd, env) for _ in range(max(1, repeat // 2))]

    base_load = opt_load([], clean_env())
    base_compile = {}
    rows = []
    for cname, (level, attrs, settings) in CONFIGS.items():
        if level not in base_compile:
            base_compile[level] = compile_unit(level, [], clean_env())
        plugins = [getattr(info, a) for a in attrs]
        env = clean_env(settings)
        load = opt_load(plugins, env)
        comp = compile_unit(level, plugins, env)
        b = base_compile[level]
        rows.append({
            "config": cname, "plugins": [Path(p).name for p in plugins],
            "file_bytes": sum(os.path.getsize(p) for p in plugins),
            "code_bytes": sum(elf_text_size(p) or 0 for p in plugins),
            "load_ms": 1000 * (statistics.median(r["wall"] for r in load) -
                               statistics.median(r["wall"] for r in base_load)),
            "load_cpu_ms": 1000 * (statistics.median(r["cpu"] for r in load) -
                                   statistics.median(r["cpu"] for r in base_load)),
            "opt_rss_mib": (max(r["rss"] for r in base_load), max(r["rss"] for r in load)),
            "unit": unit.name, "level": level,
            "compile_rss_mib": (max(r["rss"] for r in b), max(r["rss"] for r in comp)),
            "compile_rss_ratio": max(r["rss"] for r in comp) / max(r["rss"] for r in b),
            "compile_cpu_ratio": min(r["cpu"] for r in comp) / min(r["cpu"] for r in b)})
    return rows


def print_tables(thin, foot, llvm, load=None):
    if load:
        print(f"Load average (1 min) at the start and the end: {load[0]:.1f}, {load[1]:.1f}\n")
    print(f"## ThinLTO builds (LLVM {llvm}): plugins in lld's backends vs the same link without")
    print("| library (units) | configuration | threads | link wall | vs plain | link CPU | "
          "vs plain | peak RSS | vs plain | build CPU vs plain | decisions |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in thin:
        dec = ", ".join(f"{k} {v}" for k, v in r["decisions"].items())
        print(f"| {r['library']} ({r['units']}) | {r['config']} ({r['level']}) | {r['jobs']} | "
              f"{r['plugin']['wall']:.2f} s | {r['wall_ratio']:.2f}x | "
              f"{r['plugin']['cpu']:.2f} s | {r['cpu_ratio']:.2f}x | "
              f"{r['plugin']['rss']:.0f} MiB | {r['rss_ratio']:.2f}x | "
              f"{r['build_cpu_ratio']:.2f}x | {dec} |")
    by = {(r["library"], r["config"], r["jobs"]): r for r in thin}
    print("\nSpeed-up of the link with 2 backend threads over 1 (wall time):\n")
    print("| library | configuration | plain | with plugins |")
    print("|---|---|---:|---:|")
    for (lib, conf, jobs), r in by.items():
        if jobs == 2 and (lib, conf, 1) in by:
            one = by[(lib, conf, 1)]
            print(f"| {lib} | {conf} | {one['plain']['wall'] / r['plain']['wall']:.2f}x | "
                  f"{one['plugin']['wall'] / r['plugin']['wall']:.2f}x |")
    print(f"\n## The bridge in the compiler (LLVM {llvm})")
    print("| configuration | plugin files | file size | code | load (wall) | load (CPU) | opt RSS | "
          "compile of | peak RSS without / with | RSS ratio | CPU ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    for r in foot:
        print(f"| {r['config']} | {' + '.join(r['plugins'])} | "
              f"{r['file_bytes'] / 1e6:.1f} MB | {r['code_bytes'] / 1e6:.1f} MB | "
              f"{r['load_ms']:.1f} ms | "
              f"{r['load_cpu_ms']:.1f} ms | {r['opt_rss_mib'][0]:.0f} -> "
              f"{r['opt_rss_mib'][1]:.0f} MiB | {r['unit']} {r['level']} | "
              f"{r['compile_rss_mib'][0]:.0f} / {r['compile_rss_mib'][1]:.0f} MiB | "
              f"{r['compile_rss_ratio']:.2f}x | {r['compile_cpu_ratio']:.2f}x |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", type=Path, default=REPO / "build")
    ap.add_argument("--llvm", type=int, default=19, help="LLVM version of the plugins (19, 22)")
    ap.add_argument("--libraries", default="bzip2,meshoptimizer",
                    help="corpus libraries to build (comma-separated; fetched ones)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds (best of)")
    ap.add_argument("--quick", action="store_true",
                    help="bzip2, the size plugins' ThinLTO link only, one round, "
                         "two loads (the test's run)")
    ap.add_argument("--json", type=Path, help="write the rows here")
    ap.add_argument("--tables", type=Path, help="print the tables of a --json run and stop")
    args = ap.parse_args(argv)
    if args.tables:
        data = json.loads(args.tables.read_text())
        print_tables(data["thinlto"], data["footprint"], data["llvm"], data.get("load"))
        return 0
    configs, loads = list(CONFIGS), max(3, args.repeat * 3)
    if args.quick:
        args.libraries, args.repeat, configs, loads = "bzip2", 1, ["size plugins"], 2
    info = find_plugins(args.build_dir, llvm=args.llvm)
    clang = f"clang-{info.llvm_major}"
    libraries = [l for l in args.libraries.split(",") if l]
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="mlb-deploy-") as d:
        tmp = Path(d)
        thin = thinlto_table(info, clang, libraries, configs, args.repeat, tmp)
        foot = footprint_table(info, clang, libraries[0], loads, tmp)
    load.append(os.getloadavg()[0])
    print_tables(thin, foot, info.llvm_major, load)
    if args.json:
        args.json.write_text(json.dumps({"llvm": info.llvm_major, "thinlto": thin,
                                         "footprint": foot, "load": load}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
