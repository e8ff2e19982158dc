"""End to end: IR2Vec vectors as plugin features (PluginEmbeddings.h,
docs/ir2vec.md "From a plugin"), through the MLBridgeIR2Vec pass, whose
output is now computed by PluginEmbeddings on both versions:

* LLVM 22: PluginEmbeddings' vocabulary (read by our code from the JSON into
  LLVM's ir2vec::Vocabulary) gives bit-identical function, block and
  instruction vectors to LLVM's own vocabulary analysis (-ir2vec-vocab-path).
* Both versions: instruction vectors sum to their block's vector; they are
  equal across versions; the hand-written module's instruction vectors are
  what the published formula gives.
* The vocabulary is found with no option and no environment variable (the
  build's default); $MLBRIDGE_IR2VEC_VOCAB_DIR overrides it; a missing or
  malformed file is a clear error naming it.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from build_components import build_dir, require_component
from mlbridge import toolchain

require_component("ir2vec")

PROGRAMS = ("mixer", "sort", "strings")
VERSIONS = [19, 22]


@pytest.fixture(scope="module")
def ir2vec():
    import mlbridge.ir2vec as m
    return m


def _need(llvm):
    if llvm == 22:
        require_component("ir2vec_llvm22")


@pytest.fixture(scope="module")
def modules(tmp_path_factory, e2e):
    return e2e.program_bitcode(tmp_path_factory.mktemp("ir2vec-api"), PROGRAMS,
                               {"O0": ["-O0", "-Xclang", "-disable-O0-optnone"], "O2": ["-O2"]})


def _all_levels(ir2vec, bc, **kw):
    return {level: ir2vec.embed(bc, level=level, build_dir=build_dir(), **kw)
            for level in ("module", "function", "block", "instruction")}


def _assert_same(a, b, what):
    assert np.array_equal(a["module"], b["module"]), what
    for level in ("function", "block", "instruction"):
        assert list(a[level]) == list(b[level]) and a[level], f"{what} {level}"
        for name in a[level]:
            assert np.array_equal(a[level][name], b[level][name]), f"{what} {level} {name}"


@pytest.mark.parametrize("kind", ["symbolic", "flow-aware"])
def test_llvm22_plugin_loader_equals_llvm_analysis(ir2vec, modules, kind):
    _need(22)
    for key, bc in modules.items():
        ours = _all_levels(ir2vec, bc, llvm=22, kind=kind, loader="mlbridge")
        llvms = _all_levels(ir2vec, bc, llvm=22, kind=kind, loader="llvm")
        _assert_same(ours, llvms, f"{key} {kind}")


@pytest.mark.parametrize("kind", ["symbolic", "flow-aware"])
@pytest.mark.parametrize("llvm", VERSIONS)
def test_instructions_sum_to_blocks(ir2vec, modules, llvm, kind):
    _need(llvm)
    for key, bc in modules.items():
        blocks = ir2vec.embed(bc, llvm=llvm, kind=kind, level="block", build_dir=build_dir())
        insts = ir2vec.embed(bc, llvm=llvm, kind=kind, level="instruction",
                             build_dir=build_dir())
        funcs = ir2vec.embed(bc, llvm=llvm, kind=kind, build_dir=build_dir())
        for name in funcs:
            assert insts[name].shape[0] > 0 and np.any(insts[name] != 0)
            # Every instruction belongs to one block; the function sums the
            # reachable blocks (all of them at -O2 and -O0 here).
            assert np.allclose(insts[name].sum(axis=0), blocks[name].sum(axis=0),
                               rtol=0, atol=1e-9), f"{key} {name}"
            assert np.allclose(blocks[name].sum(axis=0), funcs[name], rtol=0, atol=1e-9)


def test_instruction_vectors_equal_across_versions(ir2vec, modules):
    _need(22)
    for kind in ("symbolic", "flow-aware"):
        bc = modules["sort.O2"]
        a = ir2vec.embed(bc, llvm=19, kind=kind, level="instruction", build_dir=build_dir())
        b = ir2vec.embed(bc, llvm=22, kind=kind, level="instruction", build_dir=build_dir())
        assert list(a) == list(b)
        for name in a:
            assert np.array_equal(a[name], b[name]), f"{kind} {name}"


HAND_WRITTEN = """\
define i32 @f(i32 %a, i32 %b) {
entry:
  %s = add i32 %a, %b
  call void @llvm.donothing()
  ret i32 %s
}
declare void @llvm.donothing()
"""


@pytest.mark.parametrize("llvm", VERSIONS)
def test_instruction_vectors_follow_the_formula(ir2vec, tmp_path, llvm):
    _need(llvm)
    ll = tmp_path / "f.ll"
    ll.write_text(HAND_WRITTEN)
    vocab = {}
    for line in ir2vec.find(19, build_dir()).vocabulary.read_text().splitlines():
        if line.strip():
            name, values = line.strip().rstrip(",").split(":", 1)
            vocab[name] = np.array([float(v) for v in values.strip("[]").split(",")])
    w_o, w_t, w_a = 1.0, 0.5, float(np.float32(0.2))
    add = w_o * vocab["add"] + w_t * vocab["integerTy"] + w_a * 2 * vocab["variable"]
    call = w_o * vocab["call"] + w_t * vocab["voidTy"] + w_a * vocab["function"]
    ret = w_o * vocab["ret"] + w_t * vocab["voidTy"] + w_a * vocab["variable"]  # ret is void
    got = ir2vec.embed(ll, llvm=llvm, level="instruction", build_dir=build_dir())["f"]
    assert got.shape == (3, 300)
    for row, expected in zip(got, (add, call, ret)):
        assert np.allclose(row, expected, rtol=0, atol=1e-12)


# ---- finding the vocabulary ---------------------------------------------------

def _opt(ir2vec, llvm, bc, out, *extra, env=None):
    setup = ir2vec.find(llvm, build_dir())
    cmd = [str(setup.opt), f"-load-pass-plugin={setup.plugin}", "-passes=mlbridge-ir2vec",
           f"-mlbridge-ir2vec-out={out}", *extra, "-disable-output", str(bc)]
    clean = {k: v for k, v in os.environ.items() if k != "MLBRIDGE_IR2VEC_VOCAB_DIR"}
    return toolchain.run_command(cmd, env={**clean, **(env or {})}, timeout=120)


@pytest.mark.parametrize("llvm", VERSIONS)
def test_default_vocabulary_needs_no_option(ir2vec, modules, tmp_path, llvm):
    _need(llvm)
    bc = modules["sort.O2"]
    out = tmp_path / "v.json"
    r = _opt(ir2vec, llvm, bc, out)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    got = ir2vec.read_report(out, "function")
    want = ir2vec.embed(bc, llvm=llvm, build_dir=build_dir())
    assert list(got) == list(want)
    for name in want:
        assert np.array_equal(got[name], want[name])


@pytest.mark.parametrize("llvm", VERSIONS)
def test_environment_overrides_the_default(ir2vec, modules, tmp_path, llvm):
    _need(llvm)
    empty = tmp_path / "novocab"
    empty.mkdir()
    r = _opt(ir2vec, llvm, modules["sort.O2"], tmp_path / "v.json",
             env={"MLBRIDGE_IR2VEC_VOCAB_DIR": str(empty)})
    assert r.returncode != 0
    name = "seedEmbeddingVocab.txt" if llvm == 19 else "seedEmbeddingVocab.json"
    assert (f"error: mlbridge-ir2vec: not-found: IR2Vec vocabulary '{empty}/{name}' "
            "cannot be opened") in r.stderr, r.stderr
    assert "scripts/deps/ir2vec.sh" in r.stderr
    assert not (tmp_path / "v.json").exists()


@pytest.mark.parametrize("text,message", [
    ("{", "not JSON"),
    ("[1, 2]", "not a JSON object"),
    ('{"Opcodes": {}, "Types": {}}', "no 'Arguments' object"),
    ('{"Opcodes": {"Add": [1, 2]}, "Types": {"VoidTy": [1]}, "Arguments": {}}',
     "Types.VoidTy has 1 values, expected 2"),
    ('{"Opcodes": {"Add": [1, "x"]}, "Types": {}, "Arguments": {}}',
     "Opcodes.Add holds a value that is not a number"),
])
def test_llvm22_plugin_loader_errors(ir2vec, modules, tmp_path, text, message):
    _need(22)
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    with pytest.raises(ir2vec.IR2VecError) as err:
        ir2vec.embed(modules["sort.O0"], llvm=22, vocabulary=bad, loader="mlbridge",
                     build_dir=build_dir())
    assert f"malformed: IR2Vec vocabulary '{bad}': {message}" in str(err.value)


def test_loader_choice_is_checked(ir2vec, modules):
    with pytest.raises(ValueError):
        ir2vec.embed(modules["sort.O0"], llvm=19, loader="llvm", build_dir=build_dir())
    with pytest.raises(ValueError):
        ir2vec.embed(modules["sort.O0"], llvm=19, level="loop", build_dir=build_dir())
