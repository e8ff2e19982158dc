"""bench/plugin_unit_cost.py --repeat 1: each configuration compiles the
small units with the runner it is named after (the plugin's own remark says
so), and every cost is a finite positive number. No timing is asserted
(docs/performance.md has the numbers of a full run)."""

import json
import math
import subprocess
import sys
from pathlib import Path

from build_components import require_component
from conftest import build_dir

REPO = Path(__file__).resolve().parents[2]


def test_bench_unit_cost_quick(tmp_path, plugins):
    require_component("onnx")  # the ONNX Runtime row
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "plugin_unit_cost.py"),
                           "--build-dir", str(build_dir()), "--repeat", "1",
                           "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:] + proc.stdout[-2000:]
    rows = {r["config"]: r for r in json.loads(out.read_text())["rows"]}
    assert list(rows) == ["plain -Oz", "loaded, LLVM decides", "compiled model (deployed)",
                          "ONNX Runtime"]
    assert rows["plain -Oz"]["runner"] is None
    assert "runner 'default'" in rows["loaded, LLVM decides"]["runner"]
    assert "by the compiled runner" in rows["compiled model (deployed)"]["runner"]
    assert "by the onnx runner" in rows["ONNX Runtime"]["runner"]
    for r in rows.values():
        assert math.isfinite(r["cpu_ms"]) and r["cpu_ms"] > 0, r
    for name in list(rows)[1:]:
        assert math.isfinite(rows[name]["cpu_ratio"]) and rows[name]["cpu_ratio"] > 0
    assert "## Per small unit, LLVM 19" in proc.stdout
