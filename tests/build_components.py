"""What the build under test says it built (<build>/mlbridge-components.json,
written by cmake/MLBridgeComponents.cmake).

The one rule for optional components: a test is skipped only when the build
says the component is off; when the build says it is on, anything missing
(a program, a model, a generated file) is a failure. Use
:func:`require_component` at module level or in a fixture.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
COMPONENTS = ("grpc", "grpc_python_core", "shm_python_fast_path", "onnx", "tf_aot",
              "compiled_model", "llvm_plugins", "ir2vec", "ir2vec_llvm22", "mlir_plugin", "c_tool", "fuzzers")


def build_dir() -> Path:
    env = os.environ.get("MLBRIDGE_BUILD_DIR")
    return Path(env).resolve() if env else REPO_ROOT / "build"


def components_file() -> Path:
    return build_dir() / "mlbridge-components.json"


def built_components() -> Dict[str, bool]:
    """component name -> built; a missing or unreadable record fails the test."""
    path = components_file()
    try:
        built = json.loads(path.read_text())["built"]
    except (OSError, ValueError, KeyError) as exc:
        pytest.fail(f"cannot read {path} ({exc}): configure the project "
                    f"(cmake --preset default) so the tests know which components "
                    f"it has", pytrace=False)
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
