#!/usr/bin/env python3
"""Per-decision cost of each model runner inside three compilers, in one run:
the LLVM inline advisor plugin (opt-19), the MLIR unroll plugin
(mlir-opt-19) and the C tool mlb-loop-pragmas (libclang), each asking its
model through pipe+bitstream, pipe+JSON, gRPC, in-process ONNX Runtime and
the model compiled into it (docs/performance.md, "Runners in three
compilers").

    .venv/bin/python bench/compiler_runners.py --build-dir build
    .venv/bin/python bench/compiler_runners.py --build-dir build --quick   # seconds

Method. Each compiler gets two generated inputs, a small and a large one
(C functions with call sites for the inliner, MLIR functions with affine
loop nests, C functions with loops). Per compiler, every configuration runs
the tool on both once per round, round-robin over the configurations,
--repeat rounds. Measured: CPU time of the tool process plus this process
(which hosts the Python model for pipe/gRPC: the model side's cost is part
of the price of a process boundary), best of the rounds. The per-decision
cost is the slope between the two inputs, over the same slope of the tool
with the runner "default" (no model):
  ((CPU_large - CPU_small) - (default_large - default_small)) / (decisions_large - decisions_small)
so one-time costs (loading ONNX Runtime and the model, connecting, the
Python thread) drop out; they are reported as "startup". Every runner
evaluates the same model (pipe/gRPC: the same ONNX file in Python with
onnxruntime), so they make the same decisions and their differences are
the runners' own; the "compiled" row, whose own cost is well under a
microsecond, mostly shows how the model's decisions change the compiler's
work against the default's (negative: less work). The C API has no
compiled-model runner: that cell is "n/a".

Output: a table on stdout, --json FILE (all numbers), --plot FILE (bars).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from mlbridge.llvm.plugins import INLINER_FEATURES, compile_to_ir, find_llvm_tool, find_plugins, tool_env  # noqa: E402
from mlbridge.toolchain import CompileError, ModelServer, compile  # noqa: E402

INLINER_MODEL = REPO / "models" / "plugins" / "inliner_policy.onnx"
UNROLL_MODEL = REPO / "models" / "mlir" / "unroll_policy.onnx"
RUNNERS = ("pipe+bitstream", "pipe+json", "grpc", "onnx", "compiled")


def onnx_policy(model: Path, features, decide):
    """The policy a Python model process runs: the ONNX model evaluated by
    onnxruntime on the observation's ``features``, its output mapped to a
    decision by ``decide`` (what a trainer would serve)."""
    import onnxruntime as ort
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    shapes = {i.name: [d if isinstance(d, int) else 1 for d in i.shape]
              for i in sess.get_inputs()}
    features = [n for n in features if n in shapes]

    def policy(obs):
        feeds = {n: np.asarray(obs[n], dtype=np.float32).reshape(shapes[n]) for n in features}
        return decide(sess.run(None, feeds)[0])
    return policy


def argmax(scores) -> int:
    return int(np.argmax(np.asarray(scores).reshape(-1)))


# ---- the three compilers ------------------------------------------------------------


class Compiler:
    """One integration: how to run it with a runner, and how many decisions
    it made (from its log)."""

    name = ""
    model: Path = None
    features = ()

    def decide(self, out):
        return argmax(out)

    def runners(self):
        return RUNNERS


class LLVMInliner(Compiler):
    name = "LLVM inliner plugin (opt-19)"
    model = INLINER_MODEL
    # The shipped model also reads LLVM's default decision; over pipes and
    # gRPC the plugin sends it only when asked (MLBRIDGE_INLINE_INCLUDE_DEFAULT).
    features = list(INLINER_FEATURES) + ["inlining_default"]

    def __init__(self, tmp: Path, n: int):
        self.info = find_plugins()
        src = tmp / "calls.c"
        # n call sites of small static functions (the inliner asks per site).
        lines = ["static int g[64];"]
        for i in range(n):
            lines.append(f"static int leaf{i}(int x) {{ g[{i % 64}] += x; return x * {i % 7 + 2} + g[{(i * 5) % 64}]; }}")
        for i in range(0, n, 8):
            calls = " + ".join(f"leaf{j}(a + {j})" for j in range(i, min(i + 8, n)))
            lines.append(f"int caller{i}(int a) {{ return {calls}; }}")
        src.write_text("\n".join(lines) + "\n")
        self.ir = compile_to_ir(src, tmp / "calls.ll", flags=["-Oz"])
        self.out = tmp / "calls.opt.ll"
        self.log = tmp / "inliner.log"

    def decide(self, out):
        return int(np.asarray(out).reshape(-1)[0])

    def runners(self):
        have = [r for r in RUNNERS if r != "compiled" or self.info.has_runner("compiled")]
        return [r for r in have if r != "grpc" or self.info.has_runner("grpc")]

    def command(self, runner, endpoint):
        env = tool_env(self.info)
        for k in [k for k in env if k.startswith("MLBRIDGE_INLINE_")]:
            del env[k]
        env["MLBRIDGE_INLINE_LOG"] = str(self.log)
        if runner == "default":
            env["MLBRIDGE_INLINE_RUNNER"] = "default"
        elif runner == "onnx":
            env["MLBRIDGE_INLINE_MODEL"] = str(self.model)
        elif runner == "compiled":
            env["MLBRIDGE_INLINE_RUNNER"] = "compiled"
        elif runner == "grpc":
            env["MLBRIDGE_INLINE_SERVER"] = endpoint
            env["MLBRIDGE_INLINE_INCLUDE_DEFAULT"] = "1"
        else:
            env["MLBRIDGE_INLINE_CHANNEL"] = endpoint
            env["MLBRIDGE_INLINE_FORMAT"] = runner.split("+")[1]
            env["MLBRIDGE_INLINE_INCLUDE_DEFAULT"] = "1"
        cmd = [find_llvm_tool("opt-19"), f"-load-pass-plugin={self.info.inline_advisor}",
               "-passes=default<Oz>", str(self.ir), "-S", "-o", str(self.out)]
        return cmd, env

    def decisions(self):
        entries = [json.loads(x) for x in self.log.read_text().splitlines()]
        if any(e["fallbacks"] for e in entries):
            raise SystemExit(f"{self.name}: the model failed: {entries}")
        return sum(e["model_decisions"] for e in entries)


class MLIRUnroll(Compiler):
    name = "MLIR unroll plugin (mlir-opt-19)"
    model = UNROLL_MODEL

    def __init__(self, tmp: Path, n: int):
        import mlbridge.mlir as m
        self.m = m
        self.info = m.find_plugin()
        self.features = m.FEATURES
        funcs = []
        for i in range(n):
            rows, cols = 4 + i % 5, 8 + (i * 3) % 40
            funcs.append(f"""func.func @f{i}(%A: memref<{rows}x{cols}xf64>, %s: f64) {{
  affine.for %i = 0 to {rows} {{
    affine.for %j = 0 to {cols} {{
      %x = affine.load %A[%i, %j] : memref<{rows}x{cols}xf64>
      %y = arith.mulf %x, %s : f64
      affine.store %y, %A[%i, %j] : memref<{rows}x{cols}xf64>
    }}
  }}
  return
}}""")
        self.src = tmp / "loops.mlir"
        self.src.write_text("\n".join(funcs) + "\n")
        self.out = tmp / "loops.out.mlir"
        self.log = tmp / "mlir.log"

    def runners(self):
        return [r for r in RUNNERS if r.split("+")[0] in ("pipe",) or self.info.has_runner(r)]

    def command(self, runner, endpoint):
        opts = {"log": str(self.log)}
        if runner in ("default", "compiled"):
            opts["runner"] = runner
        elif runner == "onnx":
            opts.update(runner="onnx", model=str(self.model))
        elif runner == "grpc":
            opts["server"] = endpoint
        else:
            opts.update(channel=endpoint, format=runner.split("+")[1])
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLBRIDGE_MLIR_")}
        return self.m.unroll_command(self.info, self.src, self.out, **opts), env

    def decisions(self):
        entries = [json.loads(x) for x in self.log.read_text().splitlines()]
        if any(e["fallbacks"] for e in entries) or entries[0]["runner"] == "default":
            raise SystemExit(f"{self.name}: the model was not used: {entries}")
        return sum(len(e["factors"]) for e in entries)


class CTool(Compiler):
    name = "C tool mlb-loop-pragmas (libclang)"

    def __init__(self, tmp: Path, n: int):
        import mlbridge.c_tool as ct
        self.ct = ct
        self.info = ct.find_tool()
        self.features = ct.FEATURES
        self.model = tmp / "pragma_policy.onnx"
        make_pragma_model(self.model, ct)
        lines = ["double v[256];"]
        for i in range(n):
            lines.append(f"double f{i}(int n) {{ double s = 0; for (int k = 0; k < {8 + i % 50}; ++k) "
                         f"s += v[k] * {i % 9 + 1}; return s; }}")
        self.src = tmp / "loops.c"
        self.src.write_text("\n".join(lines) + "\n")
        self.out = tmp / "loops.out.c"
        self.log = tmp / "ctool.log"

    def runners(self):
        return [r for r in RUNNERS if r != "compiled" and
                (r.startswith("pipe") or self.info.has_runner(r))]

    def command(self, runner, endpoint):
        opts = ["--log", str(self.log)]
        if runner == "default":
            opts += ["--runner", "none"]
        elif runner == "onnx":
            opts += ["--model", str(self.model)]
        elif runner == "grpc":
            opts += ["--server", endpoint]
        else:
            opts += ["--channel", endpoint, "--format", runner.split("+")[1]]
        return self.ct.command(self.info, self.src, self.out, *opts), None

    def decisions(self):
        entries = [json.loads(x) for x in self.log.read_text().splitlines()]
        if any(e["fallbacks"] for e in entries) or entries[0]["runner"] == "default":
            raise SystemExit(f"{self.name}: the model was not used: {entries}")
        return sum(e["asked"] for e in entries)


def make_pragma_model(path: Path, ct):
    """The C tool's model for this benchmark: an MLP of the MLIR policy's
    size (8 -> 16 -> 7), fixed random weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(17)
    nf, na = len(ct.FEATURES), len(ct.ACTIONS)
    inits = [numpy_helper.from_array(np.array([1, nf], np.int64), "shape"),
             numpy_helper.from_array(rng.normal(size=(nf, 16)).astype(np.float32) / 8, "w1"),
             numpy_helper.from_array(np.zeros(16, np.float32), "b1"),
             numpy_helper.from_array(rng.normal(size=(16, na)).astype(np.float32), "w2"),
             numpy_helper.from_array(np.zeros(na, np.float32), "b2")]
    nodes = [helper.make_node("Concat", list(ct.FEATURES), ["flat"], axis=0),
             helper.make_node("Reshape", ["flat", "shape"], ["row"]),
             helper.make_node("Gemm", ["row", "w1", "b1"], ["h"]),
             helper.make_node("Relu", ["h"], ["hr"]),
             helper.make_node("Gemm", ["hr", "w2", "b2"], [ct.ADVICE])]
    graph = helper.make_graph(
        nodes, "bench_pragma_policy",
        [helper.make_tensor_value_info(f, TensorProto.FLOAT, [1]) for f in ct.FEATURES],
        [helper.make_tensor_value_info(ct.ADVICE, TensorProto.FLOAT, [1, na])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


# ---- measuring ---------------------------------------------------------------------


def run_once(comp: Compiler, runner: str):
    """(CPU seconds, wall seconds, decisions) of one run of the tool; CPU is
    the tool's plus this process's (which hosts the Python model)."""
    server = None
    if runner in ("grpc",) or runner.startswith("pipe"):
        transport = "grpc" if runner == "grpc" else "pipe"
        serdes = runner.split("+")[1] if "+" in runner else "bitstream"
        server = ModelServer(onnx_policy(comp.model, comp.features, comp.decide),
                             transport=transport, serdes=serdes)
    comp.log.unlink(missing_ok=True)
    cmd, env = comp.command(runner, server.endpoint if server else None)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    try:
        res = compile(cmd, env=env, measure_text=False)
    except CompileError as e:
        raise SystemExit(f"{comp.name}, {runner}: {e}")
    finally:
        after = resource.getrusage(resource.RUSAGE_SELF)
        if server:
            server.close()
    own = (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)
    return res.cpu_seconds + own, res.wall_seconds, (comp.decisions() if runner != "default" else 0)


def measure(comps, repeat: int):
    """comps: the compiler on the small and on the large input."""
    small, large = comps
    configs = ["default", *small.runners()]
    cpu = {(c, k): [] for c in configs for k in (0, 1)}
    decisions = {}
    for _ in range(repeat):
        for c in configs:
            for k, comp in enumerate(comps):
                t, _, d = run_once(comp, c)
                cpu[(c, k)].append(t)
                decisions[(c, k)] = d
    best = {key: min(v) for key, v in cpu.items()}
    rows = []
    for c in configs[1:]:
        dd = decisions[(c, 1)] - decisions[(c, 0)]
        extra = (best[(c, 1)] - best[(c, 0)]) - (best[("default", 1)] - best[("default", 0)])
        per = extra / dd if dd > 0 else None
        startup = (best[(c, 0)] - best[("default", 0)]) - (per or 0) * decisions[(c, 0)]
        rows.append({"compiler": small.name, "runner": c,
                     "decisions": [decisions[(c, 0)], decisions[(c, 1)]],
                     "cpu_s": [best[(c, 0)], best[(c, 1)]],
                     "default_cpu_s": [best[("default", 0)], best[("default", 1)]],
                     "us_per_decision": None if per is None else 1e6 * per,
                     "startup_ms": 1e3 * startup})
    return rows


def print_table(rows, compilers):
    print("\nper-decision cost, µs of CPU (tool + Python model) over the tool with no model; "
          "startup in ms")
    print(f"{'runner':16s}" + "".join(f"{c.name.split(' (')[0]:>36s}" for c in compilers))
    for r in RUNNERS:
        cells = []
        for c in compilers:
            hit = [x for x in rows if x["compiler"] == c.name and x["runner"] == r]
            cells.append(f"{hit[0]['us_per_decision']:20.1f} (startup {hit[0]['startup_ms']:6.1f})"
                         if hit else f"{'n/a':>36s}")
        print(f"{r:16s}" + "".join(cells))
    print("decisions per run (small, large): " + ", ".join(
        f"{c.name.split(' (')[0]}: {next(x['decisions'] for x in rows if x['compiler'] == c.name)}"
        for c in compilers))


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(dict.fromkeys(r["compiler"] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        for i, r in enumerate(RUNNERS):
            hit = [x for x in rows if x["compiler"] == name and x["runner"] == r]
            if not hit or hit[0]["us_per_decision"] is None:
                continue
            v = hit[0]["us_per_decision"]
            x = i + k * width
            ax.bar(x, max(v, 0.1), width, color=f"C{k}", label=name.split(" (")[0] if i == 0 else None)
            if v <= 0.1:  # below what this method resolves on a loaded machine
                ax.text(x, 0.12, "≈0", ha="center", fontsize=7)
    ax.set_xticks(np.arange(len(RUNNERS)) + width * (len(names) - 1) / 2)
    ax.set_xticklabels(RUNNERS)
    ax.set_yscale("log")
    ax.set_ylabel("µs per decision (CPU, log scale)")
    ax.set_title("Model runner cost inside three compilers")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=None)
    ap.add_argument("--decisions", type=int, default=500,
                    help="decisions of the large input (the small one has a fifth)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true",
                    help="20 and 60 decisions, one round (a smoke run; numbers not meaningful)")
    ap.add_argument("--json", help="write all numbers here")
    ap.add_argument("--plot", help="write the bar chart here (needs matplotlib)")
    ap.add_argument("--replot", metavar="JSON", help="only draw --plot from an earlier --json")
    args = ap.parse_args(argv)
    if args.replot:
        plot(json.loads(Path(args.replot).read_text())["rows"], args.plot)
        return
    if args.build_dir:
        os.environ["MLBRIDGE_BUILD_DIR"] = str(Path(args.build_dir).resolve())
    sizes, repeat = ((20, 60), 1) if args.quick else ((args.decisions // 5, args.decisions),
                                                      args.repeat)
    with tempfile.TemporaryDirectory(prefix="mlbridge-bench-compilers-") as tmpd:
        tmp = Path(tmpd)
        pairs = []
        for cls, sub in ((LLVMInliner, "llvm"), (MLIRUnroll, "mlir"), (CTool, "c")):
            pair = []
            for n in sizes:
                (tmp / f"{sub}{n}").mkdir()
                pair.append(cls(tmp / f"{sub}{n}", n))
            pairs.append(pair)
        compilers = [p[0] for p in pairs]
        load0 = os.getloadavg()[0]
        rows = []
        for pair in pairs:
            rows += measure(pair, repeat)
        load1 = os.getloadavg()[0]
    print_table(rows, compilers)
    print(f"load average {load0:.1f} at the start, {load1:.1f} at the end; {repeat} rounds")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"rounds": repeat, "load_start": load0,
                                               "load_end": load1, "rows": rows}, indent=1))
    if args.plot:
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        plot(rows, args.plot)


if __name__ == "__main__":
    main()
