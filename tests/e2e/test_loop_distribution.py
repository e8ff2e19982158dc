"""End to end: the loop-distribution plugin (MLBridgeLoopDistribution.so,
docs/loop-distribution.md) in real clang-19 / opt-19 on the loop kernels of
corpus/loops, every result checked against plain -O3 (the driver's checksums
of every array and scalar).

* Loaded with no option, the shipped model (compiled in) or, in a build
  without one, the built-in policy decides; the built-in policy distributes
  loops; the outputs equal -O3's.
* Fixed partitions (-mlbridge-ld-partition): valid ones distribute, invalid
  ones (a dependence going backward, a node missing or twice) are a warning
  and leave the loop alone; outputs equal -O3's either way.
* Random valid partitions from Python over pipes (seeded): outputs equal on
  29 kernels (all 153 with MLBRIDGE_LD_FUZZ_ALL=1, seeds
  MLBRIDGE_LD_FUZZ_SEEDS="0,1,..."), and opt-19 -verify-each is clean.
* Python over pipes and ONNX Runtime in-process, the same model: identical
  decisions.
* LLVM 22 (when built): the plugin loads and decides.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from mlbridge import toolchain
from mlbridge.corpus import loops
from mlbridge.llvm.plugins import loop_distribution as ld

FIXED = {"mixed_rec_map": "1|0", "mixed_three_stage": "2|0|1",
         "mixed_long_body": "3|2|1|0", "mixed_rec_two_maps": "1,2|0",
         "mixed_prefix_and_scale": "1|2|0"}
INVALID = {"mixed_anti_true": ("0|1", "a dependence would go backward"),
           "mixed_map_rec": ("0", "node 1 is in no loop"),
           "mixed_div_and_rec": ("0,1|1", "more than one place")}
FUZZ_FAMILIES = ("mixed", "split", "alias")  # 29 kernels
SHIPPED_MODEL = loops.ROOT.parents[1] / "models" / "plugins" / "loop_distribution_policy.onnx"


@pytest.fixture(scope="module")
def plugin(plugins) -> Path:
    return ld.plugin(plugins)


def family_source(family: str) -> Path:
    return loops.ROOT / "kernels" / f"{family}.c"


def kernel_command(clang: str, plugin: Path, source: Path, out: Path):
    """What loops.build runs, with the plugin."""
    return [clang, "-O3", f"-fpass-plugin={plugin}", "-I", str(loops.ROOT), "-rdynamic",
            str(loops.ROOT / "driver.c"), str(source), "-o", str(out)]


def compile_family(clang: str, flags, family: str, out: Path, **settings):
    """The family's kernels alone (no driver) into ``out`` (-c or -S)."""
    env = dict(os.environ)
    env.update(ld.plugin_settings(**settings))
    return toolchain.compile([clang, *flags, "-I", str(loops.ROOT), str(family_source(family)),
                              "-o", str(out)], env=env, measure_text=False)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """-O3 checksums of every kernel, built per family on demand."""
    work = tmp_path_factory.mktemp("o3")
    cache = {}

    def outputs(family: str):
        if family not in cache:
            exe = work / family
            loops.build(family_source(family), loops.FLAG_SETS["O3"], exe)
            cache[family] = {k.name: loops.run(exe, k.name) for k in loops.kernels()
                             if k.family == family}
        return cache[family]
    return outputs


def build_with(monkeypatch, plugin, family, out, **settings):
    for key, value in ld.plugin_settings(**settings).items():
        monkeypatch.setenv(key, value)
    return loops.build(family_source(family), ["-O3", f"-fpass-plugin={plugin}"], out)


def assert_same_outputs(exe, family, reference):
    for name, expected in reference(family).items():
        assert loops.run(exe, name) == expected, f"{name}: output differs from -O3 ({exe})"


def clear_settings(monkeypatch):
    for key in [k for k in os.environ if k.startswith(ld.ENV_PREFIX)]:
        monkeypatch.delenv(key)


def test_no_option_uses_the_shipped_model_or_the_builtin_policy(plugin, plugins, reference,
                                                                tmp_path, monkeypatch):
    """Loading the plugin is all a user does: the model compiled into it when
    the build embeds one (models/plugins), else the built-in policy."""
    clear_settings(monkeypatch)
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("MLBRIDGE_LD_LOG", str(log))
    exe = tmp_path / "split"
    loops.build(family_source("split"), ["-O3", f"-fpass-plugin={plugin}"], exe)
    assert_same_outputs(exe, "split", reference)
    embedded = plugins.has_runner("compiled") and SHIPPED_MODEL.is_file()
    rows = ld.read_log(log)
    assert {r["runner"] for r in rows} == {"compiled" if embedded else "builtin"}
    assert any(r["result"] == "distributed" for r in rows)


def test_the_plugin_stays_cheap_to_load(plugins, plugin, tmp_path, monkeypatch):
    """Loaded into every compile of its users, the plugin does not pull in
    gRPC or protobuf (asking for the grpc runner is a warning naming the
    runners it has; loops are left alone), and a loop of one store gets no
    dependence analysis and no model call."""
    clear_settings(monkeypatch)
    # The build manifest says so (the other plugins have gRPC).
    assert plugins.loop_distribution_runners["grpc"] is False
    assert plugins.loop_distribution_runners["pipe"] is True
    needed = toolchain.run_tool(["readelf", "-d", str(plugin)], timeout=60)
    assert "NEEDED" in needed
    assert not any(lib in needed for lib in ("grpc", "protobuf", "mlbridge_proto")), needed
    log = tmp_path / "log.jsonl"
    res = compile_family(toolchain.toolchain().clang, ["-O3", "-c", f"-fpass-plugin={plugin}"],
                         "mixed", tmp_path / "mixed.o", runner="grpc", log=log)
    assert "mlbridge-loop-distribution" in res.stderr and "grpc" in res.stderr, res.stderr
    assert not log.exists() or not ld.read_log(log)
    compile_family(toolchain.toolchain().clang, ["-O3", "-c", f"-fpass-plugin={plugin}"],
                   "independent", tmp_path / "independent.o", runner="default", log=log)
    rows = ld.read_log(log)
    single = [r for r in rows if r["nodes"] == 1]
    assert single and all(r["result"] == "unchanged" and r["asked"] == 0 for r in single)


def test_builtin_policy_distributes_and_keeps_results(plugin, reference, tmp_path,
                                                      monkeypatch):
    clear_settings(monkeypatch)
    monkeypatch.setenv("MLBRIDGE_LD_RUNNER", "default")
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("MLBRIDGE_LD_LOG", str(log))
    for family in ("mixed", "split", "alias"):
        exe = tmp_path / family
        loops.build(family_source(family), ["-O3", f"-fpass-plugin={plugin}"], exe)
        assert_same_outputs(exe, family, reference)
    rows = {r["function"]: r for r in ld.read_log(log)}
    assert {r["runner"] for r in rows.values()} == {"builtin"}
    assert rows["mixed_rec_map"]["result"] == "distributed"
    assert rows["mixed_rec_map"]["partition"] == "0|1"
    distributed = [f for f, r in rows.items() if r["result"] == "distributed"]
    assert len(distributed) >= 10, distributed
    # May-alias pointers: distributed behind LoopAccessInfo's runtime checks
    # (the kernel runs once with disjoint, once with overlapping arrays).
    assert rows["alias_rec_map_body"]["result"] == "distributed"
    assert rows["alias_rec_map_body"]["runtime_checks"] > 0
    assert all(r["runtime_checks"] == 0 for r in rows.values() if r["result"] != "distributed")
    # One node: nothing to decide, no model call.
    assert all(r["asked"] == 0 for r in rows.values() if r["nodes"] < 2)


def test_fixed_partitions_valid_and_invalid(plugin, reference, tmp_path, monkeypatch):
    log = tmp_path / "log.jsonl"
    spec = ";".join(f"{k}:0={p}" for k, p in {**FIXED, **{k: v[0] for k, v in
                                                            INVALID.items()}}.items())
    comp = build_with(monkeypatch, plugin, "mixed", tmp_path / "mixed", partition=spec,
                      log=log)
    assert_same_outputs(tmp_path / "mixed", "mixed", reference)
    rows = {r["function"]: r for r in ld.read_log(log)}
    for kernel, part in FIXED.items():
        assert rows[kernel]["result"] == "distributed", rows[kernel]
        assert rows[kernel]["partition"] == part
    for kernel, (part, why) in INVALID.items():
        assert rows[kernel]["result"] == "invalid", rows[kernel]
        assert why in rows[kernel]["reason"]
        assert f"{kernel} loop 0: partition '{part}' is invalid: " in comp.stderr
    # Loops without an entry are kept whole.
    assert rows["mixed_scatter_map"]["result"] == "unchanged"


def test_distributed_loops_vectorize(plugin, plugins, tmp_path):
    """The point of distribution: the map split off a recurrence vectorizes."""
    out = tmp_path / "k.ll"
    compile_family(plugins.tool("clang"), ["-O3", f"-fpass-plugin={plugin}", "-S",
                                           "-emit-llvm"], "mixed", out,
                   partition="mixed_rec_map:0=1|0")
    text = out.read_text()
    body = text[text.index("@mixed_rec_map("):]
    body = body[:body.index("\n}\n")]
    assert "<4 x float>" in body or "<8 x float>" in body, "the split-off map is not vectorized"
    assert "llvm.loop.distribute.enable\", i1 false" in text


def fuzz_plan():
    if os.environ.get("MLBRIDGE_LD_FUZZ_ALL") == "1":
        families = sorted({k.family for k in loops.kernels()})
    else:
        families = list(FUZZ_FAMILIES)
    seeds = [int(s) for s in os.environ.get("MLBRIDGE_LD_FUZZ_SEEDS", "0").split(",")]
    return [(f, s) for f in families for s in seeds]


@pytest.mark.parametrize("family,seed", fuzz_plan())
def test_random_partitions_keep_results(plugin, plugins, reference, tmp_path, family, seed):
    exe = tmp_path / family
    run = ld.compile_with_policy(kernel_command(plugins.tool("clang"), plugin,
                                                family_source(family), exe),
                                 ld.RandomPolicy(seed), plugins=plugins)
    assert_same_outputs(exe, family, reference)
    assert run.decisions, "no decisions asked"
    assert {d.agent for d in run.decisions} <= {"select", "merge"}
    assert not [r for r in run.loops if r["result"] in ("invalid", "error")]


def test_random_partitions_verify_each(plugin, plugins, tmp_path):
    opt = plugins.tool("opt")
    for i, family in enumerate(FUZZ_FAMILIES):
        ir = tmp_path / f"{family}.ll"
        compile_family(plugins.tool("clang"), ["-O3", "-Xclang", "-disable-llvm-passes", "-S",
                                               "-emit-llvm"], family, ir)
        run = ld.compile_with_policy(
            [opt, f"-load-pass-plugin={plugin}", "-passes=default<O3>", "-verify-each",
             "-verify-dom-info", "-verify-loop-info", str(ir), "-S", "-o",
             str(tmp_path / f"{family}.opt.ll")], ld.RandomPolicy(100 + i), plugins=plugins)
        assert any(r["result"] == "distributed" for r in run.loops), family
        assert "error" not in run.compiled.stderr


def test_replay_policy_over_pipes(plugin, plugins, reference, tmp_path):
    exe = tmp_path / "mixed"
    run = ld.compile_with_policy(kernel_command(plugins.tool("clang"), plugin,
                                                family_source("mixed"), exe),
                                 ld.ReplayPolicy({f"{k}:0": p for k, p in FIXED.items()}),
                                 plugins=plugins)
    assert_same_outputs(exe, "mixed", reference)
    got = run.partitions()
    for kernel, part in FIXED.items():
        assert got[f"{kernel}:0"] == part
    # reorder_distance2: node 1 must run first.
    with pytest.raises(ld.InvalidAction, match="had to be placed after"):
        ld.compile_with_policy(kernel_command(plugins.tool("clang"), plugin,
                                              family_source("reorder"), tmp_path / "r"),
                               ld.ReplayPolicy({"reorder_distance2:0": "0|1"}),
                               plugins=plugins)


def linear_policy_onnx(path: Path, seed: int = 7) -> np.ndarray:
    """A small ONNX policy over the protocol: scores = node_features @ w."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = np.random.default_rng(seed).normal(size=(len(ld.NODE_FEATURES), 1)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["node_features", "w"], ["s"]),
         helper.make_node("Reshape", ["s", "shape"], ["scores"])],
        "loop_distribution_linear",
        [helper.make_tensor_value_info("node_features", TensorProto.FLOAT,
                                       [ld.MAX_NODES, len(ld.NODE_FEATURES)])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [ld.MAX_NODES])],
        [numpy_helper.from_array(w, "w"),
         numpy_helper.from_array(np.array([ld.MAX_NODES], np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return w


def test_python_and_in_process_decide_the_same(plugin, plugins, tmp_path):
    if not plugins.has_runner("onnx"):
        pytest.skip("the build's plugins have no ONNX runner (manifest)")
    import onnxruntime as ort
    model = tmp_path / "policy.onnx"
    linear_policy_onnx(model)
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])

    def python_policy(obs):
        return session.run(["scores"], {"node_features": obs["node_features"]})[0]

    src = family_source("split")
    over_pipes = ld.compile_with_policy(
        [plugins.tool("clang"), "-O3", "-c", f"-fpass-plugin={plugin}", "-I",
         str(loops.ROOT), str(src), "-o", str(tmp_path / "a.o")], python_policy,
        plugins=plugins)
    log = tmp_path / "onnx.jsonl"
    compile_family(plugins.tool("clang"), ["-O3", "-c", f"-fpass-plugin={plugin}"], "split",
                   tmp_path / "b.o", runner="onnx", model=model, log=log)
    in_process = ld.read_log(log)
    assert {r["runner"] for r in in_process} == {"onnx"}
    pick = lambda rows: [(r["function"], r["loop"], r["partition"], r["asked"])  # noqa: E731
                         for r in rows]
    assert pick(over_pipes.loops) == pick(in_process)
    assert sum(r["asked"] for r in in_process) == len(over_pipes.decisions) > 0


def test_llvm22_loads_and_decides(tmp_path, monkeypatch):
    from build_components import require_built, require_component
    from mlbridge.llvm.plugins import find_plugins
    require_component("llvm_plugins_llvm22")
    info = require_built("llvm_plugins_llvm22", lambda: find_plugins(llvm=22))
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("MLBRIDGE_LD_LOG", str(log))
    exe = tmp_path / "mixed22"
    loops.build(family_source("mixed"), ["-O3", f"-fpass-plugin={ld.plugin(info)}"], exe,
                clang=info.tool("clang"))
    rows = {r["function"]: r for r in ld.read_log(log)}
    assert rows["mixed_rec_map"]["result"] == "distributed"
    o3 = tmp_path / "o3"
    loops.build(family_source("mixed"), ["-O3"], o3, clang=info.tool("clang"))
    for k in ("mixed_rec_map", "mixed_long_body", "mixed_three_stage"):
        assert loops.run(exe, k) == loops.run(o3, k)
