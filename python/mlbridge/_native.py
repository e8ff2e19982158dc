"""Finds mlbridge's CPython modules (src/python_ext), built by CMake into
``<build>/python``: ``mlbridge_grpc_native`` (the gRPC server core) and
``mlbridge_shm_native`` (the shared-memory fast path).

Looked for, in order: on ``sys.path`` (an installed build, or
``PYTHONPATH`` holding ``<build>/python``); in ``$MLBRIDGE_BUILD_DIR/python``
when that variable is set; else in ``<repo>/build/python`` (the default
build of a source checkout).
"""

import importlib
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parents[2]
_found = {}


def _from_build_dir(name):
    env = os.environ.get("MLBRIDGE_BUILD_DIR")
    folder = (Path(env) if env else _REPO_ROOT / "build") / "python"
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / (name + suffix)
        if path.is_file():
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules[name] = module
            return module, None
    return None, (f"{name} is not importable and not built in {folder} (build the CMake "
                  f"target {name}, or set MLBRIDGE_BUILD_DIR)")


def load(name):
    """(module, None), or (None, why it is not available). Cached."""
    found = _found.get(name)
    if found is None:
        try:
            found = (importlib.import_module(name), None)
        except ImportError:
            try:
                found = _from_build_dir(name)
            except ImportError as e:  # built for another Python, missing library, ...
                found = (None, f"{name} does not load: {e}")
        _found[name] = found
    return found
