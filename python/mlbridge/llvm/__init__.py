"""mlbridge.llvm: serve LLVM's own ML advisors from Python.

LLVM 17+ can ask an external process for its inlining, register-eviction
and register-priority decisions ("interactive mode"); stock Debian
``opt-19``, ``llc-19`` and ``clang-19`` do so without TensorFlow. This
package runs such a tool, adds the flags itself and answers every request
with a policy::

    from mlbridge import llvm

    res = llvm.run(["llc-19", "-O2", "in.ll", "-o", "in.s"], evict="noevict")
    res.check()                        # raises unless exit 0 and no host error
    print(res.requests, res.returncode, res.stderr)

    res = llvm.run(["clang-19", "-O2", "-c", "x.c", "-o", "x.o"],
                   inline=lambda obs: int(obs["callee_users"][0] == 1),
                   evict="first", trace="x.npz")     # dataset for training

Command line: ``python -m mlbridge.llvm inline --policy always -- opt-19 ...``.
Guide: docs/llvm.md. The gymnasium environment is
:class:`mlbridge.llvm.env.InliningEnv` (imported on first use).

The project's own LLVM pass plugins have their Python side in
:mod:`mlbridge.llvm.plugins` (docs/llvm-plugins.md); it shares this
package's policies (:mod:`~mlbridge.llvm.policies`), its feature table
(:data:`~mlbridge.llvm.advisors.INLINE_FEATURES`) and its process
supervisor (:mod:`mlbridge.toolchain.process`, the toolchain's).
"""

from .._lazy import lazy_attributes as _lazy_attributes
from .advisors import (ADVISORS, EVICT, INLINE, PRIORITY, Advisor, InvalidAdvice, Layout,
                       eviction_mask, layout_of, legal_columns)
from .host import Compilation, PolicyError, RunError, RunResult, run
from .policies import TorchPolicy, builtin, builtin_names, resolve
from .trace import Trace, TraceDataset, Tracer, load_trace

__all__ = [
    "run", "Compilation", "RunResult", "RunError", "PolicyError", "InvalidAdvice",
    "Advisor", "ADVISORS", "INLINE", "EVICT", "PRIORITY", "Layout", "layout_of",
    "eviction_mask", "legal_columns", "resolve", "builtin", "builtin_names",
    "TorchPolicy", "Tracer", "Trace", "TraceDataset", "load_trace", "InliningEnv",
]

# InliningEnv needs gymnasium: imported only when asked for.
__getattr__, __dir__ = _lazy_attributes(globals(), {"InliningEnv": ".env"})
