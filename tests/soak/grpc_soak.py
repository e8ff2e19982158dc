"""Soak over gRPC: the C++ gRPC runner (tests/e2e/tools/grpc_compiler.cpp,
scenario "soak") against the Python GrpcCompilerInterface in inference
mode, with faults injected at random by the model: per request with
probability --fault-rate, a delay past the compiler's call deadline or a
policy error (sent to the compiler as an error). The compiler replaces its
runner after an error that makes it unavailable and checks every answer.
Prints one JSON summary; exit status 1 on any wrong answer.

    PYTHONPATH=python python tests/soak/grpc_soak.py --requests 1000000
"""

import argparse
import json
import random
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

from mlbridge import MLBridgeError
from mlbridge.grpc import GrpcCompilerInterface

SOURCE = Path(__file__).resolve().parents[2]


def current_rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--chunk", type=int, default=100_000)
    ap.add_argument("--fault-rate", type=float, default=1e-4)
    ap.add_argument("--call-timeout-ms", type=int, default=200)
    ap.add_argument("--compiler", default=str(SOURCE / "build" / "tests" /
                                              "mlbridge-grpc-e2e-compiler"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--server", choices=("native", "grpcio"),
                    help="the model's gRPC server (default: the interface's choice)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    faults = {"delay": 0, "error": 0}
    delay = args.call_timeout_ms / 1000 * 1.5

    def policy(obs):
        if rng.random() < args.fault_rate:
            kind = rng.choice(("delay", "error"))
            faults[kind] += 1
            if kind == "delay":
                time.sleep(delay)  # the compiler's call times out first
            else:
                raise RuntimeError("injected policy fault")
        return 2 * int(obs["i"][0])

    totals = {"right": 0, "wrong": 0, "sessions": 0, "errors": {}}
    rss = []
    model_rss = []  # the model's (this process's) RSS after each chunk
    start = time.monotonic()
    with GrpcCompilerInterface(timeout=30, server=args.server) as iface:
        stop = threading.Event()

        def serve():
            while not stop.is_set():
                try:
                    iface.serve(policy, timeout=1)
                except (RuntimeError, MLBridgeError):
                    pass  # an injected fault, or no request for a second

        server = threading.Thread(target=serve, daemon=True)
        server.start()
        left = args.requests
        while left > 0:
            n = min(args.chunk, left)
            proc = subprocess.run(
                [args.compiler, "--address", iface.address, "--scenario", "soak",
                 "--count", str(n), "--call-timeout-ms", str(args.call_timeout_ms)],
                capture_output=True, text=True)
            events = [json.loads(l) for l in proc.stdout.splitlines() if l.strip()]
            summary = next((e for e in events if e["event"] == "soak"), None)
            if summary is None:
                print(proc.stdout, proc.stderr, file=sys.stderr)
                return 2
            for key in ("right", "wrong", "sessions"):
                totals[key] += summary[key]
            for code, count in summary["errors"].items():
                totals["errors"][code] = totals["errors"].get(code, 0) + count
            rss.append((summary["rss_kib_early"], summary["rss_kib_end"]))
            model_rss.append(current_rss_kib())
            left -= n
            print(json.dumps(dict(totals, done=args.requests - left,
                                  seconds=round(time.monotonic() - start, 1))),
                  file=sys.stderr, flush=True)  # progress, one line per chunk
        stop.set()
        server.join(5)
        server_kind = iface.server_kind
    totals.update(
        transport="grpc", server=server_kind, requests=args.requests, injected=faults,
        seconds=round(time.monotonic() - start, 1), compiler_rss_kib=rss,
        model_rss_kib=model_rss,
        model_max_rss_kib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    print(json.dumps(totals))
    return 0 if totals["wrong"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
