"""Soak: pipes and shared memory under one EventLoop, with faulty compilers
among the good ones.

Round after round, real compilers (tests/e2e/tools/e2e_compiler.cpp,
scenario "soak": 2k for pseudo-random k, every answer checked) ask on
--pipes pipe pairs and on one shared-memory interface, while
fault-injecting fakes (tests/e2e/tools/fault_injecting_compiler.py: every
case of the stream matrix, the frozen peers -- mid-message, never reading
replies -- and corrupt ring indices) join the same loop on a pipe pair of their own and on the
shared-memory interface. The loop runs in this thread; a fake's malformed
stream makes run() raise for its session alone, and the loop runs again.
No model fault is injected, so a good compiler must see no error at all:
a frozen fake costs only its own session. Prints one JSON summary; exit
status 1 on any wrong answer or any error of a good compiler.

    PYTHONPATH=python python tests/soak/stream_mix_soak.py --rounds 200
"""

import argparse
import random
import subprocess
import sys
import threading
import time

import soak_common as S
from mlbridge import EventLoop, MLBridgeError, PipeCompilerInterface, ShmCompilerInterface

sys.path.insert(0, str(S.SOURCE / "tests" / "e2e" / "tools"))
import fault_matrix as F  # noqa: E402

FAULTS = {"pipe": F.STREAM_COMPILER_FAULTS + F.FROZEN_PEER_FAULTS["pipe"],
          "shm": F.STREAM_COMPILER_FAULTS + F.FROZEN_PEER_FAULTS["shm"]
          + F.RING_CORRUPTION_FAULTS}


def twice(obs):
    return 2 * int(obs["i"][0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--requests", type=int, default=20_000, help="per good compiler and round")
    ap.add_argument("--pipes", type=int, default=3, help="pipe pairs with a good compiler")
    ap.add_argument("--shm-compilers", type=int, default=3)
    ap.add_argument("--fakes", type=int, default=2, help="fakes per transport and round")
    ap.add_argument("--timeout", type=float, default=2.0,
                    help="the interfaces' timeout: how long a frozen session lives")
    ap.add_argument("--reply-timeout-ms", type=int, default=1000)
    ap.add_argument("--compiler", default=str(F.STREAM_COMPILER))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    totals = S.new_totals()
    injected = {}
    good_errors = []
    started = time.monotonic()
    pipes = [PipeCompilerInterface(timeout=args.timeout) for _ in range(args.pipes + 1)]
    shm = ShmCompilerInterface(timeout=args.timeout, capacity=1 << 16)
    fake_pipe = pipes.pop()
    done = threading.Event()

    def good(transport, where):
        return subprocess.Popen(
            [args.compiler, "--base" if transport == "pipe" else "--shm", where,
             "--scenario", "soak", "--count", str(args.requests),
             "--reply-timeout-ms", str(args.reply_timeout_ms), "--open-timeout-ms", "10000"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def fake(transport, where):
        step, fault = rng.choice(FAULTS[transport])
        key = f"{transport} {step} {fault}"
        injected[key] = injected.get(key, 0) + 1
        return subprocess.Popen(
            [sys.executable, str(F.TOOLS / "fault_injecting_compiler.py"), transport, where,
             "bitstream", step, fault], env=F.ENV,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def rounds():
        try:
            for _ in range(args.rounds):
                fakes = [fake("pipe", fake_pipe.base)]
                fakes += [fake("shm", shm.path) for _ in range(args.fakes)]
                goods = [good("pipe", p.base) for p in pipes]
                goods += [good("shm", shm.path) for _ in range(args.shm_compilers)]
                for proc in goods:
                    out, err = proc.communicate()
                    summary = S.soak_summary(subprocess.CompletedProcess(proc.args, 0, out, err))
                    if summary is None:
                        good_errors.append(err[-2000:] or "no summary")
                        continue
                    S.add_summary(totals, summary)
                    if summary["errors"]:
                        good_errors.append(summary["errors"])
                for proc in fakes:
                    F.end(proc)
                print(dict(totals, injected=sum(injected.values())), file=sys.stderr, flush=True)
        finally:
            done.set()

    driver = threading.Thread(target=rounds)
    with EventLoop() as loop:
        for iface in pipes + [fake_pipe, shm]:
            loop.add(iface, twice)
        driver.start()
        loop_errors = 0
        while not done.is_set():
            try:
                loop.run(timeout=1, deadline=time.monotonic() + 1)
            except MLBridgeError:  # a fake's session (malformed), or the deadline
                loop_errors += loop.failed is not None
    driver.join()
    for iface in pipes + [fake_pipe, shm]:
        iface.close()
    code = S.report(totals, started, transport="pipe+shm, one EventLoop", rounds=args.rounds,
                    injected=injected, sessions_failed_by_fakes=loop_errors,
                    good_compiler_errors=good_errors[:20])
    return code or (1 if good_errors else 0)


if __name__ == "__main__":
    sys.exit(main())
