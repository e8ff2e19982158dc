"""Where the build is and what it has: the one reader of the build manifest.

The CMake build writes one manifest, ``<build>/mlbridge-components.json``
(cmake/MLBridgeManifest.cmake)::

    {"built": {"llvm_plugins": true, "onnx": true, ...},
     "not_applicable": {...}, "off_reasons": {...}, "sanitize": "",
     "llvm_plugins": {"inline_advisor": ".../MLBridgeInlineAdvisor.so", ...},
     "mlir_plugin": {...}, "c_tool": {...}, "tf_aot": {...}}

The build directory is, first given: the ``build_dir`` argument,
``$MLBRIDGE_BUILD_DIR``, ``<repo>/build`` (:func:`locate_build_dir`). Everything that looks for the
plugins, the C tool or compiled models asks :func:`load` or :func:`section`.

    from mlbridge.build_manifest import section
    plugins = section("llvm_plugins", paths=("inline_advisor", "phase_order"))
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from .errors import MLBridgeError

__all__ = ["MANIFEST_NAME", "NotBuilt", "ComponentOff", "Manifest", "WithRunners",
           "locate_build_dir", "load", "section", "containing"]

MANIFEST_NAME = "mlbridge-components.json"
REPO_ROOT = Path(__file__).resolve().parents[2]


class NotBuilt(MLBridgeError, FileNotFoundError):
    """What was looked for is not in the build: no manifest, or a file the
    manifest names does not exist."""


class ComponentOff(NotBuilt):
    """The manifest says the build left the component out (it says why)."""


class WithRunners:
    """What an integration's description (plugin, tool) shares: the runners
    it was built with (the section's ``runners``)."""

    runners: Dict[str, bool]

    def has_runner(self, name: str) -> bool:
        return bool(self.runners.get(name, False))


def locate_build_dir(build_dir=None) -> Path:
    """The build directory: ``build_dir``, ``$MLBRIDGE_BUILD_DIR`` or ``<repo>/build``."""
    if build_dir:
        return Path(build_dir).resolve()
    env = os.environ.get("MLBRIDGE_BUILD_DIR")
    return Path(env).resolve() if env else REPO_ROOT / "build"


@dataclass
class Manifest:
    """The manifest of one build."""

    path: Path
    data: Dict[str, Any]

    def built(self, component: str) -> bool:
        return bool(self.data.get("built", {}).get(component, False))

    def why_off(self, component: str) -> str:
        for key in ("off_reasons", "not_applicable"):
            reason = self.data.get(key, {}).get(component)
            if reason:
                return reason
        return "switched off at configuration"

    @property
    def sanitize(self) -> str:
        """The build's sanitizers (MLBRIDGE_SANITIZE: "", "address,undefined", "thread")."""
        return self.data.get("sanitize", "")

    @property
    def cxx_compiler(self) -> str:
        """The C++ compiler of the build (its sanitizer runtimes are that
        compiler's); manifests written before the key existed name it in the
        plugins' section only."""
        return (self.data.get("cxx_compiler")
                or self.data.get("llvm_plugins", {}).get("cxx_compiler", ""))

    def section(self, component: str, paths: Sequence[str] = ()) -> Dict[str, Any]:
        """The component's section; ``paths`` are keys naming files that
        must exist. Raises :class:`ComponentOff` when the build left it out,
        :class:`NotBuilt` when something it names is missing."""
        if not self.built(component):
            raise ComponentOff(f"the build left '{component}' out: {self.why_off(component)} "
                               f"({self.path})")
        sec = self.data.get(component)
        if not isinstance(sec, dict):
            raise NotBuilt(f"{self.path} says '{component}' is built but has no "
                           f"'{component}' section: reconfigure the project")
        for key in paths:
            if not Path(sec[key]).is_file():
                raise NotBuilt(f"{self.path} names {sec[key]} ({component} {key}), which does "
                               f"not exist: build the project (cmake --build {self.path.parent})")
        return sec


def load(build_dir=None) -> Manifest:
    """The manifest of the build directory (see :func:`locate_build_dir`)."""
    path = locate_build_dir(build_dir) / MANIFEST_NAME
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise NotBuilt(f"no build manifest {path} ({exc.strerror}): configure the project "
                       f"(cmake --preset default) or set MLBRIDGE_BUILD_DIR") from exc
    except ValueError as exc:
        raise NotBuilt(f"the build manifest {path} is not JSON ({exc}): reconfigure") from exc
    return Manifest(path, data)


def section(component: str, paths: Sequence[str] = (), build_dir=None) -> Dict[str, Any]:
    """``load(build_dir).section(component, paths)``."""
    return load(build_dir).section(component, paths)


def containing(path) -> Optional[Manifest]:
    """The manifest of the build a built file (a plugin) lies in: the first
    directory above ``path`` with a manifest; None for a file outside any
    build (an installed plugin)."""
    return _manifest_above(str(Path(path).resolve().parent))


@functools.lru_cache(maxsize=64)
def _manifest_above(directory: str) -> Optional[Manifest]:
    for d in (Path(directory), *Path(directory).parents):
        if (d / MANIFEST_NAME).is_file():
            try:
                return load(d)
            except NotBuilt:
                return None
    return None
