"""End to end: MIR2Vec (integrations/llvm/mir2vec, python/mlbridge/mir2vec.py,
docs/ir2vec.md "MIR2Vec") on each LLVM version the build has plugins for.

* The triplet extractor (llc pass mlbridge-mir2vec) on real machine IR from
  that version's llc: the main of tests/e2e/programs/sort.c after
  finalize-isel, the function LLVM 22's own llvm-ir2vec crashes on.
* A small TransE vocabulary trained on those triplets is deterministic, and
  the vectors the pass computes with it are deterministic and follow the
  definition (instruction = V[opcode] + 0.2 * sum V[operand entities],
  blocks and functions sums), recomputed here in numpy.
* A missing or malformed vocabulary: llc's clear error, no crash.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import plugins_of_each_llvm

REPO = Path(__file__).resolve().parents[2]
SORT = REPO / "tests/e2e/programs/sort.c"


plugins = plugins_of_each_llvm()


@pytest.fixture(scope="module")
def ll(plugins, tmp_path_factory):
    """sort.c at -O2 (what the register allocator tests allocate)."""
    from mlbridge.llvm.plugins import regalloc as ra
    tmp = tmp_path_factory.mktemp(f"mir2vec{plugins.llvm_major}")
    return ra.optimized_ir(SORT, tmp / "sort.ll", clang=plugins.tool("clang"))


@pytest.fixture(scope="module")
def mir(plugins, ll):
    from mlbridge import mir2vec
    return mir2vec.machine_ir(ll, ll.with_suffix(".mir"), llvm=plugins.llvm_major)


@pytest.fixture(scope="module")
def vocab_path(plugins, mir, tmp_path_factory):
    from mlbridge import mir2vec
    vocab = mir2vec.train_vocabulary([mir2vec.triplets(mir, llvm=plugins.llvm_major)],
                                     dim=16, epochs=20)
    return mir2vec.write_vocabulary(vocab, tmp_path_factory.mktemp("vocab") / "v.json")


def test_triplets_of_real_machine_ir(plugins, mir):
    from mlbridge import mir2vec
    text = mir.read_text()
    trips = mir2vec.triplets(mir, llvm=plugins.llvm_major)
    assert list(trips) == ["main"]
    t = trips["main"]
    assert len(t) > 200
    assert {r for _, r, _ in t} == {"next", "arg"}
    words = set(re.findall(r"[A-Za-z_][\w]*", text))
    opcodes = {h for h, _, _ in t} | {tl for _, r, tl in t if r == "next"}
    assert opcodes <= words, opcodes - words  # every opcode is one of the MIR's
    # Virtual registers' classes are those the MIR declares (lower case there).
    declared = set(re.findall(r"class: (\w+)", text))
    virt = {tl[len("VirtReg_"):].lower() for _, r, tl in t if tl.startswith("VirtReg_")}
    assert virt and virt <= {d.lower() for d in declared}, virt
    # One "next" per consecutive pair of instructions in a block.
    body = text.split("body:", 1)[1]
    blocks = re.split(r"^\s*bb\.\d+.*:\s*$", body, flags=re.M)[1:]
    pairs = 0
    for b in blocks:
        insts = [ln for ln in b.splitlines()
                 if ln.strip() and not ln.strip().startswith(("successors:", "liveins:", ";", "...",
                                                              "DBG_"))]
        pairs += max(0, len(insts) - 1)
    assert sum(1 for _, r, _ in t if r == "next") == pairs


def test_vocabulary_training_is_deterministic(plugins, mir):
    from mlbridge import mir2vec
    trips = [mir2vec.triplets(mir, llvm=plugins.llvm_major)]
    a = mir2vec.train_vocabulary(trips, dim=8, epochs=30, seed=3)
    b = mir2vec.train_vocabulary(trips, dim=8, epochs=30, seed=3)
    assert a == b
    assert a["training"]["loss_last"] < a["training"]["loss_first"]
    # It learned the triplets: the true tail ranks far better than chance.
    lp = mir2vec.link_prediction(a, trips)
    assert lp["triplets"] == a["training"]["triplets"]
    assert lp["hits@10"] > 2 * lp["random_hits@10"], lp
    assert all(abs(np.linalg.norm(v) - 1) < 1e-5 for v in a["entities"].values())


def test_vectors_are_deterministic_and_follow_the_definition(plugins, mir, vocab_path):
    from mlbridge import mir2vec
    one = mir2vec.embed(mir, vocab_path, llvm=plugins.llvm_major, instructions=True)
    two = mir2vec.embed(mir, vocab_path, llvm=plugins.llvm_major, instructions=True)
    assert list(one) == ["main"]
    np.testing.assert_array_equal(one["main"]["vector"], two["main"]["vector"])
    V = {k: np.asarray(v) for k, v in json.loads(vocab_path.read_text())["entities"].items()}
    zero = np.zeros(16)
    main = one["main"]
    assert main["vector"].shape == (16,) and np.any(main["vector"])
    total = np.zeros(16)
    for entities, vec in main["instructions"]:
        want = V.get(entities[0], zero) + 0.2 * sum((V.get(e, zero) for e in entities[1:]), zero)
        np.testing.assert_allclose(vec, want, atol=1e-9, err_msg=str(entities))
        total += vec
    np.testing.assert_allclose(main["blocks"].sum(axis=0), main["vector"], atol=1e-9)
    np.testing.assert_allclose(total, main["vector"], atol=1e-9)


def test_missing_vocabulary_is_a_clear_error(plugins, mir, tmp_path):
    from mlbridge import mir2vec
    missing = tmp_path / "nope.json"
    with pytest.raises(mir2vec.MIR2VecError) as e:
        mir2vec.embed(mir, missing, llvm=plugins.llvm_major)
    msg = str(e.value)
    assert (f"mlbridge-mir2vec: not-found: MIR2Vec vocabulary '{missing}' cannot be opened "
            "(No such file or directory); python -m mlbridge.mir2vec train writes one") in msg
    assert "exit status 1" in msg  # an error, not a crash


@pytest.mark.parametrize("content,why", [
    ("{", "not JSON"),
    ('{"format": "other", "dimension": 2, "entities": {"a": [1, 2]}}', "'format' is not"),
    ('{"format": "mlbridge-mir2vec-vocab-1", "dimension": 2, "entities": {"a": [1]}}',
     "entity 'a' is not a list of 2 numbers"),
])
def test_malformed_vocabulary_is_a_clear_error(plugins, mir, tmp_path, content, why):
    from mlbridge import mir2vec
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(mir2vec.MIR2VecError, match=re.escape(why)):
        mir2vec.embed(mir, bad, llvm=plugins.llvm_major)


def test_regalloc_gets_the_vectors_as_an_optional_observation(plugins, ll, vocab_path,
                                                              monkeypatch):
    """-regalloc=mlbridge with MLBRIDGE_RA_MIR2VEC_VOCAB sends the model
    function_embedding and node_embeddings (RegAllocEmbeddings.h) besides the
    protocol's features; the same policy then decides exactly as without."""
    from mlbridge.llvm.plugins import regalloc as ra
    seen = []

    def policy(obs):
        seen.append({k: np.asarray(obs[k], np.float32) for k in obs})
        return ra.first_legal(obs)

    monkeypatch.delenv("MLBRIDGE_RA_MIR2VEC_VOCAB", raising=False)
    plain = ra.allocate(ll, "mlbridge", policy=policy, plugins=plugins)
    assert seen and "function_embedding" not in seen[0] and "node_embeddings" not in seen[0]
    seen.clear()
    monkeypatch.setenv("MLBRIDGE_RA_MIR2VEC_VOCAB", str(vocab_path))
    with_vectors = ra.allocate(ll, "mlbridge", policy=policy, plugins=plugins)
    trace = lambda a: [(x["function"], x["asked"], x["trace"]) for x in a.log]  # noqa: E731
    assert trace(with_vectors) == trace(plain) and plain.log[0]["asked"] > 0
    assert len(seen) == plain.log[0]["asked"]
    function = seen[0]["function_embedding"]
    assert function.shape == (1, 16) and np.any(function)
    for obs in seen:  # one function: one vector
        np.testing.assert_array_equal(obs["function_embedding"], function)
        nodes = obs["node_embeddings"].reshape(64, 16)
        live = obs["node_mask"].reshape(64) > 0.5
        assert not np.any(nodes[~live])
        assert np.all(np.any(nodes[live], axis=1))  # every range has an instruction


def test_regalloc_with_a_missing_vocabulary_warns_and_allocates(plugins, ll, monkeypatch,
                                                                tmp_path):
    from mlbridge.llvm.plugins import regalloc as ra
    missing = tmp_path / "nope.json"
    monkeypatch.setenv("MLBRIDGE_RA_MIR2VEC_VOCAB", str(missing))
    seen = []

    def policy(obs):
        seen.append(sorted(obs))
        return ra.first_legal(obs)

    from mlbridge.llvm.plugins import tool_env
    cmd = ra.llc_command(ll, tmp_path / "sort.s", "mlbridge", plugins=plugins)
    from mlbridge.toolchain import ModelServer
    server = ModelServer(policy, timeout=120)
    try:
        env = dict(tool_env(plugins), MLBRIDGE_RA_RUNNER="pipe",
                   MLBRIDGE_RA_CHANNEL=server.endpoint)
        r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300,
                           env=env)
    finally:
        server.close()
    assert r.returncode == 0, r.stderr
    assert r.stderr.count(f"MIR2Vec vocabulary '{missing}' cannot be opened") == 1, r.stderr
    assert "the model gets no MIR2Vec vectors" in r.stderr
    assert seen and "function_embedding" not in seen[0]
