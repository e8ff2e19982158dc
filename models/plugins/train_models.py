#!/usr/bin/env python3
"""Trains and exports the models the LLVM plugins ship with (models/plugins/).

    .venv/bin/python models/plugins/train_models.py --build-dir build          # both
    .venv/bin/python models/plugins/train_models.py --build-dir build inliner
    .venv/bin/python models/plugins/train_models.py --build-dir build phase-order

Needs the built plugins (target mlbridge-llvm-plugins), opt-19, clang-19,
llvm-link-19, csmith, and Debian's python3-torch (seen by the project .venv).
Everything runs through the plugins themselves -- the training loop the docs
describe (docs/llvm-plugins.md), not a side channel:

* inliner_policy.onnx -- behaviour cloning of LLVM's own inlining heuristic
  (the MLGO recipe's warm start): the inline advisor plugin serves a Python
  policy over pipes with -mlbridge-inline-include-default; every request's
  38 features and LLVM's default decision are the training set (-Oz and -O2
  pipelines, the corpus below). An MLP (standardized inputs -> 32 ReLU -> 2)
  is exported with one float32 [1, 1] input per LLVM feature name and the
  output ``inlining_decision`` (int64 [1], the argmax): the plugin feeds it
  in-process (ONNX Runtime, or compiled to C++) exactly as LLVM's features.
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

from mlbridge.llvm_plugins import (INLINER_FEATURES, compile_to_ir, find_llvm_tool,  # noqa: E402
                                   find_plugins, serve_inliner, tool_env)

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


# ---- inliner -------------------------------------------------------------------


def collect_inliner_data(info, corpus, opt):
    xs, ys = [], []
    for ll in corpus:
        for passes in ("default<Oz>", "default<O2>"):
            run = serve_inliner(
                lambda base: [opt, f"-load-pass-plugin={info.inline_advisor}",
                              f"-passes={passes}", f"-mlbridge-inline-channel={base}",
                              "-mlbridge-inline-include-default", str(ll), "-o", os.devnull],
                "default", env=tool_env(info))
            if run.returncode != 0:
                raise RuntimeError(f"opt failed on {ll}: {run.stderr[-1000:]}")
            if len(run.decisions):
                xs.append(run.features[:, :len(INLINER_FEATURES)])
                ys.append(run.decisions)
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.int64)


def train_inliner(info, corpus, opt, metrics):
    import torch
    from torch import nn

    torch.manual_seed(0)
    X, y = collect_inliner_data(info, corpus, opt)
    mean = X.mean(axis=0)
    std = np.maximum(X.std(axis=0), 1.0)
    n = len(INLINER_FEATURES)

    class InlinerNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.tensor(mean).reshape(1, n))
            self.register_buffer("std", torch.tensor(std).reshape(1, n))
            self.l1 = nn.Linear(n, 32)
            self.l2 = nn.Linear(32, 2)

        def logits(self, x):
            return self.l2(torch.relu(self.l1((x - self.mean) / self.std)))

        def forward(self, *features):  # one [1, 1] tensor per LLVM feature
            return torch.argmax(self.logits(torch.cat(features, dim=1)), dim=1)

    net = InlinerNet()
    xt, yt = torch.tensor(X), torch.tensor(y)
    pos = float(y.mean())
    weight = torch.tensor([0.5 / max(1 - pos, 1e-3), 0.5 / max(pos, 1e-3)])
    optim = torch.optim.Adam(net.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss(weight=weight)
    for _ in range(600):
        optim.zero_grad()
        loss = loss_fn(net.logits(xt), yt)
        loss.backward()
        optim.step()
    with torch.no_grad():
        acc = float((net.logits(xt).argmax(dim=1) == yt).float().mean())
    net.eval()
    path = HERE / "inliner_policy.onnx"
    with torch.no_grad():
        torch.onnx.export(net, tuple(torch.zeros(1, 1) for _ in range(n)), str(path),
                          input_names=list(INLINER_FEATURES),
                          output_names=["inlining_decision"], opset_version=13,
                          do_constant_folding=True)
    np.savez(HERE / "inliner_policy.npz",
             **{k: v.detach().numpy() for k, v in net.state_dict().items()})
    metrics.append(("inliner_policy", f"inliner: {len(y)} decisions ({int(y.sum())} inline) from "
                   f"{len(corpus)} programs x (-Oz, -O2); train accuracy vs LLVM's "
                   f"default decision {acc:.3f}"))
    print(metrics[-1][1], flush=True)


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
    from mlbridge.llvm_plugins.phase_order import PhaseOrderEnv

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

    from mlbridge.llvm_plugins import PolicyNet
    from mlbridge.llvm_plugins.phase_order import PhaseOrderEnv

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
        f"train accuracy {acc:.3f}); code-size reduction on the {len(corpus)} corpus "
        f"programs: learned greedy policy {100 * np.mean(gains):.1f}% in "
        f"{np.mean(steps):.1f} passes on average, oracle {pct(oracle):.1f}%, "
        f"LLVM's full -Oz pipeline {pct(oz):.1f}%"))
    print(metrics[-1][1], flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=None, help="CMake build directory")
    ap.add_argument("what", nargs="*", help="inliner, phase-order (default: both)")
    args = ap.parse_args(argv)
    args.what = args.what or ["inliner", "phase-order"]
    for w in args.what:
        if w not in ("inliner", "phase-order"):
            ap.error(f"unknown model {w!r} (inliner, phase-order)")
    info = find_plugins(args.build_dir)
    opt = find_llvm_tool("opt-19")
    metrics = []
    with tempfile.TemporaryDirectory(prefix="mlbridge-train-") as tmp:
        corpus = build_corpus(Path(tmp))
        if "inliner" in args.what:
            train_inliner(info, corpus, opt, metrics)
        if "phase-order" in args.what:
            train_phase_order(info, corpus, opt, Path(tmp), metrics)
    for name, m in metrics:
        (HERE / f"{name}.metrics.txt").write_text(m + "\n")


if __name__ == "__main__":
    main()
