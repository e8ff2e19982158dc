"""The committed corpus manifest is consistent with itself and the recipes
(no download, no compiler)."""

import fnmatch
import re
from collections import Counter

import pytest

from mlbridge.corpus import SPLITS, Corpus, recipes
from mlbridge.corpus.generate import expand_sources, recipe_flags


@pytest.fixture(scope="module")
def corpus():
    return Corpus.load()


def real_libraries(corpus):
    return [lib for lib in corpus.libraries.values() if lib.csmith is None]


def test_every_library_has_exactly_one_split(corpus):
    listed = Counter(name for s in SPLITS for name in corpus.data["splits"][s])
    assert set(corpus.data["splits"]) == set(SPLITS)
    assert set(listed) == set(corpus.libraries)
    assert all(n == 1 for n in listed.values()), listed
    for s in SPLITS:
        for name in corpus.data["splits"][s]:
            assert corpus.libraries[name].split == s


def test_manifest_matches_the_recipes(corpus):
    by_name = {r["name"]: r for r in recipes.LIBRARIES}
    assert {lib.name for lib in real_libraries(corpus)} == set(by_name)
    for lib in real_libraries(corpus):
        r = by_name[lib.name]
        assert (lib.crate, lib.version, lib.sha256, lib.split, lib.lang) == \
            (r["crate"], r["version"], r["sha256"], r["split"], r["lang"])
        assert re.fullmatch(r"[0-9a-f]{64}", lib.sha256)
        assert lib.flags == recipe_flags(r)
        assert lib.license["file"] and lib.license["spdx"]
        for dep in lib.deps:
            assert dep in corpus.libraries


def test_units_are_measured_and_skips_have_reasons(corpus):
    names = [m.name for m in corpus.modules(include_mismatched=True)]
    assert len(names) == len(set(names))
    for lib in corpus.libraries.values():
        paths = [u["path"] for u in lib.units] + [s["path"] for s in lib.skipped]
        assert len(paths) == len(set(paths)), f"{lib.name}: a unit is listed twice"
        for u in lib.units:
            assert isinstance(u["text"], int) and u["text"] >= 0
            assert isinstance(u["ir_text"], int)
            assert not u.get("missing_size_attributes"), (lib.name, u["path"])
        for s in lib.skipped:
            assert s["reason"].strip(), (lib.name, s["path"])


def test_excluded_units_follow_the_recipe_patterns(corpus):
    for r in recipes.LIBRARIES:
        lib = corpus.libraries[r["name"]]
        for s in lib.skipped:
            pattern_reasons = [why for pat, why in r.get("exclude", {}).items()
                               if fnmatch.fnmatch(s["path"], pat)]
            if pattern_reasons:
                assert s["reason"] == pattern_reasons[0]


def test_size_and_split_shape(corpus):
    libs = real_libraries(corpus)
    units = sum(len(lib.units) for lib in libs)
    assert len(libs) >= 12, [lib.name for lib in libs]
    assert units >= 1000, units
    for s in SPLITS:
        langs = {lib.lang for lib in libs if lib.split == s}
        assert langs == {"c", "c++"}, (s, langs)
    assert corpus.libraries["csmith"].split == "train"
    assert len(corpus.libraries["csmith"].units) == len(recipes.CSMITH_SEEDS)
    # Split by library, roughly 60/20/20.
    share = Counter(lib.split for lib in libs)
    assert 0.5 <= share["train"] / len(libs) <= 0.7, share
    assert share["validation"] >= 3 and share["heldout"] >= 3, share


def test_modules_api_filters_by_split(corpus):
    every = corpus.modules(include_mismatched=True)
    by_split = [corpus.modules(split=s, include_mismatched=True) for s in SPLITS]
    assert sum(len(x) for x in by_split) == len(every)
    for s, mods in zip(SPLITS, by_split):
        assert all(m.split == s for m in mods)
        assert all(m.lang in ("c", "c++") for m in mods)
    flagged = [m for m in every if not m.ir_matches]
    assert len(corpus.modules()) == len(every) - len(flagged)
    with pytest.raises(ValueError):
        corpus.modules(split="test")


def test_expand_sources_lists_exclusions_with_reasons(tmp_path):
    for rel in ("lib/a.c", "lib/b.c", "lib/b_test.c", "lib/sub/c.c", "lib/x.h"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("int f(void) { return 0; }\n")
    recipe = {"name": "t", "sources": ["lib/*.c", "lib/a.c", "lib/**/*.c"],
              "exclude": {"lib/*_test.c": "a test"},
              "unit_flags": {"lib/sub/*.c": ["-DSUB"]}}
    units, skipped = expand_sources(tmp_path, recipe)
    assert units == [{"path": "lib/a.c"}, {"path": "lib/b.c"},
                     {"path": "lib/sub/c.c", "flags": ["-DSUB"]}]
    assert skipped == [{"path": "lib/b_test.c", "reason": "a test"}]
    from mlbridge.corpus import CorpusError
    with pytest.raises(CorpusError, match="matches no file"):
        expand_sources(tmp_path, {"name": "t", "sources": ["nothing/*.c"]})


def test_a_symlinked_source_cache_gives_the_same_units(tmp_path):
    """Checkouts that reach one source cache through a symlink (git
    worktrees) name the same sources and flags, so they share its cached
    bitcode and measurements."""
    real = tmp_path / "deps" / "corpus"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "deps")
    direct = Corpus.load(cache_dir=real).modules(include_mismatched=True)
    linked = Corpus.load(cache_dir=tmp_path / "link" / "corpus").modules(include_mismatched=True)
    assert [(m.source, m.flags) for m in direct] == [(m.source, m.flags) for m in linked]
    assert all(str(m.source).startswith(str(real)) for m in linked)
