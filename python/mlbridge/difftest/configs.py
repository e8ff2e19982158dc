"""The configurations the differential tests build programs with: every
shipped plugin, loaded the documented way, with each of its policies.

One table (:data:`CONFIGS`) to edit; how each plugin is loaded into each
host (clang, opt, llc, lld) is :func:`plugin_loading`, the one place to change
when a plugin gets another way of being selected. Settings travel through
the plugins' environment variables (``MLBRIDGE_*``), which reach a plugin in
clang, opt, llc and lld alike (lld and clang's driver parse ``-mllvm``
before they load a pass plugin).

The tools of one LLVM version and its built plugins are a :class:`Toolset`
(:func:`toolsets` for the versions the build manifest lists).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ..build_manifest import NotBuilt
from ..llvm.plugins import PluginInfo, built_llvm_versions, find_llvm_tool, find_plugins
from .. import _named

__all__ = ["Config", "CONFIGS", "HOSTS", "Toolset", "by_name", "plugin_loading", "toolsets",
           "select"]

#: The hosts a configuration is loaded into: the clang driver (a program
#: built from C), opt (IR through the optimization pipeline), llc (code
#: generation) and lld (ThinLTO backends, through the clang driver).
HOSTS = ("clang", "opt", "llc", "lld")

#: Where each plugin is at work: its pass runs in opt's pipeline, or in code
#: generation (llc).
_CODEGEN_PLUGINS = frozenset({"regalloc"})


@dataclass(frozen=True)
class Config:
    """One way of building with the plugins.

    ``plugins``: fields of :class:`mlbridge.llvm.plugins.PluginInfo`
    (``inline_advisor``, ``phase_order``, ``loop_distribution``,
    ``regalloc``); ``level``: the -O level; ``env``: the plugins' settings;
    ``served``: a policy answered from Python over a pipe (``ld-random``:
    random legal loop partitions, :class:`RandomPolicy` seeded ``seed``),
    which needs one compiler per channel and so no multi-threaded ThinLTO
    link."""

    name: str
    plugins: Tuple[str, ...]
    level: str
    env: Mapping[str, str] = field(default_factory=dict)
    served: Optional[str] = None
    seed: int = 0

    @property
    def codegen(self) -> bool:
        """Whether the plugins work in code generation (llc) rather than in
        the optimization pipeline (opt)."""
        return any(p in _CODEGEN_PLUGINS for p in self.plugins)

    def hosts(self) -> Tuple[str, ...]:
        """The hosts this configuration can be tested in."""
        ir_host = "llc" if self.codegen else "opt"
        return ("clang", ir_host) if self.served else ("clang", ir_host, "lld")


_PO = {"MLBRIDGE_PO_ENABLE": "1"}

#: Every shipped plugin and policy (docs/llvm-plugins.md,
#: docs/loop-distribution.md, docs/register-allocation.md). With no runner
#: setting a plugin decides with the model compiled into it.
CONFIGS: Tuple[Config, ...] = (
    # size: the inliner's compiled-in model; the phase-ordering policy as
    # deployed (MLBRIDGE_PO_ENABLE alone: the start flags its policy.json
    # records) and from where -Oz ends (MLBRIDGE_PO_START=none); both
    # plugins together.
    Config("inline", ("inline_advisor",), "-Oz"),
    Config("po", ("phase_order",), "-Oz", _PO),
    Config("po-start", ("phase_order",), "-Oz", {**_PO, "MLBRIDGE_PO_START": "none"}),
    Config("size", ("inline_advisor", "phase_order"), "-Oz", _PO),
    # loop distribution: the compiled-in model, the built-in policy, random
    # legal partitions (the plugin has no random mode of its own: a Python
    # policy over a pipe draws them).
    Config("ld-model-O2", ("loop_distribution",), "-O2"),
    Config("ld-model-O3", ("loop_distribution",), "-O3"),
    Config("ld-builtin-O2", ("loop_distribution",), "-O2", {"MLBRIDGE_LD_RUNNER": "default"}),
    Config("ld-builtin-O3", ("loop_distribution",), "-O3", {"MLBRIDGE_LD_RUNNER": "default"}),
    Config("ld-random-O2", ("loop_distribution",), "-O2", served="ld-random", seed=1),
    Config("ld-random-O3", ("loop_distribution",), "-O3", served="ld-random", seed=2),
    # register allocation: the compiled-in model, the heuristic, seeded
    # random legal choices.
    Config("ra-model", ("regalloc",), "-O2"),
    Config("ra-heuristic", ("regalloc",), "-O2", {"MLBRIDGE_RA_POLICY": "heuristic"}),
    Config("ra-random-1", ("regalloc",), "-O2",
           {"MLBRIDGE_RA_POLICY": "random", "MLBRIDGE_RA_SEED": "1"}),
    Config("ra-random-2", ("regalloc",), "-O2",
           {"MLBRIDGE_RA_POLICY": "random", "MLBRIDGE_RA_SEED": "2"}),
)


def by_name(name: str) -> Config:
    return _named.by_name(CONFIGS, name, "configuration")


def select(names: Optional[Sequence[str]] = None) -> List[Config]:
    """The configurations named (all when None); KeyError names an unknown one."""
    return _named.select(CONFIGS, names, "configuration")


def plugin_loading(plugin: str, host: str, info: PluginInfo) -> Tuple[List[str], Dict[str, str]]:
    """The arguments and environment that load ``plugin`` of ``info`` into
    ``host`` and select it, the documented way (nothing where the plugin has
    no work in that host)."""
    path = getattr(info, plugin)
    if path is None:
        raise NotBuilt(f"{info.source} lists no {plugin} plugin for LLVM {info.llvm_major}")
    if plugin == "regalloc":
        # llc: the legacy pass, selected with -regalloc. clang and lld: a pass
        # plugin made LLVM's default allocator by MLBRIDGE_RA_ENABLE (what
        # survives .S files and LTO, docs/register-allocation.md).
        verify = "-verify-machineinstrs"
        return {"clang": ([f"-fpass-plugin={path}", "-mllvm", verify], _RA_ENABLE),
                "llc": (["-load", str(path), "-regalloc=mlbridge", verify], {}),
                "lld": ([f"-Wl,--load-pass-plugin={path}", f"-Wl,-mllvm,{verify}"], _RA_ENABLE),
                "opt": ([], {})}[host]
    return {"clang": [f"-fpass-plugin={path}"], "opt": [f"-load-pass-plugin={path}"],
            "lld": [f"-Wl,--load-pass-plugin={path}"], "llc": []}[host], {}


_RA_ENABLE = {"MLBRIDGE_RA_ENABLE": "1"}


@dataclass
class Toolset:
    """The LLVM tools of one version and the plugins built for it."""

    llvm: int
    info: PluginInfo
    clang: str
    opt: str
    llc: str
    lld: str
    stress: str

    def flags(self, config: Config, host: str) -> List[str]:
        """All arguments loading and selecting ``config``'s plugins in ``host``."""
        return [a for p in config.plugins for a in plugin_loading(p, host, self.info)[0]]

    def settings(self, config: Config, host: str) -> Dict[str, str]:
        """The environment of ``config`` in ``host``: the plugins' selection
        and the configuration's settings."""
        env: Dict[str, str] = {}
        for p in config.plugins:
            env.update(plugin_loading(p, host, self.info)[1])
        env.update(config.env)
        return env


def toolset(llvm: int, build_dir=None) -> Toolset:
    """The tools and plugins of LLVM ``llvm`` (NotBuilt / PluginNotFound
    saying what is missing)."""
    info = find_plugins(build_dir, llvm=llvm)

    def tool(name: str) -> str:
        cand = Path(info.llvm_bin_dir or f"/usr/lib/llvm-{llvm}/bin") / name
        return str(cand) if cand.is_file() else find_llvm_tool(f"{name}-{llvm}")

    return Toolset(llvm, info, tool("clang"), tool("opt"), tool("llc"),
                   find_llvm_tool(f"ld.lld-{llvm}"), find_llvm_tool(f"llvm-stress-{llvm}"))


def toolsets(versions: Optional[Sequence[int]] = None, build_dir=None) -> List[Toolset]:
    """The toolsets of ``versions`` (default: every version the build has
    plugins for)."""
    return [toolset(v, build_dir) for v in (versions or built_llvm_versions(build_dir))]
