"""The measuring command lines on a tiny corpus of one library (two C
units, compiled by clang-19 with and without the inliner plugin), when the
disk says no (issue 34, item 13; the argument and Ctrl-C cases without a
compiler are in tests/python/test_cli_errors.py):

* results to a full disk (``/dev/full``: a real ENOSPC): one line, exit 1;
* a measurement cache that cannot be written (its folder would be under a
  file: a real ENOTDIR): one warning, and the run's numbers all the same.
"""

import json
import os
import subprocess
import sys

import pytest

from mlbridge import cli

UNIT = """\
static int sq(int x) { return x * x; }
int f%(i)d(int *a, int n) { int s = 0; for (int i = 0; i < n; ++i) s += sq(a[i]) + %(i)d;
  return s; }
"""


@pytest.fixture
def tiny(plugins, tmp_path):
    """(manifest, environment) of a held-out library "tiny" of two units."""
    src = tmp_path / "cache" / "src" / "tiny-1"
    src.mkdir(parents=True)
    units = []
    for i in range(2):
        (src / f"u{i}.c").write_text(UNIT % {"i": i})
        units.append({"path": f"u{i}.c", "text": 1, "ir_text": 1})
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"format": 1, "libraries": [{
        "name": "tiny", "split": "heldout", "lang": "c", "flags": ["-w"], "crate": "tiny",
        "version": "1", "sha256": "0" * 64, "units": units}]}))
    env = dict(os.environ, MLBRIDGE_CORPUS_CACHE=str(tmp_path / "cache"),
               MLBRIDGE_CORPUS_BUILD=str(tmp_path / "build"))
    return manifest, env


def _evaluate(manifest, env, *extra):
    return subprocess.run([sys.executable, "-m", "mlbridge.train", "evaluate", "--manifest",
                           str(manifest), "--split", "heldout", "--jobs", "1", "--quiet",
                           *extra], capture_output=True, text=True, timeout=300, env=env)


def test_results_to_a_full_disk_are_one_line(tiny):
    manifest, env = tiny
    res = _evaluate(manifest, env, "--out", "/dev/full", "--no-cache")
    assert res.returncode == cli.EXIT_ERROR, res.stderr[-3000:]
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    assert res.stderr.strip().splitlines() == [
        "mlbridge.train evaluate: error: /dev/full: No space left on device"], res.stderr


def test_a_cache_that_cannot_be_written_does_not_stop_the_run(tiny, tmp_path):
    manifest, env = tiny
    (tmp_path / "build").write_text("a file where the corpus build folder would be\n")
    out = tmp_path / "rows.json"
    res = _evaluate(manifest, env, "--out", str(out))
    assert res.returncode == 0, res.stderr[-3000:]
    warnings = [ln for ln in res.stderr.splitlines() if "cannot write" in ln]
    assert warnings == [f"mlbridge.train: measurement cache: cannot write "
                        f"{tmp_path / 'build' / 'sizes'} (Not a directory); going on without "
                        "caching it (further write errors of this cache are not reported)"], \
        res.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [r["module"] for r in rows] == ["tiny/u0.c", "tiny/u1.c"]
    for r in rows:
        assert all(v["text"] > 0 for v in r["results"].values()), r
