"""The measured results of the loop-distribution plugin on one split of the
loop kernels (docs/results.md, "Loop distribution").

Every family file is built as a user builds it -- ``clang-19 -O3
-fpass-plugin=MLBridgeLoopDistribution.so`` with the plugin's compiled-in
model (or an ONNX file), and with the random policy over pipes -- next to
plain ``-O3``, ``-O3 -mllvm -enable-loop-distribute`` and the plugin's
hand-written policy (``MLBRIDGE_LD_RUNNER=default``); every kernel's
callgrind Ir and checksums are measured (:mod:`.task`). A policy whose
checksums differ from ``-O3`` on a kernel is a wrong result, counted.
Compile cost: callgrind Ir of the whole ``clang-19 -O3 -c`` process of each
family file with and without the plugin (:func:`compile_cost`).

    python -m mlbridge.train loop-distribution heldout \\
        --out results/loop-distribution/heldout.json
"""

from __future__ import annotations

import time

from ...corpus import loops as corpus
from ...toolchain import toolchain
from ..cluster import pool as worker_pool
from ..results import TrainingError
from .task import compile_ir_task, measure_task
from .trainer import Measurer, family_sources, geomean

__all__ = ["evaluate", "compile_cost", "table", "markdown"]


def _configs(model):
    pol = {"kind": "builtin"} if model is None else {"kind": "onnx", "model": model}
    return {"O3": (["-O3"], None),
            "O3-distribute": (list(corpus.FLAG_SETS["O3-distribute"]), None),
            "model": (["-O3"], pol),
            "heuristic": (["-O3"], {"kind": "heuristic"}),
            "random": (["-O3"], {"kind": "random", "seed": 0})}


def compile_cost(pool, sources, plugin, policy=None):
    """{family: {"O3": Ir, "plugin": Ir}}: callgrind Ir of the whole
    ``clang-19 -O3 -c`` of each family file, plain and with the plugin
    (``policy``: {"kind": "builtin"}, its compiled-in model, or
    "heuristic")."""
    tasks = [compile_ir_task(src.read_text(), src.stem, policy=policy or {"kind": "builtin"},
                             plugin=plugin, key=f"{src.stem}:compile") for src in sources]
    out = {}
    for src, r in zip(sources, pool.map(tasks)):
        if not isinstance(r, dict):
            raise TrainingError(f"compile-cost build of {src.name} failed: {r.error[-400:]}")
        out[src.stem] = {"O3": r["O3"], "plugin": r["plugin"]}
    return out


def evaluate(split, *, plugin, model=None, workers=2, address=None,
             cache_dir=None, progress=True, kernels=None):
    """The results dict of ``split`` (``kernels``: a subset; ``model``: ONNX
    bytes instead of the compiled-in model; ``workers=0``: in this process,
    without Ray)."""
    ks = kernels if kernels is not None else corpus.kernels(split)
    groups = family_sources(ks)
    t0 = time.monotonic()
    configs = _configs(model)
    per = {k.name: {"family": k.family, "ir": {}, "wrong": []} for k in ks}
    with worker_pool(workers, address=address) as pool:
        meas = Measurer(pool, plugin, cache_dir, progress)
        tasks, where = [], []
        for name, (flags, pol) in configs.items():
            for src, g in groups.items():
                tasks.append(measure_task(src.read_text(), src.stem, [k.name for k in g],
                                          flags=flags, policy=pol, plugin=plugin,
                                          key=f"{src.stem}:{name}"))
                where.append((name, g))
        outs = {}
        for (name, g), r in zip(where, meas.run(tasks, desc=f"{split} builds")):
            if not isinstance(r, dict):
                raise TrainingError(f"{name} build of {g[0].source.name} failed: "
                                    f"{r.error[-400:]}")
            for k in g:
                per[k.name]["ir"][name] = r["ir"][k.name]
                outs[(name, k.name)] = r["out"][k.name]
        for k in ks:
            ref = outs[("O3", k.name)]
            per[k.name]["wrong"] = [n for n in configs if outs[(n, k.name)] != ref]
        costs = compile_cost(pool, list(groups), plugin) if model is None else {}
    return {"split": split, "clang": toolchain().version,
            "model": "compiled-in" if model is None else "onnx file",
            "kernels": per, "compile_ir": costs, "summary": table(per, costs),
            "seconds": round(time.monotonic() - t0, 1)}


def _group(rows):
    if not rows:
        return {}
    model = [r["ir"]["model"] / r["ir"]["O3"] for r in rows]
    best = [r["ir"]["model"] / min(r["ir"]["O3"], r["ir"]["O3-distribute"]) for r in rows]
    worst = max(rows, key=lambda r: r["ir"]["model"] / r["ir"]["O3"])
    return {"kernels": len(rows),
            "model/O3": round(geomean(model), 4),
            "model/best(O3,O3-distribute)": round(geomean(best), 4),
            "O3-distribute/O3": round(geomean(r["ir"]["O3-distribute"] / r["ir"]["O3"]
                                              for r in rows), 4),
            "heuristic/O3": round(geomean(r["ir"]["heuristic"] / r["ir"]["O3"] for r in rows), 4),
            "random/O3": round(geomean(r["ir"]["random"] / r["ir"]["O3"] for r in rows), 4),
            "worst": [worst["name"], round(worst["ir"]["model"] / worst["ir"]["O3"], 4)],
            "changed": sum(r["ir"]["model"] != r["ir"]["O3"] for r in rows),
            "wrong": {c: sum(c in r["wrong"] for r in rows) for c in rows[0]["ir"]}}


def table(per, times):
    rows = [dict(v, name=k) for k, v in per.items()]
    out = {"all": _group(rows)}
    for fam in dict.fromkeys(r["family"] for r in rows):
        out[fam] = _group([r for r in rows if r["family"] == fam])
    o3 = sum(t["O3"] for t in times.values())
    out["all"]["compile_ir_ratio"] = round(sum(t["plugin"] for t in times.values()) / o3, 4) \
        if o3 else None
    return out


def markdown(summary):
    """The results table (docs/results.md)."""
    lines = ["| family | kernels | model / -O3 | model / best of -O3, -O3 distribute | "
             "LLVM distribute / -O3 | built-in heuristic / -O3 | random / -O3 | "
             "worst kernel (model / -O3) | changed | wrong results |",
             "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for fam, s in summary.items():
        lines.append(f"| {'**all**' if fam == 'all' else fam} | {s['kernels']} | "
                     f"{s['model/O3']:.4f} | {s['model/best(O3,O3-distribute)']:.4f} | "
                     f"{s['O3-distribute/O3']:.4f} | {s['heuristic/O3']:.4f} | "
                     f"{s['random/O3']:.4f} | "
                     f"`{s['worst'][0]}` {s['worst'][1]:.4f} | {s['changed']} | "
                     f"{sum(s['wrong'].values())} |")
    return "\n".join(lines)



