"""Where the plugins are, what they speak, and how to run LLVM tools with them.

The plugins are built for LLVM 19 and, when llvm-22-dev is installed, for
LLVM 22 (docs/llvm-versions.md); a plugin loads only into the opt/clang of
its version, so :func:`find_plugins` picks them by LLVM major version: the
one given, else that of the compiler :func:`mlbridge.toolchain.toolchain`
runs (``$MLBRIDGE_CLANG``, default clang-19)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ...build_manifest import NotBuilt as PluginNotFound
from ...build_manifest import WithRunners, load
from ..advisors import INLINE_FEATURES
from ._protocol import load as load_protocol

#: LLVM's ML inliner features (the same 38 names in the same order on LLVM 19
#: and 22), in the order LLVM (and the inline advisor plugin) sends them:
#: :data:`mlbridge.llvm.advisors.INLINE_FEATURES`. With
#: -mlbridge-inline-include-default a 39th, ``inlining_default``, follows.
#: The advice is ``inlining_decision`` (int64 [1], 0 or 1).
INLINER_FEATURES = INLINE_FEATURES

#: The phase-ordering protocol, from PhaseOrderProtocol.def (the file the
#: plugin includes; -mlbridge-po-describe prints the same, checked by
#: tests/e2e/test_plugin_protocols.py).
PHASE_ORDER_PROTOCOL = load_protocol("phase_order", "PhaseOrderProtocol.def")

#: The observation ``observation`` (float32 [1, 27]): raw counts over the
#: module's defined functions; ``tti_code_size`` is the sum of
#: TargetTransformInfo's code-size cost of every instruction (a cheap
#: estimate; the reward is the object's .text, sent apart as ``code_size``);
#: ``machine_outliner`` is 1 once the machine outliner is on for the module.
OBSERVATION_NAMES = tuple(PHASE_ORDER_PROTOCOL.lists["Observation"])
NUM_OBSERVATIONS = len(OBSERVATION_NAMES)

#: The plugin's second input ``embedding`` (float32 [1, 300]): IR2Vec's
#: module vector divided by the number of IR instructions (zero when the
#: vocabulary is missing; docs/llvm-plugins.md).
EMBEDDING_DIM = PHASE_ORDER_PROTOCOL.constants["EmbeddingDim"]

#: The phase-ordering actions: sub-sequences of LLVM's -Oz pipeline, the
#: whole -Oz module pipeline again (``oz``), the size passes -Oz leaves out
#: (``mergefunc``, ``iroutliner``), the machine outliner for the module's
#: code generation (on, and off again: ``machine-outliner-off``) and
#: ``nooutline`` on small functions (the plugin and docs/llvm-plugins.md say
#: exactly what each does), then STOP.
ACTIONS = tuple(PHASE_ORDER_PROTOCOL.lists["Action"])
NUM_ACTIONS = len(ACTIONS)
STOP_ACTION = NUM_ACTIONS - 1

#: The LLVM major versions the plugins can be built for, and the build
#: manifest's section of each (cmake: integrations/llvm/CMakeLists.txt).
PLUGIN_SECTIONS = {19: "llvm_plugins", 22: "llvm_plugins_llvm22"}


@dataclass
class PluginInfo(WithRunners):
    """The built plugins of one LLVM version, as the build manifest's section
    of that version describes them (:mod:`mlbridge.build_manifest`)."""

    inline_advisor: Path
    phase_order: Path
    #: MLBridgeLoopDistribution.so (None in a build from before it existed)
    loop_distribution: Optional[Path] = None
    llvm_major: int = 19
    runners: Dict[str, bool] = field(default_factory=dict)
    #: the runners of MLBridgeLoopDistribution.so, built without gRPC
    #: (``runners`` is that of the other plugins)
    loop_distribution_runners: Dict[str, bool] = field(default_factory=dict)
    sanitize: str = ""
    cxx_compiler: str = ""
    llvm_bin_dir: str = ""
    source: Optional[Path] = None
    #: MLBridgeRegAlloc.so (-regalloc=mlbridge for llc/clang), None if not built.
    regalloc: Optional[Path] = None
    #: MLBridgeMIR2Vec.so (the llc pass mlbridge-mir2vec, :mod:`mlbridge.mir2vec`).
    mir2vec: Optional[Path] = None

    def tool(self, name: str) -> str:
        """The LLVM tool ``name`` ("opt", "clang", "llc", ...) of the version
        these plugins load into."""
        cand = Path(self.llvm_bin_dir) / name
        if self.llvm_bin_dir and cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
        return find_llvm_tool(f"{name}-{self.llvm_major}")


def _major(llvm: Optional[int]) -> int:
    if llvm is not None:
        return int(llvm)
    from ...toolchain import CompileError, toolchain
    try:
        major = toolchain().major
    except CompileError as exc:
        raise PluginNotFound(f"which LLVM's plugins? {exc}; pass llvm=19 or 22") from None
    if major is None:
        raise PluginNotFound(f"cannot tell the LLVM version of {toolchain().clang}; "
                             f"pass llvm=19 or 22")
    return major


def find_plugins(build_dir=None, llvm: Optional[int] = None) -> PluginInfo:
    """The plugins for LLVM major version ``llvm`` (19 or 22; default: that of
    the compiler :func:`mlbridge.toolchain.toolchain` runs, ``$MLBRIDGE_CLANG``)
    of the build in ``build_dir``, ``$MLBRIDGE_BUILD_DIR`` or
    ``<repo>/build``. Raises :class:`PluginNotFound` when they are not built."""
    major = _major(llvm)
    if major not in PLUGIN_SECTIONS:
        raise PluginNotFound(f"the plugins are built for LLVM "
                             f"{' and '.join(map(str, PLUGIN_SECTIONS))}, not LLVM {major}")
    manifest = load(build_dir)
    sec = manifest.section(PLUGIN_SECTIONS[major], paths=("inline_advisor", "phase_order"))
    return PluginInfo(inline_advisor=Path(sec["inline_advisor"]),
                      phase_order=Path(sec["phase_order"]),
                      loop_distribution=(Path(sec["loop_distribution"])
                                         if sec.get("loop_distribution") else None),
                      llvm_major=major,
                      runners=dict(sec.get("runners", {})),
                      loop_distribution_runners=dict(sec.get("loop_distribution_runners", {})),
                      sanitize=manifest.sanitize,
                      cxx_compiler=sec.get("cxx_compiler", ""),
                      llvm_bin_dir=sec.get("llvm_bin_dir", ""),
                      source=manifest.path,
                      regalloc=Path(sec["regalloc"]) if sec.get("regalloc") else None,
                      mir2vec=Path(sec["mir2vec"]) if sec.get("mir2vec") else None)


def built_llvm_versions(build_dir=None) -> List[int]:
    """The LLVM major versions the build has plugins for."""
    manifest = load(build_dir)
    return [major for major, name in PLUGIN_SECTIONS.items() if manifest.built(name)]


def find_llvm_tool(name: str) -> str:
    """Path of a versioned LLVM tool ("opt-19", "clang-22", ...): on PATH,
    else in ``/usr/lib/llvm-<major>/bin``."""
    found = shutil.which(name)
    if found:
        return found
    base, _, major = name.rpartition("-")
    if base and major.isdigit():
        cand = Path(f"/usr/lib/llvm-{major}/bin") / base
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
        where = f"PATH or /usr/lib/llvm-{major}/bin"
        pkg = f" (Debian: apt-get install llvm-{major} clang-{major})"
    else:
        where, pkg = "PATH", ""
    raise PluginNotFound(f"{name} not found on {where}{pkg}")


def tool_env(info: PluginInfo, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment to run the plugins' opt/clang/llc with them: ``base``
    (default: this process's) with the sanitizer runtime preloaded when the
    plugins are from a sanitized build (:func:`mlbridge.toolchain.sanitizer_env`).

    Every process :mod:`mlbridge.toolchain` starts gets this by itself
    (:func:`mlbridge.toolchain.plugin_env` reads the plugins off the command
    line); this is for a process whose command does not name the plugin (a
    make whose CC loads it)."""
    from ...toolchain import sanitizer_env
    return sanitizer_env(info.sanitize, info.cxx_compiler, base)


def compile_to_ir(source, output, *, clang: Optional[str] = None,
                  flags: Sequence[str] = (), timeout: float = 60.0) -> Path:
    """C source -> LLVM IR that optimizations (and the inliner) still apply to:
    ``clang -O2 -Xclang -disable-llvm-passes -emit-llvm -S`` (``-O0`` would
    mark every function optnone/noinline). For code-size experiments pass
    ``flags=["-Oz"]`` (a later -O wins): -O2 IR lacks the optsize/minsize
    attributes of real ``clang -Oz`` (docs/llvm.md, "Pitfalls"). ``clang``:
    default that of :func:`mlbridge.toolchain.toolchain`."""
    from ...toolchain import compile, toolchain
    clang = clang or toolchain().clang
    compile([clang, "-O2", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-S",
             *flags, str(source), "-o", str(output)], timeout=timeout, measure_text=False)
    return Path(output)
