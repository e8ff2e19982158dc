"""Measure a deployed inliner the way a user would: compile each translation
unit from source with plain ``clang-19 -Oz -c <its flags>`` and with the same
command plus ``-fpass-plugin=MLBridgeInlineAdvisor.so`` (its built-in
compiled model, or an ONNX file through ONNX Runtime), and compare the
objects' ``.text`` bytes and the compilers' CPU time (user + system of the
child, measured by :func:`mlbridge.toolchain.compile`; the two commands run
back to back per unit so they see the same machine load).

    python -m mlbridge.train evaluate --split heldout --out results/heldout.json
"""

import json
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor

from ..toolchain import CompileError, compile, toolchain

__all__ = ["evaluate_modules", "summarize", "markdown_table", "write"]


def _one(module, plugin, model, env, clang, tmp, timeout):
    base = os.path.join(tmp, module.name.replace("/", "_"))
    src = os.fspath(module.source)
    plain = [clang, "-Oz", "-c", *module.flags, src, "-o", base + ".oz.o"]
    ours = [clang, "-Oz", f"-fpass-plugin={plugin}", "-c", *module.flags, src, "-o",
            base + ".ml.o"]
    if model:  # -Xclang -load makes the plugin's options known to -mllvm
        ours[3:3] = ["-Xclang", "-load", "-Xclang", plugin, "-mllvm",
                     f"-mlbridge-inline-model={model}"]
    try:
        oz = compile(plain, timeout=timeout)
        ml = compile(ours, timeout=timeout, env=env)
    except CompileError as e:
        return {"module": module.name, "library": module.library, "error": str(e)}
    finally:
        for suffix in (".oz.o", ".ml.o"):
            try:
                os.unlink(base + suffix)
            except OSError:
                pass
    row = {"module": module.name, "library": module.library, "oz_text": oz.text,
           "ml_text": ml.text, "oz_cpu": oz.cpu_seconds, "ml_cpu": ml.cpu_seconds}
    if "warning" in ml.stderr and "mlbridge-" in ml.stderr:
        row["plugin_warning"] = ml.stderr.strip()[-500:]
    return row


def evaluate_modules(modules, plugin, *, model=None, env=None, jobs=2, timeout=900.0,
                     progress=None):
    """Per-module rows (see :func:`_one`) for ``modules`` (corpus modules
    with ``name``, ``library``, ``source``, ``flags``), compiled by the
    toolchain's clang. ``model``: an ONNX inliner policy; ``env``: the
    environment of the plugin's compiles (how the phase-ordering plugin is
    configured)."""
    clang = toolchain().clang
    with tempfile.TemporaryDirectory(prefix="mlbridge-eval-") as tmp, \
            ThreadPoolExecutor(max_workers=jobs) as pool:
        futs = [pool.submit(_one, m, plugin, model, env, clang, tmp, timeout) for m in modules]
        rows = []
        for f in futs:
            rows.append(f.result())
            if progress is not None:
                progress()
    return rows


def summarize(rows):
    """Per library and total: units, .text of -Oz and ours, delta %, CPU."""
    libs = {}
    for r in rows:
        if "error" in r:
            continue
        s = libs.setdefault(r["library"], {"units": 0, "oz_text": 0, "ml_text": 0,
                                           "oz_cpu": 0.0, "ml_cpu": 0.0})
        s["units"] += 1
        for k in ("oz_text", "ml_text", "oz_cpu", "ml_cpu"):
            s[k] += r[k]
    total = {"units": 0, "oz_text": 0, "ml_text": 0, "oz_cpu": 0.0, "ml_cpu": 0.0}
    for s in libs.values():
        for k in total:
            total[k] += s[k]
    for s in list(libs.values()) + [total]:
        s["delta_pct"] = 100.0 * (s["ml_text"] - s["oz_text"]) / s["oz_text"] if s["oz_text"] else 0.0
        s["ratio"] = s["ml_text"] / s["oz_text"] if s["oz_text"] else 1.0
        s["cpu_ratio"] = s["ml_cpu"] / s["oz_cpu"] if s["oz_cpu"] else None
    return {"libraries": dict(sorted(libs.items())), "total": total,
            "errors": [r for r in rows if "error" in r]}


def markdown_table(summary, clang=None):
    """The summary as a Markdown table; the baseline column names the
    compiler (``clang``, default :func:`mlbridge.toolchain.toolchain`'s)."""
    baseline = f"clang-{toolchain(clang).major} -Oz"
    lines = [f"| library | units | `{baseline}` .text | ours .text | Δ | compile CPU ratio |",
             "|---|---:|---:|---:|---:|---:|"]

    def line(name, s):
        cpu = f"{s['cpu_ratio']:.3f}×" if s["cpu_ratio"] else "–"
        return (f"| {name} | {s['units']} | {s['oz_text']:,} | {s['ml_text']:,} | "
                f"{s['delta_pct']:+.2f} % | {cpu} |")
    for name, s in summary["libraries"].items():
        lines.append(line(name, s))
    lines.append(line("**total**", summary["total"]))
    return "\n".join(lines)


def write(rows, path):
    summary = summarize(rows)
    with open(path, "w") as f:
        json.dump({"summary": summary, "rows": rows}, f, indent=1)
    return summary
