"""Where the plugins are, what they speak, and how to run LLVM tools with them."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Optional, Sequence

from ...build_manifest import NotBuilt as PluginNotFound
from ...build_manifest import WithRunners, load
from ..advisors import INLINE_FEATURES

#: LLVM 19's ML inliner features, in the order LLVM (and the inline advisor
#: plugin) sends them: :data:`mlbridge.llvm.advisors.INLINE_FEATURES`. With
#: -mlbridge-inline-include-default a 39th, ``inlining_default``, follows.
#: The advice is ``inlining_decision`` (int64 [1], 0 or 1).
INLINER_FEATURES = INLINE_FEATURES

#: The phase-ordering observation ``observation`` (float32 [1, 25]): raw
#: counts over the module's defined functions; ``tti_code_size`` is the sum
#: of TargetTransformInfo's code-size cost of every instruction (a cheap
#: estimate; the reward is the object's .text, sent apart as ``code_size``).
#: Must match the plugin (checked by the tests through -mlbridge-po-describe).
OBSERVATION_NAMES = (
    "functions", "basic_blocks", "instructions", "loads", "stores", "allocas",
    "phis", "geps", "casts", "int_arith", "fp_arith", "compares", "selects",
    "calls", "intrinsics", "cond_branches", "uncond_branches", "switches",
    "returns", "cfg_edges", "loops", "max_loop_depth", "global_variables",
    "tti_code_size", "step",
)
NUM_OBSERVATIONS = len(OBSERVATION_NAMES)

#: The phase-ordering actions: sub-sequences of LLVM 19's -Oz pipeline, the
#: whole -Oz module pipeline again (``oz``) and function merging (the exact
#: pipelines are in the plugin and docs/llvm-plugins.md), then STOP.
ACTIONS = (
    "early-simplify", "ipo-constprop", "mem2reg-combine", "inline",
    "scalar-cleanup", "instcombine", "tailcall-reassociate", "loop-rotate-licm",
    "loop-idiom-delete", "gvn-sccp", "dead-code", "ipo-cleanup",
    "loop-vectorize-unroll", "late-cleanup", "globaldce-constmerge", "oz",
    "mergefunc", "stop",
)
NUM_ACTIONS = len(ACTIONS)
STOP_ACTION = NUM_ACTIONS - 1

LLVM_BIN_DIRS = ("/usr/lib/llvm-19/bin",)


@dataclass
class PluginInfo(WithRunners):
    """The built plugins, as the build manifest's ``llvm_plugins`` section
    describes them (:mod:`mlbridge.build_manifest`)."""

    inline_advisor: Path
    phase_order: Path
    runners: Dict[str, bool] = field(default_factory=dict)
    sanitize: str = ""
    cxx_compiler: str = ""
    llvm_bin_dir: str = ""
    source: Optional[Path] = None


def find_plugins(build_dir=None) -> PluginInfo:
    """The plugins of the build in ``build_dir``, ``$MLBRIDGE_BUILD_DIR`` or
    ``<repo>/build``. Raises :class:`PluginNotFound` when they are not built."""
    manifest = load(build_dir)
    sec = manifest.section("llvm_plugins", paths=("inline_advisor", "phase_order"))
    return PluginInfo(inline_advisor=Path(sec["inline_advisor"]),
                      phase_order=Path(sec["phase_order"]),
                      runners=dict(sec.get("runners", {})),
                      sanitize=manifest.sanitize,
                      cxx_compiler=sec.get("cxx_compiler", ""),
                      llvm_bin_dir=sec.get("llvm_bin_dir", ""),
                      source=manifest.path)


def find_llvm_tool(name: str) -> str:
    """Path of an LLVM 19 tool ("opt-19", "clang-19", ...)."""
    found = shutil.which(name)
    if found:
        return found
    base = name[:-3] if name.endswith("-19") else name
    for d in LLVM_BIN_DIRS:
        cand = Path(d) / base
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    raise PluginNotFound(f"{name} not found on PATH or in {', '.join(LLVM_BIN_DIRS)} "
                         f"(Debian: apt-get install llvm-19 clang-19)")


def _runtime_library(compiler: str, name: str) -> Optional[str]:
    from ...toolchain import CompileError, run_tool
    try:
        out = run_tool([compiler, f"-print-file-name={name}"], timeout=30).strip()
    except CompileError:
        return None
    if out and out != name and Path(out).exists():
        return str(Path(out).resolve())
    return None


def tool_env(info: PluginInfo, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment to run opt-19/clang-19 with the plugins.

    A plugin built with AddressSanitizer needs the ASan runtime loaded first
    in the (uninstrumented) host tool: LD_PRELOAD it, and the UBSan runtime
    with it. LeakSanitizer is turned off there: the host tool is not ours and
    LLVM deliberately leaks at exit.
    """
    env = dict(os.environ if base is None else base)
    if "address" in info.sanitize:
        libs = [_runtime_library(info.cxx_compiler or "c++", "libasan.so")]
        if "undefined" in info.sanitize:
            libs.append(_runtime_library(info.cxx_compiler or "c++", "libubsan.so"))
        libs = [lib for lib in libs if lib]
        if libs:
            env["LD_PRELOAD"] = ":".join(libs + [p for p in env.get("LD_PRELOAD", "").split(":") if p])
        opts = env.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = ":".join(o for o in (opts, "detect_leaks=0") if o)
    return env


def compile_to_ir(source, output, *, clang: Optional[str] = None,
                  flags: Sequence[str] = (), timeout: float = 60.0) -> Path:
    """C source -> LLVM IR that optimizations (and the inliner) still apply to:
    ``clang-19 -O2 -Xclang -disable-llvm-passes -emit-llvm -S`` (``-O0`` would
    mark every function optnone/noinline). For code-size experiments pass
    ``flags=["-Oz"]`` (a later -O wins): -O2 IR lacks the optsize/minsize
    attributes of real ``clang-19 -Oz`` (docs/llvm.md, "Pitfalls")."""
    from ...toolchain import compile
    clang = clang or find_llvm_tool("clang-19")
    compile([clang, "-O2", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-S",
             *flags, str(source), "-o", str(output)], timeout=timeout, measure_text=False)
    return Path(output)
