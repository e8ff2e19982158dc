"""End to end, opt-in: the MLIR plugin built against MLIR 22 (docs/mlir.md,
"MLIR 22"), in the mlir-opt 22.1.8 that scripts/deps/mlir22.sh extracts from
Debian's packages (MLIR 22 cannot be installed beside MLIR 19). The build
manifest says whether this build has it (``mlir_plugin_mlir22``: configured
with MLBRIDGE_MLIR22_ROOT, otherwise "not applicable", opt-in).

* mlir-opt-22 loads it and lists the pass; the plugin exports only its entry.
* On every kernel, with the default policy and with the compiled-in model,
  its output is the MLIR 19 plugin's in mlir-opt-19, and it unrolled
  something; the decision log has one line per kernel.
* Each mlir-opt refuses the other version's plugin without crashing.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from build_components import require_built

TIMEOUT = 120


@pytest.fixture(scope="module")
def plugins(mlbridge_pkg):
    import mlbridge.mlir as m
    p19 = require_built("mlir_plugin", m.find_plugin)
    p22 = require_built("mlir_plugin_mlir22", lambda: m.find_plugin(mlir=22))
    return m, p19, p22


def _run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)


def test_mlir_opt_22_loads_it(plugins, e2e):
    m, _, p22 = plugins
    assert p22.mlir_major == 22 and p22.unroll.parent.name == "mlir22-plugins"
    version = _run([p22.mlir_opt(), "--version"])
    assert "LLVM version 22." in version.stdout, version.stdout
    e2e.check_mlir_unroll_plugin_loads(p22.mlir_opt(), p22.unroll, timeout=TIMEOUT)


@pytest.mark.parametrize("runner", ["default", "compiled"])
def test_same_output_as_mlir_19(plugins, tmp_path, runner):
    m, p19, p22 = plugins
    if runner == "compiled" and not p22.has_runner("compiled"):
        pytest.fail("the compiled-in model is not built into the MLIR 22 plugin", pytrace=False)
    log19, log22 = tmp_path / "log19", tmp_path / "log22"
    names = m.kernel_names()
    for name in names:
        src = tmp_path / f"{name}.mlir"
        src.write_text(m.kernel_source(name))
        outs = {}
        for info, log in ((p19, log19), (p22, log22)):
            out = tmp_path / f"{name}.{info.mlir_major}.mlir"
            res = _run(m.unroll_command(info, src, out, runner=runner, log=log))
            assert res.returncode == 0 and res.stdout == "", (info.mlir_major, res.stderr)
            outs[info.mlir_major] = out.read_text()
        assert outs[22] == outs[19], f"{name}: MLIR 22 differs from MLIR 19"
        assert outs[22] != src.read_text(), f"{name}: nothing unrolled"
    entries19 = [json.loads(line) for line in log19.read_text().splitlines()]
    entries22 = [json.loads(line) for line in log22.read_text().splitlines()]
    assert len(entries22) == len(names)
    assert [e["factors"] for e in entries22] == [e["factors"] for e in entries19]
    assert all(e["runner"] == runner for e in entries22)


def test_each_mlir_opt_refuses_the_other_plugin(plugins, tmp_path):
    m, p19, p22 = plugins
    src = tmp_path / "matmul.mlir"
    src.write_text(m.kernel_source("matmul"))
    for tool, wrong in ((p22.mlir_opt(), p19.unroll), (p19.mlir_opt(), p22.unroll)):
        res = _run([tool, f"--load-pass-plugin={wrong}", f"--pass-pipeline={m.pass_pipeline()}",
                    str(src), "-o", str(tmp_path / "out.mlir")])
        assert 0 < res.returncode < 128, (tool, res.returncode, res.stderr)
        assert f"Failed to load passes from '{wrong}'" in res.stderr, res.stderr
        assert "Stack dump" not in res.stderr
