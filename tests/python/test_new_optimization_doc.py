"""docs/new-optimization.md's table of lines written per problem is what
the tree holds: each count is made again here (lines that are neither
blank nor a comment line) and compared with the table."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "new-optimization.md"

#: row name -> (the plugin's files, the Python side's files), as globs
PROBLEMS = {
    "inliner": (["integrations/llvm/inliner/*"],
                ["python/mlbridge/train/inliner/*.py", "python/mlbridge/llvm/plugins/inliner.py"]),
    "phase ordering": (["integrations/llvm/phase_order/*"],
                       ["python/mlbridge/train/phase_order/*.py",
                        "python/mlbridge/llvm/plugins/phase_order.py"]),
    "loop distribution": (["integrations/llvm/loop_distribution/*"],
                          ["python/mlbridge/train/loop_distribution/*.py",
                           "python/mlbridge/llvm/plugins/loop_distribution.py"]),
    "register allocation": (["integrations/llvm/regalloc/*"],
                            ["python/mlbridge/train/regalloc/*.py",
                             "python/mlbridge/llvm/plugins/regalloc.py"]),
    "unroll count (this example, out of tree)": (["examples/new-optimization/*.cpp"],
                                                 ["examples/new-optimization/*.py"]),
}
SOURCE_SUFFIXES = {".cpp", ".h", ".def", ".py"}


def code_lines(path: Path) -> int:
    comment = "#" if path.suffix == ".py" else "//"
    return sum(1 for line in path.read_text().splitlines()
               if line.strip() and not line.strip().startswith(comment))


def counted(globs) -> int:
    files = {f for g in globs for f in REPO.glob(g)
             if f.is_file() and f.suffix in SOURCE_SUFFIXES}
    assert files, globs
    return sum(code_lines(f) for f in files)


def table_rows():
    text = DOC.read_text()
    block = text.split("<!-- loc-table -->")[1].split("<!-- /loc-table -->")[0]
    rows = {}
    for line in block.strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = [int(c.replace(",", "")) for c in cells[1:]]
    return rows


def test_the_table_counts_what_the_tree_holds():
    rows = table_rows()
    assert set(rows) == set(PROBLEMS)
    for name, (plugin, python) in PROBLEMS.items():
        assert rows[name][1:] == [counted(plugin), counted(python)], name


def test_the_example_changes_eight_lines_for_a_compiled_model():
    """The 'runner change' of the example: its #ifdef blocks (the generated
    model's header, its factory); pipes and shared memory need none."""
    src = (REPO / "examples" / "new-optimization" / "UnrollCount.cpp").read_text()
    blocks = re.findall(r"^#ifdef MLBRIDGE_PLUGIN_HAS_MODEL\n.*?^#endif\n", src, re.S | re.M)
    assert any("compiledRunnerFactory" in b for b in blocks)
    lines = sum(len(b.strip().splitlines()) for b in blocks)
    assert lines == table_rows()["unroll count (this example, out of tree)"][0]
