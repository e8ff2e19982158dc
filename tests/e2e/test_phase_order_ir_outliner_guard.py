"""The phase-ordering plugin's IR-outliner action never makes invalid IR.

LLVM's IR outliner (19 and 22) turns a constant that differs between similar
regions into an argument of the outlined function even where the operand
must stay an immediate (an intrinsic's ``immarg``): programs/sizes/
immarg_regions.c has six regions differing in llvm.ctlz's is_zero_poison
flag. Stock ``clang -Oz -mllvm -ir-outliner`` makes a module the verifier
rejects ("immarg operand has non-immediate parameter"), and clang-22
miscompiles it. The plugin runs the outliner on a copy first and keeps the
module as it is when the copy is invalid: as the policy's action and as the
``ir-outliner`` start flag, the IR stays valid and the program prints what
``-O0`` prints (issue 34, item 8)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import plugins_of_each_llvm

E2E = Path(__file__).resolve().parent
PROGRAM = E2E / "programs" / "sizes" / "immarg_regions.c"
TIMEOUT = 120


plugins = plugins_of_each_llvm()


def run(cmd, plugins=None, env=None):
    from mlbridge.llvm.plugins import tool_env
    res = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=TIMEOUT,
                         env=tool_env(plugins, env) if plugins else env,
                         stdin=subprocess.DEVNULL)
    return res


def verifier_errors(opt: str, ll: Path) -> str:
    res = run([opt, "-passes=verify", "-disable-output", ll])
    return res.stderr if res.returncode else ""


def program_output(clang: str, flags, tmp: Path, tag: str, plugins=None, env=None) -> str:
    exe = tmp / f"{tag}.exe"
    res = run([clang, *flags, PROGRAM, "-o", exe], plugins, env)
    assert res.returncode == 0, res.stderr
    out = run([exe])
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_stock_ir_outliner_makes_invalid_ir_here(clang, opt, tmp_path):
    """The LLVM bug the guard is for, on this program (so the plugin test
    below compares against a real hazard)."""
    ll = tmp_path / "stock.ll"
    res = run([clang, "-Oz", "-mllvm", "-ir-outliner", "-S", "-emit-llvm", PROGRAM, "-o", ll])
    assert res.returncode == 0, res.stderr
    assert "outlined_ir_func" in ll.read_text()
    assert "immarg operand has non-immediate parameter" in verifier_errors(opt, ll)


@pytest.mark.parametrize("how", ["action", "start"])
def test_the_plugin_never_keeps_an_invalid_outline(plugins, clang, opt, tmp_path, how):
    from mlbridge.llvm.plugins import ACTIONS
    from mlbridge.train.phase_order import PhasePolicy
    model = tmp_path / "policy.onnx"
    # The action: a policy that asks for the IR outliner first; the start
    # flag: the shipped network that never acts (it stops at once after it).
    if how == "action":
        PhasePolicy.scripted([ACTIONS.index("iroutliner")]).to_onnx(model)
    else:
        shipped = json.loads((E2E.parents[1] / "models" / "plugins" /
                              "phase_order_policy.json").read_text())
        PhasePolicy.from_dict(shipped).with_threshold(float("inf")).to_onnx(model)
    log = tmp_path / "po.log"
    env = dict(os.environ, MLBRIDGE_PO_ENABLE="1", MLBRIDGE_PO_RUNNER="onnx",
               MLBRIDGE_PO_MODEL=str(model), MLBRIDGE_PO_LOG=str(log),
               MLBRIDGE_PO_MAX_STEPS="2",
               MLBRIDGE_PO_START="ir-outliner" if how == "start" else "")
    plugin = [f"-fpass-plugin={plugins.phase_order}"]
    ll = tmp_path / "plugin.ll"
    res = run([clang, "-Oz", *plugin, "-S", "-emit-llvm", PROGRAM, "-o", ll], plugins, env)
    assert res.returncode == 0 and res.stdout == "", res.stderr
    assert "warning" not in res.stderr, res.stderr
    entry = json.loads(log.read_text().splitlines()[-1])
    if how == "action":
        assert entry["actions"][0] == ACTIONS.index("iroutliner"), entry
    else:
        assert entry["start"] == "ir-outliner", entry
    assert verifier_errors(opt, ll) == ""
    reference = program_output(clang, ["-O0"], tmp_path, "o0")
    assert program_output(clang, ["-Oz", *plugin], tmp_path, "plugin", plugins, env) == reference
