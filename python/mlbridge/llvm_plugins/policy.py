"""Deprecated: :mod:`mlbridge.llvm.plugins.policy` under its old name."""
import sys

from ..llvm.plugins import policy as _module

sys.modules[__name__] = _module
