"""IR2Vec's embeddings from the installed kit, on every LLVM version the
build has: `cmake --install` of the components core and llvm<V> alone, a
pass plugin (tests/package/ir2vec_plugin) built against that prefix with
`LIBS MLBridge::ir2vec<V>`, run by opt-<V>:

* with no setting the plugin reads the vocabulary installed with the kit
  (found from where the CMake package is: no installed file names it);
* function and loop vectors have the vocabulary's dimension and are not zero;
* $MLBRIDGE_IR2VEC_VOCAB_DIR overrides it, and a folder without one is an
  error naming the file, not a crash.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import build_against, installed_kit, run_completed

REPO = Path(__file__).resolve().parents[2]
PROJECT = REPO / "tests" / "package" / "ir2vec_plugin"
TIMEOUT = 300.0
LOOP = """
int sum(const int *a, int n) {
  int s = 0;
  for (int i = 0; i < n; i++) s += a[i] * 3;
  return s;
}
"""


def run(cmd, **kw) -> subprocess.CompletedProcess:
    return run_completed(cmd, timeout=TIMEOUT, **kw)


@pytest.fixture(scope="module")
def kit(llvm_major, tmp_path_factory):
    """(prefix, the plugin) for llvm_major, built out of tree."""
    work = tmp_path_factory.mktemp(f"kit-ir2vec-{llvm_major}")
    prefix = installed_kit(llvm_major, work)
    return prefix, build_against(PROJECT, prefix, work / "build", llvm_major) / "Vectors.so"


@pytest.fixture(scope="module")
def module_ir(clang, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("kit-ir2vec-ir")
    (d / "sum.c").write_text(LOOP)
    out = d / "sum.ll"
    run([clang, "-O1", "-S", "-emit-llvm", d / "sum.c", "-o", out])
    return out


def vectors(opt, plugin, ir, **env):
    base = {k: v for k, v in os.environ.items() if not k.startswith("MLBRIDGE_")}
    res = run([opt, f"-load-pass-plugin={plugin}", "-passes=vectors", "-disable-output", ir],
              env=dict(base, **env))
    return res.stderr.strip()


def test_installed_vocabulary_by_default(kit, opt, module_ir, llvm_major):
    prefix, plugin = kit
    name = "seedEmbeddingVocab.txt" if llvm_major == 19 else "seedEmbeddingVocab.json"
    installed = prefix / "share" / "mlbridge" / "ir2vec" / name
    assert installed.is_file()
    assert (prefix / "share" / "mlbridge" / "ir2vec" / "METADATA").is_file()  # its licence
    line = vectors(opt, plugin, module_ir)
    fn, path, dim, fnorm, lnorm = line.split()
    assert (fn, Path(path).resolve()) == ("sum", installed.resolve())
    assert int(dim) == 300
    assert float(fnorm) > 0 and float(lnorm) > 0
    # (That no installed file holds a path of this machine is
    # test_install_components' check.)


def test_environment_overrides_and_a_missing_vocabulary_is_an_error(kit, opt, module_ir,
                                                                     tmp_path):
    prefix, plugin = kit
    line = vectors(opt, plugin, module_ir, MLBRIDGE_IR2VEC_VOCAB_DIR=str(tmp_path))
    assert line.startswith("error: not-found:") and str(tmp_path) in line, line
    same = vectors(opt, plugin, module_ir,
                   MLBRIDGE_IR2VEC_VOCAB_DIR=str(prefix / "share" / "mlbridge" / "ir2vec"))
    assert same.split()[2:] == vectors(opt, plugin, module_ir).split()[2:]
