"""The corpus tool verifies the sources a build reads, not only the archive
they came from: a tiny crate served from a local mirror, no compiler (the
libraries here have no units).

Before, a byte changed in an unpacked source left `fetch` saying "fetched
and verified" and `check` saying "0 problems".
"""

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile

import pytest

from conftest import PYTHON_DIR
from mlbridge.corpus import Corpus
from mlbridge.corpus.fetch import SourceMismatch

SOURCES = {"src/tiny.c": b"#include \"tiny.h\"\nint tiny(void) { return TINY; }\n",
           "include/tiny.h": b"#define TINY 42\n"}
GENERATED = {"gen/config.h": {"text": "#define CONFIGURED 1\n"}}


def crate(mirror, name, version, files):
    """A .crate (gzipped tar of ``<name>-<version>/...``) in a registry-shaped
    mirror folder; returns its sha256."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for rel, data in files.items():
            info = tarfile.TarInfo(f"{name}-{version}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    folder = mirror / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}-{version}.crate").write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


def library(name, sha256, **extra):
    return dict(name=name, split="train", lang="c", flags=[], crate=name, version="0.1.0",
                sha256=sha256, **extra)


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A manifest of two libraries (``app`` uses ``tiny``'s headers) and a
    csmith program, a mirror and an empty cache."""
    mirror = tmp_path / "mirror"
    monkeypatch.setenv("MLBRIDGE_CORPUS_MIRROR", str(mirror))
    program = b"int main(void) { return 0; }\n"
    cache = tmp_path / "cache"
    (cache / "csmith").mkdir(parents=True)
    (cache / "csmith" / "csmith1.c").write_bytes(program)
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"libraries": [
        library("tiny", crate(mirror, "tiny", "0.1.0", SOURCES), generated=GENERATED),
        library("app", crate(mirror, "app", "0.1.0", {"app.c": b"int app;\n"}),
                deps=["tiny"]),
        dict(name="csmith", split="train", lang="c", flags=[], csmith={"max_funcs": 1},
             units=[{"path": "csmith1.c", "seed": 1,
                     "sha256": hashlib.sha256(program).hexdigest()}]),
    ]}))
    return manifest, cache, tmp_path


def tool(world, *args):
    manifest, cache, tmp = world
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    return subprocess.run([sys.executable, "-m", "mlbridge.corpus", "--no-progress",
                           "--manifest", str(manifest), "--cache-dir", str(cache),
                           "--build-dir", str(tmp / "build"), *args],
                          env=env, capture_output=True, text=True, timeout=120)


def test_a_changed_byte_of_an_unpacked_source_is_named_by_check_and_restored_by_fetch(world):
    cache = world[1]
    first = tool(world, "fetch", "--libraries", "tiny")
    assert first.returncode == 0, first.stderr
    assert "fetched and verified 1 libraries" in first.stdout
    source = cache / "src" / "tiny-0.1.0" / "src" / "tiny.c"
    assert source.read_bytes() == SOURCES["src/tiny.c"]

    data = bytearray(source.read_bytes())
    data[-5] ^= 0x01
    source.write_bytes(bytes(data))
    check = tool(world, "check", "--libraries", "tiny")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "FAILED tiny: tiny 0.1.0: changed: src/tiny.c (in " in check.stderr
    assert " 1 problems" in check.stdout
    assert source.read_bytes() == bytes(data)          # check reports, it does not restore

    again = tool(world, "fetch", "--libraries", "tiny")
    assert again.returncode == 0, again.stderr
    assert "changed: src/tiny.c" in again.stderr and "unpacking the archive again" in again.stderr
    assert "fetched and verified 1 libraries" in again.stdout
    assert source.read_bytes() == SOURCES["src/tiny.c"]
    clean = tool(world, "check", "--libraries", "tiny")
    assert clean.returncode == 0, clean.stderr
    assert " 0 problems" in clean.stdout and clean.stderr == ""


def test_missing_added_and_generated_files_are_named_for_every_library_using_them(world):
    manifest, cache, _ = world
    corpus = Corpus.load(manifest, cache_dir=cache)
    corpus.fetch()
    root = corpus.source_dir(corpus.libraries["tiny"])
    assert (root / "gen" / "config.h").read_text() == GENERATED["gen/config.h"]["text"]
    corpus.fetch(repair=False)                         # as unpacked: nothing to say

    (root / "include" / "tiny.h").unlink()
    (root / "include" / "stdio.h").write_text("/* shadows the system header */\n")
    with pytest.raises(SourceMismatch) as e:
        corpus.fetch(["app"], repair=False)            # app reads tiny's headers
    assert e.value.problems == ["missing: include/tiny.h", "added: include/stdio.h"]

    corpus.fetch(["tiny"])
    assert not (root / "include" / "stdio.h").exists()
    (root / "gen" / "config.h").write_text("#define CONFIGURED 0\n")
    with pytest.raises(SourceMismatch, match=r"changed: gen/config.h \(a generated header\)"):
        corpus.fetch(["tiny"], repair=False)
    corpus.fetch(["tiny"])
    assert (root / "gen" / "config.h").read_text() == GENERATED["gen/config.h"]["text"]
    corpus.fetch(["tiny", "app"], repair=False)


def test_a_changed_csmith_program_is_named(world):
    manifest, cache, _ = world
    program = cache / "csmith" / "csmith1.c"
    corpus = Corpus.load(manifest, cache_dir=cache)
    corpus.fetch(["csmith"], repair=False)
    program.write_text("int main(void) { return 1; }\n")
    with pytest.raises(SourceMismatch, match="csmith seed 1: changed: csmith1.c"):
        corpus.fetch(["csmith"], repair=False)


def test_a_record_that_is_not_readable_means_unpacking_again(world):
    manifest, cache, _ = world
    corpus = Corpus.load(manifest, cache_dir=cache)
    root = corpus.source_dir(corpus.libraries["app"])
    corpus.fetch(["app"])
    (root / ".mlbridge-unpacked.json").write_text("{")   # e.g. an interrupted write
    (root / "app.c").write_text("changed, and no record says so\n")
    corpus.fetch(["app"], repair=False)                # a fresh unpack of the checked archive
    assert (root / "app.c").read_bytes() == b"int app;\n"
