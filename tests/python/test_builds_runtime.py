"""The run-time measure of the real builds (mlbridge.builds.runtime): the
workload runner on a tiny program under callgrind, and the comparison and
tables from a fixture results file."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from mlbridge.builds import runtime
from mlbridge.builds.runtime import Runtime, Workload, WorkloadError

TINY = r"""
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    /* copy argv[1] to argv[2] (byte k xor argv[3][0], '0' = unchanged) and
       print a checksum; the loop runs argv[4] times */
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    int c, rounds = 0, n = 0;
    unsigned sum = 0;
    sscanf(argv[4], "%d", &rounds);
    while ((c = fgetc(in)) != EOF) {
        for (int r = 0; r < rounds; r++) sum = sum * 31 + (unsigned)c + r;
        fputc(c ^ (argv[3][0] - '0'), out);
        n++;
    }
    printf("%d bytes, sum %u\n", n, sum);
    return fclose(out) != 0;
}
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    cc = shutil.which("clang-19") or shutil.which("cc")
    if cc is None or shutil.which("valgrind") is None:
        pytest.skip("needs a C compiler and valgrind")
    d = tmp_path_factory.mktemp("tiny")
    (d / "tiny.c").write_text(TINY)
    subprocess.run([cc, "-O1", "-o", str(d / "tiny"), str(d / "tiny.c")], check=True)
    return d


def _rt(flip="0", rounds="1"):
    return Runtime("tiny", {"in.txt": ("bytes", b"hello, callgrind\n" * 50)}, (
        Workload("copy", ("tiny", "in.txt", "out.txt", flip, rounds), outputs=("out.txt",),
                 roundtrip=("out.txt", "in.txt") if flip == "0" else None),
    ))


def test_the_runner_counts_the_whole_process_and_hashes_outputs(tiny, tmp_path):
    one = runtime.measure(_rt(), tiny, tiny, tmp_path / "a")
    w = one["workloads"]["copy"]
    # a whole process: the loader and libc's start-up are counted too
    assert w["ir"] > 50_000, w
    assert set(w["outputs"]) == {"out.txt"} and len(w["outputs"]["out.txt"]) == 64
    assert w["stdout_bytes"] >= len("850 bytes, sum 0\n")
    # exact and repeatable: the same run counts the same instructions
    again = runtime.measure(_rt(), tiny, tiny, tmp_path / "b")["workloads"]["copy"]
    assert again == w
    # more work counts more instructions; different output, different hash
    more = runtime.measure(_rt(rounds="40"), tiny, tiny, tmp_path / "c")["workloads"]["copy"]
    assert more["ir"] > w["ir"] + 40 * 850
    assert more["stdout"] != w["stdout"] and more["outputs"] == w["outputs"]
    flipped = runtime.measure(_rt(flip="1"), tiny, tiny, tmp_path / "d")["workloads"]["copy"]
    assert flipped["outputs"] != w["outputs"]


def test_a_broken_round_trip_or_a_missing_program_is_an_error(tiny, tmp_path):
    bad = Runtime("tiny", {"in.txt": ("bytes", b"abc")}, (
        Workload("copy", ("tiny", "in.txt", "out.txt", "1", "1"), outputs=("out.txt",),
                 roundtrip=("out.txt", "in.txt")),))
    with pytest.raises(WorkloadError, match="round trip"):
        runtime.measure(bad, tiny, tiny, tmp_path / "a")
    gone = Runtime("tiny", {}, (Workload("x", ("nothere",)),))
    with pytest.raises(WorkloadError, match="was not built"):
        runtime.measure(gone, tiny, tiny, tmp_path / "b")


def _rec(project, config, irs, outs=None, measured=True):
    outs = outs or {}
    return {"project": project, "version": "1", "config": config, "llvm": 19, "ok": True,
            "tests_passed": 3, "tests_total": 3, "tests_failed": [], "measured": measured,
            "error": "" if measured else "boom",
            "workloads": {n: {"ir": ir, "stdout": "s", "outputs": {"f": outs.get(n, "h")}}
                          for n, ir in irs.items()} if measured else {}}


def test_comparison_and_tables_from_a_fixture():
    recs = [_rec("zlib", "O3", {"a": 1000, "b": 3000}),
            _rec("zlib", "loopdist", {"a": 900, "b": 2700}),          # 0.9 x
            _rec("lz4", "O3", {"a": 1000}),
            _rec("lz4", "loopdist", {"a": 1210}, outs={"a": "other"}),  # 1.21 x, differs
            _rec("xz-utils", "O2", {"a": 10}),
            _rec("xz-utils", "regalloc", {}, measured=False)]
    rows = {(r["project"], r["config"]): r for r in runtime.compare(recs)}
    assert rows[("zlib", "loopdist")]["ratio"] == pytest.approx(0.9)
    assert rows[("zlib", "loopdist")]["differ"] == []
    assert rows[("lz4", "loopdist")]["ratio"] == pytest.approx(1.21)
    assert rows[("lz4", "loopdist")]["differ"] == ["a"]
    assert rows[("zlib", "O3")]["ratio"] is None          # its own base
    assert rows[("xz-utils", "regalloc")]["ratio"] is None
    text = runtime.table(recs)
    # geometric mean of 0.9 and 1.21 over the two projects = 1.0436
    # over the three workloads: (0.9 * 0.9 * 1.21) ** (1/3) = 0.9933
    assert "| 19 | loopdist | O3 | 2 | 1.0436 | 0.9933 | zlib 0.9000 | lz4 1.2100 | 1/3 | 1 |" in text
    assert "**DIFFER: a**" in text
    assert "not measured: boom" in text


def test_every_project_workload_names_a_built_output_and_fixed_inputs():
    from mlbridge.builds import projects
    names = {p.name for p in projects.PROJECTS}
    for rt in runtime.WORKLOADS:
        assert rt.project in names
        assert rt.workloads and len({w.name for w in rt.workloads}) == len(rt.workloads)
        for spec in rt.inputs.values():
            assert spec[0] in ("orig", "generated", "bytes")
            if spec[0] == "orig":
                assert spec[1] in names
            if spec[0] == "generated":   # deterministic: the same bytes twice
                assert runtime.GENERATORS[spec[1]]() == runtime.GENERATORS[spec[1]]()


def test_file_patterns_expand_only_under_the_source_or_build_folder(tiny, tmp_path):
    import hashlib
    # "{src}/*.c" is the files it matches; "0*" (like a regular expression
    # given to pcre2grep) reaches the program as it is
    rt = Runtime("tiny", {}, (
        Workload("copy", ("tiny", "{src}/*.c", "out.txt", "0*", "1"), outputs=("out.txt",)),))
    got = runtime.measure(rt, tiny, tiny, tmp_path / "a")["workloads"]["copy"]
    assert got["outputs"]["out.txt"] == hashlib.sha256(TINY.encode()).hexdigest()
    rt = Runtime("tiny", {}, (Workload("copy", ("tiny", "{src}/*.nothing", "o", "0", "1")),))
    with pytest.raises(WorkloadError, match="no file matches"):
        runtime.measure(rt, tiny, tiny, tmp_path / "b")
