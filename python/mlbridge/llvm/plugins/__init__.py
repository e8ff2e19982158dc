"""mlbridge.llvm.plugins: the Python side of the LLVM pass plugins.

Two plugins are built from ``integrations/llvm`` (docs/llvm-plugins.md), for
LLVM 19 and, when its headers are installed, LLVM 22
(docs/llvm-versions.md):

* ``MLBridgeInlineAdvisor.so`` -- an ML inline advisor that sends exactly the
  features of LLVM's own ML inliner (:data:`INLINER_FEATURES`) and asks a
  model (in-process ONNX / compiled, or this package over pipes or gRPC);
* ``MLBridgePhaseOrder.so`` -- the ``mlbridge-phase-order`` module pass, a
  phase-ordering RL environment (:data:`OBSERVATION_NAMES`, :data:`ACTIONS`);
* ``MLBridgeLoopDistribution.so`` -- model-chosen loop distribution, served
  from Python by :mod:`.loop_distribution` (:func:`compile_with_policy`,
  :class:`ReplayPolicy`, :class:`RandomPolicy`).
* ``MLBridgeRegAlloc.so`` (LLVM 19) -- ``-regalloc=mlbridge`` for llc/clang,
  a register allocator whose decisions a model takes, and the
  ``mlbridge-ra-score`` pass (:mod:`.regalloc`, docs/register-allocation.md).

This package finds the built plugins of an LLVM version
(:func:`find_plugins`; :func:`built_llvm_versions`), runs that version's
``opt``/``clang`` with them (:func:`tool_env` adds what a sanitizer
build needs) and wraps the phase-ordering pass as a
``gymnasium.Env`` (:class:`PhaseOrderEnv`, imported lazily: gymnasium is only
needed for it).
"""

from ..._lazy import lazy_attributes as _lazy_attributes
from ._plugins import (ACTIONS, EMBEDDING_DIM, INLINER_FEATURES, NUM_ACTIONS, NUM_OBSERVATIONS,
                       OBSERVATION_NAMES, STOP_ACTION, PluginInfo, PluginNotFound,
                       built_llvm_versions, compile_to_ir, find_llvm_tool, find_plugins,
                       tool_env)

__all__ = [
    "ACTIONS",
    "EMBEDDING_DIM",
    "INLINER_FEATURES",
    "NUM_ACTIONS",
    "NUM_OBSERVATIONS",
    "OBSERVATION_NAMES",
    "STOP_ACTION",
    "PluginInfo",
    "PluginNotFound",
    "built_llvm_versions",
    "compile_to_ir",
    "find_llvm_tool",
    "find_plugins",
    "tool_env",
    "PhaseOrderEnv",
    "PolicyNet",
    "compile_with_policy",
    "ReplayPolicy",
    "RandomPolicy",
    "regalloc",
]

__getattr__, __dir__ = _lazy_attributes(globals(), {
    "PhaseOrderEnv": ".phase_order",
    "PolicyNet": ".policy",
    "compile_with_policy": ".loop_distribution",
    "ReplayPolicy": ".loop_distribution",
    "RandomPolicy": ".loop_distribution",
})

from . import regalloc  # noqa: E402  (numpy and the toolchain only)
