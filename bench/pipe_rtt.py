"""Round-trip time of one request over the pipe runner, per SerDes.

The C++ side is the e2e test compiler (`--scenario rtt`): a float vector of
--size elements goes out, one float comes back; the Python model computes a
dot product with numpy. Prints the median and p90 per (serdes, size).

    .venv/bin/python bench/pipe_rtt.py [--build build] [--sizes 1,50000] [--count 2000]
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from mlbridge import PipeCompilerInterface  # noqa: E402


def measure(compiler, serdes, size, count):
    weights = np.linspace(-1.0, 1.0, size, dtype=np.float32)
    with PipeCompilerInterface(serdes=serdes, timeout=30) as iface:
        proc = subprocess.Popen(
            [compiler, "--base", iface.base, "--serdes", serdes, "--scenario", "rtt",
             "--size", str(size), "--count", str(count)],
            stdout=subprocess.PIPE, text=True)
        iface.serve(lambda obs: float(np.dot(obs["x"], weights)), sessions=1, timeout=30)
        out, _ = proc.communicate(timeout=60)
    result = [json.loads(line) for line in out.splitlines() if '"rtt"' in line]
    if proc.returncode != 0 or not result:
        raise SystemExit(f"rtt run failed: {out}")
    return result[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--sizes", default="1,50000")
    ap.add_argument("--count", type=int, default=2000)
    args = ap.parse_args()
    compiler = str(Path(args.build) / "tests" / "mlbridge-e2e-compiler")
    print(f"{'serdes':<10} {'floats':>7} {'median us':>10} {'p90 us':>8}")
    for serdes in ("bitstream", "json"):
        for size in map(int, args.sizes.split(",")):
            count = args.count if size < 10000 else max(200, args.count // 10)
            r = measure(compiler, serdes, size, count)
            print(f"{serdes:<10} {size:>7} {r['median_us']:>10.1f} {r['p90_us']:>8.1f}")


if __name__ == "__main__":
    main()
