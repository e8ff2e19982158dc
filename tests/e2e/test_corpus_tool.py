"""The corpus tool on a tiny pinned subset of the committed manifest: bzip2
(7 units) and two csmith programs. Real downloads (cached), real clang-19.

* fetch verifies the sha256 pins, and refuses a corrupted download;
* check names a changed byte of an unpacked source, and fetch restores it;
* the bitcode carries minsize/optsize on every defined function;
* the baseline equals an independent ``clang-19 -Oz -c`` measured with
  ``llvm-size-19``, and the value recorded in the manifest;
* ``clang-19 -Oz -c <bitcode>`` gives the same ``.text`` as from source.
"""

import dataclasses
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import PYTHON_DIR

from mlbridge.corpus import Corpus, FetchError
from mlbridge.corpus.compile import functions_without_size_attributes, object_text
from mlbridge.corpus.fetch import fetch_crate, sha256_of

LIBRARY = "bzip2"
CSMITH_UNITS = 2


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    c = Corpus.load(build_dir=tmp_path_factory.mktemp("corpus-build"))
    c.fetch([LIBRARY])   # cached download (default cache), verified
    return c


@pytest.fixture(scope="module")
def subset(corpus):
    lib = corpus.libraries["csmith"]
    for unit in lib.units[:CSMITH_UNITS]:
        from mlbridge.corpus.fetch import fetch_csmith
        fetch_csmith(unit["seed"], lib.csmith["max_funcs"], unit["sha256"], corpus.cache_dir)
    mods = corpus.modules(libraries=[LIBRARY], include_mismatched=True)
    mods += [corpus.module(lib, u) for u in lib.units[:CSMITH_UNITS]]
    assert len(mods) == len(corpus.libraries[LIBRARY].units) + CSMITH_UNITS
    return mods


def llvm_size_text(obj):
    """.text bytes by llvm-size-19 (System V format), independent of our ELF reader."""
    out = subprocess.run(["llvm-size-19", "-A", str(obj)], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return sum(int(m.group(1)) for m in re.finditer(r"^\.text\S*\s+(\d+)", out, re.M))


def test_fetch_verifies_the_pinned_hash(corpus):
    lib = corpus.libraries[LIBRARY]
    archive = corpus.cache_dir / "crates" / f"{lib.crate}-{lib.version}.crate"
    assert sha256_of(archive) == lib.sha256
    assert (corpus.source_dir(lib) / lib.license["file"]).is_file()


def test_corrupted_download_is_refused(corpus, tmp_path):
    lib = corpus.libraries[LIBRARY]
    good = corpus.cache_dir / "crates" / f"{lib.crate}-{lib.version}.crate"
    mirror = tmp_path / "mirror" / lib.crate
    mirror.mkdir(parents=True)
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0xFF
    (mirror / good.name).write_bytes(bytes(data))
    cache = tmp_path / "cache"
    with pytest.raises(FetchError, match="sha256 mismatch"):
        fetch_crate(lib.crate, lib.version, lib.sha256, cache, mirror=tmp_path / "mirror")
    assert not (cache / "crates" / good.name).exists()
    assert not (cache / "src" / f"{lib.crate}-{lib.version}").exists()
    # A corrupted archive already in the cache is replaced by a good download.
    shutil.copy(good, mirror / good.name)
    (cache / "crates").mkdir(parents=True, exist_ok=True)
    (cache / "crates" / good.name).write_bytes(bytes(data))
    root = fetch_crate(lib.crate, lib.version, lib.sha256, cache, mirror=tmp_path / "mirror")
    assert sha256_of(cache / "crates" / good.name) == lib.sha256
    assert (root / "bzip2-1.0.8" / "bzlib.c").is_file()


def test_ir_has_size_attributes_and_compiles_to_the_baseline(subset):
    for m in subset:
        bc = m.ir()
        assert bc.read_bytes()[:4] == b"BC\xc0\xde", m.name
        assert functions_without_size_attributes(bc) == [], m.name
        text = m.baseline_text()
        assert text == m.manifest_text, m.name
        from_ir, _ = object_text(bc, [])
        assert from_ir == text, f"{m.name}: .text from IR {from_ir} != from source {text}"


def test_baseline_matches_an_independent_measurement(subset, tmp_path):
    total = 0
    for m in subset:
        obj = tmp_path / "unit.o"
        subprocess.run(["clang-19", "-Oz", "-c", str(m.source), *m.flags, "-o", str(obj)],
                       check=True, timeout=300)
        assert llvm_size_text(obj) == m.baseline_text(), m.name
        total += m.baseline_text()
    assert total > 0  # (some units hold only data: crctable.c has no code)


def test_ir_cache_is_reused_and_rebuilt_when_flags_change(subset):
    m = dataclasses.replace(subset[0])
    bc = m.ir()
    before = bc.stat().st_mtime_ns
    assert m.ir() == bc and bc.stat().st_mtime_ns == before
    m.flags = m.flags + ["-DMLBRIDGE_CORPUS_TEST_FLAG=1"]
    assert m.ir() == bc and bc.stat().st_mtime_ns != before


def test_cli_list_and_check(corpus, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    base = [sys.executable, "-m", "mlbridge.corpus", "--no-progress",
            "--build-dir", str(tmp_path / "build")]
    out = subprocess.run(base + ["list", "--libraries", LIBRARY], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert re.search(rf"^{LIBRARY}\s+train\s+c\s+7 units", out.stdout, re.M), out.stdout
    res = subprocess.run(base + ["check", "--libraries", LIBRARY, "-j", "2"], env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "checked 7 units of 1 libraries" in res.stdout and " 0 problems" in res.stdout
    bad = subprocess.run(base + ["list", "--libraries", "nosuchlib"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "no library 'nosuchlib'" in bad.stderr


def test_a_changed_source_fails_check_and_is_restored_by_fetch(corpus, tmp_path):
    lib = corpus.libraries[LIBRARY]
    archive = f"{lib.crate}-{lib.version}.crate"
    cache = tmp_path / "cache"
    (cache / "crates").mkdir(parents=True)
    shutil.copy(corpus.cache_dir / "crates" / archive, cache / "crates" / archive)
    source = fetch_crate(lib.crate, lib.version, lib.sha256, cache) / "bzip2-1.0.8" / "bzlib.c"
    pinned = source.read_bytes()
    source.write_bytes(pinned.replace(b"BZ_MAX_UNUSED", b"BZ_MAX_UNUSEd", 1))
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    base = [sys.executable, "-m", "mlbridge.corpus", "--no-progress", "--cache-dir", str(cache),
            "--build-dir", str(tmp_path / "build")]
    check = subprocess.run(base + ["check", "--libraries", LIBRARY], env=env,
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 1, check.stdout + check.stderr
    assert f"FAILED {LIBRARY}: {lib.crate} {lib.version}: changed: bzip2-1.0.8/bzlib.c" \
        in check.stderr
    fetch = subprocess.run(base + ["fetch", "--libraries", LIBRARY], env=env,
                           capture_output=True, text=True, timeout=300)
    assert fetch.returncode == 0 and "changed: bzip2-1.0.8/bzlib.c" in fetch.stderr
    assert source.read_bytes() == pinned


def test_attribute_check_tells_oz_ir_from_o2_ir(tmp_path):
    src = tmp_path / "f.c"
    src.write_text("int twice(int x) { return 2 * x; }\n"
                   "static inline __attribute__((always_inline)) int one(void) { return 1; }\n"
                   "int g(int x) { return twice(x) + one(); }\n")
    for level, expected in (("-Oz", []), ("-O2", ["twice", "g"])):
        bc = tmp_path / f"f{level}.bc"
        subprocess.run(["clang-19", level, "-Xclang", "-disable-llvm-passes", "-emit-llvm",
                        "-c", str(src), "-o", str(bc)], check=True, timeout=60)
        assert functions_without_size_attributes(bc) == expected, level
