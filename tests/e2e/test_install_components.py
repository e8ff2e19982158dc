"""`cmake --install` by component (CMakeLists.txt lists them):

* each component installs on its own, and the whole install has no debug
  information and no path of this machine (the source or build tree) in
  any file but the plugins that embed IR2Vec's vocabulary path;
* find_package(MLBridge COMPONENTS <c>) looks only for <c>'s dependencies:
  a consumer asking for core alone, or for llvm19 alone, configures with
  gRPC, Protobuf and ONNX Runtime made unfindable;
* a pkg-config file per library component (mlbridge-onnx among them).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import run_completed

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 300.0

#: Plugins whose IR2Vec code records the vocabulary folder of the build
#: (MLBRIDGE_IR2VEC_VOCAB_DIR, integrations/llvm/ir2vec/CMakeLists.txt) as
#: the default a user overrides with $MLBRIDGE_IR2VEC_VOCAB_DIR.
EMBEDS_VOCABULARY_PATH = {"MLBridgeInlineAdvisor.so", "MLBridgePhaseOrder.so",
                          "MLBridgeLoopDistribution.so", "MLBridgeIR2Vec.so"}


def run(cmd, **kw) -> subprocess.CompletedProcess:
    return run_completed(cmd, timeout=TIMEOUT, **kw)


@pytest.fixture(scope="module")
def build():
    from build_components import build_dir, manifest
    if manifest().sanitize:
        pytest.skip("sanitizer builds are not installed (tests/CMakeLists.txt)")
    return build_dir()


@pytest.fixture(scope="module")
def full(build, tmp_path_factory) -> Path:
    """The whole install (every component), once for the module."""
    prefix = tmp_path_factory.mktemp("install") / "all"
    run(["cmake", "--install", build, "--prefix", prefix])
    return prefix


def install(build, prefix: Path, *components: str) -> Path:
    for c in components:
        run(["cmake", "--install", build, "--prefix", prefix, "--component", c])
    return prefix


def test_whole_install_has_no_build_machine_path(build, full):
    prefix = full
    needles = [str(REPO).encode(), str(Path(build).resolve()).encode()]
    offending = []
    for f in prefix.rglob("*"):
        if f.is_symlink() or not f.is_file() or f.name in EMBEDS_VOCABULARY_PATH:
            continue
        data = f.read_bytes()
        if any(n in data for n in needles):
            offending.append(str(f.relative_to(prefix)))
    assert offending == []
    for so in prefix.rglob("*.so*"):
        if so.is_file() and not so.is_symlink():
            sections = run(["readelf", "-S", "-W", so]).stdout
            assert ".debug_info" not in sections, so


def test_component_installs_only_its_part(build, tmp_path):
    from build_components import component_built
    core = install(build, tmp_path / "core", "core")
    assert (core / "lib" / "libmlbridge.a").is_file()
    assert not (core / "lib" / "mlbridge").exists()
    assert not (core / "include" / "mlbridge" / "llvm").exists()
    if component_built("llvm_plugins"):
        kit = install(build, tmp_path / "kit", "llvm19")
        assert (kit / "include" / "mlbridge" / "llvm" / "PluginEntry.h").is_file()
        assert (kit / "lib" / "cmake" / "MLBridge" / "MLBridgeLLVMPlugin.cmake").is_file()
        assert not (kit / "lib" / "mlbridge").exists()
        plugins = install(build, tmp_path / "plugins", "llvm19-plugins")
        assert (plugins / "lib" / "mlbridge" / "MLBridgeInlineAdvisor.so").is_file()
    if component_built("onnx"):
        onnx = install(build, tmp_path / "onnx", "onnx")
        assert (onnx / "lib" / "libmlbridge_onnx.a").is_file()
        assert (onnx / "lib" / "pkgconfig" / "mlbridge-onnx.pc").is_file()


CONSUMER = """cmake_minimum_required(VERSION 3.20)
project(consumer LANGUAGES CXX)
find_package(MLBridge CONFIG REQUIRED COMPONENTS {components})
"""


@pytest.mark.parametrize("components", ["core", "llvm19"])
def test_find_package_looks_only_for_what_is_asked(full, tmp_path, components):
    from build_components import require_component
    if components == "llvm19":
        require_component("llvm_plugins")
    prefix = full
    src = tmp_path / "consumer"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(CONSUMER.format(components=components))
    run(["cmake", "-S", src, "-B", tmp_path / "out", f"-DCMAKE_PREFIX_PATH={prefix}",
         "-DCMAKE_DISABLE_FIND_PACKAGE_gRPC=ON", "-DCMAKE_DISABLE_FIND_PACKAGE_Protobuf=ON",
         "-DCMAKE_DISABLE_FIND_PACKAGE_ONNXRuntime=ON"])


def test_pkg_config_per_library_component(full):
    from build_components import component_built
    prefix = full
    wanted = {"mlbridge": "-lmlbridge"}
    if component_built("onnx"):
        wanted["mlbridge-onnx"] = "-lmlbridge_onnx"
    if component_built("grpc"):
        wanted["mlbridge-grpc"] = "-lmlbridge_grpc"
    if component_built("llvm_plugins"):
        wanted["mlbridge-llvm19"] = "-lmlbridge_llvm19"
    if component_built("llvm_plugins_llvm22"):
        wanted["mlbridge-llvm22"] = "-lmlbridge_llvm22"
    env = {"PKG_CONFIG_PATH": str(prefix / "lib" / "pkgconfig"), "PATH": "/usr/bin:/bin"}
    for name, flag in wanted.items():
        libs = run(["pkg-config", "--libs", name], env=env).stdout.split()
        assert flag in libs, (name, libs)


def test_staged_install_is_stripped_too(build, tmp_path):
    """DESTDIR (how distributions package) gets the same files as a prefix."""
    import os
    stage = tmp_path / "stage"
    run(["cmake", "--install", build, "--prefix", "/opt/mlbridge", "--component", "core"],
        env=dict(os.environ, DESTDIR=str(stage)))
    lib = stage / "opt" / "mlbridge" / "lib" / "libmlbridge.a"
    assert lib.is_file()
    assert ".debug_info" not in run(["readelf", "-S", "-W", lib]).stdout
