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
import random
import resource
import sys
import time

import soak_common as S
from mlbridge.grpc import GrpcCompilerInterface


def current_rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--chunk", type=int, default=100_000)
    ap.add_argument("--fault-rate", type=float, default=1e-4)
    ap.add_argument("--call-timeout-ms", type=int, default=200)
    ap.add_argument("--compiler", default=str(S.SOURCE / "build" / "tests" /
                                              "mlbridge-grpc-e2e-compiler"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--server", choices=("native", "grpcio"),
                    help="the model's gRPC server (default: the interface's choice)")
    args = ap.parse_args()
    faults = {"delay": 0, "error": 0}
    # A delay past the compiler's call deadline, or an error sent to it.
    policy = S.faulty_policy(random.Random(args.seed), args.fault_rate,
                             args.call_timeout_ms / 1000 * 1.5, faults)
    totals = S.new_totals()
    model_rss = []  # the model's (this process's) RSS after each chunk
    started = time.monotonic()
    with GrpcCompilerInterface(timeout=30, server=args.server) as iface:
        stop = S.serve_in_background(lambda: iface.serve(policy, timeout=1))
        rss = S.run_in_chunks(args.requests, args.chunk, lambda n: [
            args.compiler, "--address", iface.address, "--scenario", "soak",
            "--count", str(n), "--call-timeout-ms", str(args.call_timeout_ms)], totals,
            after_chunk=lambda: model_rss.append(current_rss_kib()))
        stop()
        server_kind = iface.server_kind
    if rss is None:
        return 2
    return S.report(totals, started, transport="grpc", server=server_kind,
                    requests=args.requests, injected=faults, compiler_rss_kib=rss,
                    model_rss_kib=model_rss)


if __name__ == "__main__":
    sys.exit(main())
