"""Deprecated name of :mod:`mlbridge.llvm.plugins` (kept so existing code
runs; it warns once). ``mlbridge.llvm_plugins.X`` is the same object as
``mlbridge.llvm.plugins.X``, submodules included."""

import warnings

from ..llvm import plugins as _plugins
from ..llvm.plugins import *  # noqa: F401,F403
from ..llvm.plugins import __all__  # noqa: F401

warnings.warn("mlbridge.llvm_plugins is deprecated; use mlbridge.llvm.plugins",
              DeprecationWarning, stacklevel=2)


def __getattr__(name):  # the lazily imported names (PhaseOrderEnv, ...)
    return getattr(_plugins, name)
