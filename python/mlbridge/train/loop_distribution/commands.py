"""The verbs of ``python -m mlbridge.train loop-distribution``
besides ``train``: ``evaluate`` / ``heldout`` (the results table of a
split), ``compile-cost`` (callgrind Ir of whole clang compiles, plain and
with the plugin), ``coverage`` (what the plugin does with real code's
loops) and ``demo`` (one held-out kernel before and after)."""

import tempfile
from pathlib import Path

from ... import cli
from ...corpus import loops as corpus
from ..registry import Command

DEMO_KERNEL = "split_rec_first"


def demo(kernel=DEMO_KERNEL, plugin=None):
    """Builds ``kernel`` (its family file) with plain -O3 and with the
    plugin's built-in model; returns (O3 Ir, plugin Ir, same checksums)."""
    from . import find_plugin
    from ..cluster import Workdir
    from .task import measure_task, run_task
    k = next((k for k in corpus.kernels() if k.name == kernel), None)
    if k is None:
        raise corpus.LoopKernelError(f"no kernel {kernel}")
    plugin = find_plugin(plugin)
    with tempfile.TemporaryDirectory(prefix="mlbridge-ld-demo-") as tmp:
        w = Workdir(tmp)
        try:
            src = k.source.read_text()
            o3 = run_task(measure_task(src, k.source.stem, [k.name]), w)
            ml = run_task(measure_task(src, k.source.stem, [k.name], plugin=plugin,
                                       policy={"kind": "builtin"}), w)
        finally:
            w.close()
    return o3["ir"][k.name], ml["ir"][k.name], o3["out"][k.name] == ml["out"][k.name]


def compile_cost_command(args):
    from . import find_plugin
    from ..cluster import pool as worker_pool
    from .evaluate import compile_cost
    from .trainer import write_json
    sources = [corpus.ROOT / "kernels" / f"{f}.c" for f in args.families]
    missing = [str(s) for s in sources if not s.is_file()]
    if missing:
        raise corpus.LoopKernelError(f"no family file {', '.join(missing)}")
    plugin = find_plugin(args.plugin)
    with worker_pool(args.workers) as pool:
        costs = compile_cost(pool, sources, plugin)
    o3 = sum(c["O3"] for c in costs.values())
    ratio = round(sum(c["plugin"] for c in costs.values()) / o3, 4)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, {"plugin": str(plugin), "compile_ir": costs, "ratio": ratio})
    for f, c in costs.items():
        print(f"{f}: -O3 {c['O3']} Ir, with the plugin {c['plugin']} Ir "
              f"({c['plugin'] / c['O3']:.3f}x)")
    print(f"all: {ratio}x")
    return 0


def coverage_command(args):
    from .coverage import corpus_loops, markdown, project_loops
    from .trainer import write_json
    per = {}
    if args.libraries is None or args.libraries:
        per.update(corpus_loops(args.libraries, args.split, args.plugin))
    if args.projects:
        per.update(project_loops(None if args.projects == ["all"] else args.projects))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, per)
    print(markdown(per))
    return 0


def _path_out(q):
    q.add_argument("--out", type=lambda t: Path(cli.output_file(t)), required=True)


def _plugin(q):
    q.add_argument("--plugin", default=None, type=cli.existing_file)


def _evaluate_arguments(q, split=None):
    if split is None:
        q.add_argument("--split", choices=corpus.SPLITS, default="validation")
    else:
        q.set_defaults(split=split)
    _path_out(q)
    q.add_argument("--model", type=lambda t: Path(cli.existing_file(t)), default=None,
                   help="an ONNX model instead of the compiled-in one")
    q.add_argument("--workers", type=cli.non_negative_int, default=2,
                   help="Ray workers (0: in this process, for a machine too loaded for Ray)")
    q.add_argument("--cache", default=None)
    _plugin(q)


def _compile_cost_arguments(q):
    q.add_argument("--families", nargs="+", required=True)
    _path_out(q)
    q.add_argument("--workers", type=cli.non_negative_int, default=2,
                   help="Ray workers (0: in this process)")
    _plugin(q)


def _coverage_arguments(q):
    q.add_argument("--libraries", nargs="*", default=None,
                   help="corpus libraries (default: all; none with an empty list)")
    q.add_argument("--split", default=None, help="only the corpus libraries of this split")
    q.add_argument("--projects", nargs="*", default=[],
                   help="real projects of mlbridge.builds (default: none; 'all' for all)")
    _path_out(q)
    _plugin(q)


def _demo_arguments(q):
    q.add_argument("--kernel", default=DEMO_KERNEL)
    _plugin(q)


def demo_command(args):
    o3, ml, same = demo(args.kernel, args.plugin)
    print(f"loop distribution, held-out kernel {args.kernel}: clang-19 -O3 {o3} Ir, "
          f"with MLBridgeLoopDistribution.so {ml} Ir ({ml / o3:.3f}x"
          f"{', same checksums' if same else ', CHECKSUMS DIFFER'})")
    return 0 if same else 1


def evaluate_command(args):
    from . import find_plugin
    from .evaluate import evaluate, markdown
    from .trainer import write_json
    res = evaluate(args.split, plugin=find_plugin(args.plugin), workers=args.workers,
                   model=args.model.read_bytes() if args.model else None,
                   cache_dir=args.cache)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, res)
    print(markdown(res["summary"]))
    print(f"compile Ir (whole clang process), plugin / -O3: "
          f"{res['summary']['all']['compile_ir_ratio']}")
    return 0


COMMANDS = {
    "evaluate": Command("Ir of a split's kernels (default validation): the plugin's model, "
                        "the random policy, -O3, -O3 distribute; compile time",
                        _evaluate_arguments, evaluate_command),
    "heldout": Command("the same on the held-out kernel families",
                       lambda q: _evaluate_arguments(q, "held_out"), evaluate_command),
    "compile-cost": Command("callgrind Ir of the whole clang -O3 -c of family files, plain "
                            "and with the plugin", _compile_cost_arguments, compile_cost_command),
    "coverage": Command("the innermost loops of real code (corpus libraries, real projects' "
                        "own builds): how many the model is asked about, what it does, why "
                        "the others are declined", _coverage_arguments, coverage_command),
    "demo": Command("one held-out kernel: -O3 Ir, then with the plugin", _demo_arguments,
                    demo_command),
}
