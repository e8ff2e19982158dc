"""Host overhead of serving llc-19's eviction advisor from Python.

One compilation with more than 10,000 eviction requests (a generated C
program: many functions, each with more live 64-bit values than x86-64 has
registers), measured three ways on the same IR:

  plain   llc-19 -O2 in.ll -o /dev/null                       (no advisor)
  served  the same, with mlbridge.llvm.run(..., evict="noevict")
  naive   the same, served by a straightforward pure-Python host (buffered
          file objects, json per line, one numpy array per tensor) -- the
          kind of host measured at ~70-80 us per request on this machine

Reported per mode (median and best of --repeat interleaved runs): wall
time, compiler CPU time, host CPU time; then requests/s, the wall-clock
overhead per request ((served - plain) / requests), the host's CPU time per
request and the compiler's extra CPU time per request (LLVM computing and
writing the features, the same for any host). On a busy machine the wall
figures mostly measure scheduling delays: look at "best" and the CPU times.

    .venv/bin/python bench/llvm_host_overhead.py [--functions 30] [--repeat 5] [--json]

Opt-in: not part of the test suite (it takes ~15 s).
"""

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from mlbridge import llvm  # noqa: E402


def generate_program(functions, lanes=40, seed=1):
    """C source: ``functions`` functions, each updating ``lanes`` uint64
    values in a loop from three others (all live at once)."""
    rng = random.Random(seed)
    out = ["#include <stdint.h>", "#include <stdio.h>"]
    for f in range(functions):
        out.append(f"static uint64_t f{f}(const uint64_t *a, int n) {{")
        out.append("  " + " ".join(f"uint64_t v{i} = a[{i}];" for i in range(lanes)))
        out.append("  for (int i = 0; i < n; ++i) {")
        for i in range(lanes):
            j, k = rng.randrange(lanes), rng.randrange(lanes)
            op = rng.choice(["+", "^", "-", "|"])
            out.append(f"    v{i} = (v{i} * {rng.randrange(3, 99, 2)}u) {op} "
                       f"(v{j} >> {rng.randrange(1, 7)}) + v{k};")
        out.append("  }")
        out.append("  return " + " ^ ".join(f"v{i}" for i in range(lanes)) + ";")
        out.append("}")
    out.append(f"int main(void) {{\n  uint64_t a[{lanes}]; uint64_t s = 0;")
    out.append(f"  for (int i = 0; i < {lanes}; ++i) a[i] = (uint64_t)i * 2654435761u;")
    for f in range(functions):
        out.append(f"  s = s * 31 + f{f}(a, 10 + {f} % 7); a[{f} % {lanes}] ^= s;")
    out.append('  printf("%llu\\n", (unsigned long long)s);\n  return 0;\n}')
    return "\n".join(out) + "\n"


def _children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _self_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_plain(llc, ll):
    c0, t0 = _children_cpu(), time.perf_counter()
    subprocess.run([llc, "-O2", str(ll), "-o", os.devnull], check=True)
    return {"wall": time.perf_counter() - t0, "compiler_cpu": _children_cpu() - c0,
            "host_cpu": 0.0, "requests": 0}


def run_served(llc, ll):
    c0, h0, t0 = _children_cpu(), _self_cpu(), time.perf_counter()
    res = llvm.run([llc, "-O2", str(ll), "-o", os.devnull], evict="noevict", timeout=300)
    wall = time.perf_counter() - t0
    res.check()
    return {"wall": wall, "compiler_cpu": _children_cpu() - c0,
            "host_cpu": _self_cpu() - h0, "requests": res.requests["evict"]}


def run_naive(llc, ll):
    """A plain pure-Python interactive host, written the obvious way."""
    d = tempfile.mkdtemp(prefix="naive-host-")
    base = os.path.join(d, "chan")
    os.mkfifo(base + ".in", 0o600)
    os.mkfifo(base + ".out", 0o600)
    c0, h0, t0 = _children_cpu(), _self_cpu(), time.perf_counter()
    proc = subprocess.Popen([llc, "-O2", "-regalloc-enable-advisor=release",
                             f"-regalloc-evict-interactive-channel-base={base}", str(ll),
                             "-o", os.devnull])
    requests = 0
    try:
        while True:  # open B.in for writing once llc has opened it for reading
            try:
                fd = os.open(base + ".in", os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError:
                if proc.poll() is not None:
                    raise SystemExit("llc exited before opening the pipes")
                time.sleep(0.001)
        os.set_blocking(fd, True)
        to_llc = os.fdopen(fd, "wb")
        from_llc = open(base + ".out", "rb")
        header = json.loads(from_llc.readline())
        specs = [(s["name"], np.dtype({"int64_t": "<i8", "float": "<f4"}[s["type"]]),
                  s["shape"]) for s in header["features"]]
        while True:
            line = from_llc.readline()
            if not line:
                break
            msg = json.loads(line)
            if "observation" not in msg:
                continue
            feats = {}
            for name, dtype, shape in specs:
                n = dtype.itemsize * int(np.prod(shape))
                feats[name] = np.frombuffer(from_llc.read(n), dtype).reshape(shape)
            from_llc.read(1)
            mask = feats["mask"][0]
            idx = 32 if mask[32] else int(np.argmax(mask))
            to_llc.write(struct.pack("<q", idx))
            to_llc.flush()
            requests += 1
        from_llc.close()
        to_llc.close()
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(d, ignore_errors=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"llc failed under the naive host ({proc.returncode})")
    return {"wall": wall, "compiler_cpu": _children_cpu() - c0,
            "host_cpu": _self_cpu() - h0, "requests": requests}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--functions", type=int, default=30,
                    help="functions in the generated program (30: ~11,000 requests)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--llc", default=shutil.which("llc-19") or "llc-19")
    ap.add_argument("--clang", default=shutil.which("clang-19") or "clang-19")
    ap.add_argument("--no-naive", action="store_true", help="skip the naive host")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="llvm-host-bench-"))
    try:
        src = work / "pressure.c"
        src.write_text(generate_program(args.functions))
        ll = work / "pressure.ll"
        subprocess.run([args.clang, "-O2", "-emit-llvm", "-S", str(src), "-o", str(ll)],
                       check=True)
        modes = {"plain": run_plain, "served": run_served}
        if not args.no_naive:
            modes["naive"] = run_naive
        samples = {m: [] for m in modes}
        for _ in range(args.repeat):  # interleaved, so drift hits every mode alike
            for m, fn in modes.items():
                samples[m].append(fn(args.llc, ll))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    stats = {"median": statistics.median, "best": min}
    n = int(statistics.median(s["requests"] for s in samples["served"]))
    if n < 10000:
        print(f"warning: only {n} eviction requests (use more --functions)", file=sys.stderr)
    report = {"requests": n, "repeat": args.repeat,
              "command": f"{args.llc} -O2 pressure.ll -o /dev/null "
                         f"(generated: {args.functions} functions x 40 live uint64)",
              "load_average": os.getloadavg()[0]}
    for stat, fn in stats.items():
        agg = {m: {k: fn(s[k] for s in v) for k in v[0]} for m, v in samples.items()}
        report[stat] = {"modes": agg}
        for m in [x for x in modes if x != "plain"]:
            report[stat][m] = {
                "requests_per_s": n / agg[m]["wall"],
                "overhead_us_per_request": (agg[m]["wall"] - agg["plain"]["wall"]) / n * 1e6,
                "host_cpu_us_per_request": agg[m]["host_cpu"] / n * 1e6,
                "compiler_extra_cpu_us_per_request":
                    (agg[m]["compiler_cpu"] - agg["plain"]["compiler_cpu"]) / n * 1e6,
            }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{n} eviction requests; {args.repeat} runs per mode; load average "
          f"{report['load_average']:.1f}; {report['command']}")
    for stat in stats:
        agg = report[stat]["modes"]
        print(f"\n{stat} of {args.repeat}:")
        print(f"  {'mode':<8} {'wall s':>8} {'llc cpu s':>10} {'host cpu s':>11}")
        for m, v in agg.items():
            print(f"  {m:<8} {v['wall']:>8.3f} {v['compiler_cpu']:>10.3f} "
                  f"{v['host_cpu']:>11.3f}")
        for m in [x for x in modes if x != "plain"]:
            r = report[stat][m]
            print(f"  {m}: {r['requests_per_s']:,.0f} requests/s; overhead vs plain "
                  f"{r['overhead_us_per_request']:.1f} us/request (host CPU "
                  f"{r['host_cpu_us_per_request']:.1f} us, extra llc CPU "
                  f"{r['compiler_extra_cpu_us_per_request']:.1f} us)")

if __name__ == "__main__":
    main()
