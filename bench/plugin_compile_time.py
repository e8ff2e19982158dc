#!/usr/bin/env python3
"""Compile time of a C corpus with the ML inline advisor plugin: the model
in-process (ONNX Runtime; compiled into the plugin) vs the same model in a
Python process over named pipes (and gRPC) vs plain clang-19.

    .venv/bin/python bench/plugin_compile_time.py --build-dir build
    .venv/bin/python bench/plugin_compile_time.py --build-dir build --opt -O2 --repeat 5

Opt-in (not part of the test suite). Needs the built plugins (target
mlbridge-llvm-plugins), clang-19, csmith and the onnxruntime Python package.

Corpus: the C programs of tests/e2e/programs/ and tests/e2e/programs/plugins/
(minicalc: one file per translation unit) plus csmith programs with seeds
2000..2000+N (--csmith, default 30). Every configuration compiles every file
with ``clang-19 <opt> -c`` one after the other (one core), --repeat times;
(round-robin over the configurations); reported: the best total wall time
(and the median), the CPU time of the compilers plus the Python model's
process (robust on a loaded machine), the number of inlining decisions
the model made (from -mlbridge-inline-log) and the extra CPU per file and
per decision relative to the plugin running LLVM's own heuristic. All configurations use the same model
(models/plugins/inliner_policy.onnx); the Python side evaluates it with
onnxruntime, so "pipe" measures the price of the process boundary.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from mlbridge.llvm.plugins import find_plugins, tool_env  # noqa: E402
from mlbridge.llvm.plugins.corpus import csmith_include_dir, csmith_program  # noqa: E402
from mlbridge.toolchain import ModelServer, compile, toolchain  # noqa: E402

MODEL = REPO / "models" / "plugins" / "inliner_policy.onnx"


def corpus(tmp: Path, n_csmith: int):
    files = sorted((REPO / "tests/e2e/programs").glob("*.c"))
    files += sorted((REPO / "tests/e2e/programs/plugins").glob("*.c"))
    files += sorted((REPO / "tests/e2e/programs/plugins/minicalc").glob("*.c"))
    for seed in range(2000, 2000 + n_csmith):
        files.append(csmith_program(seed, tmp / f"csmith{seed}.c"))
    return files


def python_model(transport: str) -> ModelServer:
    """The inliner model in a thread of this process, serving over pipes or
    gRPC (what a trainer would run), evaluated with onnxruntime."""
    import onnxruntime as ort
    sess = ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
    # The model's inputs: LLVM's features it uses and LLVM's default decision
    # (sent when MLBRIDGE_INLINE_INCLUDE_DEFAULT is set).
    inputs = [i.name for i in sess.get_inputs()]

    def policy(obs):
        feeds = {n: np.asarray(obs[n], dtype=np.float32).reshape(1, 1) for n in inputs}
        return int(sess.run(None, feeds)[0].reshape(-1)[0])
    return ModelServer(policy, transport=transport)


def compile_all(clang, files, flags, env, objdir, inc):
    """(wall seconds, CPU seconds of the compilers + of this process, which
    hosts the Python model in the pipe/gRPC configurations)."""
    start = time.perf_counter()
    s0 = resource.getrusage(resource.RUSAGE_SELF)
    compilers = 0.0
    for f in files:
        extra = ["-w", f"-I{inc}"] if f.name.startswith("csmith") else []
        compilers += compile([clang, *flags, *extra, "-c", str(f), "-o",
                              str(objdir / (f.stem + ".o"))], env=env).cpu_seconds
    wall = time.perf_counter() - start
    s1 = resource.getrusage(resource.RUSAGE_SELF)
    return wall, compilers + (s1.ru_utime - s0.ru_utime) + (s1.ru_stime - s0.ru_stime)


def print_table(results, n_files, opt, repeat):
    """Totals, and the extra CPU of each configuration over the plugin with
    LLVM's own heuristic (the plugin's load is common to all): per compiled
    file and per model decision."""
    base_cpu = results[0]["cpu_s"]
    ref = next((r for r in results if "runner default" in r["config"]), results[0])
    print(f"\n{n_files} files, clang-19 {opt}, best of {repeat} rounds; CPU = the compilers + "
          f"the Python model's process:")
    print(f"{'configuration':42s} {'wall':>7s} {'(median)':>9s} {'CPU':>7s} {'vs plain':>8s} "
          f"{'extra/file':>10s} {'extra/decision':>14s}")
    for r in results:
        extra = r["cpu_s"] - ref["cpu_s"]
        r["extra_cpu_ms_per_file"] = 1e3 * extra / n_files
        r["extra_cpu_us_per_decision"] = 1e6 * extra / r["decisions"] if r["decisions"] else None
        per_dec = (f"{r['extra_cpu_us_per_decision']:11.1f} us" if r["decisions"] else
                   f"{'-':>14s}")
        print(f"{r['config']:42s} {r['best_s']:6.2f}s ({r['median_s']:6.2f}s) "
              f"{r['cpu_s']:6.2f}s {r['cpu_s'] / base_cpu:7.2f}x "
              f"{r['extra_cpu_ms_per_file']:7.1f} ms {per_dec}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=None)
    ap.add_argument("--opt", default="-Oz", help="clang optimization level (default -Oz)")
    ap.add_argument("--csmith", type=int, default=30, help="csmith programs in the corpus")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args(argv)

    info = find_plugins(args.build_dir)
    clang = toolchain().clang
    inc = csmith_include_dir()
    results = []
    with tempfile.TemporaryDirectory(prefix="mlbridge-bench-") as tmpd:
        tmp = Path(tmpd)
        files = corpus(tmp, args.csmith)
        objdir = tmp / "obj"
        objdir.mkdir()
        plugin = ["-fpass-plugin=" + str(info.inline_advisor)]
        configs = [("plain clang-19", [], {}, None),
                   ("plugin, LLVM heuristic (runner default)", plugin,
                    {"MLBRIDGE_INLINE_RUNNER": "default"}, None),
                   ("plugin, ONNX Runtime in-process", plugin,
                    {"MLBRIDGE_INLINE_MODEL": str(MODEL)}, None)]
        if info.has_runner("compiled"):
            configs.append(("plugin, compiled-in model", plugin,
                            {"MLBRIDGE_INLINE_RUNNER": "compiled"}, None))
        configs.append(("plugin, Python model over pipes", plugin, {}, "pipe"))
        if info.has_runner("grpc"):
            configs.append(("plugin, Python model over gRPC", plugin, {}, "grpc"))

        # Round-robin over the configurations, so that a change in machine
        # load affects all of them alike.
        times = {c[0]: [] for c in configs}
        cpus = {c[0]: [] for c in configs}
        decisions = {c[0]: 0 for c in configs}
        for rep in range(args.repeat):
            for name, flags, extra_env, transport in configs:
                log = tmp / "advisor.log"
                log.unlink(missing_ok=True)
                env = tool_env(info)
                env.update(extra_env)
                env.pop("MLBRIDGE_INLINE_LOG", None)
                if flags:
                    env["MLBRIDGE_INLINE_LOG"] = str(log)
                server = None
                if transport:
                    server = python_model(transport)
                    key = "MLBRIDGE_INLINE_CHANNEL" if transport == "pipe" else "MLBRIDGE_INLINE_SERVER"
                    env[key] = server.endpoint
                    env["MLBRIDGE_INLINE_INCLUDE_DEFAULT"] = "1"
                try:
                    t, cpu = compile_all(clang, files, [args.opt, *flags], env, objdir, inc)
                finally:
                    if server:
                        server.close()
                times[name].append(t)
                cpus[name].append(cpu)
                if log.exists():
                    entries = [json.loads(x) for x in log.read_text().splitlines()]
                    decisions[name] = sum(e["model_decisions"] for e in entries)
                    fallbacks = sum(e["fallbacks"] for e in entries)
                    if fallbacks:
                        raise SystemExit(f"{name}: {fallbacks} fallbacks: the model failed")
                print(f"round {rep + 1}: {name:45s} wall {t:7.3f} s  CPU {cpu:7.3f} s  "
                      f"model decisions {decisions[name]}", flush=True)
        for name, *_ in configs:
            results.append({"config": name, "best_s": min(times[name]),
                            "median_s": statistics.median(times[name]),
                            "cpu_s": min(cpus[name]), "decisions": decisions[name]})

    print_table(results, len(files), args.opt, args.repeat)
    if args.json:
        Path(args.json).write_text(json.dumps({"files": len(files), "opt": args.opt,
                                               "results": results}, indent=2))


if __name__ == "__main__":
    main()
