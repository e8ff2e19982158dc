"""Round-trip time of one request over gRPC: C++ compiler (GrpcModelRunner,
inference mode) <-> Python model (GrpcCompilerInterface), and the same
payload C++ <-> C++ (a C++ ModelService: the floor), on loopback.

The compiler sends a float vector of --size elements and gets one float
back; both models compute the dot product with a fixed weight vector.
Prints the median and p90 per size and Python server (the C++ server core
``native`` and grpcio's), and the ratio Python / C++.

    .venv/bin/python bench/grpc_rtt.py [--build build] [--sizes 1,50000] [--count 2000]
                                       [--servers native,grpcio]
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from mlbridge.grpc import GrpcCompilerInterface  # noqa: E402


def rtt_line(out):
    for line in out.splitlines():
        if '"rtt"' in line:
            return json.loads(line)
    raise SystemExit(f"rtt run failed:\n{out}")


def python_model(compiler, size, count, server):
    weights = np.linspace(-1.0, 1.0, size, dtype=np.float32)
    with GrpcCompilerInterface(timeout=60, server=server) as iface:
        proc = subprocess.Popen([compiler, "--address", iface.address, "--scenario", "rtt",
                                 "--size", str(size), "--count", str(count)],
                                stdout=subprocess.PIPE, text=True)
        iface.serve(lambda obs: float(np.dot(obs["x"], weights)), sessions=1, timeout=60)
        out, _ = proc.communicate(timeout=120)
    return rtt_line(out)


def cpp_model(compiler, size, count):
    server = subprocess.Popen([compiler, "--scenario", "serve-model", "--address", "127.0.0.1:0",
                               "--sessions", "1", "--max-seconds", "300"],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = json.loads(server.stdout.readline())["port"]
        out = subprocess.run([compiler, "--address", f"127.0.0.1:{port}", "--scenario", "rtt",
                              "--size", str(size), "--count", str(count)],
                             capture_output=True, text=True, timeout=300).stdout
        return rtt_line(out)
    finally:
        server.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--sizes", default="1,50000")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--servers", default="native,grpcio",
                    help="Python servers to measure (native: the C++ server core)")
    args = ap.parse_args()
    compiler = str(Path(args.build) / "tests" / "mlbridge-grpc-e2e-compiler")
    print(f"{'floats':>7} {'server':>7} {'py median us':>13} {'py p90 us':>10} "
          f"{'c++ median us':>14} {'c++ p90 us':>11} {'ratio':>6}")
    for size in map(int, args.sizes.split(",")):
        count = args.count if size < 10000 else max(200, args.count // 4)
        cc = cpp_model(compiler, size, count)
        for server in args.servers.split(","):
            py = python_model(compiler, size, count, server)
            print(f"{size:>7} {server:>7} {py['median_us']:>13.1f} {py['p90_us']:>10.1f} "
                  f"{cc['median_us']:>14.1f} {cc['p90_us']:>11.1f} "
                  f"{py['median_us'] / cc['median_us']:>6.2f}")


if __name__ == "__main__":
    main()
