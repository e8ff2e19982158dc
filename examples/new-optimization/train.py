"""Trains the model of UnrollCount.so on the loop kernels (corpus/loops,
docs/loop-kernels.md) with the installed `mlbridge` package alone.

    python train.py <UnrollCount.so> [--out DIR] [--clang clang-19] [--kernels N]
                    [--deltas 0,1,2,4,8] [--hidden 8,16] [--decays 0.0001,0.01]
                    [--uniform-only] [--search FILE]

1. Search, on the `train` kernels: every kernel's file is compiled with
   `clang -O3` and the plugin served over pipes, the same action for every
   innermost loop of the kernels (then, per loop by decision name, one pass
   of coordinate descent over the kernels with several loops); each build
   is measured by callgrind (Ir of the kernel, `loops.measure`) and its
   checksums must equal those of plain `-O3`, else the action is refused.
2. Fit: a tiny MLP (log features -> one score per action), trained towards
   the actions whose Ir is near the best; "leave it to LLVM" (action 0)
   gets `delta` more score, so the model declines unless the gain is clear.
3. Select `delta`, the hidden width and the weight decay on the
   `validation` kernels (the model served from Python, numpy): the lowest
   geomean Ir / Ir(-O3) whose worst kernel is at most 1.02x; on ties, the
   model that leaves most loops to LLVM. `held_out` is never looked at here.
4. Export the chosen model to DIR/unroll.onnx (compile it into the plugin
   with `cmake -DUNROLL_MODEL=DIR/unroll.onnx`) and DIR/train.json (the
   search table, the selection, the commands).

`--kernels N` takes the first N kernels of each split: a fast real run."""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

from mlbridge.corpus import loops
from mlbridge.toolchain import CompileError, serve_compiler
from mlbridge.train.export import float32, input_spec, node, onnx_model

#: The plugin's Counts (UnrollCount.cpp): action 0 leaves the loop to LLVM.
COUNTS = [0, 1, 2, 4, 8, 16]
#: The features the model reads (mlbridge/llvm/Features.h, all but
#: "innermost", which is always 1 here).
FEATURES = ["trip_count", "max_trip_count", "depth", "blocks", "instructions", "loads",
            "stores", "calls", "exits"]
WORST = 1.02        # no validation kernel may be slower than this
NEAR = 0.005        # actions within 0.5% of the best Ir are all "right"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def owner(context, names):
    """The kernel a decision belongs to ("file.c:function:loopN"): the
    longest kernel name that is the function or prefixes function_ (the
    alias kernels' <kernel>_body helpers); None for the driver's loops."""
    fn = context.split(":")[-2]
    found = [n for n in names if fn == n or fn.startswith(n + "_")]
    return max(found, key=len) if found else None


def compile_served(plugin, clang, source, exe, policy):
    """`clang -O3` of the driver and `source` with the plugin, every
    decision answered by policy(obs); the ServedRun."""
    root = loops.ROOT
    run = serve_compiler(lambda ch: ["env", f"UNROLL_CHANNEL={ch}", clang, "-O3",
                                     f"-fpass-plugin={plugin}", "-I", root, "-rdynamic",
                                     root / "driver.c", source, "-o", exe],
                         policy, timeout=600)
    if run.returncode != 0 or "warning: unroll-count" in run.stderr:
        raise CompileError(f"{clang} with {plugin} on {source}: {run.stderr[-2000:]}")
    return run


def by_source(kernels):
    groups = {}
    for k in kernels:
        groups.setdefault(k.source, []).append(k)
    return groups


class Measurer:
    """Builds and measures; remembers -O3's Ir and checksums per kernel."""

    def __init__(self, plugin, clang, work):
        self.plugin, self.clang, self.work = plugin, clang, Path(work)
        self.ref = {}
        self.builds = 0

    def reference(self, source, group):
        exe = self.work / f"{source.stem}.O3"
        loops.build(source, ["-O3"], exe, clang=self.clang)
        for k in group:
            self.ref[k.name] = loops.measure(exe, k.name)

    def served(self, source, group, choose):
        """Ir per kernel of group (None: checksums differ from -O3's) with
        choose(kernel, context) -> action for the group's loops, 0 for the
        rest; and the run (its contexts and features)."""
        names = [k.name for k in group]
        exe = self.work / f"{source.stem}.served"
        run = compile_served(self.plugin, self.clang, source, exe, lambda obs: (
            choose(owner(obs.context, names), obs.context)
            if owner(obs.context, names) else 0))
        self.builds += 1
        out = {}
        for k in group:
            ir, sums = loops.measure(exe, k.name)
            out[k.name] = ir if sums == self.ref[k.name][1] else None
        return out, run


def search(m, kernels, per_loop=True):
    """{kernel: {"o3": Ir, "loops": {context: {"features": {...}, "ir": [Ir
    per action, None refused]}}}}: uniform actions, then per loop."""
    table = {}
    for source, group in by_source(kernels).items():
        m.reference(source, group)
        uniform = {}
        for a in range(len(COUNTS)):
            irs, run = m.served(source, group, lambda k, c: a)
            for k, ir in irs.items():
                uniform.setdefault(k, []).append(ir)
            if a == 0:
                rows = {c: dict(zip(run.feature_names, map(int, f)))
                        for c, f in zip(run.contexts, run.features)}
                mine = {k.name: [c for c in run.contexts if owner(c, [g.name for g in group])
                                 == k.name] for k in group}
        for k in group:
            table[k.name] = {"family": k.family, "o3": m.ref[k.name][0],
                             "uniform": uniform[k.name],
                             "loops": {c: {"features": rows[c], "ir": uniform[k.name]}
                                       for c in mine[k.name]}}
        # Per loop: loop j of every kernel with several loops, the others at
        # the best found so far (ties keep the current action).
        multi = [k.name for k in group if len(mine[k.name]) > 1]
        config = {k: [best(uniform[k])] * len(mine[k]) for k in multi}
        for j in range(max((len(mine[k]) for k in multi), default=0) if per_loop else 0):
            at = [k for k in multi if j < len(mine[k])]
            costs = {k: [] for k in at}
            for a in range(len(COUNTS)):
                def choose(k, c):
                    i = mine[k].index(c) if k in config else -1
                    return a if (k in at and i == j) else (config[k][i] if i >= 0 else 0)
                irs, _ = m.served(source, group, choose)
                for k in at:
                    costs[k].append(irs[k])
            for k in at:
                table[k]["loops"][mine[k][j]]["ir"] = costs[k]
                b = best(costs[k])
                if costs[k][b] is not None and costs[k][b] < costs[k][config[k][j]]:
                    config[k][j] = b
        for k in multi:
            table[k]["per_loop"] = config[k]
        log(f"search {source.stem}: {len(group)} kernels, {m.builds} builds so far")
    return table


def best(irs):
    ok = [(ir, a) for a, ir in enumerate(irs) if ir is not None]
    return min(ok)[1]


# ---- the model ----------------------------------------------------------------------


def samples(table):
    """(x, targets): per loop, log(1 + features) and the actions within NEAR
    of its best Ir, as a distribution."""
    xs, qs = [], []
    for k in table.values():
        for lp in k["loops"].values():
            irs = lp["ir"]
            low = min(ir for ir in irs if ir is not None)
            q = np.array([ir is not None and ir <= low * (1 + NEAR) for ir in irs], float)
            xs.append(np.log1p(np.maximum([lp["features"][f] for f in FEATURES], 0)))
            qs.append(q / q.sum())
    return np.array(xs, np.float32), np.array(qs, np.float32)


def fit(x, q, hidden, seed=0, epochs=3000, lr=0.03, decay=1e-4):
    """A one-hidden-layer MLP by Adam on cross-entropy to q."""
    rng = np.random.default_rng(seed)
    n_in, n_out = x.shape[1], q.shape[1]
    mean, std = x.mean(0), x.std(0) + 1e-3
    params = [rng.normal(0, 1 / math.sqrt(n_in), (n_in, hidden)), np.zeros(hidden),
              rng.normal(0, 1 / math.sqrt(hidden), (hidden, n_out)), np.zeros(n_out)]
    moments = [[np.zeros_like(p), np.zeros_like(p)] for p in params]
    xn = (x - mean) / std
    for t in range(1, epochs + 1):
        w1, b1, w2, b2 = params
        h = np.maximum(xn @ w1 + b1, 0)
        z = h @ w2 + b2
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        g = (p - q) / len(x)
        gh = (g @ w2.T) * (h > 0)
        grads = [xn.T @ gh + decay * w1, gh.sum(0), h.T @ g + decay * w2, g.sum(0)]
        for p_, g_, mo in zip(params, grads, moments):
            mo[0] = 0.9 * mo[0] + 0.1 * g_
            mo[1] = 0.999 * mo[1] + 0.001 * g_ * g_
            p_ -= lr * (mo[0] / (1 - 0.9 ** t)) / (np.sqrt(mo[1] / (1 - 0.999 ** t)) + 1e-8)
    # The normalisation folded into the first layer: scores of log1p(x).
    w1, b1, w2, b2 = params
    return {"w1": w1 / std[:, None], "b1": b1 - (mean / std) @ w1, "w2": w2, "b2": b2}


def with_delta(model, delta):
    out = dict(model)
    out["b2"] = model["b2"] + delta * np.eye(len(COUNTS))[0]
    return out


def scores(model, features):
    x = np.log1p(np.maximum([features[f] for f in FEATURES], 0))
    return np.maximum(x @ model["w1"] + model["b1"], 0) @ model["w2"] + model["b2"]


def act(model, features):
    # float32 as the compiled model; argmax takes the first on ties, as it.
    return int(np.argmax(float32(scores(model, features))))


def export(model, path):
    """The model as ONNX: one float [1] input per feature (the plugin
    converts its int64 features), scores float [1, actions]."""
    nodes = [node("Concat", FEATURES, ["flat"], axis=0),
             node("Reshape", ["flat", "shape"], ["row"]),
             node("Relu", ["row"], ["nonneg"]),
             node("Add", ["nonneg", "one"], ["plus1"]),
             node("Log", ["plus1"], ["x"]),
             node("Gemm", ["x", "w1", "b1"], ["h"]),
             node("Relu", ["h"], ["hr"]),
             node("Gemm", ["hr", "w2", "b2"], ["scores"])]
    constants = {"shape": np.array([1, len(FEATURES)], np.int64), "one": float32([1.0]),
                 **{k: float32(v) for k, v in model.items()}}
    return onnx_model("unroll_count", nodes, input_spec(FEATURES, [1]),
                      [("scores", np.float32, [1, len(COUNTS)])], constants,
                      producer="examples/new-optimization/train.py", path=path)


class Validation:
    """Ir / Ir(-O3) per kernel with a model served over pipes (None: the
    checksums differ). A loop's features do not depend on the actions, so
    the decisions of a model are known before its build: models that decide
    alike share one measurement."""

    def __init__(self, m, kernels):
        self.m, self.groups, self.seen = m, by_source(kernels), {}
        self.features = {}  # context -> features, from one build with action 0
        for source, group in self.groups.items():
            names = [k.name for k in group]
            m.reference(source, group)
            run = compile_served(m.plugin, m.clang, source, m.work / f"{source.stem}.probe",
                                 lambda obs: 0)
            for c, f in zip(run.contexts, run.features):
                if owner(c, names):
                    self.features[c] = dict(zip(run.feature_names, map(int, f)))

    def decisions(self, model):
        return {c: act(model, f) for c, f in self.features.items()}

    def __call__(self, model):
        chosen = self.decisions(model)
        key = tuple(sorted(chosen.items()))
        if key not in self.seen:
            ratios = {}
            for source, group in self.groups.items():
                exe = self.m.work / f"{source.stem}.model"
                compile_served(self.m.plugin, self.m.clang, source, exe,
                               lambda obs: chosen.get(obs.context, 0))
                for k in group:
                    ir, sums = loops.measure(exe, k.name)
                    ref = self.m.ref[k.name]
                    ratios[k.name] = ir / ref[0] if sums == ref[1] else None
            self.seen[key] = ratios
        return self.seen[key], {c: COUNTS[a] for c, a in chosen.items()}


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("plugin", type=Path, help="UnrollCount.so, built without a model")
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "model")
    p.add_argument("--clang", default="clang-19")
    p.add_argument("--kernels", type=int, help="the first N kernels of each split")
    p.add_argument("--deltas", default="0,1,2,4,8", help="the score bonuses of action 0 tried")
    p.add_argument("--hidden", default="8,16", help="the hidden widths tried")
    p.add_argument("--decays", default="0.0001,0.01", help="the weight decays tried")
    p.add_argument("--uniform-only", action="store_true", help="no per-loop search")
    p.add_argument("--search", type=Path, help="reuse the search table of this train.json")
    args = p.parse_args(argv)
    plugin = args.plugin.resolve()
    train, valid = (loops.kernels(s)[:args.kernels] for s in ("train", "validation"))
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="unroll-train-") as work:
        m = Measurer(plugin, args.clang, work)
        if args.search:
            table = json.loads(args.search.read_text())["search"]
        else:
            table = search(m, train, per_loop=not args.uniform_only)
        x, q = samples(table)
        log(f"fit: {len(x)} loops of {len(table)} train kernels")
        validate = Validation(m, valid)
        tried = []
        for hidden in map(int, args.hidden.split(",")):
            for decay in map(float, args.decays.split(",")):
                base = fit(x, q, hidden, decay=decay)
                for delta in map(float, args.deltas.split(",")):
                    model = with_delta(base, delta)
                    ratios, decisions = validate(model)
                    ok = [r for r in ratios.values() if r is not None]
                    row = {"hidden": hidden, "decay": decay, "delta": delta,
                           "refused": len(ok) < len(ratios), "geomean": geomean(ok),
                           "worst": max(ok),
                           "unrolled": sum(v != 0 for v in decisions.values())}
                    log(f"validation hidden={hidden} decay={decay} delta={delta}: geomean "
                        f"{row['geomean']:.4f} worst {row['worst']:.4f}, "
                        f"{row['unrolled']}/{len(decisions)} loops not left to LLVM")
                    tried.append((row, model, ratios, decisions))
        # The lowest geomean (to 0.1%) with no kernel worse than WORST; on
        # ties the model that leaves most loops to LLVM, the largest delta.
        fine = [t for t in tried if not t[0]["refused"] and t[0]["worst"] <= WORST]
        chosen, model, ratios, decisions = (
            min(fine, key=lambda t: (round(t[0]["geomean"], 3), t[0]["unrolled"],
                                     -t[0]["delta"], -t[0]["decay"]))
            if fine else min(tried, key=lambda t: t[0]["worst"]))
    export(model, args.out / "unroll.onnx")
    train_ratio = {k: min(ir for ir in v["uniform"] if ir is not None) / v["o3"]
                   for k, v in table.items()}
    doc = {"command": " ".join(["python", "train.py", *map(str, argv or sys.argv[1:])]),
           "clang": args.clang, "counts": COUNTS, "features": FEATURES,
           "selection": [t[0] for t in tried], "chosen": chosen,
           "validation_builds": len(validate.seen),
           "validation": {"ratios": ratios, "decisions": decisions},
           "search_best_uniform_geomean": geomean(list(train_ratio.values())),
           "search": table}
    (args.out / "train.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"validation ({len(ratios)} kernels): geomean {chosen['geomean']:.4f} x -O3, "
          f"worst {chosen['worst']:.4f} (hidden {chosen['hidden']}, delta {chosen['delta']}); "
          f"model written to {args.out / 'unroll.onnx'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
