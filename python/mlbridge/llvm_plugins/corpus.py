"""Deprecated: :mod:`mlbridge.llvm.plugins.corpus` under its old name."""
import sys

from ..llvm.plugins import corpus as _module

sys.modules[__name__] = _module
