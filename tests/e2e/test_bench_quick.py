"""mlbridge-bench --quick: runs the reduced sweep and checks that the outputs
are well-formed (stdout JSON lines, results.csv, results.jsonl, the plot when
matplotlib is installed). No timing is asserted."""
import csv
import importlib.util
import json
import math
import subprocess

from conftest import build_dir

REQUIRED = {"runner", "serdes", "n", "median_us", "floor_us"}


def test_bench_quick(tmp_path):
    exe = build_dir() / "bench" / "mlbridge-bench"
    assert exe.is_file(), f"{exe} not built (cmake --build <build> --target mlbridge-bench)"
    out_dir = tmp_path / "out"
    proc = subprocess.run([str(exe), "--quick", "--json", "--out-dir", str(out_dir)],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert rows, proc.stderr
    for r in rows:
        assert REQUIRED <= r.keys(), r
    sections = {r["section"] for r in rows}
    assert {"rtt", "total", "small", "memory", "scaling"} <= sections, sections
    rtt = [r for r in rows if r["section"] == "rtt"]
    runners = {(r["runner"], r["serdes"]) for r in rtt}
    for want in [("pipe", "bitstream"), ("pipe", "json"), ("fifo-floor", "raw"),
                 ("loop-floor", "raw")]:
        assert want in runners, runners
    for r in rtt:
        assert r["n"] > 0 and r["median_us"] > 0 and math.isfinite(r["median_us"]), r
        assert r["floor_us"] is not None and r["floor_us"] > 0, r
    for r in (r for r in rows if r["section"] == "memory"):
        assert r["rss_kb_1"] > 0 and r["rss_kb_2"] > 0, r
    for r in (r for r in rows if r["section"] == "scaling"):
        assert r["throughput_rps"] > 0, r
    # The files carry the same measurements.
    jsonl = [json.loads(line) for line in (out_dir / "results.jsonl").read_text().splitlines()]
    assert len([r for r in jsonl if r["section"] != "machine"]) == len(rows)
    with open(out_dir / "results.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert {"section", "runner", "serdes", "n", "median_us", "floor_us"} <= table[0].keys()
    assert len([t for t in table if t["section"] == "rtt"]) == len(rtt)
    if importlib.util.find_spec("matplotlib"):
        png = (out_dir / "rtt.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
