"""mlbridge.toolchain.plugin_env: a process that loads a plugin of a
sanitized build gets the sanitizer runtime preloaded, every other process
keeps its environment (the e2e plugin tests of the asan build run it for
real)."""

import json
import os
import stat
from pathlib import Path

import pytest

from mlbridge import build_manifest, toolchain


def test_every_way_of_loading_a_plugin_is_found():
    cmd = ["clang-19", "-O3", "-fpass-plugin=/p/a.so", "-Xclang", "-load", "-Xclang", "/p/b.so",
           "CFLAGS=-O3 -w -fpass-plugin=/p/c.so", "-load=/p/d.so", "-load-pass-plugin",
           "/p/e.so", "--load-pass-plugin=/p/f.so", "-fplugin=/p/g.so", "-load", "/p/h.so",
           "-mllvm", "-regalloc=mlbridge", "-Wl,--load-pass-plugin=/p/i.so,--thinlto-jobs=2",
           "-o", "x.o", Path("/p/in.c")]
    assert toolchain.loaded_plugins(cmd) == [f"/p/{c}.so" for c in "abcdefghi"]
    assert toolchain.loaded_plugins(["clang-19", "-O2", "-c", "x.c", "-o", "x.o"]) == []


@pytest.fixture
def fake_compiler(tmp_path):
    """Stands in for the build's C++ compiler: answers -print-file-name with
    files that exist (the real runtimes' paths differ per machine)."""
    runtimes = tmp_path / "runtimes"
    runtimes.mkdir()
    for name in ("libasan.so", "libubsan.so"):
        (runtimes / name).write_text("")
    cxx = tmp_path / "fake-c++"
    cxx.write_text(f'#!/bin/sh\necho "{runtimes}/${{1#-print-file-name=}}"\n')
    cxx.chmod(cxx.stat().st_mode | stat.S_IXUSR)
    return cxx, runtimes


def make_build(root: Path, sanitize: str, cxx: Path) -> Path:
    plugin = root / "lib" / "llvm-plugins" / "MLBridgeX.so"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("")
    (root / build_manifest.MANIFEST_NAME).write_text(json.dumps(
        {"built": {}, "sanitize": sanitize, "cxx_compiler": str(cxx)}))
    return plugin


def test_a_sanitized_plugin_gets_the_runtime_preloaded_once(tmp_path, fake_compiler):
    cxx, runtimes = fake_compiler
    plugin = make_build(tmp_path / "build-asan", "address,undefined", cxx)
    base = {"PATH": os.environ.get("PATH", ""), "LD_PRELOAD": "/other.so",
            "ASAN_OPTIONS": "abort_on_error=1"}
    cmd = ["llc-19", f"-load={plugin}", "in.ll"]
    env = toolchain.plugin_env(cmd, base)
    asan, ubsan = (str((runtimes / n).resolve()) for n in ("libasan.so", "libubsan.so"))
    assert env["LD_PRELOAD"] == f"{asan}:{ubsan}:/other.so"  # ASan first in the process
    assert env["ASAN_OPTIONS"] == "abort_on_error=1:detect_leaks=0:allow_user_poisoning=0"
    assert base["LD_PRELOAD"] == "/other.so"  # the caller's dict is not changed
    assert toolchain.plugin_env(cmd, env) == env
    # A relative plugin path is the command's working directory's.
    rel = toolchain.plugin_env(["opt-19", "-load-pass-plugin=lib/llvm-plugins/MLBridgeX.so"],
                               base, cwd=tmp_path / "build-asan")
    assert rel["LD_PRELOAD"] == env["LD_PRELOAD"]


def test_a_missing_runtime_is_a_clear_error(tmp_path, fake_compiler):
    cxx, runtimes = fake_compiler
    (runtimes / "libubsan.so").unlink()
    plugin = make_build(tmp_path / "build-asan", "address,undefined", cxx)
    with pytest.raises(toolchain.CompileError, match="finds no libubsan.so: cannot preload"):
        toolchain.plugin_env(["clang-19", f"-fpass-plugin={plugin}", "x.c"], {})


def test_other_processes_keep_their_environment(tmp_path, fake_compiler):
    cxx, _ = fake_compiler
    plain = make_build(tmp_path / "build", "", cxx)
    outside = tmp_path / "installed" / "MLBridgeX.so"
    outside.parent.mkdir()
    outside.write_text("")
    base = {"LD_PRELOAD": "/other.so"}
    for cmd in (["clang-19", f"-fpass-plugin={plain}", "x.c"],
                ["clang-19", f"-fpass-plugin={outside}", "x.c"],
                ["clang-19", "-c", "x.c"]):
        assert toolchain.plugin_env(cmd, base) is base
        assert toolchain.plugin_env(cmd, None) is None  # inherit, as before


def test_a_thread_sanitizer_build_preloads_nothing(tmp_path, fake_compiler):
    cxx, _ = fake_compiler
    plugin = make_build(tmp_path / "build-tsan", "thread", cxx)
    env = toolchain.plugin_env(["opt-19", f"-load-pass-plugin={plugin}"], {"A": "1"})
    assert env == {"A": "1"}
