"""Held-out / validation .text of the phase-ordering policy next to plain
``clang-19 -Oz`` and the stock flags that cover its lever, every unit
compiled from source (corpus flags), back to back per unit:

    .venv/bin/python models/plugins/phase_order_training/measure.py \\
        --split heldout --model models/plugins/phase_order_policy.onnx --out heldout.json

Configurations: ``oz`` (plain), ``flags`` (``-Xclang -fmerge-functions
-mllvm -enable-machine-outliner=always``, the best stock combination for
this lever), ``policy`` (the plugin with the ONNX policy, ``--max-steps``).
``--configs`` measures some of them; ``--with a.json`` adds the columns of an
earlier run of the same split (the .text of a configuration does not depend
on the machine's load; its compile CPU does, so the CPU ratio is only given
when ``oz`` and ``policy`` were measured side by side).
"""

import argparse
import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))

from mlbridge.corpus import Corpus  # noqa: E402
from mlbridge.llvm.plugins import find_plugins, tool_env  # noqa: E402
from mlbridge.toolchain import CompileError, compile, toolchain  # noqa: E402
from mlbridge.train.phase_order import plugin_env  # noqa: E402

FLAGS = ["-Xclang", "-fmerge-functions", "-mllvm", "-enable-machine-outliner=always"]


def one(m, clang, plugins, model, steps, tmp, configs):
    base = str(Path(tmp) / m.name.replace("/", "_"))
    src = str(m.source)
    cmds = {"oz": ([clang, "-Oz", "-c", *m.flags, src, "-o", base + ".a.o"], None),
            "flags": ([clang, "-Oz", *FLAGS, "-c", *m.flags, src, "-o", base + ".b.o"], None),
            "policy": ([clang, "-Oz", f"-fpass-plugin={plugins.phase_order}", "-c", *m.flags,
                        src, "-o", base + ".c.o"],
                       tool_env(plugins, plugin_env(model, steps)))}
    row = {"module": m.name, "library": m.library}
    try:
        for k, (cmd, env) in cmds.items():
            if k not in configs:
                continue
            r = compile(cmd, env=env, timeout=900)
            row[k] = r.text
            row[k + "_cpu"] = r.cpu_seconds
            if k == "policy" and "warning" in r.stderr:
                row["warning"] = r.stderr[-300:]
    except CompileError as e:
        row["error"] = str(e)[-500:]
    return row


def main():
    q = argparse.ArgumentParser()
    q.add_argument("--split", default="heldout", choices=["validation", "heldout"])
    q.add_argument("--model", default=None)
    q.add_argument("--configs", nargs="+", default=["oz", "flags", "policy"])
    q.add_argument("--with", dest="earlier", default=None)
    q.add_argument("--libraries", nargs="+", default=None)
    q.add_argument("--max-steps", type=int, default=3)
    q.add_argument("--jobs", type=int, default=2)
    q.add_argument("--out", required=True)
    a = q.parse_args()
    mods = [m for m in Corpus.load().modules(split=a.split)
            if not a.libraries or m.library in a.libraries]
    clang, plugins = toolchain().clang, find_plugins()
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(a.jobs) as pool:
        rows = list(pool.map(lambda m: one(m, clang, plugins, a.model, a.max_steps, tmp,
                                           a.configs), mods))
    if a.earlier:
        earlier = {r["module"]: r for r in json.loads(Path(a.earlier).read_text())["rows"]}
        for r in rows:
            for k, v in earlier.get(r["module"], {"error": "not in " + a.earlier}).items():
                r.setdefault(k, v)
    Path(a.out).write_text(json.dumps({"rows": rows, "flags": FLAGS, "model": a.model,
                                       "max_steps": a.max_steps}, indent=1))
    if not {"oz", "flags", "policy"} <= set().union(*rows):
        return
    libs = {}
    for r in rows:
        if "error" in r:
            continue
        s = libs.setdefault(r["library"], {"units": 0, "oz": 0, "flags": 0, "policy": 0,
                                           "oz_cpu": 0.0, "policy_cpu": 0.0})
        s["units"] += 1
        for k in ("oz", "flags", "policy", "oz_cpu", "policy_cpu"):
            s[k] += r.get(k, 0)
    total = {k: sum(s[k] for s in libs.values()) for k in
             ("units", "oz", "flags", "policy", "oz_cpu", "policy_cpu")}
    print("| library | units | -Oz | flags | policy | policy/-Oz | policy/flags |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, s in sorted(libs.items()) + [("**total**", total)]:
        print(f"| {name} | {s['units']} | {s['oz']:,} | {s['flags']:,} | {s['policy']:,} | "
              f"{s['policy'] / s['oz']:.4f} | {s['policy'] / s['flags']:.4f} |")
    print(f"flags/-Oz {total['flags'] / total['oz']:.4f}; compile CPU policy/-Oz "
          f"{total['policy_cpu'] / total['oz_cpu']:.3f}; errors "
          f"{sum('error' in r for r in rows)}")


if __name__ == "__main__":
    main()
