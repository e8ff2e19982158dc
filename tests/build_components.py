"""What the build under test says it built: the build manifest
(<build>/mlbridge-components.json), read through mlbridge.build_manifest.

The one rule for optional components: a test is skipped only when the build
says the component is off; when the build says it is on, anything missing
(a program, a model, a generated file) is a failure. Use
:func:`require_component` at module level or in a fixture.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Dict, TypeVar

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT / "python") not in sys.path:
    sys.path.insert(0, str(REPO_ROOT / "python"))

from mlbridge import build_manifest  # noqa: E402

T = TypeVar("T")
COMPONENTS = ("grpc", "grpc_python_core", "shm_python_fast_path", "onnx", "tf_aot",
              "compiled_model", "llvm_plugins", "llvm_plugins_llvm22", "ir2vec", "ir2vec_llvm22", "mlir_plugin", "mlir_plugin_mlir22",
              "c_tool",
              "c_tool_llvm22", "fuzzers")


def build_dir() -> Path:
    return build_manifest.locate_build_dir()


def components_file() -> Path:
    return build_dir() / build_manifest.MANIFEST_NAME


def manifest() -> build_manifest.Manifest:
    """The build's manifest; a missing or unreadable one fails the test."""
    try:
        return build_manifest.load()
    except build_manifest.NotBuilt as exc:
        pytest.fail(str(exc), pytrace=False)


def built_components() -> Dict[str, bool]:
    """component name -> built; a missing or unreadable record fails the test."""
    path = components_file()
    built = manifest().data.get("built")
    if not isinstance(built, dict):
        pytest.fail(f"{path} has no 'built' record: reconfigure the project", pytrace=False)
    unknown = set(COMPONENTS) - set(built)
    if unknown:
        pytest.fail(f"{path} does not mention {sorted(unknown)}: reconfigure the project",
                    pytrace=False)
    return built


def component_built(name: str) -> bool:
    if name not in COMPONENTS:
        raise ValueError(f"unknown component {name!r} (one of {COMPONENTS})")
    return bool(built_components()[name])


def require_component(name: str) -> None:
    """Skips the calling test (or module, at import) when the build says
    ``name`` is off; returns when it is on."""
    if not component_built(name):
        pytest.skip(f"the build says component '{name}' is off ({components_file()})",
                    allow_module_level=True)


def require_built(name: str, find: Callable[[], T]) -> T:
    """``find()`` (a locator of component ``name``'s files): skipped when the
    build says the component is off; when it is on, anything ``find`` cannot
    find fails the test."""
    require_component(name)
    try:
        return find()
    except build_manifest.NotBuilt as exc:
        pytest.fail(str(exc), pytrace=False)
