"""``python -m mlbridge.train.loop_distribution {evaluate,compile-cost,coverage,demo}``:
the results table of a split, the compile cost of the plugin (callgrind Ir
of whole clang compiles), what the plugin does with real code's loops, and
one held-out kernel before and after.
(Training: ``python -m mlbridge.train loop-distribution``.)"""

import sys
import tempfile
from pathlib import Path

from ... import cli
from ...corpus import loops as corpus
from . import find_plugin

DEMO_KERNEL = "split_rec_first"


def demo(kernel=DEMO_KERNEL, plugin=None):
    """Builds ``kernel`` (its family file) with plain -O3 and with the
    plugin's built-in model; returns (O3 Ir, plugin Ir, same checksums)."""
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
    from ..cluster import WorkerPool
    from .evaluate import compile_cost
    from .trainer import InProcess, write_json
    sources = [corpus.ROOT / "kernels" / f"{f}.c" for f in args.families]
    missing = [str(s) for s in sources if not s.is_file()]
    if missing:
        raise corpus.LoopKernelError(f"no family file {', '.join(missing)}")
    plugin = find_plugin(args.plugin)
    with (WorkerPool(args.workers) if args.workers else InProcess()) as pool:
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


def main(argv=None):
    p = cli.ArgumentParser(prog="python -m mlbridge.train.loop_distribution",
                           description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    ev = sub.add_parser("evaluate", help="Ir of a split's kernels: the plugin's model, the "
                        "random policy, -O3, -O3 distribute; compile time")
    ev.add_argument("--split", choices=corpus.SPLITS, default="held_out")
    ev.add_argument("--out", type=lambda t: Path(cli.output_file(t)), required=True)
    ev.add_argument("--model", type=lambda t: Path(cli.existing_file(t)), default=None,
                    help="an ONNX model instead of the compiled-in one")
    ev.add_argument("--workers", type=cli.non_negative_int, default=2,
                    help="Ray workers (0: in this process, for a machine too loaded for Ray)")
    ev.add_argument("--cache", default=None)
    ev.add_argument("--plugin", default=None, type=cli.existing_file)
    co = sub.add_parser("compile-cost", help="callgrind Ir of the whole clang -O3 -c of "
                        "family files, plain and with the plugin")
    co.add_argument("--families", nargs="+", required=True)
    co.add_argument("--out", type=lambda t: Path(cli.output_file(t)), required=True)
    co.add_argument("--workers", type=cli.non_negative_int, default=2,
                    help="Ray workers (0: in this process)")
    co.add_argument("--plugin", default=None, type=cli.existing_file)
    cv = sub.add_parser("coverage", help="the innermost loops of real code (corpus libraries, "
                        "real projects' own builds): how many the model is asked about, what "
                        "it does, why the others are declined")
    cv.add_argument("--libraries", nargs="*", default=None,
                    help="corpus libraries (default: all; none with an empty list)")
    cv.add_argument("--split", default=None, help="only the corpus libraries of this split")
    cv.add_argument("--projects", nargs="*", default=[],
                    help="real projects of mlbridge.builds (default: none; 'all' for all)")
    cv.add_argument("--out", type=lambda t: Path(cli.output_file(t)), required=True)
    cv.add_argument("--plugin", default=None, type=cli.existing_file)
    de = sub.add_parser("demo", help="one held-out kernel: -O3 Ir, then with the plugin")
    de.add_argument("--kernel", default=DEMO_KERNEL)
    de.add_argument("--plugin", default=None, type=cli.existing_file)
    args = p.parse_args(argv)
    return cli.run(f"mlbridge.train.loop_distribution {args.cmd}", lambda _: _run(args))


def _run(args):
    if args.cmd == "demo":
        o3, ml, same = demo(args.kernel, args.plugin)
        print(f"loop distribution, held-out kernel {args.kernel}: clang-19 -O3 {o3} Ir, "
              f"with MLBridgeLoopDistribution.so {ml} Ir ({ml / o3:.3f}x"
              f"{', same checksums' if same else ', CHECKSUMS DIFFER'})")
        return 0 if same else 1
    if args.cmd == "compile-cost":
        return compile_cost_command(args)
    if args.cmd == "coverage":
        return coverage_command(args)
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


if __name__ == "__main__":
    sys.exit(main())
