"""Side by side with the published ML-Compiler-Bridge (docs/upstream-comparison.md).

Runs the paper's workload -- float vectors of n = 500, 1000, ..., 50000 to a
one-layer model y = x . W[:n] + 0.5 (W = linspace(-1, 1, 50000), float32,
numpy; bench/bench_peer.py) -- through this library and through the
published implementation (github.com/IITH-Compilers/ML-Compiler-Bridge), each
with its own C++ compiler-side client and its own Python model side, for
pipe+bitstream, pipe+JSON and gRPC. Both use this interpreter, its grpcio and
numpy. Cells alternate between the two (for each size and cell: ours then
theirs, or theirs then ours) so machine load hits both alike. Every answer is
checked. Prints per-size medians, theirs / ours, and the paper-style total
(the sum of the per-size medians); --json writes them too.

    upstream_compare.py --upstream-src DIR --upstream-client EXE
                        [--ours-client EXE] [--quick | --sizes N,N,...] [--cells C] [--calls K]
                        [--transports pipe-bitstream,pipe-json,grpc[,grpc-grpcio]] [--json OUT]

--upstream-src: a work tree of the published project (its Python package
CompilerInterface/compilerinterface is used from there as is).
--upstream-client: a program built against the published C++ library that
speaks bench/upstream/compare_client.cpp's protocol. Neither is in this
repository, and neither is fetched or built by it: see
docs/upstream-comparison.md. Exit status 2 when either is missing, 1 when
a run fails (a wrong answer, a side that dies or stops answering).
"""
import argparse
import json
import os
import platform
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
UPSTREAM_URL = "https://github.com/IITH-Compilers/ML-Compiler-Bridge"
MAX_N = 50000
W64 = np.linspace(-1.0, 1.0, MAX_N, dtype=np.float32).astype(np.float64)
# transport -> (mode, our SerDes, their Python package's format name,
# environment of our model side). grpc-grpcio: our Python model side on
# grpcio's server instead of the default one (docs/grpc.md).
TRANSPORTS = {
    "pipe-bitstream": ("pipe", "bitstream", "bytes", {}),
    "pipe-json": ("pipe", "json", "json", {}),
    "grpc": ("grpc", None, None, {}),
    "grpc-grpcio": ("grpc", None, None, {"MLBRIDGE_GRPC_SERVER": "grpcio"}),
}
DEFAULT_TRANSPORTS = "pipe-bitstream,pipe-json,grpc"


class HarnessError(Exception):
    """A failed run (exit status 1)."""


class UsageError(Exception):
    """Missing or bad arguments (exit status 2)."""


def expected(n):
    """The exact answer for the benchmark's input of size n (the clients'
    input(): ((i*37 + n) % 101) / 101 - 0.5 in float32)."""
    x = ((np.arange(n) * 37 + n) % 101).astype(np.float32) / np.float32(101) - np.float32(0.5)
    return float(np.dot(x.astype(np.float64), W64[:n]) + 0.5)


def read_line(proc, timeout, what):
    deadline = time.monotonic() + timeout
    line = b""
    fd = proc.stdout.fileno()
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise HarnessError(f"{what}: no answer within {timeout:.0f} s")
        chunk = os.read(fd, 65536)
        if not chunk:
            raise HarnessError(f"{what}: exited (status {proc.wait()})")
        line += chunk
    return line.decode()


class Children:
    """Every process we start; all are stopped on the way out."""

    def __init__(self, log):
        self.procs = []
        self.log = log

    def start(self, argv, what, env=None):
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=self.log, env=dict(os.environ, **(env or {})))
        p.what = what
        self.procs.append(p)
        return p

    def stop_all(self):
        for p in reversed(self.procs):
            try:
                p.stdin.close()  # peers and clients exit at EOF
            except OSError:
                pass
        for p in reversed(self.procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []


class Side:
    """One implementation's model side + compiler side for one transport."""

    def __init__(self, name, peer, client):
        self.name, self.peer, self.client = name, peer, client
        self.times = {}  # n -> [us]
        self.bad = 0

    def warm_up(self, n, calls):
        """Untimed calls (first-use costs: page faults, caches, spin tuning)."""
        self.cell(n, calls)
        self.times.pop(n)

    def cell(self, n, calls):
        self.client.stdin.write(f"{n} {calls}\n".encode())
        self.client.stdin.flush()
        r = json.loads(read_line(self.client, 600, f"{self.name} client"))
        if r["n"] != n or len(r["us"]) != calls or len(r["y"]) != calls:
            raise HarnessError(f"{self.name} client: malformed reply {r}")
        want = expected(n)
        self.bad += sum(abs(y - want) > 1e-3 * (1 + abs(want)) for y in r["y"])
        self.times.setdefault(n, []).extend(r["us"])


def start_sides(kids, args, transport, tmp):
    mode, ours_serdes, their_serdes, our_env = TRANSPORTS[transport]
    py = args.python
    client_serdes = ["--serdes", ours_serdes] if ours_serdes else []

    our_peer = kids.start([py, str(HERE / "bench_peer.py"), "--mode", mode, "--dir",
                           str(tmp / "ours")] + (["--serdes", ours_serdes] if ours_serdes else []),
                          "our model side", our_env)
    ready = json.loads(read_line(our_peer, 60, "our model side"))
    target = ready["bases"][0] if mode == "pipe" else ready["address"]
    ours = Side("ours", our_peer,
                kids.start([args.ours_client, "--transport", mode, "--target", target] + client_serdes,
                           "our client"))

    peer_argv = [py, str(HERE / "upstream" / "upstream_peer.py"), "--upstream-src",
                 str(args.upstream_src), "--mode", mode, "--dir", str(tmp / "theirs"),
                 "--stubs", str(tmp / "stubs")]
    if their_serdes:
        peer_argv += ["--serdes", their_serdes]
    their_peer = kids.start(peer_argv, "their model side")
    ready = json.loads(read_line(their_peer, 60, "their model side"))
    target = ready["base"] if mode == "pipe" else ready["address"]
    theirs = Side("theirs", their_peer,
                  kids.start([args.upstream_client, "--transport", mode, "--target", target]
                             + client_serdes, "their client"))
    return ours, theirs


def make_stubs(args, tmp):
    out = tmp / "stubs"
    out.mkdir()
    subprocess.run([args.python, "-m", "grpc_tools.protoc", "-I", str(HERE / "upstream"),
                    "--python_out", str(out), "--grpc_python_out", str(out),
                    str(HERE / "upstream" / "compare_bench.proto")], check=True)


def median(v):
    return float(np.median(v))


def run(args):
    sizes = args.sizes
    result = {"sizes": sizes, "transports": {}}
    with tempfile.TemporaryDirectory(prefix="mlbridge-upstream-") as t:
        tmp = Path(t)
        for d in ("ours", "theirs"):
            (tmp / d).mkdir()
        if any(TRANSPORTS[t][0] == "grpc" for t in args.transports):
            make_stubs(args, tmp)
        log_path = tmp / "children.log"
        for transport in args.transports:
            log = open(log_path, "w")
            kids = Children(log)
            try:
                ours, theirs = start_sides(kids, args, transport, tmp)
                for side in (ours, theirs):
                    side.warm_up(sizes[0], args.warm_up)
                t0 = time.monotonic()
                for n in sizes:
                    for c in range(args.cells):
                        for side in ((ours, theirs) if c % 2 == 0 else (theirs, ours)):
                            side.cell(n, args.calls)
                secs = time.monotonic() - t0
            except HarnessError as e:
                kids.stop_all()
                tail = log_path.read_text(errors="replace")[-3000:]
                raise HarnessError(f"{e}\n--- the model sides' and clients' messages:\n{tail}") from None
            finally:
                kids.stop_all()
                log.close()
            if ours.bad or theirs.bad:
                raise HarnessError(f"{transport}: wrong answers: ours {ours.bad}, theirs {theirs.bad}")
            om = [median(ours.times[n]) for n in sizes]
            tm = [median(theirs.times[n]) for n in sizes]
            result["transports"][transport] = {
                "ours_median_us": om, "theirs_median_us": tm,
                "ratio_theirs_over_ours": [b / a for a, b in zip(om, tm)],
                "ours_total_ms": sum(om) / 1e3, "theirs_total_ms": sum(tm) / 1e3,
                "seconds": secs}
            report(transport, sizes, result["transports"][transport])
    return result


def report(transport, sizes, r):
    ratio = r["ratio_theirs_over_ours"]
    print(f"\n{transport}: median us per call (theirs / ours > 1: ours faster)")
    print(f"{'n':>7} {'ours':>11} {'theirs':>11} {'theirs/ours':>12}")
    for n, a, b, q in zip(sizes, r["ours_median_us"], r["theirs_median_us"], ratio):
        print(f"{n:>7} {a:>11.1f} {b:>11.1f} {q:>12.2f}")
    tot = r["theirs_total_ms"] / r["ours_total_ms"]
    print(f"{'total':>7} {r['ours_total_ms']:>9.1f}ms {r['theirs_total_ms']:>9.1f}ms {tot:>12.2f}")
    slower = [n for n, q in zip(sizes, ratio) if q <= 1]
    lo = min(range(len(sizes)), key=lambda i: ratio[i])
    print(f"ours faster at {len(sizes) - len(slower)} of {len(sizes)} sizes; "
          f"ratio {min(ratio):.2f} (n = {sizes[lo]}) .. {max(ratio):.2f}"
          + (f"; not faster at n = {', '.join(map(str, slower))}" if slower else ""), flush=True)


def markdown(result):
    """docs/upstream-comparison.md's table: n = 500, every 10th size and the
    totals; each cell "ours / theirs µs (theirs ÷ ours)"."""
    sizes = result["sizes"]
    rows = [i for i, n in enumerate(sizes) if i == 0 or (i + 1) % 10 == 0]
    ts = result["transports"]
    out = ["| n | " + " | ".join(ts) + " |", "|---:|" + "---:|" * len(ts)]
    for i in rows:
        cells = [f"{r['ours_median_us'][i]:,.1f} / {r['theirs_median_us'][i]:,.1f} "
                 f"({r['ratio_theirs_over_ours'][i]:.2f})" for r in ts.values()]
        out.append(f"| {sizes[i]:,} | " + " | ".join(cells) + " |")
    cells = [f"**{r['ours_total_ms']:,.1f} / {r['theirs_total_ms']:,.1f} ms "
             f"({r['theirs_total_ms'] / r['ours_total_ms']:.2f})**" for r in ts.values()]
    out.append("| total | " + " | ".join(cells) + " |")
    return "\n".join(out)


def machine(args):
    import grpc
    from google import protobuf
    return {"python": sys.version.split()[0], "grpcio": grpc.__version__,
            "protobuf": protobuf.__version__,
            "numpy": np.__version__, "cpus": os.cpu_count(), "host": platform.node(),
            "loadavg": list(os.getloadavg())}


def check_inputs(args):
    how = (f"Get the published source from {UPSTREAM_URL} and build a comparison client "
           f"against it (docs/upstream-comparison.md names the commit used and what the "
           f"client must do); neither is part of this repository.")
    if not args.upstream_src:
        raise UsageError(f"--upstream-src DIR is required: a work tree of the published "
                           f"ML-Compiler-Bridge. {how}")
    pkg = Path(args.upstream_src) / "CompilerInterface" / "compilerinterface" / "__init__.py"
    if not pkg.is_file():
        raise UsageError(f"--upstream-src {args.upstream_src}: no {pkg.relative_to(args.upstream_src)} "
                           f"there (not a work tree of the published project). {how}")
    if not args.upstream_client:
        raise UsageError(f"--upstream-client EXE is required: the comparison client built "
                           f"against the published C++ library. {how}")
    for flag, exe in (("--upstream-client", args.upstream_client), ("--ours-client", args.ours_client)):
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            raise UsageError(f"{flag} {exe}: not an executable file")
    if shutil.which(args.python) is None and not os.access(args.python, os.X_OK):
        raise UsageError(f"--python {args.python}: not found")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("--upstream-src", default="")
    ap.add_argument("--upstream-client", default="")
    ap.add_argument("--ours-client", default=str(ROOT / "build" / "bench" / "mlbridge-compare-client"))
    ap.add_argument("--python", default=sys.executable,
                    help="the interpreter of both model sides (default: this one)")
    ap.add_argument("--transports", default=DEFAULT_TRANSPORTS,
                    help=f"comma-separated, from {', '.join(TRANSPORTS)} (default {DEFAULT_TRANSPORTS})")
    ap.add_argument("--quick", action="store_true", help="n = 500, 5000, 50000; 2 cells")
    ap.add_argument("--sizes", help="comma-separated vector sizes (default: 500, 1000, ..., 50000)")
    ap.add_argument("--cells", type=int, default=7, help="alternating cells per size and side")
    ap.add_argument("--calls", type=int, default=3, help="timed calls per cell")
    ap.add_argument("--warm-up", type=int, default=200,
                    help="untimed calls per side before the sweep (default 200)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--markdown", metavar="JSON",
                    help="print the documentation's table of an earlier --json run, and exit")
    args = ap.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text())))
        return 0
    try:
        args.transports = [t for t in args.transports.split(",") if t]
        bad = [t for t in args.transports if t not in TRANSPORTS]
        if bad or not args.transports:
            raise UsageError(f"--transports: unknown {bad}; choose from {', '.join(TRANSPORTS)}")
        if args.cells < 1 or args.calls < 1 or args.warm_up < 1:
            raise UsageError("--cells, --calls and --warm-up must be >= 1")
        check_inputs(args)
        if args.sizes:
            try:
                args.sizes = [int(n) for n in args.sizes.split(",")]
            except ValueError:
                raise UsageError(f"--sizes {args.sizes}: not a list of integers") from None
            if not all(1 <= n <= MAX_N for n in args.sizes):
                raise UsageError(f"--sizes: each size must be in 1..{MAX_N}")
        else:
            args.sizes = [500, 5000, 50000] if args.quick else list(range(500, MAX_N + 1, 500))
        if args.quick:
            args.cells = min(args.cells, 2)
        info = {"machine_before": machine(args), "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                "command": " ".join([os.path.basename(sys.argv[0])] + (argv if argv is not None else sys.argv[1:])),
                "cells": args.cells, "calls_per_cell": args.calls}
        print(f"upstream_compare: {len(args.sizes)} sizes x {args.cells} cells x {args.calls} calls "
              f"per side; load average {info['machine_before']['loadavg']}", flush=True)
        result = run(args)
        result.update(info)
        result["loadavg_after"] = list(os.getloadavg())
        print(f"\nload average before {info['machine_before']['loadavg']}, after {result['loadavg_after']}")
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
            print(f"wrote {args.json}")
    except UsageError as e:
        print(f"upstream_compare: error: {e}", file=sys.stderr)
        return 2
    except HarnessError as e:
        print(f"upstream_compare: failed: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
