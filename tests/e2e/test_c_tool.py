"""End to end: mlb-loop-pragmas (integrations/c), the C99 source-to-source
tool on libclang's C API and this library's C API.

* It is C99: its source compiles with -std=c99 -Wall -Wextra -Werror
  -pedantic under gcc and clang-19, and the tool has no C++ source.
* A model served over pipes (bitstream, JSON) or gRPC, or run in-process by
  ONNX Runtime, decides every loop; the pragmas are where it said (a
  vectorize pragma is dropped on a loop that accumulates into a float: it
  would let LLVM reorder the sum), the transformed files compile with
  clang-19 and print what the originals print.
* No model, a missing channel or model file, a silent (slow) peer, a dead
  peer, an out-of-range answer: a warning, no more pragmas, exit 0.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from build_components import require_built

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "programs" / "c_tool"
TOOL_SRC = REPO / "integrations" / "c"
TOOL = "mlb-loop-pragmas"


@pytest.fixture(scope="module")
def ct(mlbridge_pkg, llvm_major):
    """The tool on the libclang of each LLVM version the build has
    (mlb-loop-pragmas, mlb-loop-pragmas-22)."""
    import mlbridge.c_tool as ct
    return ct, require_built(ct.TOOL_SECTIONS[llvm_major],
                             lambda: ct.find_tool(llvm=llvm_major))


@pytest.fixture(scope="module")
def programs():
    progs = sorted(PROGRAMS.glob("*.c"))
    assert len(progs) >= 3
    return progs


@pytest.fixture(scope="module")
def reference(programs, clang, tmp_path_factory, e2e):
    out = tmp_path_factory.mktemp("ref")
    ref = {}
    for p in programs:
        exe = out / p.stem
        e2e.run_checked([clang, "-O2", "-Werror", str(p), "-o", str(exe)])
        ref[p.stem] = e2e.run_checked([str(exe)])
    return ref


def compile_and_run(clang, src: Path, exe: Path) -> str:
    # -Werror: a pragma clang cannot honour (-Wpass-failed) is an error too.
    subprocess.run([clang, "-O2", "-Werror", str(src), "-o", str(exe)], check=True,
                   capture_output=True, text=True, timeout=60)
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True,
                          timeout=60).stdout


def log_entry(path: Path):
    lines = path.read_text().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def test_tool_is_c99_warning_clean(ct, clang, llvm_major, tmp_path):
    sources = [p for p in TOOL_SRC.iterdir() if p.name != "CMakeLists.txt"]
    assert sources and all(p.suffix == ".c" for p in sources), f"not only C: {sources}"
    for cc in ("cc", clang):
        for p in sources:
            res = subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic",
                                  "-fsyntax-only", f"-I{REPO / 'include'}",
                                  "-isystem", f"/usr/lib/llvm-{llvm_major}/include",
                                  "-DMLBRIDGE_INTEGRATION_HAVE_ONNX=1", "-DMLBRIDGE_INTEGRATION_HAVE_GRPC=1",
                                  str(p)], capture_output=True, text=True, timeout=60)
            assert res.returncode == 0, f"{cc} {p.name}:\n{res.stderr}"


def _policy(f):
    # Innermost counted loops: unroll by 4 (or vectorize if they do float
    # work); outer loops: nothing; while/do loops: unroll by 2.
    if f["loop_kind"] != 0:
        return 1
    if not f["innermost"]:
        return 0
    return 5 if f["float_ops"] > 0 else 2


@pytest.mark.parametrize("transport,serdes", [("pipe", "bitstream"), ("pipe", "json"),
                                              ("grpc", "bitstream")])
def test_model_places_pragmas_and_results_hold(ct, programs, reference, clang, tmp_path,
                                               transport, serdes):
    m, info = ct
    if transport == "grpc" and not info.has_runner("grpc"):
        pytest.fail("the gRPC runner is not built into the tool", pytrace=False)
    for p in programs:
        out, log = tmp_path / f"{p.stem}.c", tmp_path / f"{p.stem}.log"
        run = m.serve_pragmas(info, p, out, _policy, transport=transport, serdes=serdes,
                              options=["--log", log])
        assert run.stdout == ""
        assert list(run.feature_names) == list(m.FEATURES)
        entry = log_entry(log)
        assert entry["runner"] == transport and entry["fallbacks"] == 0
        assert entry["actions"] == list(run.decisions) and len(run.decisions) >= 5
        # Only vectorize pragmas are ever dropped (loops accumulating floats).
        for asked, applied in zip(entry["actions"], entry["applied"]):
            assert applied == asked or (applied == 0 and "vectorize_width" in m.ACTIONS[asked])
        text = out.read_text()
        # Exactly the pragmas applied, each on the line before a loop.
        want = [m.ACTIONS[a] for a in entry["applied"] if a]
        got = [line.strip() for line in text.splitlines() if "#pragma clang loop" in line]
        assert got == want
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if "#pragma clang loop" in line:
                assert re.match(r"\s*(for|while|do)\b", lines[i + 1]), lines[i + 1]
        # Removing the pragmas gives the input back.
        stripped = "\n".join(line for line in lines if "#pragma clang loop" not in line)
        assert re.sub(r"\s+", " ", stripped) == re.sub(r"\s+", " ", p.read_text().rstrip("\n"))
        assert compile_and_run(clang, out, tmp_path / p.stem) == reference[p.stem]


def test_features_are_the_loops(ct, tmp_path):
    m, info = ct
    run = m.serve_pragmas(info, PROGRAMS / "linalg.c", tmp_path / "out.c", lambda f: 0)
    rows = [dict(zip(run.feature_names, r)) for r in run.features.tolist()]
    by_fn = {}
    for ctx, r in zip(run.contexts, rows):
        by_fn.setdefault(ctx, []).append(r)
    # matmul: three nested counted loops of 48, the innermost at depth 2.
    mm = by_fn["matmul"]
    assert [r["depth"] for r in mm] == [0, 1, 2]
    assert [r["trip_count"] for r in mm] == [48, 48, 48]
    assert [r["innermost"] for r in mm] == [0, 0, 1]
    # trisolve: 1..N (47 trips), then an inner loop bounded by i (unknown).
    assert [r["trip_count"] for r in by_fn["trisolve"]] == [47, -1]
    text = m.serve_pragmas(info, PROGRAMS / "text.c", tmp_path / "t.c", lambda f: 0)
    kinds = [dict(zip(text.feature_names, r))["loop_kind"] for r in text.features.tolist()]
    assert kinds.count(1) == 2 and kinds.count(2) == 1  # two whiles, one do
    # The macro's loop (CLEAR) is not asked about: 7 loops are written out.
    assert len(kinds) == 7


def _onnx_model(path: Path, ct_mod):
    """A small real ONNX model: int64 features -> float scores per action."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(7)
    w = rng.normal(size=(len(ct_mod.FEATURES), len(ct_mod.ACTIONS))).astype(np.float32)
    inputs = [helper.make_tensor_value_info(f, TensorProto.FLOAT, [1]) for f in ct_mod.FEATURES]
    nodes = [helper.make_node("Concat", list(ct_mod.FEATURES), ["flat"], axis=0),
             helper.make_node("Reshape", ["flat", "shape"], ["row"]),
             helper.make_node("Tanh", ["row"], ["sq"]),
             helper.make_node("MatMul", ["sq", "w"], [ct_mod.ADVICE])]
    graph = helper.make_graph(
        nodes, "c_tool_test", inputs,
        [helper.make_tensor_value_info(ct_mod.ADVICE, TensorProto.FLOAT, [1, len(ct_mod.ACTIONS)])],
        [numpy_helper.from_array(np.array([1, len(ct_mod.FEATURES)], np.int64), "shape"),
         numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return w


def test_onnx_model_decides_as_in_python(ct, programs, reference, clang, tmp_path):
    m, info = ct
    if not info.has_runner("onnx"):
        pytest.fail("the ONNX runner is not built into the tool", pytrace=False)
    model = tmp_path / "policy.onnx"
    w = _onnx_model(model, m)
    for p in programs:
        # The features, as the tool sends them, from a pipe run.
        probe = m.serve_pragmas(info, p, tmp_path / "probe.c", lambda f: 0)
        expected = np.argmax(np.tanh(probe.features.astype(np.float32)) @ w, axis=1).tolist()
        out, log = tmp_path / f"{p.stem}.c", tmp_path / f"{p.stem}.log"
        res = subprocess.run(m.command(info, p, out, "--model", model, "--log", log),
                             capture_output=True, text=True, timeout=60)
        # Nothing from the tool on stderr (an ASan build may add its own report).
        assert res.returncode == 0 and res.stdout == "" and TOOL not in res.stderr, res.stderr
        entry = log_entry(log)
        assert entry["runner"] == "onnx" and entry["actions"] == expected
        assert entry["asked"] == len(expected)
        assert len(set(expected)) > 1, "the test model should make different decisions"
        assert compile_and_run(clang, out, tmp_path / p.stem) == reference[p.stem]


def test_no_model_leaves_the_file_unchanged(ct, programs, tmp_path):
    m, info = ct
    for p in programs:
        out, log = tmp_path / f"{p.stem}.c", tmp_path / f"{p.stem}.log"
        res = subprocess.run(m.command(info, p, out, "--log", log), capture_output=True,
                             text=True, timeout=60)
        assert res.returncode == 0 and res.stdout == "" and TOOL not in res.stderr
        assert out.read_bytes() == p.read_bytes()
        assert log_entry(log)["runner"] == "default"


@pytest.mark.parametrize("options,message", [
    (("--channel", "{tmp}/nobody"), "no FIFO pair"),
    (("--model", "{tmp}/missing.onnx"), "cannot use the model"),
    (("--server", "127.0.0.1:1", "--timeout-ms", "500"), None),
])
def test_absent_model_falls_back(ct, tmp_path, options, message):
    m, info = ct
    src = PROGRAMS / "linalg.c"
    out, log = tmp_path / "out.c", tmp_path / "log"
    opts = [o.format(tmp=tmp_path) for o in options]
    start = time.monotonic()
    res = subprocess.run(m.command(info, src, out, *opts, "--log", log), capture_output=True,
                         text=True, timeout=60)
    assert time.monotonic() - start < 20
    assert res.returncode == 0 and res.stdout == ""
    assert "warning" in res.stderr
    if message:
        assert message in res.stderr
    assert out.read_bytes() == src.read_bytes()


def _serve_then(ct, e2e, tmp_path, answer):
    m, info = ct
    src = PROGRAMS / "linalg.c"
    out, log = tmp_path / "out.c", tmp_path / "log"

    def first_loop_then(iface):
        assert iface.evaluate() is not None
        iface.populate_buffer(2)  # the first loop gets unroll_count(4)
        assert iface.evaluate() is not None
        answer(iface)

    rc, stdout, stderr = e2e.run_against_pipe(
        lambda base: m.command(info, src, out, "--channel", base, "--log", log,
                               "--timeout-ms", "1000"), first_loop_then)
    return rc, stdout, stderr, log_entry(log), out.read_text(), src


@pytest.mark.parametrize("how", ["slow", "dead", "out-of-range"])
def test_failing_model_falls_back(ct, clang, reference, tmp_path, how, e2e):
    answers = {"slow": lambda iface: time.sleep(1.5),
               "dead": lambda iface: iface.close(),
               "out-of-range": lambda iface: iface.populate_buffer(99)}
    start = time.monotonic()
    rc, stdout, stderr, entry, text, src = _serve_then(ct, e2e, tmp_path, answers[how])
    assert time.monotonic() - start < 30
    assert rc == 0 and stdout == ""
    assert "no more pragmas" in stderr
    assert entry["fallbacks"] == 1 and entry["asked"] == 2
    # The first loop keeps the model's pragma; every other loop has none.
    assert text.count("#pragma clang loop") == 1
    assert "#pragma clang loop unroll_count(4)" in text
    out = tmp_path / "fallback.c"
    out.write_text(text)
    assert compile_and_run(clang, out, tmp_path / "fallback") == reference[src.stem]


def test_rejects_a_file_that_does_not_compile(ct, tmp_path):
    m, info = ct
    bad = tmp_path / "bad.c"
    bad.write_text("int main(void) { for (int i = 0; i < 3; ++i) { return undefined_name; } }\n")
    out = tmp_path / "out.c"
    res = subprocess.run(m.command(info, bad, out), capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and "does not compile" in res.stderr
    assert not out.exists()
