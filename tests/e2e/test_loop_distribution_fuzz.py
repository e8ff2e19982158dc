"""Differential testing of loop distribution on generated loop kernels
(mlbridge.difftest.loop_kernels; issue 34, item 3): each kernel (symbolic,
zero and negative strides and offsets, pointer arguments that overlap,
reductions, values used after the loop) is built with plain ``-O0`` (the
reference) and ``-O2``, and with ``-O2`` and MLBridgeLoopDistribution.so
under the shipped model, the built-in policy and forced partitions of its
loop (``-mlbridge-ld-partition``); every build must print the reference's
output, the compiler must not crash, and a refused partition must be a
warning. On LLVM 19 and 22.

The default run checks a fixed set of seeds: three whose loops are
distributed and take forced partitions, and the kernels of the first
campaign (seeds 1000-1149) that the earlier plugin (dependences from LLVM's
DDG, DA believed everywhere) miscompiled: 1031, 1045, 1096, 1125, 1132 (21
wrong builds of 861, with the shipped model, the built-in policy and forced
partitions). The long run is opt-in:

    MLBRIDGE_LD_FUZZ_KERNELS=300 MLBRIDGE_LD_FUZZ_FIRST=1000 pytest tests/e2e/test_loop_distribution_fuzz.py

(or ``python -m mlbridge.difftest.loop_kernels --kernels 300 --seed 1000``,
docs/loop-distribution.md).
"""

from __future__ import annotations

import os

import pytest
from conftest import plugins_of_each_llvm

from mlbridge.difftest.loop_kernels import check_kernel, generate
from mlbridge.llvm.plugins import loop_distribution as ld

DISTRIBUTED = (1012, 1023, 1045)
MISCOMPILED_BEFORE = (1031, 1096, 1125, 1132)  # and 1045
#: Forced partitions per kernel in the default run.
FORCED = 6


def seeds():
    n = int(os.environ.get("MLBRIDGE_LD_FUZZ_KERNELS", "0"))
    first = int(os.environ.get("MLBRIDGE_LD_FUZZ_FIRST", "0"))
    return list(range(first, first + n)) if n > 0 else sorted(DISTRIBUTED + MISCOMPILED_BEFORE)


plugins = plugins_of_each_llvm()


@pytest.mark.parametrize("seed", seeds())
def test_generated_kernel_outputs_equal_plain(plugins, llvm_major, clang, tmp_path, seed):
    long_run = "MLBRIDGE_LD_FUZZ_KERNELS" in os.environ
    rep = check_kernel(generate(seed), {llvm_major: ld.plugin(plugins)}, {llvm_major: clang},
                       tmp_path, forced=13 if long_run else FORCED)
    if rep.skipped and long_run:  # the generator made an undefined program
        pytest.skip(rep.skipped)
    assert not rep.skipped, rep.skipped
    assert not rep.findings, "\n".join(f"{f.policy}: {f.what} {f.detail[:300]}"
                                       for f in rep.findings)
    assert rep.builds >= 2
    if seed in DISTRIBUTED and not long_run:  # chosen for that
        assert rep.distributed >= 1, f"seed {seed}: no build distributed the kernel's loop"
