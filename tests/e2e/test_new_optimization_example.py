"""examples/new-optimization/, an out-of-tree plugin made only from the
installed kit, on every LLVM version the build has:

* `cmake --install` of this build's components core and llvm<V> alone into
  a temporary prefix (no runner library, no plugin of ours);
* the example configured and built against that prefix with
  find_package(MLBridge COMPONENTS llvm<V>) + mlbridge_add_llvm_pass_plugin;
  the plugin exports its entry and nothing else;
* clang-<V> -O2 with the plugin, served from Python over pipes by the
  example's serve.py: every innermost loop is a decision with a stable name,
  and the program prints what it prints without the plugin;
* the train, deploy and measure commands of docs/new-optimization.md: train.py on three
  kernels of each split (a fast real run; its ONNX model compiles), the
  plugin built with the committed model compiled in (component compiled),
  and evaluate.py on two held-out kernels with no model side.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_completed

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "new-optimization"
TIMEOUT = 300.0


def run(cmd, **kw) -> subprocess.CompletedProcess:
    return run_completed(cmd, timeout=TIMEOUT, **kw)


@pytest.fixture(scope="module")
def plugin(llvm_major, tmp_path_factory):
    """The example's UnrollCount.so for llvm_major, built out of tree."""
    from build_components import build_dir, manifest, require_component
    require_component("llvm_plugins" if llvm_major == 19 else "llvm_plugins_llvm22")
    if manifest().sanitize:
        # Its libraries need the sanitizer runtime a user's plugin and clang
        # do not have; packages come from plain builds (the installed-package
        # tests are not run in sanitizer builds either, tests/CMakeLists.txt).
        pytest.skip("a sanitizer build is not installed for users")
    work = tmp_path_factory.mktemp(f"new-optimization-{llvm_major}")
    prefix = work / "prefix"
    for component in ("core", f"llvm{llvm_major}"):
        run(["cmake", "--install", build_dir(), "--prefix", prefix, "--component", component])
    assert not (prefix / "lib" / "mlbridge").exists(), "our plugins came with the kit"
    return build_example(prefix, work / "build", llvm_major)


def build_example(prefix, build, llvm_major, *extra):
    run(["cmake", "-S", EXAMPLE, "-B", build, "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}",
         f"-DLLVM_VERSION={llvm_major}", *extra])
    run(["cmake", "--build", build])
    so = build / "UnrollCount.so"
    assert so.is_file()
    return so


def python_env():
    return dict({k: v for k, v in os.environ.items() if not k.startswith("UNROLL_")},
                PYTHONPATH=str(REPO / "python"))


@pytest.fixture(scope="module")
def compiled_kit(plugin):
    """The plugin's prefix with the kit's component compiled added
    (mlbridge-model-compiler, for MODEL)."""
    from build_components import build_dir, require_component
    require_component("compiled_model")
    prefix = plugin.parents[1] / "prefix"
    run(["cmake", "--install", build_dir(), "--prefix", prefix, "--component", "compiled"])
    return prefix


@pytest.fixture(scope="module")
def deployed(plugin, compiled_kit, llvm_major):
    """UnrollCount.so with the committed model compiled in (docs/new-optimization.md's
    deploy step)."""
    return build_example(compiled_kit, plugin.parents[1] / "deployed", llvm_major,
                         f"-DUNROLL_MODEL={EXAMPLE / 'model' / 'unroll.onnx'}")


def test_plugin_exports_only_its_entry(plugin):
    rows = [line.split() for line in run(["nm", "-D", "--defined-only", plugin]).stdout.splitlines()]
    # Upper case: a global or weak definition another module can bind to
    # (the linker leaves the symbols it made local in .dynsym, lower case).
    exported = [name for _, kind, name in rows if kind.isupper()]
    assert exported == ["llvmGetPassPluginInfo"]


def test_decisions_arrive_and_output_is_unchanged(plugin, clang, tmp_path):
    src = EXAMPLE / "kernels.c"
    plain, served = tmp_path / "plain", tmp_path / "served"
    run([clang, "-O2", src, "-o", plain])
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    res = run([sys.executable, EXAMPLE / "serve.py", plugin, clang, "-O2", src, "-o", served],
              env=env)
    decisions = [line.split()[:2] for line in res.stdout.splitlines()]
    features = [dict(f.split("=") for f in line.split()[2:]) for line in res.stdout.splitlines()]
    assert decisions, f"no decision reached Python:\n{res.stderr}"
    for name, action in decisions:
        assert re.fullmatch(r".*kernels\.c:\w+:loop\d+", name), name
        assert action in {"0", "1", "2", "3", "4", "5"}  # 0: LLVM decides
    # Only innermost loops are asked; kernels.c's initialization loop runs
    # 256 times, a count SCEV knows.
    assert all(f["innermost"] == "1" and int(f["instructions"]) > 0 for f in features)
    assert "256" in [f["trip_count"] for f in features]
    assert "warning" not in res.stderr, res.stderr
    assert run([served]).stdout == run([plain]).stdout
    # The names are the keys of search and replay: the same in the next compile.
    again = run([sys.executable, EXAMPLE / "serve.py", plugin, clang, "-O2", src, "-o", served],
                env=env)
    assert [line.split()[0] for line in again.stdout.splitlines()] == [n for n, _ in decisions]


def test_without_a_model_llvm_decides(plugin, clang, tmp_path):
    """No UNROLL_* setting: the plugin asks nothing and says nothing; a
    channel nobody serves: one warning, and the compile goes on."""
    src = EXAMPLE / "kernels.c"
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNROLL_")}
    quiet = run([clang, "-O2", f"-fpass-plugin={plugin}", src, "-o", tmp_path / "a"], env=env)
    assert quiet.stderr == ""
    env["UNROLL_CHANNEL"] = str(tmp_path / "nobody")
    warned = run([clang, "-O2", f"-fpass-plugin={plugin}", src, "-o", tmp_path / "b"], env=env)
    assert warned.stderr.count("warning: unroll-count:") == 1, warned.stderr


def test_train_on_three_kernels(plugin, compiled_kit, clang, tmp_path):
    """train.py --kernels 3: search, fit, selection on validation, export;
    the model compiles with the kit's model compiler."""
    out = tmp_path / "model"
    res = run([sys.executable, EXAMPLE / "train.py", plugin, "--clang", clang, "--kernels", "3",
               "--out", out], env=python_env())
    assert "validation (3 kernels): geomean" in res.stdout, res.stdout + res.stderr
    doc = json.loads((out / "train.json").read_text())
    families = json.loads((REPO / "corpus" / "loops" / "kernels.json").read_text())["families"]
    assert len(doc["search"]) == 3
    assert all(families[k["family"]]["split"] == "train" for k in doc["search"].values())
    for k in doc["search"].values():
        # Action 0 sets no metadata: LLVM's -O3, to the instruction.
        assert k["uniform"][0] == k["o3"]
        assert all(len(lp["ir"]) == 6 for lp in k["loops"].values())
    (tmp_path / "gen").mkdir()
    run([compiled_kit / "bin" / "mlbridge-model-compiler", out / "unroll.onnx", "--name", "M",
         "--output-dir", tmp_path / "gen"])


def test_deployed_model_keeps_outputs(deployed, clang, tmp_path):
    """The compiled-in model decides with no UNROLL_* variable (no Python
    side, no warning); kernels.c prints what it prints at -O3; evaluate.py
    on two held-out kernels: equal checksums, the report written."""
    env = python_env()
    src = EXAMPLE / "kernels.c"
    plain = run([clang, "-O3", src, "-o", tmp_path / "plain"], env=env)
    served = run([clang, "-O3", f"-fpass-plugin={deployed}", src, "-o", tmp_path / "ml"], env=env)
    assert plain.stderr == served.stderr == ""
    assert run([tmp_path / "ml"]).stdout == run([tmp_path / "plain"]).stdout
    out = tmp_path / "heldout"
    res = run([sys.executable, EXAMPLE / "evaluate.py", deployed, "--clang", clang,
               "--kernels", "2", "--out", out], env=env)
    assert "2 held_out kernels: geomean" in res.stdout and "outputs equal" in res.stdout
    doc = json.loads(out.with_suffix(".json").read_text())
    assert doc["summary"]["outputs_differ"] == []
    assert "| ratio |" in out.with_suffix(".md").read_text()
