"""docs/deployment.md's recipes are the real-builds harness's configurations.

Each block marked ``<!-- recipe: NAME -->`` must give exactly the compile
flags, link flags and plugin settings that ``mlbridge.builds.configs``
gives the build system for configuration NAME (the plugin folder written
``$P``), so the recipes a user copies are the builds that are tested and
measured (tests/e2e/test_real_builds.py, tests/real-builds/).
"""

import re
import shlex
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "deployment.md"
_RECIPE = re.compile(r"<!-- recipe: ([\w-]+) -->\s*```sh\n(.*?)```", re.S)


def _recipes():
    return dict(_RECIPE.findall(DOC.read_text()))


def _assignments(block: str) -> dict:
    """NAME=value pairs of a shell block (``export A=1 B=2``, ``A="..."``,
    continuation lines), as the shell would split them."""
    words = shlex.split(block.replace("\\\n", " "), comments=True)
    return dict(w.split("=", 1) for w in words if re.match(r"^[A-Z_][A-Z0-9_]*=", w))


def test_every_documented_recipe_is_a_harness_configuration():
    from mlbridge.builds.configs import CONFIGS
    names = {c.name for c in CONFIGS}
    recipes = _recipes()
    assert {"size", "regalloc", "loopdist", "thin-size-pre", "thin-size-link"} <= set(recipes)
    assert set(recipes) <= names, f"recipes the harness does not build: {set(recipes) - names}"


@pytest.mark.parametrize("name", sorted(_recipes()))
def test_recipe_flags_are_the_harness_flags(name, plugins):
    from mlbridge.builds.configs import by_name, compilers, environment
    comp = compilers(19)
    env = environment(by_name(name), comp)
    folder = str(Path(plugins.inline_advisor).parent)
    doc = _assignments(_recipes()[name].replace("$P", folder))
    assert doc.get("CFLAGS") == env["CFLAGS"], name
    if "LDFLAGS" in doc:
        assert doc["LDFLAGS"] == env["LDFLAGS"], name
    settings = {k: v for k, v in env.items() if k.startswith("MLBRIDGE_")}
    documented = {k: v for k, v in doc.items() if k.startswith("MLBRIDGE_")}
    assert documented == settings, name
