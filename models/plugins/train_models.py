#!/usr/bin/env python3
"""Trains and exports the phase-ordering model the LLVM plugin ships with
(models/plugins/phase_order_policy.*). The inliner's model is trained by
``python -m mlbridge.train inliner`` (docs/training.md).

    .venv/bin/python models/plugins/train_models.py --build-dir build

Needs the built plugins (target mlbridge-llvm-plugins), opt-19, clang-19,
llvm-link-19, csmith, and Debian's python3-torch (seen by the project .venv).
Everything runs through the plugins themselves -- the training loop the docs
describe (docs/llvm-plugins.md), not a side channel:

* phase_order_policy.onnx / .pt -- behaviour cloning of a one-step-
  lookahead oracle, all through PhaseOrderEnv (the phase-ordering plugin
  over pipes): at each state the oracle tries every pass sub-sequence and
  takes the one that shrinks the code most, or STOP when none does; the
  PolicyNet learns state -> oracle action. Exported with input
  ``observation`` float32 [1, 25] and output ``scores`` float32 [1, 16]; the
  .pt is the PyTorch state dict the Python agent loads. (A REINFORCE loop
  over the same environment is in docs/llvm-plugins.md.)

Corpus: the C programs of tests/e2e/programs/ and tests/e2e/programs/plugins/
(minicalc linked into one module) and csmith programs with seeds 1000-1011.
Seeds are fixed; results may differ in the last bits on another machine.
Writes <model>.metrics.txt with what training reached.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "python"))

from mlbridge.llvm.plugins import (compile_to_ir, find_llvm_tool, find_plugins,  # noqa: E402
                                   tool_env)

CSMITH_SEEDS = range(1000, 1012)


def build_corpus(tmp: Path) -> list:
    clang = find_llvm_tool("clang-19")
    link = find_llvm_tool("llvm-link-19")
    out = []
    progs = sorted((REPO / "tests/e2e/programs").glob("*.c"))
    progs += sorted((REPO / "tests/e2e/programs/plugins").glob("*.c"))
    for src in progs:
        out.append(compile_to_ir(src, tmp / f"{src.stem}.ll", clang=clang))
    parts = [compile_to_ir(src, tmp / f"minicalc-{src.stem}.ll", clang=clang)
             for src in sorted((REPO / "tests/e2e/programs/plugins/minicalc").glob("*.c"))]
    linked = tmp / "minicalc.ll"
    subprocess.run([link, "-S", *map(str, parts), "-o", str(linked)], check=True)
    out.append(linked)
    for seed in CSMITH_SEEDS:
        src = tmp / f"csmith{seed}.c"
        with open(src, "w") as f:
            subprocess.run(["csmith", "--seed", str(seed), "--max-funcs", "10"], stdout=f,
                           check=True, timeout=60)
        out.append(compile_to_ir(src, tmp / f"csmith{seed}.ll", clang=clang,
                                 flags=["-w", "-I/usr/include/csmith"]))
    return out


# ---- phase ordering ---------------------------------------------------------------


def describe(info, opt, tmp):
    """The plugin's own observation names and action table."""
    import json

    empty = tmp / "empty.ll"
    empty.write_text("")
    path = tmp / "describe.json"
    subprocess.run([opt, f"-load-pass-plugin={info.phase_order}", "-passes=mlbridge-phase-order",
                    "-mlbridge-po-runner=default", f"-mlbridge-po-describe={path}", str(empty),
                    "-o", os.devnull], check=True, env=tool_env(info))
    return json.loads(path.read_text())


def measure(info, ll, prefix, workdir, keep_as=None):
    """(observation, output) after running the pipeline `prefix` on ll: an
    episode of the plugin that STOPs at once reports the module as the prefix
    left it; the module is kept as workdir/keep_as if given."""
    from mlbridge.llvm.plugins.phase_order import PhaseOrderEnv

    with PhaseOrderEnv([ll], max_steps=1, plugins=info, pipeline_prefix=prefix,
                       workdir=workdir) as env:
        obs, _ = env.reset(options={"program": 0})
        env.step(env.action_space.n - 1)
        out = None
        if keep_as:
            out = Path(workdir) / keep_as
            out.write_bytes(Path(env.output_path).read_bytes())
        return obs, out


def oracle_dataset(info, corpus, opt, tmp, max_steps=10, min_gain=1):
    """States and the one-step-lookahead oracle's actions: at each state try
    every pass sub-sequence, take the one that shrinks the code most, STOP
    when none shrinks it by at least min_gain; follow the oracle."""
    actions = describe(info, opt, tmp)["actions"]
    stop = len(actions) - 1
    xs, ys, oracle_sizes = [], [], []
    for n, ll in enumerate(corpus):
        work = tmp / f"oracle{n}"
        work.mkdir()
        obs, cur = measure(info, ll, "", work, keep_as="state0.ll")
        size = int(obs[-2])
        chosen = []
        for step in range(max_steps):
            best, best_size, best_out = stop, size - min_gain + 1, None
            for a, act in enumerate(actions[:stop]):
                o, out = measure(info, cur, act["pipeline"], work,
                                 keep_as=f"state{step + 1}-a{a}.ll")
                if int(o[-2]) < best_size:
                    best, best_size, best_out = a, int(o[-2]), out
            x = obs.copy()
            x[-1] = step  # the plugin's "step" feature at this state
            xs.append(x)
            ys.append(best)
            chosen.append(actions[best]["name"])
            if best == stop:
                break
            cur, size = best_out, best_size
            obs, _ = measure(info, cur, "", work)
        else:
            x = obs.copy()
            x[-1] = max_steps
            xs.append(x)
            ys.append(stop)
        oracle_sizes.append(size)
        print(f"oracle {ll.name}: {chosen}", flush=True)
    return np.asarray(xs, np.float32), np.asarray(ys, np.int64), oracle_sizes


def oz_sizes(info, corpus, opt, tmp):
    """Code size of each program after LLVM's whole -Oz pipeline."""
    sizes = []
    for n, ll in enumerate(corpus):
        work = tmp / f"oz{n}"
        work.mkdir()
        obs, _ = measure(info, ll, "default<Oz>", work)
        sizes.append(int(obs[-2]))
    return sizes


def train_phase_order(info, corpus, opt, tmp, metrics):
    import torch

    from mlbridge.llvm.plugins import PolicyNet
    from mlbridge.llvm.plugins.phase_order import PhaseOrderEnv

    torch.manual_seed(0)
    start = time.monotonic()
    X, y, oracle = oracle_dataset(info, corpus, opt, tmp)
    oz = oz_sizes(info, corpus, opt, tmp)
    print(f"oracle data: {len(y)} states ({time.monotonic() - start:.0f} s)", flush=True)
    net = PolicyNet()
    optim = torch.optim.Adam(net.parameters(), lr=1e-2)
    xt, yt = torch.tensor(X), torch.tensor(y)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(1500):
        optim.zero_grad()
        loss = loss_fn(net(xt), yt)
        loss.backward()
        optim.step()
    with torch.no_grad():
        acc = float((net(xt).argmax(dim=1) == yt).float().mean())
    # Greedy evaluation of the learned policy, through the plugin.
    gains, steps = [], []
    with PhaseOrderEnv(corpus, max_steps=10, plugins=info) as env:
        for prog in range(len(corpus)):
            obs, info_ = env.reset(options={"program": prog})
            size0, done = info_["code_size"], False
            while not done:
                obs, _, term, trunc, info_ = env.step(net.act(obs))
                done = term or trunc
            gains.append(1.0 - info_["code_size"] / max(size0, 1))
            steps.append(len([a for a in env.actions if a != env.action_space.n - 1]))
    first = [measure(info, ll, "", tmp / f"oz{n}")[0][-2] for n, ll in enumerate(corpus)]
    pct = lambda sizes: 100 * np.mean([1 - s / max(f, 1) for s, f in zip(sizes, first)])
    net.export_onnx(HERE / "phase_order_policy.onnx")
    torch.save(net.state_dict(), HERE / "phase_order_policy.pt")
    metrics.append(("phase_order_policy",
        f"phase-order: behaviour cloning of a one-step-lookahead oracle ({len(y)} states, "
        f"train accuracy {acc:.3f}); reduction of the plugin's TTI size ESTIMATE (not "
        f".text) on its own {len(corpus)} training programs, from -O2 IR without the "
        f"minsize/optsize attributes of clang -Oz (so not a code-size result and not "
        f"comparable with clang-19 -Oz): learned greedy policy {100 * np.mean(gains):.1f}% in "
        f"{np.mean(steps):.1f} passes on average, oracle {pct(oracle):.1f}%, "
        f"opt default<Oz> on that IR {pct(oz):.1f}%"))
    print(metrics[-1][1], flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=None, help="CMake build directory")
    args = ap.parse_args(argv)
    info = find_plugins(args.build_dir)
    opt = find_llvm_tool("opt-19")
    metrics = []
    with tempfile.TemporaryDirectory(prefix="mlbridge-train-") as tmp:
        corpus = build_corpus(Path(tmp))
        train_phase_order(info, corpus, opt, Path(tmp), metrics)
    for name, m in metrics:
        (HERE / f"{name}.metrics.txt").write_text(m + "\n")


if __name__ == "__main__":
    main()
