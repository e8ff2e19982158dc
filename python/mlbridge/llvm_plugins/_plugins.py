"""Deprecated: :mod:`mlbridge.llvm.plugins._plugins` under its old name."""
import sys

from ..llvm.plugins import _plugins as _module

sys.modules[__name__] = _module
