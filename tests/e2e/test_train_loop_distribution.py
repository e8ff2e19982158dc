"""Loop-distribution training through the bridge, on Ray
(mlbridge.train.loop_distribution).

Real parts only: stock clang-19 with MLBridgeLoopDistribution.so, the
corpus's loop kernels and driver, callgrind, Ray actors as workers (a
private local Ray). Small on purpose (a few kernels, two iterations) so
that it runs in the default suite; docs/loop-distribution.md has the real
run's command.
"""

import json

import numpy as np
import pytest

from conftest import require_llvm_tool

from mlbridge.corpus import loops as corpus
from mlbridge.train.cluster import Workdir
from mlbridge.train.loop_distribution import GraphPolicy, is_valid, parse
from mlbridge.train.loop_distribution.serve import walk_text
from mlbridge.train.loop_distribution.task import measure_task, run_task

TRAIN = ("mixed_rec_map", "mixed_rec_two_maps", "mixed_anti_true")
VALIDATION_FAMILY = "wrap"


@pytest.fixture(scope="module")
def plugin():
    require_llvm_tool("clang-19")
    from mlbridge.train.loop_distribution import find_plugin
    return find_plugin()


def _kernel(name):
    return next(k for k in corpus.kernels() if k.name == name)


@pytest.fixture
def workdir(tmp_path):
    w = Workdir(tmp_path)
    yield w
    w.close()


def test_oracle_partitions_are_valid_and_keep_results(plugin, workdir):
    """The probe reports each loop's graph; every enumerated partition of
    it is valid, replays through the plugin, and gives -O3's checksums."""
    from mlbridge.train.loop_distribution.partitions import enumerate_partitions, edges_of
    k = _kernel("mixed_rec_two_maps")
    src = corpus.kernel_source(k)
    o3 = run_task(measure_task(src, k.name, [k.name]), workdir)
    probe = run_task(measure_task(src, k.name, [k.name], plugin=plugin,
                                  policy={"kind": "replay", "partitions": {}}, record=True),
                     workdir)
    assert probe["ir"] == o3["ir"] and probe["out"] == o3["out"]
    assert probe["loops"], "the plugin asked about no loop of mixed_rec_two_maps"
    g = probe["loops"][0]
    n = len(g["features"])
    edges = edges_of(g["adjacency"])
    parts = enumerate_partitions(n, edges, limit=6)
    assert len(parts) >= 2
    irs = set()
    for p in parts:
        assert is_valid(p, n, edges)
        r = run_task(measure_task(src, k.name, [k.name], plugin=plugin, record=True,
                                  policy={"kind": "replay",
                                          "partitions": {"0": walk_text(p, edges)}}),
                     workdir)
        assert r["out"] == o3["out"], p
        assert [sorted(q) for q in parse(r["loops"][0]["partition"])] == \
            [sorted(q) for q in p]
        irs.add(r["ir"][k.name])
    assert len(irs) >= 2, "every partition measured the same Ir"


def test_python_over_pipes_equals_in_process_onnx(plugin, workdir):
    """The same network served from Python over pipes and run by the
    plugin through ONNX Runtime makes the same partitions: the object files
    are identical and so is the measured Ir."""
    rng = np.random.default_rng(5)
    pol = GraphPolicy.init(20, hidden=12, seed=3, mu=np.zeros(20), sd=np.full(20, 2.0))
    pol = pol.with_bias(float(rng.normal()))
    for name in ("mixed_rec_two_maps", "mixed_three_stage", "split_wide"):
        k = _kernel(name)
        src = corpus.kernel_source(k)
        py = run_task(measure_task(src, k.name, [k.name], plugin=plugin,
                                   policy={"kind": "graph", "policy": pol.to_dict()}), workdir)
        ox = run_task(measure_task(src, k.name, [k.name], plugin=plugin,
                                   policy={"kind": "onnx", "model": pol.to_onnx()}), workdir)
        assert py["ir"] == ox["ir"] and py["out"] == ox["out"], name


def test_two_iterations_on_two_ray_workers(plugin, tmp_path):
    from mlbridge.train.loop_distribution.trainer import train
    tr = [_kernel(n) for n in TRAIN]
    val = [k for k in corpus.kernels("validation") if k.family == VALIDATION_FAMILY][:2]
    out = tmp_path / "run"
    summary = train(tr, val, out, plugin=plugin, workers=2, iterations=2, max_partitions=3,
                    biases=(-1e4, 0.0), hidden=8, epochs=40, progress=False)
    for f in ("log.jsonl", "curve.png", "policy.json", "policy.onnx", "oracle.json",
              "summary.json"):
        assert (out / f).stat().st_size > 0, f
    rows = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    its = [r for r in rows if r.get("stage") == "iteration"]
    assert [r["iteration"] for r in its] == [1, 2]
    assert summary["wrong_results"] == []
    assert summary["validation_geomean"] <= 1.0   # never worse than -O3: it is a candidate
    oracle = json.loads((out / "oracle.json").read_text())
    assert any(len(parse(r["label"])) > 1 for r in oracle["labels"]), \
        "no training loop gained from a distribution"
    pol = GraphPolicy.load(out / "policy.json")
    assert pol.features == 20


def test_shipped_model_compiled_in_equals_the_python_policy(plugin, workdir):
    """The shipped model (models/plugins/loop_distribution_policy.*), compiled
    into the plugin and used with no setting, makes the partitions its
    Python policy makes over pipes: the same Ir and checksums."""
    pol = GraphPolicy.load(corpus.REPO_ROOT / "models" / "plugins" /
                           "loop_distribution_policy.json")
    for name in ("mixed_rec_two_maps", "split_rec_first", "nodesplit_basic"):
        k = _kernel(name)
        src = corpus.kernel_source(k)
        built_in = run_task(measure_task(src, k.name, [k.name], plugin=plugin,
                                         policy={"kind": "builtin"}), workdir)
        py = run_task(measure_task(src, k.name, [k.name], plugin=plugin,
                                   policy={"kind": "graph", "policy": pol.to_dict()}), workdir)
        assert built_in["ir"] == py["ir"] and built_in["out"] == py["out"], name
