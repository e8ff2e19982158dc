"""The verbs of ``python -m mlbridge.train regalloc`` besides ``train``:
measuring register allocation on the held-out libraries and on runnable
programs (docs/results.md, "Register allocation").

    python -m mlbridge.train regalloc heldout --out heldout.json  # score per library, all allocators
    python -m mlbridge.train regalloc heldout --mode evict        # greedy + trained eviction advisor
    python -m mlbridge.train regalloc evaluate --mode evict --policy p.json   # on validation
    python -m mlbridge.train regalloc losses --libraries lz4      # per function vs greedy (validation)
    python -m mlbridge.train regalloc callgrind --seeds 1001 1002 # csmith programs: Ir, output
    python -m mlbridge.train regalloc kernels --out k.json        # loop kernels: Ir, output, as deployed
    python -m mlbridge.train regalloc demo                        # one library, two lines

``heldout`` compares, per held-out library, the total score (the plugin's
score pass) of LLVM's ``greedy``, ``basic`` and ``fast`` with ours: the
built-in heuristic and the deployed model (the model compiled into the
plugin, or ``--model x.onnx`` through ONNX Runtime), plus the CPU seconds of
the whole ``llc-19 -O2 -filetype=obj`` with greedy and with ours.
Training is ``python -m mlbridge.train regalloc train`` (docs/training.md).
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from ... import cli
from ...corpus import Corpus
from ..cluster import LocalPool, TaskFailed, pool as worker_pool
from ..registry import Command
from .evict import SHIPPED_POLICY, LinearEviction
from .task import alloc_task, evict_task, time_task
from .trainer import load_items

DEMO_LIBRARY = "snappy"
#: Ours with the built-in heuristic, ours with the deployed model, LLVM's three.
COLUMNS = ("greedy", "basic", "fast", "heuristic", "model")


def _modules(split, libraries):
    mods = Corpus.load().modules(split=split)
    return [m for m in mods if not libraries or m.library in libraries]


def _tasks(items, column, model):
    """The score task of ``column`` for each item."""
    if column in ("greedy", "basic", "fast"):
        return [alloc_task(it.ir, allocator=column, key=it.name) for it in items]
    if column == "heuristic":
        return [alloc_task(it.ir, policy="heuristic", key=it.name) for it in items]
    # the deployed model: the plugin's built-in one, or an ONNX file
    return [alloc_task(it.ir, onnx=model, key=it.name) if model is not None else
            alloc_task(it.ir, key=it.name) for it in items]


def _pool(args):
    return worker_pool(args.workers, address=args.address, task_timeout=1800)


def _run(pool, tasks, bar):
    return pool.map(tasks, progress=bar.update if bar else None)


def heldout_alloc(pool, items, model=None, bar=None, columns=COLUMNS, cache=None):
    """Per item: each column's total score (None when it failed: the error
    is kept) and llc CPU seconds of greedy and ours (``*_cpu``). With
    ``cache`` (a RolloutCache) measured numbers are kept per unit, column
    and model, so a later run measures only what is new."""
    import hashlib
    import numpy as np
    from ...toolchain import toolchain
    mtag = hashlib.sha256(model or b"built-in").hexdigest()[:12]
    rows = {it.name: {"library": it.library, "errors": {}} for it in items}
    jobs = [(c, lambda it, c=c: _tasks([it], c, model)[0]) for c in columns]
    jobs += [(f"{c}_cpu", lambda it, kw=kw: time_task(it.ir, key=it.name, **kw))
             for c, kw in (("greedy", {"allocator": "greedy"}), ("model", {})) if c in columns]
    for col, make in jobs:
        key = lambda it: (f"ra-heldout-{col}-{it.digest}-"  # noqa: E731
                          f"{mtag if col.startswith('model') else ''}-{toolchain().tag}")
        todo = []
        for it in items:
            hit = cache.load(key(it)) if cache is not None else None
            if hit is None:
                todo.append(it)
            else:
                rows[it.name][col] = float(hit["value"])
                if bar:
                    bar.update(1)
        for it, r in zip(todo, _run(pool, [make(it) for it in todo], bar)):
            if isinstance(r, TaskFailed):
                rows[it.name][col] = None
                rows[it.name]["errors"][col] = str(r.error)[-300:]
                continue
            v = r["cpu_seconds"] if col.endswith("_cpu") else r["total"]
            rows[it.name][col] = v
            if cache is not None:
                cache.save(key(it), value=np.float64(v))
    return rows


def alloc_table(rows):
    """Markdown per library: every column's total on the units every column
    measured, ratios to greedy, compile CPU ratio."""
    libs = {}
    for r in rows.values():
        complete = all(r.get(c) is not None for c in COLUMNS) and \
            r.get("greedy_cpu") is not None and r.get("model_cpu") is not None
        lib = libs.setdefault(r["library"], {c: 0.0 for c in COLUMNS} |
                              {"units": 0, "left_out": 0, "greedy_cpu": 0.0, "model_cpu": 0.0})
        if not complete:
            lib["left_out"] += 1
            continue
        lib["units"] += 1
        for c in COLUMNS + ("greedy_cpu", "model_cpu"):
            lib[c] += r[c]
    total = {k: sum(v[k] for v in libs.values()) for k in next(iter(libs.values()))}
    lines = ["| library | units (left out) | greedy | basic | fast | ours, heuristic | "
             "ours, model | model / greedy | heuristic / greedy | basic / greedy | "
             "llc CPU ours / greedy |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, v in sorted(libs.items()) + [("**total**", total)]:
        g = v["greedy"] or float("nan")
        lines.append(
            f"| {name} | {v['units']} ({v['left_out']}) | {v['greedy']:,.0f} | {v['basic']:,.0f} | "
            f"{v['fast']:,.0f} | {v['heuristic']:,.0f} | {v['model']:,.0f} | "
            f"{v['model'] / g:.4f} | {v['heuristic'] / g:.4f} | {v['basic'] / g:.4f} | "
            f"{v['model_cpu'] / (v['greedy_cpu'] or float('nan')):.2f} |")
    return "\n".join(lines), total


def heldout_evict(pool, items, theta, bar=None):
    """Per item: greedy with LLVM's default advisor and with ``theta``."""
    rows = {it.name: {"library": it.library} for it in items}
    for col, th in (("greedy", None), ("trained", theta)):
        tasks = [evict_task(it.ir, theta=th, key=it.name) for it in items]
        for it, r in zip(items, _run(pool, tasks, bar)):
            rows[it.name][col] = None if isinstance(r, TaskFailed) else r["total"]
    return rows


def evict_table(rows):
    """Markdown per library: the totals, their ratio, and the mean of the
    units' ratios (units with a positive greedy score), which no single hot
    function dominates."""
    libs = {}
    for r in rows.values():
        lib = libs.setdefault(r["library"], {"units": 0, "left_out": 0, "greedy": 0.0,
                                             "trained": 0.0, "ratios": []})
        if r["greedy"] is None or r["trained"] is None:
            lib["left_out"] += 1
            continue
        lib["units"] += 1
        lib["greedy"] += r["greedy"]
        lib["trained"] += r["trained"]
        if r["greedy"] > 0:
            lib["ratios"].append(r["trained"] / r["greedy"])
    total = {k: sum(v[k] for v in libs.values()) for k in ("units", "left_out", "greedy",
                                                           "trained")}
    total["ratios"] = [x for v in libs.values() for x in v["ratios"]]
    total["mean_ratio"] = float(np.mean(total["ratios"])) if total["ratios"] else None
    lines = ["| library | units (left out) | greedy, default advisor | greedy, trained "
             "advisor | ratio of totals | mean of unit ratios |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, v in sorted(libs.items()) + [("**total**", total)]:
        mean = np.mean(v["ratios"]) if v["ratios"] else float("nan")
        lines.append(f"| {name} | {v['units']} ({v['left_out']}) | {v['greedy']:,.0f} | "
                     f"{v['trained']:,.0f} | {v['trained'] / (v['greedy'] or float('nan')):.4f} | "
                     f"{mean:.4f} |")
    return "\n".join(lines), total


def cmd_heldout(args):
    items = load_items(_modules(args.split, args.libraries))
    bar = None
    if not args.quiet:
        from tqdm import tqdm
        n = len(items) * (2 if args.mode == "evict" else
                          len(args.columns) + len({"greedy", "model"} & set(args.columns)))
        bar = tqdm(total=n, desc=f"{args.split} ({args.mode})", unit="compile")
    with _pool(args) as pool:
        if args.mode == "evict":
            rows = heldout_evict(pool, items, LinearEviction.load(args.policy).theta, bar)
            table, total = evict_table(rows)
        else:
            from ..cache import RolloutCache
            model = Path(args.model).read_bytes() if args.model else None
            rows = heldout_alloc(pool, items, model, bar, columns=args.columns,
                                 cache=RolloutCache(args.cache) if args.cache else None)
            if tuple(args.columns) != COLUMNS:
                if bar:
                    bar.close()
                print(f"measured {', '.join(args.columns)} (kept in --cache); the table needs "
                      f"all of {', '.join(COLUMNS)}")
                return
            table, total = alloc_table(rows)
    if bar:
        bar.close()
    print(table)
    if args.out:
        cli.write_json(args.out, {"mode": args.mode, "model": args.model, "policy": args.policy,
                                  "total": total, "units": rows}, indent=1)


def function_losses(items, policy="heuristic", verify=False):
    """Per function of ``items``: greedy's and ours' :class:`FunctionScore`
    (``policy`` as for :func:`mlbridge.llvm.plugins.regalloc.allocate`),
    as ``[(ours - greedy, item name, greedy, ours)]``, largest loss first,
    and the weighted component totals of ours minus greedy's."""
    from ...llvm.plugins import regalloc as ra
    weights = {"copies": 0.2, "loads": 4, "stores": 1, "load_stores": 5,
               "cheap_remats": 0.2, "expensive_remats": 1}
    rows, parts = [], dict.fromkeys(weights, 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        for it in items:
            ir = Path(tmp) / "unit.bc"
            ir.write_bytes(it.ir)
            g = ra.allocate(ir, "greedy", verify=False, workdir=tmp).scores
            o = ra.allocate(ir, "mlbridge", policy=policy, verify=verify, workdir=tmp).scores
            for f in g.keys() & o.keys():
                rows.append((o[f].score - g[f].score, it.name, g[f], o[f]))
                for k, w in weights.items():
                    parts[k] += w * (getattr(o[f], k) - getattr(g[f], k))
    rows.sort(key=lambda r: -abs(r[0]))
    return rows, parts


def cmd_losses(args):
    items = load_items(_modules(args.split, args.libraries))
    rows, parts = function_losses(items, None if args.policy == "model" else args.policy,
                                  verify=args.verify)
    g = sum(r[2].score for r in rows)
    print(f"{len(items)} units, {len(rows)} functions: ours / greedy = "
          f"{(g + sum(r[0] for r in rows)) / g:.4f}")
    print("ours - greedy, weighted: " + ", ".join(f"{k} {v:+,.0f}" for k, v in parts.items()))
    for d, name, gs, os_ in rows[:args.top]:
        print(f"{d:+14,.0f} {gs.score:14,.0f} {name} {gs.function}: " + " ".join(
            f"{k}={getattr(gs, k):,.0f}/{getattr(os_, k):,.0f}"
            for k in ("copies", "loads", "stores", "load_stores", "expensive_remats")))


def callgrind(program_c, allocator, *, policy=None, model=None, workdir):
    """(callgrind Ir, program output) of csmith program ``program_c`` built
    with ``clang-19 -O2`` IR, ``allocator`` in llc-19 and clang to link."""
    from ...llvm.plugins import regalloc as ra
    from ...llvm.plugins.corpus import csmith_include_dir
    from ...toolchain import callgrind as count_ir, compile, toolchain
    wd = Path(workdir)
    stem = f"{Path(program_c).stem}-{allocator}-{policy or ('onnx' if model else 'default')}"
    ir = ra.optimized_ir(program_c, wd / f"{Path(program_c).stem}.ll",
                         flags=["-w", f"-I{csmith_include_dir()}"])
    obj, exe = wd / f"{stem}.o", wd / stem
    ra.allocate(ir, allocator, policy=model or policy, object_file=obj, workdir=wd)
    compile([toolchain().clang, str(obj), "-o", str(exe)], measure_text=False)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120).stdout
    return count_ir([exe], timeout=1200).ir, out


def cmd_callgrind(args):
    from ...llvm.plugins.corpus import csmith_program
    from ...toolchain import CompileError
    rows = []
    with tempfile.TemporaryDirectory(prefix="mlbridge-ra-callgrind-") as tmp:
        for seed in args.seeds:
            src = csmith_program(seed, Path(tmp) / f"csmith{seed}.c")
            try:
                g_ir, g_out = callgrind(src, "greedy", workdir=tmp)
            except CompileError as e:   # the program fails with LLVM's own allocator
                rows.append({"seed": seed, "skipped": f"greedy's build: {e}"[-300:]})
                print(json.dumps(rows[-1]), flush=True)
                continue
            row = {"seed": seed, "greedy": g_ir}
            for label, kw in (("heuristic", {"policy": "heuristic"}),
                              ("model", {"model": args.model})):
                ir_count, out = callgrind(src, "mlbridge", workdir=tmp, **kw)
                row[label] = ir_count
                row[f"{label}_same_output"] = out == g_out
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        cli.write_json(args.out, rows, indent=1)


def cmd_kernels(args):
    """The loop kernels of corpus/loops built with greedy, basic and ours
    (heuristic, deployed model) as a user builds them, run under callgrind
    (:mod:`.kernels`); exit status 1 when an output differs from greedy's."""
    from . import kernels as rk
    doc = rk.run(llvm=args.llvm, families=args.families, split=args.split,
                 kernels_per_family=args.kernels, plugin=args.plugin, jobs=args.jobs,
                 kernel_only=args.kernel_only,
                 log=(lambda m: None) if args.quiet else
                 (lambda m: print(m, file=sys.stderr, flush=True)))
    print(rk.markdown(doc))
    s = doc["summary"]["all"]
    for m in ("ir", "kernel_ir"):
        if f"model/greedy {m} geomean" in s:
            print(f"ours (model) / greedy, {m}: geomean {s[f'model/greedy {m} geomean']:.4f}, "
                  f"of sums {s[f'model/greedy {m} of sums']:.4f}, worst "
                  f"{s[f'model/greedy {m} worst'][0]} {s[f'model/greedy {m} worst'][1]:.4f}")
    if args.out:
        cli.write_json(args.out, doc, indent=1)
    if s["outputs_differ"]:
        print("outputs differ from greedy's: " + ", ".join(s["outputs_differ"]), file=sys.stderr)
        return 1
    return 0


def cmd_demo(args):
    """Score of one held-out library: greedy vs ours (built-in model), here
    without Ray; a unit either allocator cannot be scored on is left out
    (and counted)."""
    items = load_items(_modules("heldout", [args.library]))
    with LocalPool() as pool:
        greedy = pool.map([alloc_task(it.ir, allocator="greedy") for it in items])
        ours = pool.map([alloc_task(it.ir) for it in items])
    pairs = [(g["total"], o["total"]) for g, o in zip(greedy, ours)
             if not isinstance(g, TaskFailed) and not isinstance(o, TaskFailed)]
    g, o = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    print(f"regalloc score, held-out {args.library} ({len(pairs)} of {len(items)} units, "
          f"llc-19 -O2, lower is better): greedy {g:,.0f}, -regalloc=mlbridge (built-in "
          f"model) {o:,.0f} = {o / g:.3f}x greedy")


def _heldout_arguments(q, split="heldout"):
    q.add_argument("--mode", choices=("alloc", "evict"), default="alloc")
    q.add_argument("--split", choices=("heldout", "validation"), default=split,
                   help="validation: to compare candidates (selection never sees held-out)")
    q.add_argument("--libraries", nargs="*", default=None)
    q.add_argument("--model", default=None,
                   help="alloc: an ONNX policy (default: the model built into the plugin)")
    q.add_argument("--policy", default=str(SHIPPED_POLICY), help="evict: evict_policy.json")
    q.add_argument("--columns", nargs="+", default=list(COLUMNS), choices=COLUMNS,
                   help="alloc: measure only these (with --cache, to fill it in parts)")
    q.add_argument("--cache", default=None, help="alloc: keep measured numbers here")
    q.add_argument("--workers", type=cli.non_negative_int, default=2,
                   help="Ray workers (0: here, no Ray)")
    q.add_argument("--address", default=None)
    q.add_argument("--out", default=None, type=cli.output_file,
                   help="write every unit's numbers (JSON) here")
    q.add_argument("--quiet", action="store_true")


def _losses_arguments(q):
    q.add_argument("--split", choices=("train", "validation"), default="validation")
    q.add_argument("--libraries", nargs="*", default=None)
    q.add_argument("--policy", default="heuristic", choices=("heuristic", "model", "random"))
    q.add_argument("--verify", action="store_true", help="-verify-machineinstrs on ours")
    q.add_argument("--top", type=int, default=20)


def _callgrind_arguments(q):
    q.add_argument("--seeds", type=int, nargs="+", default=[1001, 1002, 1003])
    q.add_argument("--model", default=None, help="an ONNX policy (default: the built-in one)")
    q.add_argument("--out", default=None, type=cli.output_file)


def _kernels_arguments(q):
    q.add_argument("--llvm", type=int, choices=(19, 22), default=19)
    q.add_argument("--families", nargs="+", default=None, help="only these kernel families")
    q.add_argument("--split", choices=("train", "validation", "held_out"), default=None,
                   help="only the families of this split (default: all)")
    q.add_argument("--kernels", type=cli.positive_int, default=None,
                   help="only the first N kernels of each family")
    q.add_argument("--plugin", default=None, type=cli.existing_file,
                   help="this MLBridgeRegAlloc.so (e.g. a copy) instead of the build's")
    q.add_argument("--jobs", type=cli.positive_int, default=2, help="families measured at once")
    q.add_argument("--kernel-only", action="store_true",
                   help="only the kernels' Ir (no whole-run callgrind): half the runs")
    q.add_argument("--out", default=None, type=cli.output_file)
    q.add_argument("--quiet", action="store_true")


def _programs():
    from . import programs   # imports the real-builds harness: only for this verb
    return programs


def _demo_arguments(q):
    q.add_argument("--library", default=DEMO_LIBRARY)


COMMANDS = {
    "evaluate": Command("per validation library: the allocators' total score (or --split)",
                        lambda q: _heldout_arguments(q, "validation"), cmd_heldout),
    "heldout": Command("per held-out library: the allocators' total score",
                       _heldout_arguments, cmd_heldout),
    "losses": Command("per function, ours against greedy (never held-out)", _losses_arguments,
                      cmd_losses),
    "callgrind": Command("csmith programs: Ir and output, greedy vs ours",
                         _callgrind_arguments, cmd_callgrind),
    "kernels": Command("loop kernels (corpus/loops): callgrind Ir and output, greedy, basic "
                       "and ours as deployed", _kernels_arguments, cmd_kernels),
    "programs": Command("a real program (Brotli's or LZ4's CLI from its Debian source) built "
                        "with each allocator as deployed: callgrind Ir and outputs",
                        lambda q: _programs().add_arguments(q),
                        lambda args: _programs().command(args)),
    "demo": Command("one held-out library, score vs greedy", _demo_arguments, cmd_demo),
}
