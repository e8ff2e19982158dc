"""Register allocation at run time: the loop kernels of corpus/loops built
with each allocator the way a user builds them, run under callgrind.

    python -m mlbridge.train regalloc kernels --out results/regalloc/runtime-kernels-llvm19.json
    python -m mlbridge.train regalloc kernels --llvm 22 --families linalg nested
    python -m mlbridge.train regalloc kernels --split validation   # for selection

Per kernel family (``corpus/loops/kernels/<family>.c`` with the driver), one
``clang-N -O2`` build per column (:data:`COLUMNS`):

* ``greedy``: ``clang -O2`` (LLVM's default allocator);
* ``basic``: ``clang -O2 -mllvm -regalloc=basic``;
* ``heuristic``: ours, ``-O2 -fpass-plugin=MLBridgeRegAlloc.so`` with
  ``MLBRIDGE_RA_ENABLE=1 MLBRIDGE_RA_POLICY=heuristic``;
* ``model``: ours as docs/deployment.md deploys it,
  ``-O2 -fpass-plugin=MLBridgeRegAlloc.so`` with ``MLBRIDGE_RA_ENABLE=1``
  and nothing else (the model compiled into the plugin).

Ours also get ``MLBRIDGE_RA_LOG`` (observation only: the allocation is the
same), so the run checks that our allocator did allocate every function and
records which policy decided (``compiled`` for the built-in model).

Per kernel and column, two callgrind runs of ``<exe> <kernel>``: the
whole process (``ir``: start-up, the driver's initialisation, 4 calls of
the kernel, the checksums -- all of it compiled by the allocator but the C
library) and the kernel's calls alone (``kernel_ir``, ``--toggle-collect``,
:func:`mlbridge.corpus.loops.measure`), and the checksums it prints, which
must equal greedy's. The compile CPU of each build is recorded too.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ...corpus import loops

#: The allocators measured, in table order.
COLUMNS = ("greedy", "basic", "heuristic", "model")
#: The columns that load our plugin.
OURS = ("heuristic", "model")
#: The build line of one kernel family (as mlbridge.corpus.loops.build).
BUILD = ("{clang} {flags} -I corpus/loops -rdynamic corpus/loops/driver.c "
         "corpus/loops/kernels/<family>.c -o <exe>")


def column_flags(column: str, plugin: Path) -> List[str]:
    """The compiler flags of ``column`` (the driver and the kernel get them)."""
    if column == "greedy":
        return ["-O2"]
    if column == "basic":
        return ["-O2", "-mllvm", "-regalloc=basic"]
    if column in OURS:
        return ["-O2", f"-fpass-plugin={plugin}"]
    raise ValueError(f"unknown column {column!r}: one of {', '.join(COLUMNS)}")


def column_settings(column: str) -> Dict[str, str]:
    """The ``MLBRIDGE_RA_*`` environment of ``column`` as a user sets it."""
    if column == "heuristic":
        return {"MLBRIDGE_RA_ENABLE": "1", "MLBRIDGE_RA_POLICY": "heuristic"}
    if column == "model":
        return {"MLBRIDGE_RA_ENABLE": "1"}
    return {}


def commands(clang: str, plugin: Path) -> List[str]:
    """The build and measure commands, for the results file and the docs."""
    out = []
    for c in COLUMNS:
        env = " ".join(f"{k}={v}" for k, v in column_settings(c).items())
        flags = " ".join(column_flags(c, Path("<MLBridgeRegAlloc.so>")))
        out.append(f"# {c}\n" + (env + " " if env else "") + BUILD.format(clang=clang, flags=flags))
    out.append("# whole run (ir)\nvalgrind --tool=callgrind --callgrind-out-file=<out> <exe> <kernel>")
    out.append("# kernel only (kernel_ir)\nvalgrind --tool=callgrind --callgrind-out-file=<out> "
               "--collect-atstart=no --toggle-collect=<kernel> <exe> <kernel>")
    return out


def _build(source: Path, column: str, exe: Path, *, clang: str, plugins, log: Path):
    """Builds ``source`` with the driver for ``column``; returns the
    :class:`mlbridge.toolchain.Compiled`."""
    from ...llvm.plugins.regalloc import settings_env
    from ...toolchain import compile as compile_cmd
    settings = column_settings(column)
    if column in OURS:
        settings["MLBRIDGE_RA_LOG"] = str(log)
    env = settings_env(plugins, **settings)   # no MLBRIDGE_RA_* of ours leaks in
    cmd = [clang, *column_flags(column, plugins.regalloc), "-I", str(loops.ROOT), "-rdynamic",
           str(loops.ROOT / "driver.c"), str(source), "-o", str(exe)]
    return compile_cmd(cmd, output=exe, measure_text=False, env=env)


def _log_lines(path: Path) -> List[dict]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _policy_used(lines: Sequence[dict]) -> Dict[str, int]:
    """{policy or runner named in the log: functions}."""
    used: Dict[str, int] = {}
    for ln in lines:
        key = str(ln.get("runner", ln.get("policy", "?")))
        used[key] = used.get(key, 0) + 1
    return used


def measure_family(family: str, group: Sequence[loops.Kernel], *, clang: str, plugins,
                   work: Path, columns: Sequence[str] = COLUMNS,
                   kernel_only: bool = False) -> dict:
    """One family: its builds (compile CPU, what our allocator's log says)
    and, per kernel, each column's Ir (whole run and kernel) and whether its
    output equals greedy's."""
    from ...toolchain import callgrind
    source = group[0].source
    fam_dir = work / family
    fam_dir.mkdir(parents=True, exist_ok=True)
    builds, exes = {}, {}
    for c in columns:
        exe, log = fam_dir / f"{family}.{c}", fam_dir / f"{family}.{c}.ra.jsonl"
        comp = _build(source, c, exe, clang=clang, plugins=plugins, log=log)
        lines = _log_lines(log)
        builds[c] = {"cpu_seconds": round(comp.cpu_seconds, 3), "exe_sha256":
                     hashlib.sha256(exe.read_bytes()).hexdigest()[:16]}
        if c in OURS:
            builds[c]["functions_allocated"] = len(lines)
            builds[c]["decided_by"] = _policy_used(lines)
            builds[c]["spills"] = sum(int(ln.get("spills", 0)) for ln in lines)
            builds[c]["splits"] = sum(int(ln.get("splits", 0)) for ln in lines)
            if not lines:
                raise loops.LoopKernelError(f"{family}: the {c} build logged no function: "
                                            "our allocator did not run")
        exes[c] = exe
    rows = {}
    for k in group:
        row = {"family": k.family, "split": k.split}
        ref = None
        for c in columns:
            kir, kout = loops.measure(exes[c], k.name)
            row[f"{c}_kernel_ir"] = kir
            if not kernel_only:
                whole = callgrind([exes[c], k.name], timeout=loops.RUN_TIMEOUT * 10)
                row[f"{c}_ir"] = whole.ir
                same = whole.stdout == kout
            else:
                same = True
            if ref is None:
                ref = kout
            row[f"{c}_same_output"] = bool(same and kout == ref)
        rows[k.name] = row
    return {"builds": builds, "kernels": rows}


def geomean(xs: Sequence[float]) -> float:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def summarize(rows: Dict[str, dict], columns: Sequence[str] = COLUMNS,
              measures: Sequence[str] = ("ir", "kernel_ir")) -> dict:
    """Per family, per split and over all kernels: for each column and
    measure the geometric mean of the kernels' ratios to greedy, the ratio
    of the sums, the worst kernel, and how many kernels are worse / better
    than greedy."""
    groups: Dict[str, List[str]] = {"all": list(rows)}
    for name, r in rows.items():
        groups.setdefault(f"split:{r['split']}", []).append(name)
        groups.setdefault(f"family:{r['family']}", []).append(name)
    out = {}
    for g, names in groups.items():
        s = {"kernels": len(names),
             "outputs_differ": sorted(n for n in names for c in columns
                                      if not rows[n].get(f"{c}_same_output", True))}
        for m in measures:
            if not all(f"greedy_{m}" in rows[n] for n in names):
                continue
            s[f"greedy_{m}"] = sum(rows[n][f"greedy_{m}"] for n in names)
            for c in columns:
                if c == "greedy":
                    continue
                ratios = {n: rows[n][f"{c}_{m}"] / rows[n][f"greedy_{m}"] for n in names}
                worst = max(ratios, key=ratios.get)
                s[f"{c}_{m}"] = sum(rows[n][f"{c}_{m}"] for n in names)
                s[f"{c}/greedy {m} geomean"] = round(geomean(ratios.values()), 4)
                s[f"{c}/greedy {m} of sums"] = round(s[f"{c}_{m}"] / s[f"greedy_{m}"], 4)
                s[f"{c}/greedy {m} worst"] = [worst, round(ratios[worst], 4)]
                s[f"{c} {m} worse"] = sum(x > 1 for x in ratios.values())
                s[f"{c} {m} better"] = sum(x < 1 for x in ratios.values())
        out[g] = s
    return out


def markdown(doc: dict) -> str:
    """The table: per family, then per split and over all kernels."""
    summ = doc["summary"]
    head = ("| family (split) | kernels | greedy Ir, whole runs | basic / greedy | "
            "ours, heuristic / greedy | **ours, model / greedy** | greedy Ir, kernels | "
            "basic / greedy | ours, heuristic / greedy | **ours, model / greedy** | "
            "worst kernel (model / greedy, kernel Ir) | same output |")
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]

    def ratio(s, c, m):
        key = f"{c}/greedy {m} geomean"
        return f"{s[key]:.4f}" if key in s else "--"

    def row(label, s):
        w = s["model/greedy kernel_ir worst"]
        whole = f"{s['greedy_ir']:,}" if "greedy_ir" in s else "--"
        return (f"| {label} | {s['kernels']} | {whole} | {ratio(s, 'basic', 'ir')} | "
                f"{ratio(s, 'heuristic', 'ir')} | **{ratio(s, 'model', 'ir')}** | "
                f"{s['greedy_kernel_ir']:,} | {ratio(s, 'basic', 'kernel_ir')} | "
                f"{ratio(s, 'heuristic', 'kernel_ir')} | "
                f"**{ratio(s, 'model', 'kernel_ir')}** | `{w[0]}` {w[1]:.3f} | "
                f"{'yes' if not s['outputs_differ'] else '**no**: ' + ', '.join(s['outputs_differ'])} |")

    fams = sorted((k for k in summ if k.startswith("family:")),
                  key=lambda k: (loops.SPLITS.index(doc["families"][k[7:]]["split"]), k))
    for k in fams:
        lines.append(row(f"{k[7:]} ({doc['families'][k[7:]]['split']})", summ[k]))
    for k in sorted((x for x in summ if x.startswith("split:")),
                   key=lambda x: loops.SPLITS.index(x[6:])):
        lines.append(row(f"*{k[6:]} families*", summ[k]))
    lines.append(row("**all kernels (geomean)**", summ["all"]))
    return "\n".join(lines)


def run(*, llvm: int = 19, families: Optional[Sequence[str]] = None,
        split: Optional[str] = None, kernels_per_family: Optional[int] = None,
        plugin: Optional[Path] = None, jobs: int = 2, kernel_only: bool = False,
        build_dir=None, log=print) -> dict:
    """Measures the kernels (all, or of ``families`` / ``split``; the first
    ``kernels_per_family`` of each family) and returns the results document."""
    from ...llvm.plugins import find_plugins
    from ...toolchain import toolchain
    import dataclasses
    import shutil
    import subprocess
    plugins = find_plugins(build_dir, llvm=llvm)
    if plugin is not None:
        plugins = dataclasses.replace(plugins, regalloc=Path(plugin).resolve())
    if plugins.regalloc is None:
        raise loops.LoopKernelError(f"MLBridgeRegAlloc.so is not built for LLVM {llvm}")
    clang = toolchain(plugins.tool("clang"))
    ks = loops.kernels(split)
    if families:
        unknown = set(families) - {k.family for k in loops.kernels()}
        if unknown:
            raise loops.LoopKernelError(f"no kernel family {', '.join(sorted(unknown))}")
        ks = [k for k in ks if k.family in families]
    by_family: Dict[str, List[loops.Kernel]] = {}
    for k in ks:
        by_family.setdefault(k.family, []).append(k)
    if kernels_per_family:
        by_family = {f: g[:kernels_per_family] for f, g in by_family.items()}
    fam_info = {f: {"split": g[0].split} for f, g in by_family.items()}
    with tempfile.TemporaryDirectory(prefix="mlbridge-ra-kernels-") as tmp:
        def one(item):
            fam, group = item
            res = measure_family(fam, group, clang=clang.clang, plugins=plugins,
                                 work=Path(tmp), kernel_only=kernel_only)
            log(f"{fam}: {len(group)} kernels")
            return fam, res
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
            done = dict(ex.map(one, by_family.items()))
    rows, builds = {}, {}
    for fam in by_family:
        rows.update(done[fam]["kernels"])
        builds[fam] = done[fam]["builds"]
        fam_info[fam]["builds"] = builds[fam]
    measures = ("kernel_ir",) if kernel_only else ("ir", "kernel_ir")
    cpu = {c: round(sum(b[c]["cpu_seconds"] for b in builds.values()), 2) for c in COLUMNS}
    vg = subprocess.run([shutil.which("valgrind") or "valgrind", "--version"],
                        capture_output=True, text=True).stdout.strip()
    return {
        "about": "Register allocation at run time on the loop kernels of corpus/loops "
                 "(docs/results.md, 'Register allocation', 'Runnable programs'): callgrind "
                 "Ir per kernel run of each allocator, built as a user builds it. "
                 "`ir`: the whole process; `kernel_ir`: the kernel's 4 calls "
                 "(--toggle-collect). Regenerate with `python -m mlbridge.train regalloc "
                 "kernels`.",
        "clang": clang.version, "llvm": llvm, "valgrind": vg,
        "plugin": str(plugins.regalloc),
        "plugin_sha256": hashlib.sha256(Path(plugins.regalloc).read_bytes()).hexdigest(),
        "commands": commands(Path(clang.clang).name, plugins.regalloc),
        "compile_cpu_seconds": cpu,
        "summary": summarize(rows, measures=measures),
        "families": fam_info,
        "kernels": rows,
    }
