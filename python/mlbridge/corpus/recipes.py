"""How each corpus library is built: the recipes in ``corpus/recipes.toml``,
the hand-written source of ``corpus/manifest.json``.

A recipe (one ``[[library]]``) names a pinned crates.io crate that vendors a
C or C++ library (``name``, ``crate``, ``version``, ``sha256`` of the
``.crate``, ``split``, ``lang``, ``std``, ``license`` file, ``spdx``) and
says how its translation units compile, following the crate's ``build.rs``:
``includes`` and ``defines`` (codegen flags such as ``-ffunction-sections``
or ``-fvisibility`` are left out: the corpus measures what ``-Oz`` does with
the code, not a crate's link-time tuning), ``extra_flags`` (``{src:NAME}`` is
library NAME's unpacked crate, whose headers it uses: NAME is in ``deps``),
``unit_flags`` (glob pattern -> extra flags) and ``generated`` (headers the
build script would write: ``text``, or ``from`` a file of the crate with
``replace``-ments). Paths are relative to the unpacked crate. ``sources``
are glob patterns; ``exclude`` maps glob patterns to the reason they are
left out (they are listed in the manifest as skipped, never dropped
silently). ``python -m mlbridge.corpus manifest`` expands the patterns
against the fetched crates, compiles every unit and writes the manifest.

The split is by library and fixed in the recipes: models are trained on
``train``, selected on ``validation``, and measured once on ``heldout``.
"""

from __future__ import annotations

from typing import List

from .manifest import REPO_ROOT, CorpusError

RECIPES = REPO_ROOT / "corpus" / "recipes.toml"

#: Seeds of the csmith programs (train split only). The same csmith version
#: gives the same program for a seed; the manifest records each program's sha256.
CSMITH_SEEDS = tuple(range(1, 51))
CSMITH_MAX_FUNCS = 10

SPLITS = ("train", "validation", "heldout")


def load(path=RECIPES) -> List[dict]:
    """The recipes of ``path``, in their order."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        raise CorpusError(f"reading {path} needs Python 3.11 or later (tomllib)") from None
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)["library"]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as e:
        raise CorpusError(f"cannot read the corpus recipes {path}: {e}") from None


LIBRARIES = load()
