"""The committed corpus manifest, and the modules it describes.

``corpus/manifest.json`` pins every library (crate, version, sha256), says
how its units compile and lists the units that compile and those skipped
(with the reason). :class:`Corpus` reads it; :class:`Module` builds one
unit's bitcode and measures its baseline on demand, caching both on disk
under a key of the compiler version, the flags and the source's content.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

from ..errors import MLBridgeError
from . import compile as cc
from .fetch import SourceMismatch, fetch_crate, fetch_csmith, handle_mismatch

SPLITS = ("train", "validation", "heldout")

#: The repository checkout this package sits in (python/mlbridge/corpus/..).
REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_MANIFEST = REPO_ROOT / "corpus" / "manifest.json"


class CorpusError(MLBridgeError):
    """The manifest is missing or inconsistent, or a unit cannot be found."""


def default_cache_dir() -> Path:
    """Where downloads go: ``$MLBRIDGE_CORPUS_CACHE``, else ``<repo>/.deps/corpus``."""
    env = os.environ.get("MLBRIDGE_CORPUS_CACHE")
    return Path(env) if env else REPO_ROOT / ".deps" / "corpus"


def default_build_dir() -> Path:
    """Where IR and baselines are cached: ``$MLBRIDGE_CORPUS_BUILD``, else
    ``<repo>/build-corpus``."""
    env = os.environ.get("MLBRIDGE_CORPUS_BUILD")
    return Path(env) if env else REPO_ROOT / "build-corpus"


@dataclass
class Library:
    name: str
    split: str
    lang: str
    flags: List[str]                 # with {src} for the unpacked source folder
    crate: Optional[str] = None      # None for the csmith programs
    version: Optional[str] = None
    sha256: Optional[str] = None
    license: dict = field(default_factory=dict)
    deps: List[str] = field(default_factory=list)        # libraries whose headers it uses
    generated: Dict[str, dict] = field(default_factory=dict)  # headers build.rs writes
    units: List[dict] = field(default_factory=list)
    skipped: List[dict] = field(default_factory=list)
    csmith: Optional[dict] = None    # {"max_funcs": N} for the csmith programs
    recipe: dict = field(default_factory=dict)


@dataclass
class Module:
    """One translation unit of the corpus."""
    library: str
    name: str                # unique id "library/path"
    split: str
    lang: str                # "c" or "c++"
    source: Path
    flags: List[str]
    manifest_text: Optional[int] = None   # baseline .text recorded in the manifest
    ir_matches: bool = True               # clang -Oz -c <ir> gives the baseline .text
    content_key: str = ""                 # sha256 of the library's pinned content
    build_dir: Optional[Path] = None

    def _key(self) -> str:
        if not self.source.is_file():
            raise CorpusError(f"{self.name}: no source {self.source}: the corpus is not "
                              "fetched (python -m mlbridge.corpus fetch)")
        h = hashlib.sha256()
        for part in (cc.clang_version(), self.content_key, str(self.source),
                     "\0".join(self.flags)):
            h.update(part.encode() + b"\n")
        with open(self.source, "rb") as f:
            h.update(f.read())
        return h.hexdigest()

    def _out(self, build_dir, suffix: str) -> Path:
        base = Path(build_dir) if build_dir is not None else (self.build_dir or
                                                              default_build_dir())
        return base / f"{self.name}{suffix}"

    def ir(self, build_dir=None) -> Path:
        """The unit's bitcode (``clang-19 -Oz -Xclang -disable-llvm-passes
        -emit-llvm -c``), built now unless cached with the same key."""
        path = self._out(build_dir, ".bc")
        stamp = path.with_name(path.name + ".key")
        key = self._key()
        if path.is_file() and stamp.is_file() and stamp.read_text() == key:
            return path
        cc.build_ir(self.source, self.flags, path)
        stamp.write_text(key)
        return path

    def baseline_text(self, build_dir=None) -> int:
        """``.text`` bytes of ``clang-19 -Oz -c <source> <flags>``, measured now
        unless cached with the same key."""
        path = self._out(build_dir, ".baseline.json")
        key = self._key()
        try:
            cached = json.loads(path.read_text())
            if cached.get("key") == key:
                return int(cached["text"])
        except (OSError, ValueError, KeyError):
            pass
        text, _ = cc.object_text(self.source, self.flags)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"key": key, "text": text}))
        return text


class Corpus:
    """The libraries and units of a manifest, their sources in ``cache_dir``."""

    def __init__(self, data: dict, path: Optional[Path] = None, cache_dir=None,
                 build_dir=None):
        self.path = path
        self.data = data
        # Resolved: the sources' paths are part of every cache key (and of
        # the flags), so checkouts that reach one source cache through a
        # symlink share its bitcode and measurements instead of rebuilding.
        self.cache_dir = (Path(cache_dir) if cache_dir is not None
                          else default_cache_dir()).resolve()
        self.build_dir = Path(build_dir) if build_dir is not None else default_build_dir()
        self.libraries: Dict[str, Library] = {}
        for entry in data.get("libraries", []):
            lib = Library(**entry)
            if lib.split not in SPLITS:
                raise CorpusError(f"{lib.name}: unknown split {lib.split!r}")
            if lib.name in self.libraries:
                raise CorpusError(f"library {lib.name!r} appears twice in the manifest")
            self.libraries[lib.name] = lib

    @classmethod
    def load(cls, path=None, *, cache_dir=None, build_dir=None) -> "Corpus":
        path = Path(path) if path is not None else DEFAULT_MANIFEST
        try:
            data = json.loads(path.read_text())
        except OSError as e:
            raise CorpusError(f"cannot read the corpus manifest {path}: {e}") from None
        except ValueError as e:
            raise CorpusError(f"{path} is not valid JSON: {e}") from None
        return cls(data, path, cache_dir, build_dir)

    def save(self, path=None) -> None:
        path = Path(path or self.path)
        self.data["libraries"] = [vars(lib) for lib in self.libraries.values()]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.data, indent=1) + "\n")

    # -- sources --------------------------------------------------------
    def select(self, libraries: Optional[Iterable[str]] = None) -> List[Library]:
        if libraries is None:
            return list(self.libraries.values())
        out = []
        for name in libraries:
            if name not in self.libraries:
                raise CorpusError(f"no library {name!r} in the manifest (known: "
                                  f"{', '.join(sorted(self.libraries))})")
            out.append(self.libraries[name])
        return out

    def source_dir(self, lib: Library) -> Path:
        if lib.csmith is not None:
            return self.cache_dir / "csmith"
        return self.cache_dir / "src" / f"{lib.crate}-{lib.version}"

    def fetch(self, libraries: Optional[Iterable[str]] = None, *, mirror=None,
              progress: bool = False, repair: bool = True) -> None:
        """Downloads and verifies the selected libraries (all by default) and
        those whose headers they use. Every file their builds read is checked
        against its pin each time (the unpacked tree against the hashes
        recorded when the verified archive was unpacked, a csmith program
        against its sha256, a generated header against the manifest); what
        differs is restored with a warning naming it, or, with
        ``repair=False``, raises :class:`SourceMismatch`."""
        libs = self.select(libraries)
        bar = _progress(progress, total=len(libs), desc="fetch", unit="lib")
        for lib in libs:
            if lib.csmith is not None:
                for unit in lib.units:
                    fetch_csmith(unit["seed"], lib.csmith["max_funcs"], unit["sha256"],
                                 self.cache_dir, repair=repair)
            for one in ([] if lib.csmith is not None else [lib] + self.select(lib.deps)):
                root = fetch_crate(one.crate, one.version, one.sha256, self.cache_dir, mirror,
                                   generated=self._generated_in(one), repair=repair)
                write_generated(root, one.generated, repair=repair)
            bar.update(1)
        bar.close()

    def _generated_in(self, lib: Library):
        """The generated headers of every library unpacked where ``lib`` is."""
        return {rel for other in self.libraries.values()
                if (other.crate, other.version) == (lib.crate, lib.version)
                for rel in other.generated}

    # -- modules --------------------------------------------------------
    def resolve_flags(self, lib: Library, flags: Sequence[str]) -> List[str]:
        """Flags with ``{src}`` (the library's unpacked source), ``{src:NAME}``
        (library NAME's) and ``{csmith_include}`` (csmith.h's folder) filled in."""
        def subst(m):
            if m.group(1) == "csmith_include":
                from ..llvm.plugins.corpus import csmith_include_dir
                return csmith_include_dir()
            name = m.group(2)
            return str(self.source_dir(self.select([name])[0] if name else lib))
        return [_PLACEHOLDER.sub(subst, f) for f in flags]

    def content_key(self, lib: Library, unit: dict) -> str:
        """Hash of everything pinned that a unit of ``lib`` compiles from."""
        if unit.get("sha256"):
            return unit["sha256"]
        h = hashlib.sha256((lib.sha256 or "").encode())
        for dep in lib.deps:
            h.update((self.select([dep])[0].sha256 or "").encode())
        h.update(json.dumps(lib.generated, sort_keys=True).encode())
        return h.hexdigest()

    def module(self, lib: Library, unit: dict) -> Module:
        return Module(library=lib.name, name=f"{lib.name}/{unit['path']}", split=lib.split,
                      lang=lib.lang, source=self.source_dir(lib) / unit["path"],
                      flags=self.resolve_flags(lib, lib.flags + unit.get("flags", [])),
                      manifest_text=unit.get("text"),
                      ir_matches=unit.get("ir_text") == unit.get("text"),
                      content_key=self.content_key(lib, unit),
                      build_dir=self.build_dir)

    def modules(self, split: Optional[str] = None, *, libraries=None,
                include_mismatched: bool = False) -> List[Module]:
        """The units of ``split`` ("train", "validation", "heldout"; None: all).
        Units whose IR does not compile back to the baseline ``.text`` are
        left out unless ``include_mismatched``."""
        if split is not None and split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS} or None, not {split!r}")
        out = []
        for lib in self.select(libraries):
            if split is not None and lib.split != split:
                continue
            for unit in lib.units:
                m = self.module(lib, unit)
                if m.ir_matches or include_mismatched:
                    out.append(m)
        return out


_PLACEHOLDER = re.compile(r"\{(csmith_include|src(?::([\w.+-]+))?)\}")


def write_generated(root: Path, files: Dict[str, dict], *, repair: bool = True) -> None:
    """Writes the configuration headers a crate's build script would generate
    under ``root``: ``{"text": ...}``, or ``{"from": path, "replace": {...}}``
    (a file of the crate with placeholders filled in). One that exists with
    other content is written again with a warning or, with ``repair=False``,
    raises :class:`SourceMismatch`."""
    changed = []
    for rel, spec in files.items():
        if "text" in spec:
            text = spec["text"]
        else:
            text = (root / spec["from"]).read_text()
            for old, new in spec.get("replace", {}).items():
                text = text.replace(old, new)
        path = root / rel
        if path.is_file() and path.read_text() == text:
            continue
        if os.path.lexists(path):
            changed.append(f"changed: {rel} (a generated header)")
            if not repair:
                continue
            path.unlink()  # (it may be a link)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if changed:
        handle_mismatch(SourceMismatch(root.name, root, changed), repair,
                        "written again from the manifest")


def _progress(enabled: bool, **kwargs):
    from tqdm import tqdm
    return tqdm(disable=not enabled, **kwargs)
