"""scripts/deps/mlir22.sh is opt-in: scripts/install-deps.sh runs every
scripts/deps/*.sh, and on a fresh machine (no earlier extraction, no
MLBRIDGE_MLIR22=1, no DEST argument) it must not download or unpack MLIR 22
(809 MB) for a default build that does not use it.

The script runs from a copy of its directory in a temporary tree, with a
fake ``apt-get`` first on PATH (fault injection: it records its calls and
fails) so nothing is downloaded either way.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def tree(tmp_path):
    shutil.copytree(ROOT / "scripts" / "deps", tmp_path / "scripts" / "deps")
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "apt-get").write_text(
        '#!/bin/sh\necho "$@" >> "$(dirname "$0")/apt-get.calls"\n'
        'echo "fake apt-get: no network in this test" >&2\nexit 100\n')
    (fake / "apt-get").chmod(0o755)
    return tmp_path


def run(tree, *args, **env):
    environ = {k: v for k, v in os.environ.items() if k != "MLBRIDGE_MLIR22"}
    environ.update(env, PATH=f"{tree / 'fakebin'}:{os.environ['PATH']}")
    return subprocess.run(["bash", str(tree / "scripts/deps/mlir22.sh"), *args],
                          capture_output=True, text=True, timeout=60, env=environ)


def test_not_asked_extracts_nothing(tree):
    r = run(tree)
    assert r.returncode == 0, r.stderr
    assert "MLIR 22 not extracted (opt-in" in r.stdout and "MLBRIDGE_MLIR22=1" in r.stdout
    assert not (tree / "fakebin/apt-get.calls").exists()
    assert not (tree / ".deps").exists()


@pytest.mark.parametrize("how", ["env", "argument", "earlier-extraction"])
def test_asked_for_it_downloads(tree, how):
    """Asked for (MLBRIDGE_MLIR22=1, a DEST, or an earlier extraction to keep
    at the installed LLVM 22's version), it goes to apt; the fake's failure
    is reported with a clear error and leaves DEST as it was."""
    if shutil.which("dpkg-query") is None or subprocess.run(
            ["dpkg-query", "-W", "libllvm22"], capture_output=True).returncode != 0:
        pytest.fail("LLVM 22 (libllvm22) is required: scripts/deps/llvm22.apt")
    dest = tree / ".deps" / "mlir22"
    if how == "earlier-extraction":
        dest.mkdir(parents=True)
        (dest / ".installed").write_text("libmlir-22 libmlir-22-dev mlir-22-tools 22.1.0-1\n")
    r = {"env": lambda: run(tree, MLBRIDGE_MLIR22="1"),
         "argument": lambda: run(tree, str(dest)),
         "earlier-extraction": lambda: run(tree)}[how]()
    assert r.returncode == 1
    assert "mlir22.sh: apt-get download failed" in r.stderr, r.stderr
    assert "download libmlir-22=" in (tree / "fakebin/apt-get.calls").read_text()
    earlier = how == "earlier-extraction"
    # No staging directory left; an earlier extraction untouched.
    assert [p.name for p in (tree / ".deps").iterdir()] == ([dest.name] if earlier else [])
    if earlier:
        assert [p.name for p in dest.iterdir()] == [".installed"]
