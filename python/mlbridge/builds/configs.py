"""The configurations a real project is built with, and the compiler
environment (``CC``, ``CFLAGS``, ``LDFLAGS``, ``MLBRIDGE_*``) each one gives
its build system.

Every plugin is loaded the way its guide documents it for a build system
(docs/llvm-plugins.md, docs/register-allocation.md,
docs/loop-distribution.md): ``-fpass-plugin=`` in the compile flags,
``-Wl,--load-pass-plugin=`` for lld's ThinLTO backends, and the plugin's
settings in the environment (clang's driver and lld parse ``-mllvm`` before
they load a pass plugin). Plugins decide with the models compiled into
them. Every configuration links with lld, so the plain builds differ from
the plugin builds only in what is measured.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ..llvm.plugins import PluginInfo, PluginNotFound, find_plugins, tool_env
from ..train.baselines import FLAGS, load_best_flags
from .. import _named

__all__ = ["BuildConfig", "CONFIGS", "by_name", "select", "Compilers", "compilers",
           "environment"]


@dataclass(frozen=True)
class BuildConfig:
    """One way of building a project.

    ``plugins``: fields of :class:`mlbridge.llvm.plugins.PluginInfo` loaded
    into clang (``compile``) and into lld's ThinLTO backends (``link``);
    ``best_flags``: add the size flags chosen on validation
    (``results/size/best_flags_llvm<N>.json``); ``base``: the plain build
    this one's build CPU and peak RSS are compared with."""

    name: str
    level: str
    base: str
    compile: Tuple[str, ...] = ()
    link: Tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    best_flags: bool = False
    thinlto: bool = False

    @property
    def plugins(self) -> Tuple[str, ...]:
        return tuple(dict.fromkeys(self.compile + self.link))


_SIZE = ("inline_advisor", "phase_order")
_PO = {"MLBRIDGE_PO_ENABLE": "1"}

CONFIGS: Tuple[BuildConfig, ...] = (
    BuildConfig("O2", "-O2", "O2"),
    BuildConfig("O3", "-O3", "O3"),
    BuildConfig("Oz", "-Oz", "Oz"),
    BuildConfig("best", "-Oz", "Oz", best_flags=True),
    # both size plugins in every compile (docs/results.md "Combined")
    BuildConfig("size", "-Oz", "Oz", compile=_SIZE, env=_PO),
    # the register allocator as LLVM's default allocator
    BuildConfig("regalloc", "-O2", "O2", compile=("regalloc",), env={"MLBRIDGE_RA_ENABLE": "1"}),
    BuildConfig("loopdist", "-O3", "O3", compile=("loop_distribution",)),
    # ThinLTO through lld with two backend threads: plain, and the size
    # plugins before linking, in the link's backends, or both
    BuildConfig("thin-Oz", "-Oz", "thin-Oz", thinlto=True),
    BuildConfig("thin-size-pre", "-Oz", "thin-Oz", compile=_SIZE, env=_PO, thinlto=True),
    BuildConfig("thin-size-link", "-Oz", "thin-Oz", link=_SIZE, env=_PO, thinlto=True),
    BuildConfig("thin-size-both", "-Oz", "thin-Oz", compile=_SIZE, link=_SIZE, env=_PO,
                thinlto=True),
)

#: ThinLTO backend threads (this machine has 2 cores).
THINLTO_JOBS = 2


def by_name(name: str) -> BuildConfig:
    return _named.by_name(CONFIGS, name, "configuration")


def select(names: Optional[Sequence[str]] = None) -> List[BuildConfig]:
    return _named.select(CONFIGS, names, "configuration")


@dataclass(frozen=True)
class Compilers:
    """The clang/clang++ of one LLVM version and its built plugins."""

    llvm: int
    cc: str
    cxx: str
    info: PluginInfo


#: The plugins a configuration can load (fields of PluginInfo).
PLUGINS = ("inline_advisor", "phase_order", "loop_distribution", "regalloc")


def compilers(llvm: int, build_dir=None, snapshot=None, reuse: bool = False) -> Compilers:
    """LLVM ``llvm``'s compilers with the plugins of the build in
    ``build_dir`` (PluginNotFound / NotBuilt when they are not built).

    ``snapshot``: a folder to copy the plugins into first, so that a long
    run uses one set of plugin files while the build tree is rebuilt; each
    copy is checked by loading it into clang (a copy caught while the build
    wrote the file is taken again). ``reuse``: a plugin already in
    ``snapshot`` is used as it is (a run continued with the plugins an
    earlier run measured)."""
    info = find_plugins(build_dir, llvm=llvm)
    cc, cxx = info.tool("clang"), info.tool("clang++")
    if snapshot is not None:
        info = _snapshot(info, cc, Path(snapshot).resolve(), reuse=reuse)
    return Compilers(llvm, cc, cxx, info)


def _snapshot(info: PluginInfo, cc: str, folder: Path, attempts: int = 20,
              reuse: bool = False) -> PluginInfo:
    folder.mkdir(parents=True, exist_ok=True)
    copies = {}
    for name in PLUGINS:
        src = getattr(info, name)
        if src is None:
            continue
        dest = folder / Path(src).name
        for _ in range(attempts):
            if not (reuse and dest.is_file()):
                shutil.copy2(src, dest)
            r = subprocess.run([cc, f"-fpass-plugin={dest}", "-x", "c", "-c", "-o", os.devnull,
                                "-"], input="int f(void) { return 0; }\n", capture_output=True,
                               text=True, env=tool_env(info), timeout=120)
            if r.returncode == 0:
                break
            time.sleep(15)  # the build is writing it
        else:
            raise PluginNotFound(f"{src} does not load into {cc}: {r.stderr.strip()[-500:]}")
        copies[name] = dest
    return dataclasses.replace(info, **copies)


def _plugin_path(info: PluginInfo, plugin: str) -> str:
    from ..build_manifest import NotBuilt
    path = getattr(info, plugin)
    if path is None:
        raise NotBuilt(f"{info.source} lists no {plugin} plugin for LLVM {info.llvm_major}")
    return str(path)


def environment(config: BuildConfig, comp: Compilers,
                extra_ldflags: Sequence[str] = ()) -> Dict[str, str]:
    """The variables a build system reads (``CC``, ``CXX``, ``CFLAGS``,
    ``CXXFLAGS``, ``LDFLAGS``; ``AR``, ``NM``, ``RANLIB`` under ThinLTO) and
    the plugins' settings for ``config``."""
    cflags: List[str] = [config.level]
    if config.best_flags:
        cflags += [f for n in load_best_flags(comp.llvm) for f in FLAGS[n]]
    cflags += [f"-fpass-plugin={_plugin_path(comp.info, p)}" for p in config.compile]
    ldflags = ["-fuse-ld=lld", *extra_ldflags]
    tools = {}
    if config.thinlto:
        # the objects are bitcode: archives and symbol lists need LLVM's tools
        tools = {var: comp.info.tool(name) for var, name in
                 (("AR", "llvm-ar"), ("NM", "llvm-nm"), ("RANLIB", "llvm-ranlib"))}
        cflags.append("-flto=thin")
        ldflags.append(f"-Wl,--thinlto-jobs={THINLTO_JOBS}")
        ldflags += [f"-Wl,--load-pass-plugin={_plugin_path(comp.info, p)}" for p in config.link]
    flags = " ".join(cflags)
    env = {"CC": comp.cc, "CXX": comp.cxx, "CFLAGS": flags, "CXXFLAGS": flags,
           "LDFLAGS": " ".join(ldflags), **tools}
    env.update(config.env)
    return env
