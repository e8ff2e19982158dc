"""The size measurement's command line, shared by ``python -m
mlbridge.train evaluate`` and the size problems' verbs (``inliner
evaluate|heldout``, ``phase-order evaluate|heldout``): the deployed plugin
against ``clang-19 -Oz`` (and stock flags), per library."""

import json
import os
import sys
import tempfile

from .. import cli
from .registry import Command

__all__ = ["PASSES", "add_evaluate_arguments", "cmd_evaluate", "commands"]

#: The size plugins the measurement knows.
PASSES = ("inliner", "phase-order")


def add_evaluate_arguments(q, pass_name=None, split=None, split_default="heldout"):
    """The options of the measurement; ``pass_name`` / ``split`` given: fixed
    (a problem's verb), not options."""
    from .baselines import FLAGS as STOCK_FLAGS
    if pass_name is None:
        q.add_argument("--pass", dest="pass_name", default="inliner",
                       choices=list(PASSES), help="which plugin")
    else:
        q.set_defaults(pass_name=pass_name)
    q.add_argument("--flags", nargs="+", default=None, metavar="FLAG",
                   choices=sorted(STOCK_FLAGS),
                   help="also -Oz with these stock size flags, the plugin compared with "
                        "them too (e.g. mergefunc machine-outliner)")
    if pass_name == "inliner":   # the phase-ordering experiments are not the inliner's
        q.set_defaults(max_steps=None, fixed_action=None, start=None, policy=None,
                       thresholds=[0.5], margins=[0.0])
    else:
        q.add_argument("--max-steps", type=int, default=None,
                       help="phase-order: actions per episode (default: the model's; an "
                            "experiment)")
        q.add_argument("--fixed-action", type=int, default=None,
                       help="phase-order: one step of this action (a trivial baseline: "
                            "15 = -Oz twice, 16 = mergefunc)")
        q.add_argument("--start", nargs="*", default=None, metavar="FLAG",
                       help="phase-order: the stock size flags the episode starts from "
                            "(default: the model's; none given: where -Oz ends; an experiment)")
        q.add_argument("--policy", default=None, type=cli.existing_file, metavar="POLICY_JSON",
                       help="phase-order: also this fitted policy (a trainer's policy.json) "
                            "at each --thresholds x --margins, as experiments")
        q.add_argument("--thresholds", type=float, nargs="+", default=[0.5],
                       help="with --policy: STOP thresholds")
        q.add_argument("--margins", type=float, nargs="+", default=[0.0],
                       help="with --policy: IR-outliner margins (percent of .text)")
    if split is None:
        q.add_argument("--split", default=split_default,
                       choices=["train", "validation", "heldout"])
    else:
        q.set_defaults(split=split)
    q.add_argument("--manifest", default=None)
    q.add_argument("--libraries", nargs="*", default=None)
    q.add_argument("--max-modules", type=int, default=None)
    q.add_argument("--plugin", default=None, type=cli.existing_file,
                   help="the plugin (default: the build's)")
    q.add_argument("--plugin-build-dir", default=None)
    q.add_argument("--model", default=None, type=cli.existing_file,
                   help="an ONNX policy run by ONNX Runtime (default: the built-in compiled "
                        "model; an experiment)")
    q.add_argument("--experiment", action="store_true",
                   help="measure a configuration that is not the documented command "
                        "(docs/llvm-plugins.md): --model, --max-steps, --start, "
                        "--fixed-action or plugin settings in the environment; the table "
                        "says so")
    q.add_argument("--jobs", type=cli.positive_int, default=2)
    q.add_argument("--no-cache", action="store_true",
                   help="measure everything again (default: size-report's measurement cache)")
    q.add_argument("--out", default=None, type=cli.output_file,
                   help="write rows and summary (JSON) here")
    q.add_argument("--quiet", action="store_true")


def _policy_variants(path, thresholds, margins, tmp):
    """Experiments: the phase-ordering policy of ``path`` (a trainer's
    ``policy.json``) at each STOP threshold and IR-outliner margin, from the
    start flags and step budget the file names."""
    from ..llvm.plugins import ACTIONS
    from . import evaluate
    from .phase_order import PhasePolicy
    with open(path) as f:
        record = json.load(f)
    policy = PhasePolicy.from_dict(record)
    iroutliner = ACTIONS.index("iroutliner")
    out = []
    for t in thresholds:
        for m in margins:
            onnx = os.path.join(tmp, f"policy_t{t}_m{m}.onnx")
            policy.with_threshold(t).with_margin(iroutliner, m).to_onnx(onnx)
            out.append(evaluate.Config(
                f"policy t={t} m={m}", plugins=("phase-order",), phase_order_model=onnx,
                phase_order_steps=record.get("max_steps"),
                phase_order_start=tuple(record.get("start", ()))).as_experiment())
    return out


def cmd_evaluate(args):
    import dataclasses
    from ..errors import MLBridgeError
    from ..llvm.plugins import find_plugins
    from . import baselines, evaluate
    from .modules import corpus_modules
    if args.policy and args.pass_name != "phase-order":
        raise MLBridgeError("--policy is a phase-ordering policy: give --pass phase-order")
    mods = corpus_modules(args.split, args)
    if args.max_modules:
        mods = mods[: args.max_modules]
    plugins = find_plugins(args.plugin_build_dir)
    bar = None
    if not args.quiet:
        from tqdm import tqdm
        bar = tqdm(total=len(mods), desc=f"{args.split}: -Oz vs plugin", unit="unit")
    with tempfile.TemporaryDirectory(prefix="mlbridge-evaluate-") as tmp:
        if args.pass_name == "phase-order":
            from .phase_order import shipped_max_steps, shipped_start
            model, steps = args.model, args.max_steps
            start = None if args.start is None else tuple(args.start)
            if args.fixed_action is not None:
                model, steps = _fixed_action_model(args.fixed_action, tmp), 1
            if model is not None:   # an ONNX model brings no settings: the shipped ones
                steps = shipped_max_steps() if steps is None else steps
                start = shipped_start() if start is None else start
            if args.plugin:
                plugins = dataclasses.replace(plugins, phase_order=args.plugin)
            config = evaluate.Config(
                "phase ordering", plugins=("phase-order",), phase_order_model=model,
                phase_order_steps=steps, phase_order_start=start)
        else:
            if args.plugin:
                plugins = dataclasses.replace(plugins, inline_advisor=args.plugin)
            config = evaluate.Config("inliner", plugins=("inliner",), inline_model=args.model)
        if args.experiment:
            config = config.as_experiment()
        flags = [baselines.flag_config(args.flags)] if args.flags else []
        configs = [evaluate.PLAIN, *flags, config]
        if args.policy:
            configs += _policy_variants(args.policy, args.thresholds, args.margins, tmp)
        rows = evaluate.measure(mods, configs, plugins=plugins,
                                jobs=args.jobs, progress=bar.update if bar else None,
                                cache=None if args.no_cache else evaluate.default_cache_dir())
    if bar:
        bar.close()
    names = [c.name for c in configs]
    summary = evaluate.summarize(rows, names)
    if args.out:
        cli.write_json(args.out, {"summary": evaluate.as_json(summary), "rows": rows}, indent=1)
    deltas = [(n, evaluate.PLAIN.name) for n in names[1:]]
    deltas += [(n, flags[0].name) for n in names[2:]] if flags else []
    for e in summary["errors"]:
        print(f"error: {e['module']}: {e['errors']}", file=sys.stderr)
    if not summary["total"].units:
        raise MLBridgeError(f"no unit of {len(rows)} compiled in every configuration "
                            f"({', '.join(names)}): nothing to compare (errors above)")
    print(evaluate.markdown_table(summary, deltas=deltas, cpu=names[1:]))


def _fixed_action_model(action, folder):
    """An ONNX policy (written into ``folder``) that always takes ``action``
    (with one step: the trivial baselines, e.g. 15 = "-Oz twice")."""
    import numpy as np
    from ..llvm.plugins import NUM_OBSERVATIONS
    from .phase_order import NUM_PASS_ACTIONS, PhasePolicy
    hidden = 1
    b2 = np.full(NUM_PASS_ACTIONS, -1.0, dtype=np.float32)
    b2[action] = 1.0
    pol = PhasePolicy(np.zeros((hidden, NUM_OBSERVATIONS)), np.zeros(hidden),
                      np.zeros((NUM_PASS_ACTIONS, hidden)), b2, threshold=0.0)
    path = os.path.join(folder, f"action{action}.onnx")
    pol.to_onnx(path)
    return path


def commands(pass_name):
    """A size problem's ``evaluate`` (validation) and ``heldout`` verbs."""
    return {
        "evaluate": Command(f"the deployed {pass_name} plugin vs clang-19 -Oz on the "
                            "validation split (or --split)",
                            lambda q: add_evaluate_arguments(q, pass_name, None, "validation"),
                            cmd_evaluate),
        "heldout": Command(f"the deployed {pass_name} plugin vs clang-19 -Oz on the held-out "
                           "libraries", lambda q: add_evaluate_arguments(q, pass_name, "heldout"),
                           cmd_evaluate),
    }
