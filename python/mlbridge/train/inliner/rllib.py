"""The inliner trained by RLlib PPO (``python -m mlbridge.train inliner
rllib``): the inline advisor in ``clang-19 -Oz`` on C files, every episode a
compile through :class:`mlbridge.kit.PluginEnv`, several env runners on Ray
(:mod:`mlbridge.kit.rllib`; docs/gym.md, "RLlib")."""

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import List, Sequence

from ..registry import Command

__all__ = ["inliner_programs", "COMMAND"]


def inliner_programs(files: Sequence, plugin, *, clang: str = "clang-19",
                     level: str = "-Oz") -> List[dict]:
    """The inline advisor's programs for :class:`mlbridge.kit.rllib.RLlibEnv`:
    each C file compiled with ``clang level -c`` and the plugin, the baseline
    its ``.text`` without the plugin (the compiler's own inliner)."""
    from ...toolchain import compile as run_compile
    programs = []
    with tempfile.TemporaryDirectory(prefix="mlbridge-rllib-") as tmp:
        for f in files:
            f = os.path.abspath(os.fspath(f))
            base = [clang, level, "-I", os.path.dirname(f), "-c", f, "-o"]
            baseline = run_compile(base + [os.path.join(tmp, "base.o")]).text
            programs.append({"name": os.path.basename(f), "baseline": int(baseline),
                             "command": [clang, level, f"-fpass-plugin={plugin}"] + base[2:]
                             + ["{output}"],
                             "channel_env": {"MLBRIDGE_INLINE_CHANNEL": "{channel}"}})
    return programs


def _arguments(t):
    from ... import cli
    t.add_argument("files", nargs="+", type=cli.existing_file,
                   help="C files, one compile each per episode")
    t.add_argument("--out", type=Path, required=True, help="folder of curve.json, summary.json "
                   "and the plugin snapshot")
    t.add_argument("--iterations", type=cli.positive_int, default=10)
    t.add_argument("--env-runners", type=cli.positive_int, default=2)
    t.add_argument("--batch", type=cli.positive_int, default=256, help="env steps per iteration")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--llvm", type=int, default=19)
    t.add_argument("--build-dir", type=Path, default=None)


def _run(args):
    from ...builds.configs import compilers
    from ...kit.rllib import train
    # The plugin copied first: the shared build tree may be rebuilt under a long run.
    comp = compilers(args.llvm, args.build_dir, snapshot=args.out / "plugins")
    programs = inliner_programs(args.files, comp.info.inline_advisor, clang=comp.cc)
    result = train(programs, args.iterations, args.out, env_runners=args.env_runners,
                   batch=args.batch, seed=args.seed,
                   log=lambda msg: print(msg, file=sys.stderr, flush=True))
    s = result["summary"]
    print(json.dumps({"iterations": args.iterations,
                      "reward_mean": [r["reward_mean"] for r in result["curve"]],
                      "text": s["text"], "baseline": s["baseline"],
                      "geomean_ratio": round(s["geomean_ratio"], 4), "worse": s["worse"],
                      "best_sampled_replayed": s["best_replayed"]}))
    return 0


#: The ``rllib`` verb: PPO with several env runners, writes curve.json and summary.json.
COMMAND = Command("RLlib PPO on the inline advisor in clang -Oz over C files (curve.json, "
                  "summary.json in --out)", _arguments, _run)
