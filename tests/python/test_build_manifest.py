"""mlbridge.build_manifest: where the build is, what its manifest says, and
the errors when something is not there."""

import json
from pathlib import Path

import pytest

from mlbridge import build_manifest as bm


def write_manifest(build: Path, **sections) -> Path:
    tool = build / "bin" / "tool"
    tool.parent.mkdir(parents=True)
    tool.write_text("")
    data = {"built": {"c_tool": True, "mlir_plugin": False, "tf_aot": True},
            "not_applicable": {}, "off_reasons": {"mlir_plugin": "MLIR 19 not found"},
            "sanitize": "address", "c_tool": {"tool": str(tool), "runners": {"pipe": True}}}
    data.update(sections)
    (build / bm.MANIFEST_NAME).write_text(json.dumps(data))
    return tool


def test_the_build_directory_argument_then_environment_then_repo(tmp_path, monkeypatch):
    monkeypatch.delenv("MLBRIDGE_BUILD_DIR", raising=False)
    assert bm.locate_build_dir() == bm.REPO_ROOT / "build"
    monkeypatch.setenv("MLBRIDGE_BUILD_DIR", str(tmp_path / "env"))
    assert bm.locate_build_dir() == tmp_path / "env"
    assert bm.locate_build_dir(tmp_path / "arg") == tmp_path / "arg"


def test_a_section_and_the_files_it_names(tmp_path):
    tool = write_manifest(tmp_path)
    m = bm.load(tmp_path)
    assert m.built("c_tool") and not m.built("mlir_plugin") and m.sanitize == "address"
    assert bm.section("c_tool", paths=("tool",), build_dir=tmp_path)["tool"] == str(tool)
    tool.unlink()
    with pytest.raises(bm.NotBuilt, match="names .*tool.*which does not exist"):
        m.section("c_tool", paths=("tool",))


def test_a_component_the_build_left_out_says_why(tmp_path):
    write_manifest(tmp_path)
    with pytest.raises(bm.ComponentOff, match="'mlir_plugin' out: MLIR 19 not found"):
        bm.section("mlir_plugin", build_dir=tmp_path)
    with pytest.raises(bm.NotBuilt, match="no 'tf_aot' section"):
        bm.section("tf_aot", build_dir=tmp_path)  # said built, not described


def test_no_manifest_or_a_broken_one_is_not_built(tmp_path):
    with pytest.raises(bm.NotBuilt, match="no build manifest"):
        bm.load(tmp_path)
    (tmp_path / bm.MANIFEST_NAME).write_text("{not json")
    with pytest.raises(bm.NotBuilt, match="is not JSON"):
        bm.load(tmp_path)


def test_the_locators_read_the_manifest(tmp_path):
    from mlbridge.c_tool import find_tool
    from mlbridge.llvm.plugins import PluginNotFound, find_plugins
    tool = write_manifest(tmp_path)
    info = find_tool(tmp_path)
    assert info.tool == tool and info.has_runner("pipe") and not info.has_runner("onnx")
    with pytest.raises(PluginNotFound, match="'llvm_plugins' out"):
        find_plugins(tmp_path)


def _fake_plugins(build: Path, major: int) -> dict:
    files = {}
    for key in ("inline_advisor", "phase_order"):
        f = build / f"llvm{major}" / f"{key}.so"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("")
        files[key] = str(f)
    return dict(files, llvm_version=f"{major}.1.0", llvm_bin_dir=str(build / f"bin{major}"),
                runners={"pipe": True})


def _fake_clang(path: Path, major: int) -> str:
    path.write_text(f"#!/bin/sh\necho 'Debian clang version {major}.1.8'\n")
    path.chmod(0o755)
    return str(path)


def test_the_plugins_of_each_llvm_version(tmp_path, monkeypatch):
    """find_plugins picks the section of the LLVM version asked for, else of
    the compiler $MLBRIDGE_CLANG names; an unbuilt or unknown version is a
    clear error."""
    from mlbridge.llvm.plugins import PluginNotFound, built_llvm_versions, find_plugins
    build = tmp_path / "build"
    build.mkdir()
    write_manifest(build, llvm_plugins=_fake_plugins(build, 19),
                   llvm_plugins_llvm22=_fake_plugins(build, 22))
    data = json.loads((build / bm.MANIFEST_NAME).read_text())
    data["built"].update(llvm_plugins=True, llvm_plugins_llvm22=True)
    (build / bm.MANIFEST_NAME).write_text(json.dumps(data))
    assert built_llvm_versions(build) == [19, 22]
    for major in (19, 22):
        info = find_plugins(build, llvm=major)
        assert info.llvm_major == major
        assert info.inline_advisor == build / f"llvm{major}" / "inline_advisor.so"
        (build / f"bin{major}").mkdir()
        opt = build / f"bin{major}" / "opt"
        _fake_clang(opt, major)
        assert info.tool("opt") == str(opt)
    monkeypatch.setenv("MLBRIDGE_CLANG", _fake_clang(tmp_path / "clang-x", 22))
    assert find_plugins(build).llvm_major == 22
    monkeypatch.setenv("MLBRIDGE_CLANG", _fake_clang(tmp_path / "clang-y", 19))
    assert find_plugins(build).phase_order == build / "llvm19" / "phase_order.so"
    with pytest.raises(PluginNotFound, match="built for LLVM 19 and 22, not LLVM 20"):
        find_plugins(build, llvm=20)
    data["built"]["llvm_plugins_llvm22"] = False
    data["off_reasons"]["llvm_plugins_llvm22"] = "llvm-config-22 not found"
    (build / bm.MANIFEST_NAME).write_text(json.dumps(data))
    assert built_llvm_versions(build) == [19]
    with pytest.raises(PluginNotFound, match="llvm-config-22 not found"):
        find_plugins(build, llvm=22)
