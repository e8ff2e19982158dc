"""Vocabularies with values that are not finite (issue 34, item 12): IR2Vec's
(LLVM 19: our text reader; LLVM 22: our JSON reader and LLVM's own loader)
and MIR2Vec's (llc-19 and llc-22). A value ``inf``, ``nan`` or out of a
double's range (``1e999``) is refused with a message naming the file, the
entry and the value; finite values whose sums overflow make the tool
refuse to write. Either way opt / llc exit non-zero and write no output:
never a file that is not JSON.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from build_components import build_dir, require_component

REPO = Path(__file__).resolve().parents[2]

# Three adds in a row: with every vocabulary value 1e308 each instruction
# vector is finite, their sum is not.
ADDS = """\
define i32 @f(i32 %a, i32 %b) {
entry:
  %s = add i32 %a, %b
  %t = add i32 %s, %b
  %u = add i32 %t, %a
  ret i32 %u
}
"""


@pytest.fixture(scope="module")
def ir2vec():
    require_component("ir2vec")
    import mlbridge.ir2vec as m
    return m


def _setup(ir2vec, llvm):
    if llvm == 22:
        require_component("ir2vec_llvm22")
    return ir2vec.find(llvm, build_dir())


def _module(tmp_path):
    ll = tmp_path / "adds.ll"
    ll.write_text(ADDS)
    return ll


def _run_opt(ir2vec, setup, module, vocab, out, loader=None):
    from mlbridge.toolchain import plugin_env   # the sanitizer runtime for a sanitized plugin
    cmd = ir2vec.command(module, out, setup, vocabulary=vocab, loader=loader)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=plugin_env(cmd))


def _refused(res, out, *fragments):
    assert res.returncode != 0, res.stderr
    for f in fragments:
        assert f in res.stderr, res.stderr
    assert not out.exists(), out.read_text()[:500]
    assert not Path(str(out) + ".tmp").exists()


# ---- IR2Vec, LLVM 19: the text vocabulary ---------------------------------------------

def _text_vocab(setup, tmp_path, entity, replace):
    """The installed vocabulary with ``entity``'s values changed by replace."""
    lines = setup.vocabulary.read_text().splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith(entity + ":"):
            lines[i] = replace(line)
            number = i + 1
            break
    path = tmp_path / "vocab.txt"
    path.write_text("".join(lines))
    return path, number


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "INFINITY", "1e999"])
def test_llvm19_vocabulary_value_not_finite(ir2vec, tmp_path, value):
    setup = _setup(ir2vec, 19)
    vocab, line = _text_vocab(setup, tmp_path, "add",
                              lambda ln: re.sub(r"\[[^,]+,", f"[{value},", ln, count=1))
    out = tmp_path / "v.json"
    why = "is out of a double's range" if value == "1e999" else "is not finite"
    expected = f"IR2Vec vocabulary '{vocab}' line {line}: value 1 of 'add' {why} ('{value}')"
    _refused(_run_opt(ir2vec, setup, _module(tmp_path), vocab, out), out, expected)
    with pytest.raises(ir2vec.IR2VecError, match=re.escape(expected)):
        ir2vec.embed(_module(tmp_path), vocabulary=vocab, build_dir=build_dir())


def _huge(line):
    name, values = line.split(":", 1)
    n = len(json.loads(values.strip().rstrip(",")))
    return f"{name}:[{', '.join(['1e308'] * n)}],\n"


@pytest.mark.parametrize("llvm", [19, 22])
def test_sums_that_overflow_are_not_written(ir2vec, tmp_path, llvm):
    setup = _setup(ir2vec, llvm)
    if llvm == 19:
        vocab, _ = _text_vocab(setup, tmp_path, "add", _huge)
        loaders = [None]
    else:
        doc = json.loads(setup.vocabulary.read_text())
        doc["Opcodes"]["Add"] = [1e308] * len(doc["Opcodes"]["Add"])
        vocab = tmp_path / "vocab.json"
        vocab.write_text(json.dumps(doc))
        loaders = ["mlbridge", "llvm"]
    for loader in loaders:
        out = tmp_path / f"v-{loader}.json"
        _refused(_run_opt(ir2vec, setup, _module(tmp_path), vocab, out, loader), out,
                 f"IR2Vec output '{out}': the vector of ", "is not finite (the vocabulary's "
                 "values overflow); nothing written")


# ---- IR2Vec, LLVM 22: the JSON vocabulary -----------------------------------------------

@pytest.mark.parametrize("loader", ["mlbridge", "llvm"])
def test_llvm22_vocabulary_value_out_of_range(ir2vec, tmp_path, loader):
    """1e999 is valid JSON that LLVM's parser reads as inf. Ours refuses it
    naming the entry; behind LLVM's own loader the output is refused."""
    setup = _setup(ir2vec, 22)
    text = setup.vocabulary.read_text()
    vocab = tmp_path / "vocab.json"
    vocab.write_text(re.sub(r'("Add":\s*\[)[^,\]]+', r"\g<1>1e999", text, count=1))
    out = tmp_path / "v.json"
    res = _run_opt(ir2vec, setup, _module(tmp_path), vocab, out, loader)
    if loader == "mlbridge":
        _refused(res, out, f"IR2Vec vocabulary '{vocab}': value 1 of Opcodes.Add is not "
                 "finite (out of a double's range)")
    else:
        _refused(res, out, f"IR2Vec output '{out}': the vector of ", "is not finite")


# ---- the Python side ------------------------------------------------------------------

def test_python_refuses_a_report_with_non_finite_numbers(ir2vec, tmp_path):
    for bad in ("NaN", "Infinity", "-Infinity"):
        p = tmp_path / "r.json"
        p.write_text('{"format": "mlbridge-ir2vec-1", "dimension": 1, "module": [%s], '
                     '"functions": []}' % bad)
        with pytest.raises(ir2vec.IR2VecError, match=f"{bad} is not a finite number"):
            ir2vec.read_report(p, level="module")


# ---- MIR2Vec: llc-19 and llc-22 -------------------------------------------------------

@pytest.fixture(scope="module")
def mir(plugins_any_llvm, tmp_path_factory):
    from mlbridge import mir2vec
    from mlbridge.llvm.plugins import regalloc as ra
    tmp = tmp_path_factory.mktemp(f"mir2vec{plugins_any_llvm.llvm_major}")
    ll = ra.optimized_ir(REPO / "tests/e2e/programs/sort.c", tmp / "sort.ll",
                         clang=plugins_any_llvm.tool("clang"))
    return mir2vec.machine_ir(ll, tmp / "sort.mir", llvm=plugins_any_llvm.llvm_major)


def _mir_vocab(path, entities, values, bad=None):
    """Every entity ``values`` (JSON text), ``bad`` = (entity, values) one."""
    text = {e: values for e in entities}
    if bad:
        text[bad[0]] = bad[1]
    path.write_text('{"format": "mlbridge-mir2vec-vocab-1", "dimension": 2, "entities": {'
                    + ", ".join(f'"{e}": [{v}]' for e, v in sorted(text.items())) + "}}")
    return path


@pytest.fixture(scope="module")
def entities(plugins_any_llvm, mir):
    from mlbridge import mir2vec
    trips = mir2vec.triplets(mir, llvm=plugins_any_llvm.llvm_major)["main"]
    return {h for h, _, _ in trips} | {t for _, _, t in trips}


def test_mir2vec_vocabulary_value_out_of_range(plugins_any_llvm, mir, entities, tmp_path):
    from mlbridge import mir2vec
    first = sorted(entities)[0]
    vocab = _mir_vocab(tmp_path / "v.json", entities, "0.5, 1", bad=(first, "0.5, 1e999"))
    with pytest.raises(mir2vec.MIR2VecError) as e:
        mir2vec.embed(mir, vocab, llvm=plugins_any_llvm.llvm_major)
    assert (f"MIR2Vec vocabulary '{vocab}': value 2 of entity '{first}' is not finite "
            "(out of a double's range)") in str(e.value)


def test_mir2vec_sums_that_overflow_are_not_written(plugins_any_llvm, mir, entities, tmp_path):
    info = plugins_any_llvm
    vocab = _mir_vocab(tmp_path / "v.json", entities, "1e308, -1e308")
    out = tmp_path / "vectors.jsonl"
    from mlbridge.llvm.plugins import tool_env
    res = subprocess.run([info.tool("llc"), "-load", str(info.mir2vec),
                          "-run-pass=mlbridge-mir2vec", f"-mlbridge-mir2vec-vocab={vocab}",
                          f"-mlbridge-mir2vec-out={out}", str(mir), "-o", "/dev/null"],
                         capture_output=True, text=True, timeout=120, env=tool_env(info))
    assert res.returncode != 0, res.stderr
    assert ("mlbridge-mir2vec: the vector of machine function 'main' is not finite "
            "(the vocabulary's values overflow); nothing written to " + str(out)) in res.stderr
    assert not out.exists() or out.read_text() == ""


def test_mir2vec_vocabulary_writer_refuses_non_finite(tmp_path):
    from mlbridge import mir2vec
    vocab = {"format": mir2vec.FORMAT, "dimension": 2,
             "entities": {"ADD32rr": [0.5, float("nan")]}, "relations": {}}
    with pytest.raises(mir2vec.MIR2VecError, match="entity 'ADD32rr' holds nan"):
        mir2vec.write_vocabulary(vocab, tmp_path / "v.json")
    assert not (tmp_path / "v.json").exists()


def test_vocabulary_converter_refuses_non_finite(tmp_path):
    """scripts/deps/ir2vec_vocab.py (IR2Vec's text file to LLVM 22's JSON)."""
    import sys
    src = tmp_path / "v.txt"
    src.write_text("add:[0.5, 1.0],\nret:[nan, 2.0]\n")
    res = subprocess.run([sys.executable, str(REPO / "scripts/deps/ir2vec_vocab.py"), str(src),
                          str(tmp_path / "v.json")], capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert res.stderr.strip() == (f"ir2vec_vocab.py: {src}:2: value 1 of 'ret' is not finite "
                                  "('nan')")
    assert not (tmp_path / "v.json").exists()
