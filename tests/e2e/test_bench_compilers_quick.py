"""bench/compiler_runners.py --quick: every runner runs inside the LLVM
inliner plugin, the MLIR plugin and the C tool, the model is really asked
(the tools' logs count the decisions; a fallback fails the run), and the
outputs are well-formed. No timing is asserted (docs/performance.md has the
numbers of a full run)."""

import json
import math
import subprocess
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]


def test_bench_compilers_quick(tmp_path, mlbridge_pkg):
    import mlbridge.c_tool
    import mlbridge.mlir
    from build_components import require_built
    mlir = require_built("mlir_plugin", mlbridge.mlir.find_plugin)
    ctool = require_built("c_tool", mlbridge.c_tool.find_tool)
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "compiler_runners.py"), "--quick",
                           "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:] + proc.stdout[-2000:]
    assert "per-decision cost" in proc.stdout
    rows = json.loads(out.read_text())["rows"]
    by = {(r["compiler"].split(" ")[0], r["runner"]) for r in rows}
    for runner in ("pipe+bitstream", "pipe+json"):
        for comp in ("LLVM", "MLIR", "C"):
            assert (comp, runner) in by, by
    for comp, info in (("MLIR", mlir), ("C", ctool)):
        for runner in ("grpc", "onnx"):
            assert ((comp, runner) in by) == info.has_runner(runner), (comp, runner)
    assert (("MLIR", "compiled") in by) == mlir.has_runner("compiled")
    assert ("C", "compiled") not in by  # the C API has no compiled-model runner
    for r in rows:
        assert r["decisions"] == [20, 60], r
        assert r["us_per_decision"] is not None and math.isfinite(r["us_per_decision"]), r
        assert all(c > 0 for c in r["cpu_s"] + r["default_cpu_s"]), r
