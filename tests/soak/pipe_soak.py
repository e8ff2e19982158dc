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
import json
import os
import random
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

from mlbridge import MLBridgeError, PipeCompilerInterface

SOURCE = Path(__file__).resolve().parents[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--chunk", type=int, default=1_000_000)
    ap.add_argument("--serdes", default="bitstream")
    ap.add_argument("--fault-rate", type=float, default=1e-4)
    ap.add_argument("--reply-timeout-ms", type=int, default=100)
    ap.add_argument("--compiler", default=str(SOURCE / "build" / "tests" /
                                              "mlbridge-e2e-compiler"))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    faults = {"delay": 0, "error": 0}
    delay = args.reply_timeout_ms / 1000 * 1.5

    def policy(obs):
        if rng.random() < args.fault_rate:
            kind = rng.choice(("delay", "error"))
            faults[kind] += 1
            if kind == "delay":
                time.sleep(delay)  # the compiler gives up; this answer is late
            else:
                raise RuntimeError("injected policy fault")
        return 2 * int(obs["i"][0])

    totals = {"right": 0, "wrong": 0, "sessions": 0, "errors": {}}
    rss = []
    start = time.monotonic()
    with PipeCompilerInterface(serdes=args.serdes, timeout=30) as iface:
        stop = threading.Event()

        def serve():
            while not stop.is_set():
                try:
                    iface.serve(policy, timeout=1)
                except (RuntimeError, MLBridgeError):
                    pass  # an injected fault, or no compiler for a second

        server = threading.Thread(target=serve, daemon=True)
        server.start()
        left = args.requests
        while left > 0:
            n = min(args.chunk, left)
            proc = subprocess.run(
                [args.compiler, "--base", iface.base, "--serdes", args.serdes,
                 "--scenario", "soak", "--count", str(n),
                 "--reply-timeout-ms", str(args.reply_timeout_ms),
                 "--open-timeout-ms", "10000"],
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
            left -= n
            print(json.dumps(dict(totals, done=args.requests - left,
                                  seconds=round(time.monotonic() - start, 1))),
                  file=sys.stderr, flush=True)  # progress, one line per chunk
        stop.set()
        server.join(5)
    totals.update(
        transport="pipe", serdes=args.serdes, requests=args.requests,
        injected=faults, seconds=round(time.monotonic() - start, 1),
        compiler_rss_kib=rss,
        model_max_rss_kib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    print(json.dumps(totals))
    return 0 if totals["wrong"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
