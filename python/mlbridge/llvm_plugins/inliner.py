"""Deprecated: :mod:`mlbridge.llvm.plugins.inliner` under its old name."""
import sys

from ..llvm.plugins import inliner as _module

sys.modules[__name__] = _module
