"""The main job (scripts/demo.sh): the shipped size models on real code
they never saw.

1. Compiles held-out libraries of the corpus with plain ``clang-19 -Oz``,
   with the best stock size flags (chosen on the validation libraries,
   ``results/size/best_flags_llvm19.json``), with each plugin
   (``-fpass-plugin=MLBridgeInlineAdvisor.so``, ``MLBridgePhaseOrder.so``:
   models compiled into the plugins, no Python, no runtime library; the
   phase-ordering episode starts from function merging and the machine
   outliner and decides where the IR outliner runs) and with both
   plugins in one process; prints
   ``.text`` bytes per library and the compile CPU against plain ``-Oz``
   (:func:`mlbridge.train.evaluate.measure`, the measurement of
   docs/results.md).
2. Compiles one unit again with the *Python* inliner policy answering stock
   ``clang-19``'s interactive inliner over named pipes (the training
   setup), and checks that it makes the same decisions as the compiled
   model in the plugin: same ``.text``.
No training happens here (``python -m mlbridge.train inliner train`` and
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


def _compile_and_report(mods, plugins, jobs, cache):
    """Every configuration of the size report on ``mods``: prints the table
    and the totals; returns (rows, summary)."""
    from . import baselines, evaluate
    configs = baselines.report_configs()
    names = [c.name for c in configs]
    t0 = time.monotonic()
    rows = evaluate.measure(mods, configs, plugins=plugins, jobs=jobs, cache=cache)
    summary = evaluate.summarize(rows, names)
    _say(f"   done in {time.monotonic() - t0:.0f} s\n")
    _say(baselines.doc_tables(summary)["combined"])
    tot = summary["total"]
    _say(f"\n   combined (both plugins in one clang -Oz): {tot.text['combined']:,} bytes = "
         f"{tot.ratio('combined'):.4f}x plain -Oz, {tot.ratio('combined', 'best flags'):.4f}x "
         f"best flags ({', '.join(baselines.load_best_flags()) or 'none'}); compile CPU "
         f"{tot.cpu_ratio('combined'):.3f}x plain -Oz")
    if "combined + best flags" in names:   # a phase-ordering policy not trained from them
        _say(f"   combined + best flags: {tot.ratio('combined + best flags'):.4f}x plain -Oz, "
             f"{tot.ratio('combined + best flags', 'best flags'):.4f}x best flags")
    for e in summary["errors"]:
        _say(f"   error: {e['module']}: {str(e['errors'])[:300]}")
    return rows, summary


def main(argv=None):
    from .. import cli
    p = cli.ArgumentParser(prog="python -m mlbridge.train.demo", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--libraries", nargs="*", default=None,
                   help="held-out libraries to build (default: all held-out libraries)")
    p.add_argument("--max-units", type=int, default=8,
                   help="units per library, in manifest order (0: all; docs/results.md has "
                        "the full held-out table)")
    p.add_argument("--build-dir", default=None, help="CMake build folder with the plugins")
    p.add_argument("--jobs", type=cli.positive_int, default=2)
    p.add_argument("--cache", action="store_true",
                   help="reuse measurements cached by earlier runs (default: compile all now)")
    return cli.run("mlbridge.train.demo", _demo, p.parse_args(argv))


def _demo(args):
    from ..corpus import Corpus, CorpusError
    from ..llvm.plugins import find_plugins
    from ..llvm.host import advisor_host
    from ..toolchain import compile, toolchain
    from . import evaluate
    from .inliner import InlinePolicy

    plugins = find_plugins(args.build_dir)
    corpus = Corpus.load()
    libs = args.libraries or sorted({m.library for m in corpus.modules(split="heldout")})
    _say(f"== Code size on held-out real code: {', '.join(libs)}")
    _say("   (libraries the models never saw in training or model selection)")
    corpus.fetch(libraries=libs)
    mods = []
    for lib in libs:
        lm = [m for m in corpus.modules(split="heldout") if m.library == lib]
        if not lm:
            raise CorpusError(f"{lib} is not a held-out library of the corpus")
        mods += lm[: args.max_units] if args.max_units > 0 else lm
    _say(f"   compiling {len(mods)} translation units with plain -Oz, the best flags, "
         f"each plugin and both plugins, with {args.jobs} jobs ...")
    # FileNotFoundError without a validation choice of the best flags: one line.
    rows, summary = _compile_and_report(mods, plugins, args.jobs,
                                        evaluate.default_cache_dir() if args.cache else None)

    # The inliner's policy in Python, answering stock clang-19 over pipes.
    policy = InlinePolicy.load(SHIPPED_POLICY)
    ok = [r for r in rows if all("error" not in v for v in r["results"].values())]
    if not ok:
        _say("   no unit compiled")
        return 1

    def size(r, name):
        return r["results"][name]["text"]
    changed = [r for r in ok if size(r, "inliner") != size(r, "-Oz")]
    # A unit where the model changed something, else the biggest quick one
    # (a unit with many call sites, so there are questions to answer).
    quick = [r for r in ok if r["results"]["-Oz"]["cpu"] <= 10.0] or ok
    pick = (min(changed, key=lambda r: r["results"]["-Oz"]["cpu"]) if changed
            else max(quick, key=lambda r: size(r, "-Oz")))
    m = next(m for m in mods if m.name == pick["module"])
    _say(f"\n== The same inlining decisions from the Python policy over named pipes: {m.name}")
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
                      host=advisor_host({"inline": serve}, include_default=True))
        py_text = res.text
        _say(f"   stock clang-19 asked {state['asked']} inlining questions over pipes in "
             f"{res.wall_seconds:.2f} s; the Python policy reversed LLVM's decision "
             f"{state['reversed']} times")
        _say(f"   .text: Python policy over pipes {py_text:,} bytes, in-process compiled model "
             f"{size(pick, 'inliner'):,} bytes, plain -Oz {size(pick, '-Oz'):,} bytes")
        if py_text != size(pick, "inliner"):
            _say("   MISMATCH: the in-process model and the Python policy disagree")
            return 1
        _say("   identical: the model deployed in the compiler decides like the Python policy")
    return 1 if summary["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
