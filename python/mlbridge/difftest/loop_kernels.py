"""Differential testing of loop distribution (MLBridgeLoopDistribution.so,
docs/loop-distribution.md) on generated loop kernels.

:func:`generate` makes a small C program from a seed: one kernel function
``kern`` with a loop of several statements (stores and loads at affine
subscripts with symbolic, zero and negative strides and offsets, pointer
arguments that may overlap, reductions, values used after the loop) and a
``main`` that fills the arrays, calls the kernel with chosen parameters
(zero and negative strides, overlapping pointers among them) and prints a
checksum of every array and result. :func:`check_kernel` builds it plainly
(the reference, ``-O0``) and with the plugin under each policy (the shipped
model, the built-in policy, and forced partitions of the kernel's loop
through ``-mlbridge-ld-partition``), runs every build and compares outputs.
A build whose output differs, or a compiler that crashes, is a finding.

Campaign (the command docs/loop-distribution.md gives)::

    nice -n 10 python -m mlbridge.difftest.loop_kernels --kernels 300 --seed 0 \\
        --llvm 19,22 --out build/ld-fuzz
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

from ..toolchain import CompileError, run_command

#: Bound for one compile and for one run of a generated program (seconds).
COMPILE_TIMEOUT = 60.0
RUN_TIMEOUT = 20.0
#: Forced partitions tried per loop at most (all of them for <= 3 nodes).
MAX_FORCED = 13


# ---- building and running ---------------------------------------------------------


@dataclass
class Outcome:
    """One build of a program and its run: ``output`` (stdout) when both
    worked; ``failure`` says what went wrong otherwise (a compiler crash or
    error, a run that crashed or did not end)."""

    output: Optional[str]
    failure: str = ""
    stderr: str = ""
    loops: List[dict] = field(default_factory=list)

    @property
    def compiler_crashed(self) -> bool:
        return self.failure.startswith("compile")


def build_and_run(source: Path, clang: str, flags: Sequence[str], exe: Path, *,
                  plugin: Optional[Path] = None, settings: Optional[Dict[str, str]] = None,
                  env: Optional[Dict[str, str]] = None) -> Outcome:
    """Compiles ``source`` with ``clang flags`` (and ``-fpass-plugin`` with
    ``settings``, the plugin's MLBRIDGE_LD_* variables, when a plugin is
    given), runs it and returns what it printed. The plugin's log lines are
    in ``loops``."""
    run_env = {k: v for k, v in (env or os.environ).items()
               if not k.startswith("MLBRIDGE_LD_")}
    log = exe.parent / (exe.name + ".ldlog")
    if log.exists():
        log.unlink()
    cmd = [clang, *flags, str(source), "-o", str(exe)]
    if plugin is not None:
        cmd.insert(1, f"-fpass-plugin={plugin}")
        run_env.update(settings or {})
        run_env["MLBRIDGE_LD_LOG"] = str(log)
    try:
        res = run_command(cmd, timeout=COMPILE_TIMEOUT, env=run_env)
    except CompileError as e:
        return Outcome(None, f"compile did not end: {e}")
    loops = []
    if log.exists():
        loops = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    if res.returncode != 0:
        return Outcome(None, f"compile failed ({res.returncode}): {res.stderr[-600:]}",
                       res.stderr, loops)
    try:
        ran = run_command([str(exe)], timeout=RUN_TIMEOUT)
    except CompileError as e:
        return Outcome(None, f"run did not end: {e}", res.stderr, loops)
    if ran.returncode != 0:
        return Outcome(None, f"run failed ({ran.returncode})", res.stderr, loops)
    return Outcome(ran.stdout, "", res.stderr, loops)


# ---- generating kernels ---------------------------------------------------------------

#: Elements around the middle of the pool that a kernel's pointers may reach:
#: every subscript stays within +-REACH of its pointer.
REACH = 40
POOL = 4 * REACH + 32
GLOBALS = 3
GLOBAL_LEN = 2 * REACH + 8
MAX_TRIP = 12


@dataclass
class Kernel:
    """A generated program: ``source`` (C) with ``kern`` and ``main``."""

    seed: int
    source: str
    statements: int

    @property
    def name(self) -> str:
        return f"k{self.seed}"


class _Gen:
    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.pointers = self.r.randint(1, 2)

    def subscript(self) -> str:
        """An affine subscript in i: symbolic, zero, negative strides and
        offsets (|value| <= 2 * MAX_TRIP + 6 < REACH)."""
        r = self.r
        coef = r.choice(["1", "1", "-1", "2", "-2", "0", "s", "s", "-s"])
        off = r.choice(["0", "0", "1", "-1", "2", "-3", "k", "k", "-k"])
        term = {"1": "i", "-1": "-i", "0": "0"}.get(coef, f"{coef} * i")
        return term if off == "0" else f"{term} + {off}" if not off.startswith("-") \
            else f"{term} - {off[1:]}"

    def array(self) -> str:
        r = self.r
        if r.random() < 0.6:
            return f"G{r.randrange(GLOBALS)}"
        return f"p{r.randrange(self.pointers)}"

    def access(self, a: Optional[str] = None) -> str:
        a = a or self.array()
        # Globals are indexed from their middle (a negative subscript stays inside).
        base = f"{a}[{REACH} + " if a.startswith("G") else f"{a}["
        return f"{base}{self.subscript()}]"

    def expr(self, depth: int = 0) -> str:
        r = self.r
        choice = r.random()
        if depth >= 2 or choice < 0.45:
            return self.access()
        if choice < 0.55:
            return f"{r.randint(1, 9)}u"
        if choice < 0.62:
            return "(unsigned)i"
        op = r.choice(["+", "+", "*", "^", "-"])
        return f"({self.expr(depth + 1)} {op} {self.expr(depth + 1)})"

    def statement(self, j: int) -> str:
        r = self.r
        kind = r.random()
        if kind < 0.15:
            return f"acc{j} += {self.expr()};"
        if kind < 0.22:
            return f"last{j} = {self.expr()} + (unsigned)i;"
        # Statements storing to arrays of their own are what distribution
        # separates; the others share arrays (and dependences).
        target = f"G{j % GLOBALS}" if r.random() < 0.5 else None
        body = f"{self.access(target)} = {self.expr()};"
        if kind < 0.32:
            return f"if ({self.access()} & 1u) {body}"
        return body

    def kernel(self, seed: int) -> Kernel:
        r = self.r
        n = r.randint(2, 5)
        stmts = [self.statement(j) for j in range(n)]
        scalars = [f"acc{j}" for j in range(n) if f"acc{j} " in stmts[j]] + \
                  [f"last{j}" for j in range(n) if stmts[j].startswith(f"last{j} ")]
        params = ", ".join(f"unsigned *p{q}" for q in range(self.pointers))
        decl = "".join(f"  unsigned {v} = 0;\n" for v in scalars)
        outs = "".join(f"  out[{q}] = {v};\n" for q, v in enumerate(scalars))
        ivty = r.choice(["long", "long", "int"])
        body = "\n".join(f"    {st}" for st in stmts)
        calls = []
        for _ in range(3):
            s = r.choice([0, 0, 1, 2, -1, -2])
            k = r.choice([0, 1, -1, 2, -2, 3, -3])
            trip = r.randint(0, MAX_TRIP) if r.random() < 0.2 else r.randint(4, MAX_TRIP)
            # Overlapping pointers: bases at most a few elements apart.
            spread = r.choice([0, 1, 2, 3, 7, REACH])
            bases = [2 * REACH + r.randint(-spread, spread) for _ in range(self.pointers)]
            calls.append((bases, s, k, trip))
        call_lines = []
        for bases, s, k, trip in calls:
            args = ", ".join(f"pool + idx({b})" for b in bases)
            call_lines.append(
                f"  init();\n  kern({args}, val({s}), val({k}), val({trip}), out);\n"
                f"  report(out);")
        src = f"""/* generated by mlbridge.difftest.loop_kernels, seed {seed} */
#include <stdio.h>
#define POOL {POOL}
#define GLEN {GLOBAL_LEN}
unsigned pool[POOL];
unsigned {", ".join(f"G{g}[GLEN]" for g in range(GLOBALS))};
unsigned out[8];
volatile long knob[1];
static long val(long v) {{ knob[0] = v; return knob[0]; }}
static long idx(long v) {{ return val(v); }}

__attribute__((noinline)) void kern({params}, long s, long k, long n, unsigned *out) {{
{decl}  for ({ivty} i = 0; i < n; i++) {{
{body}
  }}
{outs}}}

static void init(void) {{
  for (int i = 0; i < POOL; i++) pool[i] = (unsigned)i * 2654435761u ^ {seed}u;
{"".join(f"  for (int i = 0; i < GLEN; i++) G{g}[i] = (unsigned)(i + {g}) * 40503u;" + chr(10) for g in range(GLOBALS))}  for (int i = 0; i < 8; i++) out[i] = 0;
}}

static void report(const unsigned *o) {{
  unsigned h = 0;
  for (int i = 0; i < POOL; i++) h = h * 31u + pool[i];
{"".join(f"  for (int i = 0; i < GLEN; i++) h = h * 37u + G{g}[i];" + chr(10) for g in range(GLOBALS))}  printf("%u", h);
  for (int i = 0; i < 8; i++) printf(" %u", o[i]);
  printf("\\n");
}}

int main(void) {{
{chr(10).join(call_lines)}
  return 0;
}}
"""
        return Kernel(seed, src, n)


def generate(seed: int) -> Kernel:
    """The kernel of ``seed`` (the same seed always gives the same program)."""
    return _Gen(seed).kernel(seed)


# ---- policies and the comparison --------------------------------------------------------


def ordered_partitions(nodes: int, limit: int = MAX_FORCED, seed: int = 0) -> List[str]:
    """Ordered partitions of ``nodes`` node ids as -mlbridge-ld-partition
    strings: all of them when there are at most ``limit``, else a seeded
    sample of ``limit`` (valid and invalid alike: the plugin must refuse the
    invalid ones)."""
    def all_of(items):
        if not items:
            yield []
            return
        first, rest = items[0], items[1:]
        for part in all_of(rest):
            for j in range(len(part)):  # into an existing loop
                yield part[:j] + [sorted([first] + part[j])] + part[j + 1:]
            for j in range(len(part) + 1):  # as a new loop at each place
                yield part[:j] + [[first]] + part[j:]
    fmt = lambda p: "|".join(",".join(map(str, loop)) for loop in p)  # noqa: E731
    if nodes <= 4:
        found = sorted({fmt(p) for p in all_of(list(range(nodes)))})
        if len(found) <= limit:
            return found
        return sorted(random.Random(seed).sample(found, limit))
    r = random.Random(seed)
    out = set()
    while len(out) < limit:
        order = list(range(nodes))
        r.shuffle(order)
        cuts = sorted(r.sample(range(1, nodes), r.randint(1, nodes - 1)))
        loops = [sorted(order[a:b]) for a, b in zip([0] + cuts, cuts + [nodes])]
        out.add(fmt(loops))
    return sorted(out)


@dataclass
class Finding:
    kernel: int
    llvm: int
    policy: str
    what: str  # "wrong output", "compiler crash", "no warning", ...
    detail: str = ""


@dataclass
class KernelReport:
    kernel: int
    builds: int = 0
    distributed: int = 0
    refused: int = 0
    findings: List[Finding] = field(default_factory=list)
    skipped: str = ""


def check_kernel(kernel: Kernel, plugins: Dict[int, Path], clangs: Dict[int, str],
                 work: Path, *, forced: int = MAX_FORCED) -> KernelReport:
    """Builds ``kernel`` with -O0 (the reference) and plain -O2, then with
    the plugin of each LLVM version under each policy, and compares what
    every build prints."""
    rep = KernelReport(kernel.seed)
    work.mkdir(parents=True, exist_ok=True)
    src = work / f"{kernel.name}.c"
    src.write_text(kernel.source)
    ref = build_and_run(src, clangs[min(clangs)], ["-O0"], work / f"{kernel.name}.O0")
    if ref.output is None:
        rep.skipped = f"reference: {ref.failure}"
        return rep
    for v, clang in sorted(clangs.items()):
        plain = build_and_run(src, clang, ["-O2"], work / f"{kernel.name}.{v}.O2")
        if plain.output != ref.output:  # the generator made something undefined
            rep.skipped = f"plain -O2 (LLVM {v}) differs from -O0: {plain.failure}"
            return rep
    for v, clang in sorted(clangs.items()):
        policies: Dict[str, Dict[str, str]] = {"shipped": {}, "builtin": {"MLBRIDGE_LD_RUNNER":
                                                                          "default"}}
        first = None
        done = 0
        while done < len(policies):
            name = list(policies)[done]
            done += 1
            got = build_and_run(src, clang, ["-O2"], work / f"{kernel.name}.{v}.{done}",
                                plugin=plugins[v], settings=policies[name])
            rep.builds += 1
            kern = [r for r in got.loops if r.get("function") == "kern"]
            if got.output is None:
                rep.findings.append(Finding(kernel.seed, v, name,
                                            "compiler crash" if got.compiler_crashed
                                            else "run failure", got.failure))
            elif got.output != ref.output:
                rep.findings.append(Finding(kernel.seed, v, name, "wrong output",
                                            json.dumps(kern)))
            if any(r["result"] == "distributed" for r in kern):
                rep.distributed += 1
            if name.startswith("forced:"):
                if any(r["result"] == "invalid" for r in kern):
                    rep.refused += 1
                    if "warning: mlbridge-loop-distribution" not in got.stderr:
                        rep.findings.append(Finding(kernel.seed, v, name,
                                                    "refused without a warning"))
            if first is None and kern:
                first = kern[0]
                for p in ordered_partitions(int(first["nodes"]), forced, kernel.seed):
                    if "|" in p:
                        policies[f"forced:{p}"] = {"MLBRIDGE_LD_PARTITION": f"kern:0={p}"}
    return rep


def run_campaign(seeds: Iterable[int], plugins: Dict[int, Path], clangs: Dict[int, str],
                 work: Path, *, forced: int = MAX_FORCED, progress=None) -> dict:
    """:func:`check_kernel` for every seed; the counts and the findings."""
    kernels = builds = skipped = distributed = refused = 0
    findings: List[Finding] = []
    for seed in seeds:
        rep = check_kernel(generate(seed), plugins, clangs, work / f"k{seed}", forced=forced)
        if rep.skipped:
            skipped += 1
        else:
            kernels += 1
        builds += rep.builds
        distributed += rep.distributed
        refused += rep.refused
        findings += rep.findings
        if progress:
            progress(seed, rep)
    return {"kernels": kernels, "skipped": skipped, "llvm": sorted(clangs),
            "plugin_builds": builds, "distributed_builds": distributed,
            "refused_partitions": refused,
            "wrong_outputs": sum(f.what == "wrong output" for f in findings),
            "crashes": sum(f.what == "compiler crash" for f in findings),
            "findings": [f.__dict__ for f in findings]}


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ..llvm.plugins import find_plugins
    ap = argparse.ArgumentParser(prog="python -m mlbridge.difftest.loop_kernels",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--llvm", default="19,22", help="LLVM versions, e.g. 19,22")
    ap.add_argument("--forced", type=int, default=MAX_FORCED,
                    help="forced partitions per kernel at most")
    ap.add_argument("--out", type=Path, default=None, help="work folder (kept)")
    args = ap.parse_args(argv)
    plugins, clangs = {}, {}
    for v in (int(x) for x in args.llvm.split(",")):
        info = find_plugins(llvm=v)
        plugins[v] = Path(info.loop_distribution)
        clangs[v] = info.tool("clang")
    work = args.out or Path(tempfile.mkdtemp(prefix="ld-fuzz-"))

    def progress(seed, rep):
        for f in rep.findings:
            print(f"seed {seed} LLVM {f.llvm} {f.policy}: {f.what} {f.detail[:200]}",
                  file=sys.stderr)
    summary = run_campaign(range(args.seed, args.seed + args.kernels), plugins, clangs, work,
                           forced=args.forced, progress=progress)
    (work / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "findings"}))
    return 1 if summary["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())


# ---- a program of many units (ThinLTO) ---------------------------------------------------


def many_units_program(units: int, kernels_per_unit: int = 3) -> Dict[str, str]:
    """C files (name -> text) of one program: ``units`` units with
    ``kernels_per_unit`` distributable loops each (a recurrence next to
    maps) and ``main.c`` printing every kernel's checksum; for ThinLTO links
    with several backend threads."""
    files = {}
    for u in range(units):
        lines = ["#define N 64"]
        for j in range(kernels_per_unit):
            m = 3 + (u * kernels_per_unit + j) % 7
            lines.append(f"""static unsigned a{j}[N], b{j}[N], c{j}[N], d{j}[N];
unsigned u{u}_k{j}(unsigned seed) {{
  for (int i = 0; i < N; i++) {{ a{j}[i] = seed + i; b{j}[i] = i * {m}u; c{j}[i] = 0; d{j}[i] = i; }}
  for (int i = 1; i < N; i++) {{
    a{j}[i] = a{j}[i - 1] * {m}u + b{j}[i];
    c{j}[i] = b{j}[i] * {m + 2}u + d{j}[i];
    d{j}[i] = c{j}[i] ^ {u + 1}u;
  }}
  unsigned h = 0;
  for (int i = 0; i < N; i++) h = h * 31u + a{j}[i] + c{j}[i] * 7u + d{j}[i];
  return h;
}}""")
        files[f"unit{u}.c"] = "\n".join(lines) + "\n"
    decls = "".join(f"unsigned u{u}_k{j}(unsigned);\n" for u in range(units)
                    for j in range(kernels_per_unit))
    calls = "".join(f'  printf("%u\\n", u{u}_k{j}({u * 10 + j}u));\n' for u in range(units)
                    for j in range(kernels_per_unit))
    files["main.c"] = f"#include <stdio.h>\n{decls}int main(void) {{\n{calls}  return 0;\n}}\n"
    return files
