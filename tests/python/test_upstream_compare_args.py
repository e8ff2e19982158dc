"""bench/upstream_compare.py without the published source: a clear error and
exit status 2, before anything is started (the comparison itself is opt-in,
`bench-upstream`, since it needs that project's source from GitHub)."""
import os
import subprocess
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "bench" / "upstream_compare.py"


def run(*args):
    return subprocess.run([sys.executable, str(HARNESS), *args], capture_output=True,
                          text=True, timeout=60)


def test_missing_upstream_source_is_a_clear_error():
    r = run()
    assert r.returncode == 2
    assert "--upstream-src DIR is required" in r.stderr
    assert "https://github.com/IITH-Compilers/ML-Compiler-Bridge" in r.stderr
    assert r.stdout == ""


def test_empty_cmake_cache_value_is_the_same_error():
    # bench-upstream passes the cache variable even when it is unset.
    r = run("--upstream-src", "", "--upstream-client", "")
    assert r.returncode == 2
    assert "--upstream-src DIR is required" in r.stderr


def test_a_directory_that_is_not_the_published_tree(tmp_path):
    r = run("--upstream-src", str(tmp_path))
    assert r.returncode == 2
    assert "CompilerInterface/compilerinterface/__init__.py" in r.stderr


def test_missing_client_after_a_valid_tree(tmp_path):
    pkg = tmp_path / "CompilerInterface" / "compilerinterface"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    r = run("--upstream-src", str(tmp_path))
    assert r.returncode == 2
    assert "--upstream-client EXE is required" in r.stderr
    r = run("--upstream-src", str(tmp_path), "--upstream-client", str(tmp_path / "nope"))
    assert r.returncode == 2
    assert "not an executable file" in r.stderr


def test_unknown_transport():
    r = run("--transports", "pipe-carrier-pigeon")
    assert r.returncode == 2
    assert "pipe-carrier-pigeon" in r.stderr and "pipe-bitstream" in r.stderr
