#!/usr/bin/env python3
"""What a plugin costs per small compile unit, by the runner it decides with,
as ratios to plain ``clang -Oz -c`` of the same unit measured in the same run:

* ``plain``: ``clang -Oz -c unit.c`` (the floor);
* ``loaded, LLVM decides``: the inline advisor loaded, ``MLBRIDGE_INLINE_RUNNER=default``
  (the plugin registers and answers nothing: the price of loading it);
* ``compiled model``: the inline advisor as deployed (its model compiled in);
* ``ONNX Runtime``: ``MLBRIDGE_INLINE_MODEL=<the shipped .onnx>`` (in-process
  ONNX Runtime, loaded when the plugin first decides);
* with ``--kit-plugin P.so``: a plugin built from the installed kit
  (examples/new-optimization, compiled model, only the runners it links)
  against plain ``clang -O3 -c`` of the same unit, loaded with
  ``UNROLL_RUNNER=default`` (it asks nothing) and deciding (its unroll
  counts also change how much code the rest of the compile handles).

CPU seconds (user + system of the compiler process, from ``wait4``) and wall
seconds; rounds alternate the configurations and the median over
``--repeat`` rounds is reported. Every unit's object is checked to exist.

    .venv/bin/python bench/plugin_unit_cost.py --build-dir build --repeat 15
    .venv/bin/python bench/plugin_unit_cost.py --build-dir build --llvm 22
    .venv/bin/python bench/plugin_unit_cost.py --build-dir build --kit-plugin ex/libUnrollCount.so
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from mlbridge.llvm.plugins import find_plugins  # noqa: E402
from mlbridge.toolchain import compile as run_compile  # noqa: E402

UNITS = [REPO / "tests" / "e2e" / "programs" / "plugins" / f for f in ("bitops.c", "interp.c")]
ONNX_MODEL = REPO / "models" / "plugins" / "inliner_policy.onnx"


def configurations(info, kit_plugin=None):
    """(name, level, plugin or None, environment, the plain row it is compared with)."""
    plugin = info.inline_advisor
    rows = [("plain -Oz", "-Oz", None, {}, None),
            ("loaded, LLVM decides", "-Oz", plugin, {"MLBRIDGE_INLINE_RUNNER": "default"},
             "plain -Oz"),
            ("compiled model (deployed)", "-Oz", plugin, {}, "plain -Oz"),
            ("ONNX Runtime", "-Oz", plugin, {"MLBRIDGE_INLINE_MODEL": str(ONNX_MODEL)},
             "plain -Oz")]
    if kit_plugin:
        rows += [("plain -O3", "-O3", None, {}, None),
                 ("kit plugin loaded, LLVM decides", "-O3", str(kit_plugin),
                  {"UNROLL_RUNNER": "default"}, "plain -O3"),
                 ("kit plugin, compiled model", "-O3", str(kit_plugin), {}, "plain -O3")]
    return rows


def runner_used(info, plugin, env, tmp):
    """What the inline advisor says it decides with under ``env`` (its
    verbose remark, from ``opt`` on the first unit): checks each row is the
    runner it is named after."""
    bc = os.path.join(tmp, "u.bc")
    run_compile([info.tool("clang"), "-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm",
                 "-c", str(UNITS[0]), "-o", bc], measure_text=False)
    res = run_compile([info.tool("opt"), f"-load-pass-plugin={plugin}", "-passes=default<Oz>",
                       bc, "-o", os.devnull],
                      env=dict(os.environ, MLBRIDGE_INLINE_VERBOSE="1", **env),
                      measure_text=False)
    return next((ln.split("mlbridge-inline: ", 1)[1] for ln in res.stderr.splitlines()
                 if "mlbridge-inline: " in ln), None)


def measure(info, repeat, kit_plugin=None, units=UNITS):
    clang = info.tool("clang")
    configs = configurations(info, kit_plugin)
    samples = {c[0]: {"cpu": [], "wall": []} for c in configs}
    with tempfile.TemporaryDirectory(prefix="mlbridge-unit-cost-") as tmp:
        for r in range(repeat):
            order = configs[r % len(configs):] + configs[:r % len(configs)]
            for name, level, plugin, env, _ in order:
                cpu = wall = 0.0
                for u in units:
                    cmd = [clang, level, "-c", str(u), "-o", os.path.join(tmp, "u.o")]
                    if plugin:
                        cmd.insert(2, f"-fpass-plugin={plugin}")
                    res = run_compile(cmd, env=dict(os.environ, **env))
                    cpu, wall = cpu + res.cpu_seconds, wall + res.wall_seconds
                samples[name]["cpu"].append(cpu / len(units))
                samples[name]["wall"].append(wall / len(units))
        used = {c[0]: runner_used(info, c[2], c[3], tmp) for c in configs
                if c[2] == info.inline_advisor}
    rows = []
    for name, level, plugin, env, base in configs:
        cpu = statistics.median(samples[name]["cpu"])
        wall = statistics.median(samples[name]["wall"])
        row = {"config": name, "level": level, "plugin": None if plugin is None else str(plugin),
               "env": env,
               "cpu_ms": 1e3 * cpu, "wall_ms": 1e3 * wall, "runner": used.get(name)}
        if base is not None:
            b = next(x for x in rows if x["config"] == base)
            row.update(cpu_ratio=row["cpu_ms"] / b["cpu_ms"],
                       wall_ratio=row["wall_ms"] / b["wall_ms"])
        rows.append(row)
    return rows


def table(rows, llvm, repeat, units):
    out = [f"## Per small unit, LLVM {llvm} (median of {repeat} rounds, "
           f"{', '.join(u.name for u in units)})", "",
           "| configuration | CPU per unit | vs plain | wall per unit | vs plain | the plugin says |",
           "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        ratio = (lambda k: f"{r[k]:.2f}x" if k in r else "(floor)")
        out.append(f"| {r['config']} | {r['cpu_ms']:.1f} ms | {ratio('cpu_ratio')} | "
                   f"{r['wall_ms']:.1f} ms | {ratio('wall_ratio')} | {r['runner'] or ''} |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--llvm", type=int, default=19, choices=(19, 22))
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--kit-plugin", type=Path, default=None,
                    help="a plugin built from the installed kit (examples/new-optimization)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    info = find_plugins(args.build_dir, llvm=args.llvm)
    rows = measure(info, args.repeat, args.kit_plugin)
    print(table(rows, args.llvm, args.repeat, UNITS))
    if args.json:
        args.json.write_text(json.dumps({"llvm": args.llvm, "repeat": args.repeat,
                                         "units": [u.name for u in UNITS], "rows": rows},
                                        indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
