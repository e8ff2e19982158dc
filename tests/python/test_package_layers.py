"""The package's floors, read from the source: ``mlbridge.toolchain``
(process start, tool lookup, measurement, serving any compiler) never
imports from ``mlbridge.llvm`` or ``mlbridge.train``, which are built on it;
``mlbridge.kit`` never imports the in-tree training problems."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "mlbridge"


def _imports(path, source=None):
    """Absolute module names a file of the package imports (relative ones
    resolved); ``source``: read this text as that file's."""
    pkg = list(path.relative_to(PACKAGE.parent).parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text() if source is None else source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[: len(pkg) - node.level + 1]
                found.append(".".join(base + ([node.module] if node.module else [])))
            else:
                found.append(node.module)
    return found


@pytest.mark.parametrize("floor,above", [
    ("toolchain", ("mlbridge.llvm", "mlbridge.train", "mlbridge.kit", "mlbridge.builds")),
    ("kit", ("mlbridge.train", "mlbridge.builds")),
])
def test_a_floor_never_imports_what_is_built_on_it(floor, above):
    files = sorted((PACKAGE / floor).rglob("*.py"))
    assert files, floor
    climbs = [f"{f.relative_to(PACKAGE)}: {m}" for f in files for m in _imports(f)
              if any(m == a or m.startswith(a + ".") for a in above)]
    assert climbs == []


def test_the_import_reader_sees_relative_climbs():
    """The check above can fail: a relative import is read as the absolute
    module it names, one floor up or in the same package."""
    f = PACKAGE / "toolchain" / "run.py"
    assert _imports(f, "from ..llvm.host import Compilation\n") == ["mlbridge.llvm.host"]
    assert _imports(f, "from . import process\n") == ["mlbridge.toolchain"]
    assert _imports(f, "import mlbridge.train.es\n") == ["mlbridge.train.es"]
