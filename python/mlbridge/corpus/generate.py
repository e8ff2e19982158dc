"""Writes ``corpus/manifest.json`` from the recipes: fetches each crate,
expands its source patterns, compiles and measures every unit, and records
what compiles, what does not (and why), and the baseline of each unit."""

from __future__ import annotations

import fnmatch
import time
from pathlib import Path
from typing import Iterable, List, Optional

from . import compile as cc
from . import recipes
from .fetch import csmith_version, fetch_csmith, sha256_of
from .jobs import DEFAULT_JOBS, measure, run_parallel
from .manifest import Corpus, CorpusError, Library

FORMAT = 1


def recipe_flags(recipe: dict) -> List[str]:
    """The compile flags of a recipe, paths relative to ``{src}``."""
    return (["-w", f"-std={recipe['std']}"]
            + ["-I{src}" if d == "." else f"-I{{src}}/{d}" for d in recipe.get("includes", [])]
            + [f"-D{d}" for d in recipe.get("defines", [])]
            + list(recipe.get("extra_flags", [])))


def expand_sources(root: Path, recipe: dict):
    """(units, skipped): the recipe's source patterns matched under ``root``,
    minus its exclusions (which come back with their reason)."""
    units, skipped, seen = [], [], set()
    for pattern in recipe["sources"]:
        matches = sorted(p.relative_to(root).as_posix() for p in root.glob(pattern)
                         if p.is_file())
        if not matches:
            raise CorpusError(f"{recipe['name']}: pattern {pattern!r} matches no file")
        for rel in matches:
            if rel in seen:
                continue
            seen.add(rel)
            reason = next((why for pat, why in recipe.get("exclude", {}).items()
                           if fnmatch.fnmatch(rel, pat)), None)
            if reason:
                skipped.append({"path": rel, "reason": reason})
            else:
                unit = {"path": rel}
                extra = [f for pat, flags in recipe.get("unit_flags", {}).items()
                         if fnmatch.fnmatch(rel, pat) for f in flags]
                if extra:
                    unit["flags"] = extra
                units.append(unit)
    return units, skipped


def library_from_recipe(recipe: dict) -> Library:
    keys = ("includes", "defines", "std", "extra_flags", "sources", "exclude", "unit_flags")
    return Library(name=recipe["name"], split=recipe["split"], lang=recipe["lang"],
                   flags=recipe_flags(recipe), crate=recipe["crate"],
                   version=recipe["version"], sha256=recipe["sha256"],
                   license={"file": recipe["license"], "spdx": recipe["spdx"]},
                   deps=list(recipe.get("deps", [])),
                   generated=dict(recipe.get("generated", {})),
                   recipe={k: recipe[k] for k in keys if k in recipe})


def csmith_library(cache_dir) -> Library:
    lib = Library(name="csmith", split="train", lang="c",
                  flags=["-w", "-I{csmith_include}"],
                  license={"file": None, "spdx": "generated programs (csmith, BSD-2-Clause "
                                                 "generator)"},
                  csmith={"max_funcs": recipes.CSMITH_MAX_FUNCS, "version": csmith_version()})
    for seed in recipes.CSMITH_SEEDS:
        path = fetch_csmith(seed, recipes.CSMITH_MAX_FUNCS, None, cache_dir)
        lib.units.append({"path": path.name, "seed": seed, "sha256": sha256_of(path)})
    return lib


def generate(output: Path, *, libraries: Optional[Iterable[str]] = None,
             jobs: int = DEFAULT_JOBS, cache_dir=None, build_dir=None,
             progress: bool = True, log=print) -> Corpus:
    """Measures the recipes (all, or only ``libraries``, keeping the other
    entries of an existing manifest at ``output``) and writes the manifest."""
    output = Path(output)
    wanted = set(libraries) if libraries is not None else None
    known = {r["name"] for r in recipes.LIBRARIES} | {"csmith"}
    if wanted is not None and wanted - known:
        raise CorpusError(f"no recipe for {', '.join(sorted(wanted - known))}")
    try:
        corpus = Corpus.load(output, cache_dir=cache_dir, build_dir=build_dir)
    except CorpusError:
        corpus = Corpus({}, output, cache_dir, build_dir)
    order = [r["name"] for r in recipes.LIBRARIES] + ["csmith"]
    for name in list(corpus.libraries):
        if name not in known:  # recipe removed
            del corpus.libraries[name]

    for name in order:
        if wanted is not None and name not in wanted:
            continue
        started = time.monotonic()
        if name == "csmith":
            lib = csmith_library(corpus.cache_dir)
        else:
            recipe = next(r for r in recipes.LIBRARIES if r["name"] == name)
            lib = library_from_recipe(recipe)
            corpus.libraries[name] = lib
            corpus.fetch([name])
            lib.units, lib.skipped = expand_sources(corpus.source_dir(lib), recipe)
        corpus.libraries[name] = lib
        mods = [corpus.module(lib, u) for u in lib.units]
        results = run_parallel(measure, mods, jobs=jobs, desc=name, progress=progress)
        kept = []
        for unit, res in zip(lib.units, results):
            if "error" in res:
                lib.skipped.append({"path": unit["path"], "reason": res["error"]})
                continue
            unit.update(text=res["text"], ir_text=res["ir_text"], seconds=res["seconds"])
            if res["missing_size_attributes"]:
                unit["missing_size_attributes"] = res["missing_size_attributes"]
            kept.append(unit)
        lib.units = kept
        lib.skipped.sort(key=lambda s: s["path"])
        log(f"{name}: {len(kept)} units, {len(lib.skipped)} skipped, "
            f".text {sum(u['text'] for u in kept)} B, "
            f"{sum(u['ir_text'] != u['text'] for u in kept)} IR mismatches "
            f"({time.monotonic() - started:.0f} s)")

    libs = [corpus.libraries[n] for n in order if n in corpus.libraries]
    corpus.libraries = {lib.name: lib for lib in libs}
    corpus.data = {
        "format": FORMAT,
        "description": "Real C/C++ code for code-size experiments; see docs/corpus.md. "
                       "Generated by `python -m mlbridge.corpus manifest` from "
                       "corpus/recipes.toml.",
        "compiler": cc.clang_version(),
        "commands": {
            "ir": " ".join(cc.ir_command("<source>", ["<flags>"], "<unit.bc>")),
            "baseline": " ".join(cc.object_command("<source>", ["<flags>"], "<unit.o>"))
                        + "  # .text = sum of the executable ELF sections",
            "ir_to_object": " ".join(cc.object_command("<unit.bc>", [], "<unit.o>")),
        },
        "slow_unit_seconds": cc.SLOW_UNIT_SECONDS,
        "splits": {s: [lib.name for lib in libs if lib.split == s] for s in recipes.SPLITS},
        "libraries": [],
    }
    corpus.save(output)
    return corpus
