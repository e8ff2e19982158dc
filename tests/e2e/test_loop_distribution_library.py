"""Loop distribution keeps a real library correct: bzip2 from the corpus
(pinned download), built with ``make`` and ``clang-19 -O3`` with
MLBridgeLoopDistribution.so loaded, passes bzip2's own ``make test``:

* ``shipped``: the plugin loaded with no option (its compiled-in model, or
  the built-in policy in a build without the model compiler);
* ``split``: every handled loop gets the fixed partition ``0|1`` (the
  first node in one loop, the second in the next), so the transformation
  really runs on library code; where that partition is invalid the plugin
  says so and leaves the loop alone.
"""

import json
import os
import shutil

import pytest

from conftest import BZIP2_UNITS

LIBRARY = "bzip2"


@pytest.fixture(scope="module")
def corpus(bzip2_corpus):
    return bzip2_corpus


@pytest.mark.parametrize("which", ["shipped", "split"])
def test_bzip2_built_with_loop_distribution_passes_its_tests(plugins, clang19, corpus,
                                                             tmp_path, which):
    if shutil.which("make") is None:
        pytest.fail("make not found (scripts/deps/plugins.apt installs it)", pytrace=False)
    from mlbridge.toolchain import run_command
    src = tmp_path / "bzip2"
    shutil.copytree(corpus.source_dir(corpus.libraries[LIBRARY]) / "bzip2-1.0.8", src)
    log = tmp_path / "ld.log"
    env = dict(os.environ, MLBRIDGE_LD_LOG=str(log))
    if which == "split":
        env["MLBRIDGE_LD_PARTITION"] = "*=0|1"
    make = ["make", "-C", str(src), f"CC={clang19}",
            f"CFLAGS=-O3 -w -D_FILE_OFFSET_BITS=64 "
            f"-fpass-plugin={plugins.loop_distribution}"]
    res = run_command([*make, "-j2", "bzip2"], timeout=400, env=env)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert entries, "the plugin saw no innermost loop in bzip2"
    assert {os.path.basename(e["module"]) for e in entries} <= {f"{n}.c" for n in BZIP2_UNITS}
    results = [e["result"] for e in entries]
    assert "error" not in results, entries
    if which == "shipped":
        assert "warning: mlbridge-loop-distribution" not in res.stderr, res.stderr
        assert "invalid" not in results, entries
    else:
        assert results.count("distributed") >= 1, entries
    res = run_command([*make, "test"], timeout=300, env=env)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "cmp" in res.stdout and "differ" not in res.stdout + res.stderr
