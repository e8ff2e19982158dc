"""Rewards of a :class:`mlbridge.kit.PluginEnv` episode, from its outputs.

Each helper returns ``Episode -> float``: the measure's negative (smaller
is better), or with a ``baseline`` the saving ``baseline - value``
(``relative=True``: divided by the baseline)::

    from mlbridge.kit import rewards
    rewards.text()                          # -(.text bytes of the -o file)
    rewards.text(baseline=4096, relative=True)
    rewards.callgrind(["./a.out"], function="kernel", baseline=1_250_000)

The measures are the toolchain's (:func:`mlbridge.toolchain.measure.elf_text_size`,
:func:`mlbridge.toolchain.callgrind`).
"""

from __future__ import annotations

import os
from typing import Callable, Optional, Sequence, Union

from ..toolchain.measure import elf_text_size
from ..toolchain import CompileError, callgrind as callgrind_run

__all__ = ["text_size", "text", "callgrind", "saving"]


def saving(value: float, baseline: Optional[float], relative: bool = False) -> float:
    """``-value``, or ``baseline - value`` (over ``baseline`` if relative)."""
    if baseline is None:
        if relative:
            raise ValueError("a relative reward needs a baseline")
        return -float(value)
    gain = float(baseline) - float(value)
    return gain / float(baseline) if relative else gain


def text_size(path) -> int:
    """``.text`` bytes of an ELF object or linked binary (CompileError if
    ``path`` is not one)."""
    size = elf_text_size(os.fspath(path))
    if size is None:
        raise CompileError(f"{path} is not an ELF file with a .text section")
    return size


def text(*, baseline: Optional[int] = None, relative: bool = False,
         path=None) -> Callable:
    """Reward from the ``.text`` of ``path`` (default: the episode's ``-o``)."""
    def reward(episode) -> float:
        where = path if path is not None else episode.output
        if where is None:
            raise CompileError(f"{episode.command[0]} has no -o output to measure; give "
                               f"path=")
        return saving(text_size(where), baseline, relative)
    return reward


def callgrind(run: Union[Sequence, Callable], *, function: Optional[str] = None,
              baseline: Optional[int] = None, relative: bool = False,
              timeout: float = 600.0) -> Callable:
    """Reward from the callgrind Ir of running ``run`` (an argument list,
    or a function ``episode -> argv``, e.g. linking the episode's object
    first); ``function``: count only it and its callees."""
    def reward(episode) -> float:
        argv = run(episode) if callable(run) else list(run)
        return saving(callgrind_run(argv, function=function, timeout=timeout).ir,
                      baseline, relative)
    return reward
