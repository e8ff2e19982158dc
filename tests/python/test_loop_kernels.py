"""The loop kernels (corpus/loops, mlbridge.corpus.loops): the split is by
family, mutations are deterministic and well defined, outputs agree across
optimization levels, and callgrind's Ir is positive, repeatable and counts
what the kernel calls. The all-kernel oracle and baselines are the opt-in
`python -m mlbridge.corpus.loops oracle|baseline`."""

import json
import re

import pytest

from mlbridge.corpus import loops
from mlbridge.toolchain import callgrind

def test_the_split_is_by_family_and_covers_every_kernel_file():
    ks = loops.kernels()
    assert len(ks) >= 120
    names = [k.name for k in ks]
    assert len(set(names)) == len(names)
    split_of = {}
    for k in ks:
        assert k.name.startswith(k.family + "_"), k.name
        assert split_of.setdefault(k.family, k.split) == k.split
    assert set(split_of.values()) == set(loops.SPLITS)
    by_split = {s: {k.name for k in loops.kernels(s)} for s in loops.SPLITS}
    assert sum(map(len, by_split.values())) == len(ks)
    assert not (by_split["train"] & by_split["validation"])
    assert not (by_split["train"] & by_split["held_out"])
    assert not (by_split["validation"] & by_split["held_out"])
    files = {p.stem for p in (loops.ROOT / "kernels").glob("*.c")}
    assert files == set(split_of), "every kernels/*.c is a family of kernels.json"


def test_an_unknown_split_or_a_missing_family_file_is_named(tmp_path):
    with pytest.raises(loops.LoopKernelError, match="unknown split 'test'"):
        loops.kernels("test")
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels.json").write_text(json.dumps(
        {"families": {"ghost": {"split": "train"}}}))
    with pytest.raises(loops.LoopKernelError, match="ghost"):
        loops.kernels(root=tmp_path)


def _offsets_in_bounds(text):
    head = re.search(r"for \(int i = (\d+); i < LEN(?: - (\d+))?; i\+\+\)", text)
    lo, hi = int(head.group(1)), int(head.group(2) or 0)
    for sign, k in re.findall(r"\[i ([+-]) (\d+)\]", text):
        assert (int(k) <= lo) if sign == "-" else (int(k) <= hi), text


def test_mutations_are_deterministic_keep_their_split_and_stay_in_bounds(tmp_path):
    first = loops.generate(tmp_path / "a", 2, seed=7)
    again = loops.generate(tmp_path / "b", 2, seed=7)
    other = loops.generate(tmp_path / "c", 2, seed=8)
    assert len(first) >= 40
    texts = {k.name: k.source.read_text() for k in first}
    assert texts == {k.name: k.source.read_text() for k in again}
    assert texts != {k.name: k.source.read_text() for k in other}
    train_families = {k.family for k in loops.kernels("train")}
    originals = {k.name: k for k in loops.kernels("train")}
    for k in first:
        assert k.split == "train" and k.family in train_families
        base = originals[k.name.rsplit("_m", 1)[0]]
        assert texts[k.name] != base.source.read_text()
        _offsets_in_bounds(texts[k.name])
    # held-out kernels are never mutated into training data
    assert all(k.split == "validation" for k in loops.generate(tmp_path / "v", 1,
                                                                split="validation"))


def _combined(tmp_path, sources, name="combined.c"):
    """One translation unit including several kernel files (one build)."""
    src = tmp_path / name
    src.write_text("".join(f'#include "{p}"\n' for p in sources))
    return src


def _outputs(tmp_path, src, flags, tag, names):
    exe = tmp_path / f"{src.stem}.{tag}"
    loops.build(src, flags, exe)
    return {n: loops.run(exe, n) for n in names}


def test_mutations_compile_and_agree_at_O0_O3_and_sanitized(tmp_path):
    made = loops.generate(tmp_path / "gen", 1, seed=3)
    picked = made[::6]   # a spread of families and kernels
    src = _combined(tmp_path, [k.source for k in picked], "mutations.c")
    names = [k.name for k in picked]
    o0 = _outputs(tmp_path, src, ["-O0"], "O0", names)
    assert o0 == _outputs(tmp_path, src, ["-O3"], "O3", names)
    assert o0 == _outputs(tmp_path, src, loops.SANITIZE_FLAGS, "san", names)
    assert len(set(o0.values())) > 1


def test_one_kernel_per_family_agrees_at_O0_O3_and_with_loop_distribution(tmp_path):
    ks = loops.kernels()
    first = {}
    for k in ks:
        first.setdefault(k.family, k)
    src = _combined(tmp_path, sorted({k.source for k in ks}))
    names = [k.name for k in first.values()]
    o0 = _outputs(tmp_path, src, ["-O0"], "O0", names)
    assert o0 == _outputs(tmp_path, src, loops.FLAG_SETS["O3"], "O3", names)
    assert o0 == _outputs(tmp_path, src, loops.FLAG_SETS["O3-distribute"], "dist", names)


def test_ir_is_positive_repeatable_and_counts_the_kernels_callees(tmp_path):
    src = loops.ROOT / "kernels" / "alias.c"
    exe = tmp_path / "alias.O3"
    loops.build(src, ["-O3"], exe)
    ir1, out1 = loops.measure(exe, "alias_copy_add")
    ir2, out2 = loops.measure(exe, "alias_copy_add")
    assert ir1 == ir2 and out1 == out2 == loops.run(exe, "alias_copy_add")
    # the wrapper is a few instructions; its body (a callee) loops over
    # 2 * LEN - 1 elements in each of the driver's 4 calls
    assert ir1 > 4 * (2 * 1024 - 1) / 4
    # the driver's initialisation and checksums are not counted: the whole
    # program costs many times more than the kernel
    whole = callgrind([exe, "alias_copy_add"]).ir
    assert whole > 10 * ir1
    with pytest.raises(loops.LoopKernelError, match="no instruction|failed"):
        loops.measure(exe, "carried_anti1")   # not in this binary


def test_llvm_distribute_remarks_are_attributed_to_their_kernels(tmp_path):
    flags = loops.FLAG_SETS["O3-distribute"] + loops.REMARK_FLAGS
    found = {}
    for fam in ("mixed", "alias"):
        src = loops.ROOT / "kernels" / f"{fam}.c"
        found.update(loops.distribute_remarks(loops.build(src, flags, tmp_path / fam).stderr,
                                              src))
    assert found["mixed_scatter_map"] == {"distributed": 1, "declined": {}}
    # a scalar recurrence is no memory dependence: LLVM does not split it off
    assert found["mixed_long_body"] == {
        "distributed": 0, "declined": {"memory operations are safe for vectorization": 1}}
    assert found["mixed_anti_true"]["declined"] == {"cannot isolate unsafe dependencies": 1}
    # the loop is in alias_rec_map_body, reported for alias_rec_map
    assert found["alias_rec_map"]["distributed"] == 1
    assert sum(r["distributed"] + sum(r["declined"].values()) for r in found.values()) == 21


def test_the_sanitized_build_names_a_kernel_with_undefined_behaviour(tmp_path):
    src = tmp_path / "bad.c"
    src.write_text('#include "loops.h"\nvoid bad_overrun(void) {\n'
                   "  for (int i = 0; i <= LEN; i++) {\n    a[i] = b[i] + 1.0f;\n  }\n}\n")
    exe = tmp_path / "bad.san"
    loops.build(src, loops.SANITIZE_FLAGS, exe)
    with pytest.raises(loops.LoopKernelError, match="bad_overrun failed"):
        loops.run(exe, "bad_overrun")


def test_the_command_line_lists_and_generates(tmp_path, capsys):
    assert loops.main(["list", "--split", "held_out"]) == 0
    rows = [ln.split("\t") for ln in capsys.readouterr().out.splitlines()]
    assert len(rows) == len(loops.kernels("held_out"))
    assert {r[2] for r in rows} == {"held_out"}
    assert loops.main(["generate", str(tmp_path), "--per-kernel", "1", "--seed", "5"]) == 0
    assert f"{len(list(tmp_path.glob('*.c')))} mutations written" in capsys.readouterr().out


def test_hand_distributed_kernels_keep_the_results_and_cost_less_than_O3(tmp_path):
    """corpus/loops/reference: a partition LLVM does not choose, same outputs, lower Ir."""
    ref = tmp_path / "ref.O3"
    loops.build(loops.ROOT / "reference" / "distributed.c", ["-O3"], ref)
    originals = tmp_path / "mixed.O3"
    loops.build(loops.ROOT / "kernels" / "mixed.c", ["-O3"], originals)
    for name in ("mixed_rec_map", "mixed_long_body"):
        ir_ref, out_ref = loops.measure(ref, name)
        ir_o3, out_o3 = loops.measure(originals, name)
        assert out_ref == out_o3
        assert ir_ref < 0.7 * ir_o3, (name, ir_ref, ir_o3)
