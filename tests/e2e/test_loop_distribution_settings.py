"""A -mlbridge-ld-partition / MLBRIDGE_LD_PARTITION the plugin cannot read
is a warning, once per compile, and every loop is left alone (issue 34,
item 11): a partition string the parser rejects used to be a log line only.
On LLVM 19 and 22."""

from __future__ import annotations

import os

import pytest
from conftest import plugins_of_each_llvm

from mlbridge.corpus import loops
from mlbridge.llvm.plugins import loop_distribution as ld
from mlbridge.toolchain import run_command

WARNING = "warning: mlbridge-loop-distribution: -mlbridge-ld-partition: "


plugins = plugins_of_each_llvm()


@pytest.mark.parametrize("spec,why", [
    ("*=0,|1", "a loop or a node is missing"),
    ("mixed_rec_map:0=1|x", "unexpected 'x'"),
    ("mixed_rec_map:0", "is not '<function>:<loop>=<partition>'"),
])
def test_unreadable_partition_is_one_warning(plugins, clang, tmp_path, spec, why):
    log = tmp_path / "log.jsonl"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(ld.ENV_PREFIX)},
           **ld.plugin_settings(partition=spec, log=log)}
    res = run_command([clang, "-O2", "-c", f"-fpass-plugin={ld.plugin(plugins)}", "-I",
                       str(loops.ROOT), str(loops.ROOT / "kernels" / "mixed.c"), "-o",
                       str(tmp_path / "mixed.o")], env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    # The family has many loops: still one warning, naming the problem.
    assert res.stderr.count(WARNING) == 1, res.stderr
    assert why in res.stderr and "loops are left as they are" in res.stderr, res.stderr
    assert not [r for r in ld.read_log(log) if r["result"] == "distributed"]
