"""Measure a deployed inliner the way a user would: compile each translation
unit from source with plain ``clang-19 -Oz -c <its flags>`` and with the same
command plus ``-fpass-plugin=MLBridgeInlineAdvisor.so`` (its built-in
compiled model, or an ONNX file through ONNX Runtime), and compare the
objects' ``.text`` bytes and the compilers' CPU time (user + system of the
child, from ``wait4``; the two commands run back to back per unit so they
see the same machine load).

    python -m mlbridge.train evaluate --split heldout --out results/heldout.json
"""

import json
import os
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from ..llvm.tools import elf_text_size

__all__ = ["evaluate_modules", "summarize", "markdown_table", "write"]


def _run_timed(cmd, timeout, env=None):
    """Runs cmd, returns (returncode, cpu seconds, stderr bytes) using wait4
    on this exact child (thread-safe, unlike RUSAGE_CHILDREN)."""
    with tempfile.TemporaryFile() as errf:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errf, env=env)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                _, status, ru = os.wait4(proc.pid, 0)
                proc.returncode = -9
                raise RuntimeError(f"timed out after {timeout:.0f} s: {' '.join(cmd)}")
            time.sleep(0.005)
        proc.returncode = os.waitstatus_to_exitcode(status)
        errf.seek(0)
        return proc.returncode, ru.ru_utime + ru.ru_stime, errf.read()


def _measure(cmd, out, timeout, env=None):
    rc, cpu, err = _run_timed(cmd, timeout, env)
    if rc != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... failed ({rc}): "
                           f"{err.decode(errors='replace')[-1500:]}")
    text = elf_text_size(out)
    if text is None:
        raise RuntimeError(f"no object written by {' '.join(cmd)}")
    return text, cpu, err.decode(errors="replace")


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
        oz_text, oz_cpu, _ = _measure(plain, base + ".oz.o", timeout)
        ml_text, ml_cpu, err = _measure(ours, base + ".ml.o", timeout, env)
    except RuntimeError as e:
        return {"module": module.name, "library": module.library, "error": str(e)}
    finally:
        for suffix in (".oz.o", ".ml.o"):
            try:
                os.unlink(base + suffix)
            except OSError:
                pass
    row = {"module": module.name, "library": module.library, "oz_text": oz_text,
           "ml_text": ml_text, "oz_cpu": oz_cpu, "ml_cpu": ml_cpu}
    if "warning" in err and "mlbridge-" in err:
        row["plugin_warning"] = err.strip()[-500:]
    return row


def evaluate_modules(modules, plugin, *, model=None, env=None, clang="clang-19", jobs=2,
                     timeout=900.0, progress=None):
    """Per-module rows (see :func:`_one`) for ``modules`` (corpus modules
    with ``name``, ``library``, ``source``, ``flags``). ``model``: an ONNX
    inliner policy; ``env``: the environment of the plugin's compiles (how
    the phase-ordering plugin is configured)."""
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


def markdown_table(summary):
    lines = ["| library | units | `clang-19 -Oz` .text | ours .text | Δ | compile CPU ratio |",
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


def search_oracle(pool, modules, *, reversals=6, seed=0, progress=None):
    """A budgeted per-module search against the measured size: LLVM's
    decisions, then up to ``reversals`` single reversals per module (all of
    them when the module asks fewer questions), then all the helpful ones
    together; the smallest ``.text`` seen is the module's oracle size (a
    lower bound on what an exhaustive search would find). ``pool`` is a
    :class:`~mlbridge.train.cluster.WorkerPool`; modules are corpus modules.
    Returns per-module rows ``{module, library, oz_text, oracle_text}``."""
    import numpy as np
    from .cluster import TaskFailed
    from .compile import make_task
    rng = np.random.default_rng(seed)
    irs = [m.ir() for m in modules]
    base = pool.map([make_task(ir, record=True, key=m.name) for m, ir in zip(modules, irs)],
                    progress=progress)
    tasks, owner = [], []
    for j, (m, ir, b) in enumerate(zip(modules, irs, base)):
        if isinstance(b, TaskFailed) or b["requests"] == 0:
            continue
        n = b["requests"]
        picks = rng.permutation(n)[:reversals].tolist()
        for i in picks:
            tasks.append(make_task(ir, flip=int(i), key=m.name))
            owner.append((j, int(i)))
    single = pool.map(tasks, progress=progress)
    helpful = {}
    best = {}
    for (j, i), r in zip(owner, single):
        if isinstance(r, TaskFailed):
            continue
        if r["text"] < base[j]["text"]:
            helpful.setdefault(j, []).append(i)
        best[j] = min(best.get(j, base[j]["text"]), r["text"])
    combos = [(j, make_task(irs[j], flip=sorted(v), key=modules[j].name))
              for j, v in helpful.items() if len(v) > 1]
    for (j, _), r in zip(combos, pool.map([t for _, t in combos], progress=progress)):
        if not isinstance(r, TaskFailed):
            best[j] = min(best[j], r["text"])
    rows = []
    for j, (m, b) in enumerate(zip(modules, base)):
        if isinstance(b, TaskFailed):
            continue
        rows.append({"module": m.name, "library": m.library, "oz_text": b["text"],
                     "oracle_text": best.get(j, b["text"])})
    return rows
