"""The shipped inlining policy keeps a real library correct: bzip2 from the
corpus (pinned download), built with ``make`` and clang-19 -Oz with
MLBridgeInlineAdvisor.so deciding every inlining (its compiled-in model, or
the same ONNX file through ONNX Runtime), passes bzip2's own ``make test``.
"""

import json
import os
import shutil
import subprocess

import pytest

from conftest import BZIP2_UNITS, REPO_ROOT

MODEL = REPO_ROOT / "models" / "plugins" / "inliner_policy.onnx"
LIBRARY = "bzip2"


@pytest.fixture(scope="module")
def corpus(bzip2_corpus):
    return bzip2_corpus


def test_bzip2_built_with_the_inliner_policy_passes_its_tests(plugins, clang19, corpus,
                                                               tmp_path):
    if shutil.which("make") is None:
        pytest.fail("make not found (scripts/deps/plugins.apt installs it)", pytrace=False)
    from mlbridge.llvm.plugins import tool_env
    src = tmp_path / "bzip2"
    shutil.copytree(corpus.source_dir(corpus.libraries[LIBRARY]) / "bzip2-1.0.8", src)
    log = tmp_path / "inline.log"
    runner = "compiled" if plugins.has_runner("compiled") else "onnx"
    env = dict(os.environ, MLBRIDGE_INLINE_RUNNER=runner, MLBRIDGE_INLINE_MODEL=str(MODEL),
               MLBRIDGE_INLINE_LOG=str(log))
    make = ["make", "-C", str(src), f"CC={clang19}",
            f"CFLAGS=-Oz -w -D_FILE_OFFSET_BITS=64 -fpass-plugin={plugins.inline_advisor}"]
    res = subprocess.run([*make, "-j2", "bzip2"], capture_output=True, text=True, timeout=400,
                         env=tool_env(plugins, env))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "warning: mlbridge-inline" not in res.stderr, res.stderr
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert {os.path.basename(e["module"]) for e in entries} == {f"{n}.c" for n in BZIP2_UNITS}
    assert all(e["runner"] == runner and e["fallbacks"] == 0 for e in entries)
    # The policy decided (and inlined) in bzip2's code.
    assert sum(e["model_decisions"] for e in entries) > 50
    assert sum(e["advised_inline"] for e in entries) > 0
    res = subprocess.run([*make, "test"], capture_output=True, text=True, timeout=300,
                         env=tool_env(plugins, env))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "cmp" in res.stdout and "differ" not in res.stdout + res.stderr
