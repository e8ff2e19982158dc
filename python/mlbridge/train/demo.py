"""The main job (scripts/demo.sh): the shipped size models on real code
they never saw.

1. Compiles held-out libraries of the corpus twice, with plain
   ``clang-19 -Oz`` and with ``clang-19 -Oz -fpass-plugin=MLBridgeInlineAdvisor.so``
   (the model compiled into the plugin, no Python, no runtime library), and
   prints ``.text`` bytes and compiler CPU time per library.
2. Compiles one unit again with the *Python* policy answering stock
   ``clang-19``'s interactive inliner over named pipes (the training
   setup), and checks that it makes the same decisions: same number of
   reversals of LLVM's decision, same ``.text``.
3. Compiles the same units with ``MLBridgePhaseOrder.so``, whose built-in
   policy chooses pass sequences where clang's ``-Oz`` pipeline ends, and
   prints the same table.
No training happens here (``python -m mlbridge.train inliner`` and
``phase-order`` train).
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SHIPPED_POLICY = REPO / "models" / "plugins" / "inliner_policy.json"


def _say(*a):
    print(*a, flush=True)


def _compile_and_report(evaluate, mods, plugin, jobs, env=None):
    """Plain -Oz vs -Oz with the plugin on mods: prints the table and the
    totals; returns the rows."""
    t0 = time.monotonic()
    rows = evaluate.evaluate_modules(mods, str(plugin), env=env, jobs=jobs)
    summary = evaluate.summarize(rows)
    _say(f"   done in {time.monotonic() - t0:.0f} s\n")
    _say(evaluate.markdown_table(summary))
    tot = summary["total"]
    _say(f"\n   total .text: {tot['ml_text']:,} bytes with the model vs {tot['oz_text']:,} "
         f"with clang-19 -Oz ({tot['delta_pct']:+.2f} %); compiler CPU time "
         f"{tot['cpu_ratio']:.3f}x of plain clang-19 -Oz")
    for e in summary["errors"]:
        _say(f"   error: {e['module']}: {e['error'][:200]}")
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m mlbridge.train.demo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--libraries", nargs="*", default=None,
                   help="held-out libraries to build (default: all held-out libraries)")
    p.add_argument("--max-units", type=int, default=8,
                   help="units per library, in manifest order (0: all; docs/results.md has "
                        "the full held-out table)")
    p.add_argument("--build-dir", default=None, help="CMake build folder with the plugins")
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args(argv)

    from ..corpus import Corpus
    from ..llvm.plugins import find_plugins
    from ..toolchain import compile, toolchain
    from . import evaluate
    from .inliner import InlinePolicy

    plugins = find_plugins(args.build_dir)
    plugin = plugins.inline_advisor
    corpus = Corpus.load()
    libs = args.libraries or sorted({m.library for m in corpus.modules(split="heldout")})
    _say(f"== Inlining for size on held-out real code: {', '.join(libs)}")
    _say("   (libraries the model never saw in training or model selection)")
    corpus.fetch(libraries=libs)
    mods = []
    for lib in libs:
        lm = [m for m in corpus.modules(split="heldout") if m.library == lib]
        if not lm:
            sys.exit(f"demo: {lib} is not a held-out library of the corpus")
        mods += lm[: args.max_units] if args.max_units > 0 else lm
    _say(f"   compiling {len(mods)} translation units twice (plain -Oz, -Oz + in-process model)"
         f" with {args.jobs} jobs ...")
    rows = _compile_and_report(evaluate, mods, plugin, args.jobs)

    # The same policy in Python, answering stock clang-19 over pipes.
    policy = InlinePolicy.load(SHIPPED_POLICY)
    ok = [r for r in rows if "error" not in r]
    changed = [r for r in ok if r["ml_text"] != r["oz_text"]]
    # A unit where the model changed something, else the biggest quick one
    # (a unit with many call sites, so there are questions to answer).
    quick = [r for r in ok if r["oz_cpu"] <= 10.0] or ok
    pick = (min(changed, key=lambda r: r["oz_cpu"]) if changed
            else max(quick, key=lambda r: r["oz_text"]))
    m = next(m for m in mods if m.name == pick["module"])
    _say(f"\n== The same decisions from the Python policy over named pipes: {m.name}")
    with tempfile.TemporaryDirectory(prefix="mlbridge-demo-") as tmp:
        ir = m.ir()
        state = {"asked": 0, "reversed": 0}

        def serve(obs):
            a = policy(obs)
            state["asked"] += 1
            state["reversed"] += a != int(obs["inlining_default"][0])
            return a
        serve.needs_default = True
        res = compile([toolchain().clang, "-Oz", "-c", str(ir), "-o", os.path.join(tmp, "py.o")],
                      advisors={"inline": serve}, include_default=True)
        py_text = res.text
        _say(f"   stock clang-19 asked {state['asked']} inlining questions over pipes in "
             f"{res.wall_seconds:.2f} s; the Python policy reversed LLVM's decision "
             f"{state['reversed']} times")
        _say(f"   .text: Python policy over pipes {py_text:,} bytes, in-process compiled model "
             f"{pick['ml_text']:,} bytes, plain -Oz {pick['oz_text']:,} bytes")
        if py_text != pick["ml_text"]:
            _say("   MISMATCH: the in-process model and the Python policy disagree")
            return 1
        _say("   identical: the model deployed in the compiler decides like the Python policy")

    from .phase_order import plugin_env
    _say(f"\n== Phase ordering for size on the same {len(mods)} units: the policy built into "
         f"MLBridgePhaseOrder.so\n   picks up to 3 pass sequences where clang-19 -Oz's "
         f"pipeline ends ...")
    rows = _compile_and_report(evaluate, mods, plugins.phase_order, args.jobs,
                               env=plugin_env(None, max_steps=3))
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
