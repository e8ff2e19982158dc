"""End to end: IR2Vec embeddings (docs/ir2vec.md).

* The formula: on a hand-written module, both versions give exactly what
  the published definition computes from the vocabulary file (symbolic and
  flow-aware), checked in numpy here.
* Cross-version: our LLVM 19 embedder and LLVM 22's own, each in its opt
  with the same vocabulary (text for ours, the converted JSON for LLVM's),
  give the same function, module and block vectors to 1e-5 on the C
  programs of tests/e2e/programs at -O0, -O2 and -O1 -g.
* Determinism: the same module twice gives the same bits.
* Python = plugin: mlbridge.ir2vec.embed returns what the plugin wrote.
* Vocabulary errors: a missing file, a truncated line, a wrong dimension, a
  non-number, an empty file: opt fails with a message naming the file and
  the line; LLVM 22 reports its own loader's error.
* Bad arguments are refused before opt runs; an opt that exceeds the
  timeout is killed and reported.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from build_components import build_dir, component_built, require_component
from mlbridge import toolchain

require_component("ir2vec")

PROGRAMS = ("arith", "mixer", "sha256", "sort", "strings")
TOL = 1e-5
VARIANTS = {"O0": ["-O0", "-Xclang", "-disable-O0-optnone"], "O2": ["-O2"], "Og": ["-O1", "-g"]}

HAND_WRITTEN = """\
define i32 @f(i32 %a, i32 %b) {
entry:
  %s = add i32 %a, %b
  %p = alloca float
  store float 1.0, ptr %p
  ret i32 %s
}
declare void @g()
"""


@pytest.fixture(scope="module")
def ir2vec():
    import mlbridge.ir2vec as m
    return m


@pytest.fixture(scope="module")
def llvm22():
    require_component("ir2vec_llvm22")
    return 22


@pytest.fixture(scope="module")
def vocab_text(ir2vec):
    return ir2vec.find(19, build_dir()).vocabulary


def _read_vocab(path):
    out = {}
    for line in Path(path).read_text().splitlines():
        line = line.strip().rstrip(",")
        if line:
            name, values = line.split(":", 1)
            out[name] = np.array(json.loads(values), dtype=np.float64)
    return out


@pytest.fixture(scope="module")
def modules(tmp_path_factory, e2e):
    """The test programs compiled by clang-19 at -O0 (optnone off), -O2 and
    -O1 -g (debug records on 22, debug intrinsics or records on 19)."""
    return e2e.program_bitcode(tmp_path_factory.mktemp("ir2vec-modules"), PROGRAMS, VARIANTS)


def _assert_close(a, b, what):
    assert a.shape == b.shape, what
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    assert diff <= TOL, f"{what}: max |19 - 22| = {diff}"


# ---- the formula -----------------------------------------------------------

def _expected(vocab, kind):
    w_o, w_t, w_a = 1.0, 0.5, float(np.float32(0.2))
    V = lambda k: vocab[k]  # noqa: E731
    add = w_o * V("add") + w_t * V("integerTy") + w_a * (V("variable") + V("variable"))
    alloca = w_o * V("alloca") + w_t * V("pointerTy") + w_a * V("constant")  # the count
    if kind == "symbolic":
        store = w_o * V("store") + w_t * V("voidTy") + w_a * (V("constant") + V("pointer"))
        ret = w_o * V("ret") + w_t * V("voidTy") + w_a * V("variable")
    else:  # an operand defined by an instruction contributes its vector
        store = w_o * V("store") + w_t * V("voidTy") + w_a * V("constant") + alloca
        ret = w_o * V("ret") + w_t * V("voidTy") + add
    return add + alloca + store + ret


@pytest.mark.parametrize("kind", ["symbolic", "flow-aware"])
@pytest.mark.parametrize("llvm", [19, 22])
def test_formula_on_a_hand_written_module(ir2vec, vocab_text, tmp_path, llvm, kind):
    if llvm == 22:
        require_component("ir2vec_llvm22")
    ll = tmp_path / "f.ll"
    ll.write_text(HAND_WRITTEN)
    got = ir2vec.embed(ll, llvm=llvm, kind=kind, build_dir=build_dir())
    assert sorted(got) == ["f"]  # definitions only
    expected = _expected(_read_vocab(vocab_text), kind)
    assert np.allclose(got["f"], expected, rtol=0, atol=1e-12), \
        float(np.max(np.abs(got["f"] - expected)))
    module = ir2vec.embed(ll, llvm=llvm, kind=kind, level="module", build_dir=build_dir())
    assert np.array_equal(module, got["f"])


# ---- LLVM 19 (ours) = LLVM 22 (LLVM's) -------------------------------------

@pytest.mark.parametrize("kind", ["symbolic", "flow-aware"])
@pytest.mark.parametrize("program", PROGRAMS)
def test_same_vectors_on_llvm19_and_llvm22(ir2vec, modules, llvm22, program, kind):
    for opt in VARIANTS:
        bc = modules[f"{program}.{opt}"]
        ours = ir2vec.embed(bc, llvm=19, kind=kind, level="block", build_dir=build_dir())
        llvms = ir2vec.embed(bc, llvm=22, kind=kind, level="block", build_dir=build_dir())
        assert list(ours) == list(llvms) and ours, f"{program}.{opt}: function lists differ"
        for name in ours:
            _assert_close(ours[name], llvms[name], f"{program}.{opt} {name} blocks")
        f19 = ir2vec.embed(bc, llvm=19, kind=kind, build_dir=build_dir())
        f22 = ir2vec.embed(bc, llvm=22, kind=kind, build_dir=build_dir())
        for name in f19:
            _assert_close(f19[name], f22[name], f"{program}.{opt} {name}")
            assert np.any(f19[name] != 0), f"{program}.{opt} {name}: zero vector"
        _assert_close(ir2vec.embed(bc, llvm=19, kind=kind, level="module", build_dir=build_dir()),
                      ir2vec.embed(bc, llvm=22, kind=kind, level="module", build_dir=build_dir()),
                      f"{program}.{opt} module")


def test_kinds_differ(ir2vec, modules):
    bc = modules["sort.O2"]
    sym = ir2vec.embed(bc, kind="symbolic", level="module", build_dir=build_dir())
    flow = ir2vec.embed(bc, kind="flow-aware", level="module", build_dir=build_dir())
    assert not np.allclose(sym, flow)


# ---- determinism, Python = plugin --------------------------------------------

@pytest.mark.parametrize("llvm", [19, 22])
def test_deterministic(ir2vec, modules, llvm):
    if llvm == 22:
        require_component("ir2vec_llvm22")
    bc = modules["sha256.O2"]
    a = ir2vec.embed(bc, llvm=llvm, level="block", build_dir=build_dir())
    b = ir2vec.embed(bc, llvm=llvm, level="block", build_dir=build_dir())
    assert list(a) == list(b)
    for name in a:
        assert np.array_equal(a[name], b[name])


@pytest.mark.parametrize("llvm", [19, 22])
def test_python_returns_what_the_plugin_writes(ir2vec, modules, tmp_path, llvm):
    if llvm == 22:
        require_component("ir2vec_llvm22")
    bc = modules["strings.O0"]
    setup = ir2vec.find(llvm, build_dir())
    out = tmp_path / "v.json"
    toolchain.run_tool(ir2vec.command(bc, out, setup), timeout=120)
    raw = json.loads(out.read_text())
    assert raw["dimension"] == 300 and raw["llvm"].startswith(f"{llvm}.")
    assert raw["embedder"] == ("llvm" if llvm == 22 else "mlbridge")
    got = ir2vec.embed(bc, llvm=llvm, build_dir=build_dir())
    assert list(got) == [f["name"] for f in raw["functions"]]
    for f in raw["functions"]:
        assert np.array_equal(got[f["name"]], np.array(f["vector"]))
    assert np.array_equal(ir2vec.embed(bc, llvm=llvm, level="module", build_dir=build_dir()),
                          np.array(raw["module"]))


# ---- vocabulary errors -----------------------------------------------------------

def _broken(tmp_path, vocab_text, edit):
    lines = Path(vocab_text).read_text().splitlines(keepends=True)
    path = tmp_path / "vocab.txt"
    path.write_text("".join(edit(lines)))
    return path


@pytest.mark.parametrize("case,edit,message", [
    ("truncated", lambda l: l[:4] + [l[4][:len(l[4]) // 2]], "line 5: truncated"),
    ("dimension", lambda l: l[:2] + [l[2].replace(", ", "]", 1).split("]")[0] + "],\n"] + l[3:],
     "line 3: 'and' has 1 values, expected 300"),
    ("not-a-number", lambda l: l[:1] + [l[1].replace("[", "[x", 1)] + l[2:],
     "line 2: value 1 of 'alloca' is not a number ('x"),
    ("no-colon", lambda l: ["add [1, 2]\n"] + l[1:], "line 1: expected 'name:[v1, v2, ...]'"),
    ("empty", lambda l: ["\n"], "has no entries"),
])
def test_vocabulary_errors(ir2vec, modules, vocab_text, tmp_path, case, edit, message):
    path = _broken(tmp_path, vocab_text, edit)
    with pytest.raises(ir2vec.IR2VecError) as err:
        ir2vec.embed(modules["sort.O0"], vocabulary=path, build_dir=build_dir())
    assert f"IR2Vec vocabulary '{path}'" in str(err.value)
    assert message in str(err.value)


def test_missing_vocabulary(ir2vec, modules, tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(ir2vec.IR2VecError) as err:
        ir2vec.embed(modules["sort.O0"], vocabulary=missing, build_dir=build_dir())
    assert f"IR2Vec vocabulary '{missing}' cannot be opened" in str(err.value)
    assert "scripts/deps/ir2vec.sh" in str(err.value)


def test_missing_vocabulary_llvm22(ir2vec, modules, llvm22, tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(ir2vec.IR2VecError) as err:
        ir2vec.embed(modules["sort.O0"], llvm=22, vocabulary=missing, build_dir=build_dir())
    assert "Error reading vocabulary" in str(err.value) and str(missing) in str(err.value)


def test_bad_arguments(ir2vec, modules, tmp_path):
    with pytest.raises(ValueError):
        ir2vec.embed(modules["sort.O0"], level="loop", build_dir=build_dir())
    with pytest.raises(ValueError):
        ir2vec.embed(modules["sort.O0"], kind="dynamic", build_dir=build_dir())
    with pytest.raises(ValueError):
        ir2vec.embed(modules["sort.O0"], llvm=20, build_dir=build_dir())
    with pytest.raises(FileNotFoundError):
        ir2vec.embed(tmp_path / "none.bc", build_dir=build_dir())


def test_components_recorded():
    assert component_built("ir2vec") is True


def test_timeout_kills_opt(ir2vec, modules):
    with pytest.raises(ir2vec.IR2VecError) as err:
        ir2vec.embed(modules["sha256.O0"], timeout=1e-4, build_dir=build_dir())
    assert "did not finish" in str(err.value) and "(killed)" in str(err.value)
