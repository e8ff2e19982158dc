"""bench/plugin_deployment.py --quick: a corpus library (bzip2) built with
ThinLTO through lld with the size plugins in the backends at 1 and 2
threads, and every deployed plugin's footprint in opt and clang. The plugins
really decide in the link (their logs count decisions), every measure is a
finite positive number and the tables are printed. No timing is asserted
(docs/performance.md has the numbers of a full run)."""

import json
import math
import subprocess
import sys
from pathlib import Path

from conftest import build_dir

REPO = Path(__file__).resolve().parents[2]


def test_bench_deployment_quick(tmp_path, plugins):
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "plugin_deployment.py"),
                           "--build-dir", str(build_dir()), "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:] + proc.stdout[-2000:]
    assert "## ThinLTO builds" in proc.stdout and "## The bridge in the compiler" in proc.stdout
    data = json.loads(out.read_text())
    thin = data["thinlto"]
    assert sorted(r["jobs"] for r in thin) == [1, 2], thin
    for r in thin:
        assert r["library"] == "bzip2" and r["units"] >= 5, r
        # Both plugins decided in lld's backends, the same at 1 and 2 threads.
        assert r["decisions"]["inline_advisor"] > 0 and r["decisions"]["phase_order"] > 0, r
        for k in ("wall_ratio", "cpu_ratio", "rss_ratio", "build_cpu_ratio"):
            assert math.isfinite(r[k]) and r[k] > 0, (k, r)
    assert thin[0]["decisions"] == thin[1]["decisions"], thin
    foot = {r["config"]: r for r in data["footprint"]}
    assert set(foot) == {"size plugins", "loop distribution", "register allocation"}, foot
    for r in foot.values():
        assert r["file_bytes"] > r["code_bytes"] > 0, r
        assert all(x > 0 for x in r["compile_rss_mib"] + r["opt_rss_mib"]), r
        assert math.isfinite(r["load_ms"]) and math.isfinite(r["compile_cpu_ratio"]), r
