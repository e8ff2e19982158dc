"""What `pip install ./python` ships: a wheel built from the checkout holds
the plugins' protocol files, and mlbridge.llvm.plugins reads them from there
when no checkout is beside it."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("MLBRIDGE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
DEFS = sorted(p.name for p in (SOURCE / "integrations" / "llvm").glob("*/*Protocol.def"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    # setuptools builds in the source folder: build a copy of what setup.py
    # reads (python/, proto/, the .def files), not the checkout itself.
    src = tmp_path_factory.mktemp("src")
    shutil.copytree(SOURCE / "python", src / "python", ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__", "_generated"))
    shutil.copytree(SOURCE / "proto", src / "proto")
    for d in (SOURCE / "integrations" / "llvm").glob("*/*Protocol.def"):
        (src / "integrations" / "llvm" / d.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(d, src / "integrations" / "llvm" / d.parent.name)
    # --no-build-isolation: the test venv has setuptools; no network needed.
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                          "--no-build-isolation", "-q", "-w", str(out), str(src / "python")],
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "TMPDIR": str(build)})
    assert res.returncode == 0, res.stderr
    (whl,) = out.glob("mlbridge-*.whl")
    return whl


def test_wheel_ships_every_protocol(wheel):
    assert DEFS, "no protocol files in the checkout"
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(Path(n).name for n in names
                     if n.startswith("mlbridge/llvm/plugins/protocols/"))
    assert shipped == DEFS


def test_installed_package_reads_its_own_protocols(wheel, tmp_path):
    """Unpacked away from the checkout, the package parses the shipped copy."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = ("import mlbridge.llvm.plugins._protocol as p, sys;"
            "f = p.find('regalloc', 'RegAllocProtocol.def');"
            "assert str(f).startswith(sys.argv[1]), f;"
            "print(len(p.load('regalloc', 'RegAllocProtocol.def').features))")
    env = {**os.environ, "PYTHONPATH": str(site)}
    res = subprocess.run([sys.executable, "-c", code, str(site)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert int(res.stdout) > 0
