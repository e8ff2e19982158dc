"""Finds ``mlbridge_grpc_native``, the C++ gRPC server core (src/python_ext)
that :class:`~mlbridge.grpc.GrpcCompilerInterface` serves through in
inference mode.

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

MODULE = "mlbridge_grpc_native"
_REPO_ROOT = Path(__file__).resolve().parents[3]
_found = None


def _from_build_dir():
    env = os.environ.get("MLBRIDGE_BUILD_DIR")
    folder = (Path(env) if env else _REPO_ROOT / "build") / "python"
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / (MODULE + suffix)
        if path.is_file():
            spec = importlib.util.spec_from_file_location(MODULE, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules[MODULE] = module
            return module, None
    return None, (f"{MODULE} is not importable and not built in {folder} (build the CMake "
                  f"target {MODULE}, or set MLBRIDGE_BUILD_DIR)")


def load():
    """(module, None), or (None, why it is not available). Cached."""
    global _found
    if _found is None:
        try:
            _found = (importlib.import_module(MODULE), None)
        except ImportError:
            try:
                _found = _from_build_dir()
            except ImportError as e:  # built for another Python, missing library, ...
                _found = (None, f"{MODULE} does not load: {e}")
    return _found
