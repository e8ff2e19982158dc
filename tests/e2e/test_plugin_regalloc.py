"""End to end: -regalloc=mlbridge (integrations/llvm/regalloc) in the stock
llc-19 / clang-19 on real C programs, and the mlbridge-ra-score pass.

* Register pressure (programs/regalloc/pressure.c: GPR and XMM, loops,
  calls): the heuristic spills, splits (around loops and per block) and
  evicts; -verify-machineinstrs is clean; the program prints what greedy's build prints.
* The plugin tests' programs (hand-written and csmith) with the heuristic and
  the seeded random legal policy (fuzzing): verifier clean, same output as
  greedy.
* The score of a hand-written MIR equals its hand-worked value; every
  allocator (ours, greedy, basic, fast) is scored by the same pass.
* A Python policy over pipes and the same policy as an ONNX model in-process
  take identical decisions (the decision trace hash) and allocations.
* Illegal answers are replaced and counted; a tiny budget hands the rest to
  the fallback; clang -fplugin loads the allocator.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

E2E = Path(__file__).resolve().parent
PROGRAMS = E2E / "programs" / "regalloc"
PRESSURE = PROGRAMS / "pressure.c"
RUN_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def plugins(plugins):
    if plugins.regalloc is None:
        pytest.fail("the build manifest has no MLBridgeRegAlloc.so (LLVM 19 plugins)")
    return plugins


@pytest.fixture(scope="module")
def ra(mlbridge_pkg):
    from mlbridge.llvm.plugins import regalloc
    return regalloc


def run(cmd):
    from mlbridge.toolchain import run_tool
    return run_tool(cmd, timeout=RUN_TIMEOUT)


def build_and_run(ra, plugins, ir, tmp: Path, allocator, policy=None, seed=None, tag=""):
    """(program output, allocation) of ir built with allocator/policy."""
    obj = tmp / f"{ir.stem}-{allocator}-{tag}.o"
    alloc = ra.allocate(ir, allocator, policy=policy, seed=seed, plugins=plugins,
                        object_file=obj)
    exe = obj.with_suffix("")
    run(["clang-19", str(obj), "-o", str(exe)])
    return run([exe]), alloc


@pytest.fixture(scope="module")
def pressure_ir(ra, tmp_path_factory):
    return ra.optimized_ir(PRESSURE, tmp_path_factory.mktemp("ra") / "pressure.ll")


def test_pressure_spills_splits_evicts_and_matches_greedy(ra, plugins, pressure_ir, tmp_path):
    want, greedy = build_and_run(ra, plugins, pressure_ir, tmp_path, "greedy")
    got, ours = build_and_run(ra, plugins, pressure_ir, tmp_path, "mlbridge", "heuristic")
    assert got == want and len(want.splitlines()) == 3
    log = {line["function"]: line for line in ours.log}
    assert set(log) >= {"gpr_pressure", "xmm_pressure", "mixed", "main"}
    for key in ("spills", "splits", "loop_splits", "local_splits", "evictions"):
        assert sum(line[key] for line in log.values()) > 0, key
    # All three kinds of split: around loops, per block, inside a block.
    assert sum(line["splits"] - line["loop_splits"] - line["local_splits"]
               for line in log.values()) > 0
    assert all(line["illegal"] == 0 and line["fallbacks"] == 0 for line in log.values())
    assert all(line["runner"] == "heuristic" for line in log.values())
    # Scored the same way: every function of both allocations.
    assert set(ours.scores) == set(greedy.scores) >= set(log)
    assert ours.total > 0 and greedy.total > 0


@pytest.fixture(scope="module")
def corpus_greedy(ra, plugins, plugin_corpora, clang19, tmp_path_factory):
    """The plugin tests' programs (hand-written and csmith) optimized with
    opt -O2 (their IR is unoptimized, for the inliner tests): name -> (IR,
    what greedy's build prints)."""
    tmp = tmp_path_factory.mktemp("ra-corpus")
    out = {}
    for name, prog in plugin_corpora(clang19).items():
        ir = tmp / f"{name}.ll"
        run(["opt-19", "-O2", str(prog["ir"]), "-S", "-o", str(ir)])
        out[name] = (ir, build_and_run(ra, plugins, ir, tmp, "greedy")[0])
    return out


@pytest.mark.parametrize("policy,seed", [("heuristic", None), ("random", 1)])
def test_plugin_corpus_outputs_equal_greedy(ra, plugins, corpus_greedy, policy, seed, tmp_path):
    """Every program, verifier on, prints what greedy's build prints."""
    assert len(corpus_greedy) >= 6
    for name, (ir, want) in corpus_greedy.items():
        got, ours = build_and_run(ra, plugins, ir, tmp_path, "mlbridge", policy, seed,
                                  tag=f"{policy}{seed}")
        assert got == want, f"{name}: {policy} seed {seed} prints something else"
        assert ours.log and all(line["runner"] == policy for line in ours.log)
        assert set(ours.scores) >= {line["function"] for line in ours.log}


def test_score_of_hand_worked_example(ra, plugins, tmp_path):
    out = tmp_path / "score.jsonl"
    run([plugins.tool("llc"), f"-load={plugins.regalloc}", "-run-pass=mlbridge-ra-score",
         f"-mlbridge-ra-score-file={out}", str(PROGRAMS / "score_example.mir"),
         "-o", "/dev/null"])
    import json
    (line,) = [json.loads(x) for x in out.read_text().splitlines()]
    # programs/regalloc/score_example.mir works it out by hand.
    assert line["function"] == "example"
    assert line["copies"] == pytest.approx(33) and line["loads"] == pytest.approx(32)
    assert line["stores"] == pytest.approx(1) and line["load_stores"] == pytest.approx(32)
    assert line["cheap_remats"] == pytest.approx(32) and line["expensive_remats"] == 0
    assert line["score"] == pytest.approx(302)


def test_every_allocator_scored(ra, plugins, pressure_ir):
    totals = {a: ra.allocate(pressure_ir, a, plugins=plugins,
                             policy="heuristic" if a == "mlbridge" else None).total
              for a in ra.ALLOCATORS}
    assert all(t > 0 for t in totals.values())
    # fast allocates without live ranges: it spills around every block.
    assert totals["fast"] > totals["greedy"]


def first_legal_onnx(path: Path):
    """The policy first_legal as an ONNX model: the asked agent's mask as
    scores (the allocator takes the first legal argmax)."""
    import onnx
    from onnx import TensorProto, helper
    inputs = [helper.make_tensor_value_info("agent", TensorProto.INT64, [1]),
              helper.make_tensor_value_info("node_mask", TensorProto.FLOAT, [1, 64]),
              helper.make_tensor_value_info("action_mask", TensorProto.FLOAT, [1, 3]),
              helper.make_tensor_value_info("register_mask", TensorProto.FLOAT, [1, 32])]
    pads_a = helper.make_tensor("pads_a", TensorProto.INT64, [4], [0, 0, 0, 61])
    pads_r = helper.make_tensor("pads_r", TensorProto.INT64, [4], [0, 0, 0, 32])
    nodes = [helper.make_node("Pad", ["action_mask", "pads_a"], ["a64"]),
             helper.make_node("Pad", ["register_mask", "pads_r"], ["r64"]),
             helper.make_node("Concat", ["node_mask", "a64", "r64"], ["all"], axis=0),
             helper.make_node("Gather", ["all", "agent"], ["scores"], axis=0)]
    graph = helper.make_graph(nodes, "first_legal", inputs,
                              [helper.make_tensor_value_info("scores", TensorProto.FLOAT,
                                                             [1, 64])],
                              initializer=[pads_a, pads_r])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def test_pipes_and_in_process_decide_identically(ra, plugins, pressure_ir, tmp_path):
    if not plugins.has_runner("onnx"):
        pytest.fail("the plugins were built without the ONNX runner")
    model = first_legal_onnx(tmp_path / "first_legal.onnx")
    piped = ra.allocate(pressure_ir, "mlbridge", policy=ra.first_legal, plugins=plugins)
    inproc = ra.allocate(pressure_ir, "mlbridge", policy=model, plugins=plugins)
    assert [x["runner"] for x in piped.log] == ["pipe"] * len(piped.log)
    assert [x["runner"] for x in inproc.log] == ["onnx"] * len(inproc.log)
    trace = lambda a: [(x["function"], x["asked"], x["trace"], x["illegal"]) for x in a.log]
    assert trace(piped) == trace(inproc)
    assert all(x["illegal"] == 0 and x["asked"] > 0 for x in piped.log)
    assert {f: s.score for f, s in piped.scores.items()} == \
        {f: s.score for f, s in inproc.scores.items()}


def test_illegal_answers_are_replaced_and_counted(ra, plugins, pressure_ir, tmp_path):
    want, _ = build_and_run(ra, plugins, pressure_ir, tmp_path, "greedy")
    got, alloc = build_and_run(ra, plugins, pressure_ir, tmp_path, "mlbridge",
                               lambda obs: 63, tag="illegal")
    assert got == want
    # 63 is never a legal action (3 choices) nor, here, a legal register.
    assert all(x["illegal"] > 0 for x in alloc.log)


def test_budget_fallback(ra, plugins, pressure_ir, tmp_path, monkeypatch):
    monkeypatch.setenv("MLBRIDGE_RA_BUDGET", "5")
    want, _ = build_and_run(ra, plugins, pressure_ir, tmp_path, "greedy")
    got, alloc = build_and_run(ra, plugins, pressure_ir, tmp_path, "mlbridge", "heuristic",
                               tag="budget")
    assert got == want
    assert all(x["rounds"] - x["fallbacks"] <= 5 for x in alloc.log)  # the policy's
    assert sum(x["fallbacks"] for x in alloc.log) > 0


def test_clang_fplugin(plugins, tmp_path):
    exe = tmp_path / "pressure"
    log = tmp_path / "ra.jsonl"
    run(["clang-19", "-O2", f"-fplugin={plugins.regalloc}", "-mllvm", "-regalloc=mlbridge",
         "-mllvm", f"-mlbridge-ra-log={log}", str(PRESSURE), "-o", str(exe)])
    ref = tmp_path / "ref"
    run(["clang-19", "-O0", str(PRESSURE), "-o", str(ref)])
    assert run([exe]) == run([ref])
    assert "gpr_pressure" in log.read_text()


def test_greedy_score_agrees_with_its_remarks(ra, plugins, pressure_ir, tmp_path):
    """Cross-check on greedy: its own frequency-weighted spill, reload and
    copy costs (-pass-remarks-output) are part of what our score counts."""
    import yaml
    remarks = tmp_path / "remarks.yaml"
    run([plugins.tool("llc"), "-O2", str(pressure_ir), "-o", "/dev/null",
         f"-pass-remarks-output={remarks}"])
    costs = {}
    for doc in yaml.load_all(remarks.read_text().replace("--- !", "--- #"),
                             Loader=yaml.SafeLoader):
        if doc and doc.get("Name") == "SpillReloadCopies":
            args = {k: v for a in doc["Args"] for k, v in a.items()}
            costs[doc["Function"]] = {k: float(v) for k, v in args.items() if "Cost" in k}
    greedy = ra.allocate(pressure_ir, "greedy", plugins=plugins)
    assert costs.get("gpr_pressure", {}).get("TotalSpillsCost", 0) > 0
    for fn, c in costs.items():
        s = greedy.scores[fn]
        tol = 1e-6 * (1 + s.score)
        assert s.stores + s.load_stores + tol >= c.get("TotalSpillsCost", 0) + \
            c.get("TotalFoldedSpillsCost", 0), fn
        assert s.loads + s.load_stores + tol >= c.get("TotalReloadsCost", 0) + \
            c.get("TotalFoldedReloadsCost", 0), fn
        assert s.copies + tol >= c.get("TotalCopiesCost", 0), fn


def test_llvm22_build_loads_and_matches(mlbridge_pkg, tmp_path):
    """The same allocator built for LLVM 22 loads into llc-22: verifier
    clean, the program prints what clang-22's greedy build prints."""
    from build_components import require_built
    from mlbridge.llvm.plugins import find_plugins
    p22 = require_built("llvm_plugins_llvm22", lambda: find_plugins(llvm=22))
    assert p22.regalloc is not None and p22.regalloc.is_file()
    clang22 = p22.tool("clang")
    ir = tmp_path / "pressure.ll"
    run([clang22, "-O2", "-S", "-emit-llvm", str(PRESSURE), "-o", str(ir)])
    ref = tmp_path / "ref"
    run([clang22, "-O2", str(PRESSURE), "-o", str(ref)])
    want = run([ref])
    for policy in ("heuristic", "random"):
        obj = tmp_path / f"{policy}.o"
        log = tmp_path / f"{policy}.jsonl"
        run([p22.tool("llc"), "-O2", "-relocation-model=pic", f"-load={p22.regalloc}",
             "-regalloc=mlbridge", f"-mlbridge-ra-policy={policy}", "-verify-machineinstrs",
             f"-mlbridge-ra-log={log}", "-filetype=obj", str(ir), "-o", str(obj)])
        exe = tmp_path / policy
        run([clang22, str(obj), "-o", str(exe)])
        assert run([exe]) == want, policy
        assert '"function":"gpr_pressure"' in log.read_text()
