"""What the soaks (tests/soak/*_soak.py) share: the model's fault injection,
serving in the background, running the compiler program in chunks and
adding up the JSON summaries its "soak" scenario prints."""

import json
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

from mlbridge import MLBridgeError

SOURCE = Path(__file__).resolve().parents[2]


def faulty_policy(rng, rate, delay, faults):
    """The soaks' model, 2 i for {"i": i}, that per request with
    probability ``rate`` sleeps ``delay`` seconds (past the compiler's
    deadline: the late answer must never reach anyone) or raises; counts
    what it injected in ``faults`` ({"delay": n, "error": n})."""

    def policy(obs):
        if rng.random() < rate:
            kind = rng.choice(("delay", "error"))
            faults[kind] += 1
            if kind == "delay":
                time.sleep(delay)
            else:
                raise RuntimeError("injected policy fault")
        return 2 * int(obs["i"][0])
    return policy


def serve_in_background(serve_once):
    """Calls ``serve_once()`` again and again in a thread (an injected
    fault, or no compiler for a while, only ends one call); returns a stop()
    that ends it."""
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                serve_once()
            except (RuntimeError, MLBridgeError):
                pass
    server = threading.Thread(target=serve, daemon=True)
    server.start()

    def end():
        stop.set()
        server.join(5)
    return end


def new_totals():
    return {"right": 0, "wrong": 0, "sessions": 0, "errors": {}}


def soak_summary(proc_result):
    """The "soak" event a finished compiler program printed, or None."""
    events = [json.loads(l) for l in proc_result.stdout.splitlines() if l.strip()]
    return next((e for e in events if e["event"] == "soak"), None)


def add_summary(totals, summary):
    for key in ("right", "wrong", "sessions"):
        totals[key] += summary[key]
    for code, count in summary["errors"].items():
        totals["errors"][code] = totals["errors"].get(code, 0) + count


def run_in_chunks(requests, chunk, command, totals, after_chunk=None):
    """Runs ``command(n)`` (the compiler program asking n requests) until
    ``requests`` were asked, adding its summaries to ``totals``; a progress
    line per chunk on stderr. Returns the compilers' (early, end) RSS per
    chunk, or None when a compiler printed no summary (its output is shown)."""
    rss = []
    start = time.monotonic()
    left = requests
    while left > 0:
        n = min(chunk, left)
        proc = subprocess.run(command(n), capture_output=True, text=True)
        summary = soak_summary(proc)
        if summary is None:
            print(proc.stdout, proc.stderr, file=sys.stderr)
            return None
        add_summary(totals, summary)
        rss.append((summary["rss_kib_early"], summary["rss_kib_end"]))
        if after_chunk is not None:
            after_chunk()
        left -= n
        print(json.dumps(dict(totals, done=requests - left,
                              seconds=round(time.monotonic() - start, 1))),
              file=sys.stderr, flush=True)
    return rss


def report(totals, started, **extra):
    """Print the summary (one JSON line); the exit status: 1 on any wrong
    answer."""
    totals.update(extra, seconds=round(time.monotonic() - started, 1),
                  model_max_rss_kib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    print(json.dumps(totals))
    return 0 if totals["wrong"] == 0 else 1
