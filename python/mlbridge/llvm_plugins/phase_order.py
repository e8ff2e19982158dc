"""Deprecated: :mod:`mlbridge.llvm.plugins.phase_order` under its old name."""
import sys

from ..llvm.plugins import phase_order as _module

sys.modules[__name__] = _module
