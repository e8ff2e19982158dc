"""Soak: millions of requests from the C++ pipe runner to the Python model
side, with faults injected at random, checking every answer.

The compiler is tests/e2e/tools/e2e_compiler.cpp (scenario "soak"): it asks
2k for pseudo-random k, replaces its runner after every error (a new
session) and reports right and wrong answers, errors by code and its RSS.
It runs in chunks (one process each: a clean session end between them).
The model side here injects, per request with probability --fault-rate:
a delay past the compiler's reply deadline (the late answer must never
reach anyone), or a policy error (the session is dropped and the FIFOs
replaced). Prints one JSON summary; exit status 1 on any wrong answer.

    PYTHONPATH=python python tests/soak/pipe_soak.py --requests 10000000
"""

import argparse
import random
import sys
import time

import soak_common as S
from mlbridge import PipeCompilerInterface


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--chunk", type=int, default=1_000_000)
    ap.add_argument("--serdes", default="bitstream")
    ap.add_argument("--fault-rate", type=float, default=1e-4)
    ap.add_argument("--reply-timeout-ms", type=int, default=100)
    ap.add_argument("--compiler", default=str(S.SOURCE / "build" / "tests" /
                                              "mlbridge-e2e-compiler"))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    faults = {"delay": 0, "error": 0}
    policy = S.faulty_policy(random.Random(args.seed), args.fault_rate,
                             args.reply_timeout_ms / 1000 * 1.5, faults)
    totals = S.new_totals()
    started = time.monotonic()
    with PipeCompilerInterface(serdes=args.serdes, timeout=30) as iface:
        stop = S.serve_in_background(lambda: iface.serve(policy, timeout=1))
        rss = S.run_in_chunks(args.requests, args.chunk, lambda n: [
            args.compiler, "--base", iface.base, "--serdes", args.serdes, "--scenario", "soak",
            "--count", str(n), "--reply-timeout-ms", str(args.reply_timeout_ms),
            "--open-timeout-ms", "10000"], totals)
        stop()
    if rss is None:
        return 2
    return S.report(totals, started, transport="pipe", serdes=args.serdes,
                    requests=args.requests, injected=faults, compiler_rss_kib=rss)


if __name__ == "__main__":
    sys.exit(main())
