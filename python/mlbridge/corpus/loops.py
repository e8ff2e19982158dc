"""The loop kernels of the loop-distribution use case (corpus/loops,
docs/loop-kernels.md): listing and splitting them, growing the training set
by mutation, building a kernel's driver with a compiler command, checking
its output and measuring its instruction count.

* :func:`kernels` lists the kernels (``split=`` "train", "validation" or
  "held_out"); a :class:`Kernel` names its family, split and source.
* :func:`build` compiles the driver with one kernel source and flags
  (through :mod:`mlbridge.toolchain`); :func:`run` returns the kernel's
  checksums; :func:`measure` returns its callgrind instruction count (Ir)
  and checksums together.
* :func:`mutate` / :func:`generate` write mutated kernels (other dependence
  distances, other statement orders) that stay in their kernel's split.
* ``python -m mlbridge.corpus.loops {list,generate,oracle,baseline}``: the
  command line; ``baseline`` writes corpus/loops/baselines.json.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from .. import cli
from ..errors import MLBridgeError
from ..toolchain import CompileError, callgrind, compile as compile_cmd, run_tool, toolchain
from .manifest import REPO_ROOT

__all__ = ["ROOT", "SPLITS", "FLAG_SETS", "SANITIZE_FLAGS", "Kernel", "LoopKernelError", "kernels", "build",
           "run", "measure", "mutate", "generate",
           "distribute_remarks", "REMARK_FLAGS", "generated", "mutable", "summarize",
           "kernel_source"]

ROOT = REPO_ROOT / "corpus" / "loops"
SPLITS = ("train", "validation", "held_out")
#: Compiler flags of the measured configurations (the driver and the kernel
#: get the same flags; -Wno-pass-failed: a forced distribution that LLVM
#: declines is a baseline result, not a warning).
FLAG_SETS: Dict[str, List[str]] = {
    "O0": ["-O0"],
    "O3": ["-O3"],
    "O3-distribute": ["-O3", "-mllvm", "-enable-loop-distribute"],
    "O3-pragma": ["-O3", "-DMLB_FORCE_DISTRIBUTE", "-Wno-pass-failed"],
}
SANITIZE_FLAGS = ["-O1", "-g", "-fsanitize=undefined,address", "-fno-sanitize-recover=all"]
RUN_TIMEOUT = 120.0

_KERNEL_RE = re.compile(r"^void (\w+)\(void\) \{$", re.M)


class LoopKernelError(MLBridgeError):
    """A kernel is unknown, cannot be mutated, or its run or measure failed."""


@dataclass(frozen=True)
class Kernel:
    """One kernel: ``name`` is also its C symbol; ``source`` the file that
    defines it (a family file or a generated mutation)."""

    name: str
    family: str
    split: str
    source: Path


def _families(root: Path) -> Dict[str, dict]:
    with open(root / "kernels.json") as f:
        fams = json.load(f)["families"]
    for fam, info in fams.items():
        if info.get("split") not in SPLITS:
            raise LoopKernelError(f"{root / 'kernels.json'}: family {fam}: split must be one "
                                  f"of {', '.join(SPLITS)}")
    return fams


def kernels(split: Optional[str] = None, *, root: Path = ROOT,
            extra: Iterable[Path] = ()) -> List[Kernel]:
    """The kernels of ``root`` (all, or those of one split), in file order;
    ``extra``: generated files to add (their family is the original's)."""
    if split is not None and split not in SPLITS:
        raise LoopKernelError(f"unknown split {split!r}: one of {', '.join(SPLITS)}")
    fams = _families(root)
    found = []
    for fam, info in fams.items():
        src = root / "kernels" / f"{fam}.c"
        if not src.is_file():
            raise LoopKernelError(f"{root / 'kernels.json'} names family {fam} but {src} "
                                  "does not exist")
        found += [Kernel(n, fam, info["split"], src) for n in _KERNEL_RE.findall(src.read_text())]
    found += generated(extra, root=root)
    return [k for k in found if split is None or k.split == split]


def generated(sources: Iterable[Path], *, root: Path = ROOT) -> List[Kernel]:
    """The kernels of generated files: a kernel's family (and so its split)
    is the first word of its name."""
    fams = _families(root)
    found = []
    for src in map(Path, sources):
        for n in _KERNEL_RE.findall(src.read_text()):
            fam = n.split("_", 1)[0]
            if fam not in fams:
                raise LoopKernelError(f"{src}: kernel {n} belongs to no family of {root}")
            found.append(Kernel(n, fam, fams[fam]["split"], src))
    return found


# ---- building, running, measuring ------------------------------------------------------


def build(source: Path, flags: Sequence[str], out: Path, *, clang: Optional[str] = None,
          root: Path = ROOT):
    """Compiles the driver with ``source`` and ``flags`` into executable
    ``out``; returns the :class:`mlbridge.toolchain.Compiled` (its stderr
    holds the remarks asked for). Raises CompileError."""
    tc = toolchain(clang)
    cmd = [tc.clang, *flags, "-I", str(root), "-rdynamic", str(root / "driver.c"),
           str(source), "-o", str(out)]
    return compile_cmd(cmd, output=out, measure_text=False)


def run(binary: Path, kernel: str) -> str:
    """The checksums ``binary`` prints after running ``kernel``."""
    try:
        return run_tool([binary, kernel], timeout=RUN_TIMEOUT)
    except CompileError as e:
        raise LoopKernelError(f"{kernel} failed in {binary}: {e}") from None


def measure(binary: Path, kernel: str) -> Tuple[int, str]:
    """(Ir of ``kernel``'s calls -- its own instructions and those of
    everything it calls --, the checksums) of one callgrind run."""
    try:
        res = callgrind([binary, kernel], function=kernel, timeout=RUN_TIMEOUT * 10)
    except CompileError as e:
        raise LoopKernelError(f"callgrind of {kernel} in {binary} failed: {e}") from None
    return res.ir, res.stdout


_FUNCTION_RE = re.compile(r"^(?:\w+ )*void (\w+)\(.*\) \{$", re.M)
# Forced loops (the pragma) report their analysis as plain [-Rpass-analysis].
_REMARK_RE = re.compile(r":(\d+):\d+: remark: ((loop not )?distributed(?: loop)?[^[]*) \[-Rpass")
#: The flags that make clang report what LLVM's loop-distribute pass did.
REMARK_FLAGS = ["-Rpass=loop-distribute", "-Rpass-analysis=loop-distribute"]


def distribute_remarks(stderr: str, source: Path) -> Dict[str, dict]:
    """Per kernel of ``source``, from clang's stderr with REMARK_FLAGS: how
    many loops LLVM's loop-distribute pass distributed and why it declined
    the others ({reason: loops}). A helper function ``<kernel>_body``
    counts for its kernel."""
    text = source.read_text()
    counts = {n: {"distributed": 0, "declined": {}} for n in _KERNEL_RE.findall(text)}
    starts = [(text.count("\n", 0, m.start()) + 1,
               m.group(1) if m.group(1) in counts else re.sub(r"_body$", "", m.group(1)))
              for m in _FUNCTION_RE.finditer(text)]
    for line in stderr.splitlines():
        m = _REMARK_RE.search(line)
        if m is None or not line.startswith(str(source)) or "use -Rpass" in line:
            continue
        owner = [n for start, n in starts if start <= int(m.group(1))]
        if not owner or owner[-1] not in counts:
            continue
        entry = counts[owner[-1]]
        if m.group(3) is None:
            entry["distributed"] += 1
        else:
            why = m.group(2).replace("loop not distributed: ", "").strip()
            entry["declined"][why] = entry["declined"].get(why, 0) + 1
    return counts


def kernel_source(kernel: Kernel) -> str:
    """The text of ``kernel``'s file without the other kernels of the file
    (nor their ``<kernel>_body`` helpers): built alone, every loop the
    compiler sees belongs to ``kernel``. Other lines stay (so do line
    numbers)."""
    text = kernel.source.read_text()
    names = set(_KERNEL_RE.findall(text))

    def owner(fn):   # the longest kernel name that is fn or prefixes fn_
        owners = [n for n in names if fn == n or fn.startswith(n + "_")]
        return max(owners, key=len) if owners else None

    out, skip = [], False
    for line in text.split("\n"):
        m = _FUNCTION_RE.match(line)
        if m is not None:
            skip = owner(m.group(1)) not in (None, kernel.name)
        if not skip:
            out.append(line)
        elif line == "}":
            skip = False
    return "\n".join(out)


# ---- mutations ---------------------------------------------------------------------------

_HEADER_RE = re.compile(r"^(\s*)for \(int i = (\d+); i < LEN(?: - (\d+))?; i\+\+\) \{$")
_OFFSET_RE = re.compile(r"\[i ([+-]) (\d+)\]")
_STORE_RE = re.compile(r"^\s*\w+\[[^;]*\] [-+*]?= [^;{}]*;$")
MAX_DISTANCE = 8


def _function(text: str, name: str) -> str:
    m = re.search(rf"^void {name}\(void\) \{{\n.*?^\}}\n", text, re.M | re.S)
    if m is None:
        raise LoopKernelError(f"no kernel {name}")
    return m.group(0)


def _loop(func: str):
    """(header line index, body line indexes, lines) of the one mutable loop."""
    lines = func.split("\n")
    heads = [i for i, ln in enumerate(lines) if _HEADER_RE.match(ln)]
    if len(heads) != 1 or sum(ln.lstrip().startswith(("for ", "while ")) for ln in lines) != 1:
        return None
    h = heads[0]
    indent = _HEADER_RE.match(lines[h]).group(1)
    end = lines.index(indent + "}", h)
    return h, list(range(h + 1, end)), lines


def mutable(kernel: Kernel) -> bool:
    """Whether :func:`mutate` can change ``kernel``: one loop
    ``for (int i = L; i < LEN - H; i++)`` whose accesses are ``x[i ± k]``."""
    found = _loop(_function(kernel.source.read_text(), kernel.name))
    return found is not None and any(_OFFSET_RE.search(found[2][b]) for b in found[1])


def mutate(kernel: Kernel, index: int, *, seed: int = 0) -> str:
    """Source of mutation ``index`` of ``kernel``, a kernel named
    ``<kernel>_m<index>``: every ``[i ± k]`` gets a new distance in
    -MAX_DISTANCE..MAX_DISTANCE, and when the loop body is only array
    stores, the statements are shuffled. The loop bounds widen so that every
    access stays in bounds; no scalar is read before it is set (bodies with
    scalars are never reordered), so the program stays well defined: only
    its dependences change. Deterministic in (kernel, index, seed)."""
    func = _function(kernel.source.read_text(), kernel.name)
    found = _loop(func)
    if found is None:
        raise LoopKernelError(f"{kernel.name}: not mutable (one `for (int i = L; i < LEN - H; "
                              "i++)` loop needed)")
    head, body, lines = found
    rng = random.Random(f"{seed}:{kernel.name}:{index}")
    hm = _HEADER_RE.match(lines[head])
    lo, hi = int(hm.group(2)), int(hm.group(3) or 0)
    for _ in range(100):
        new = list(lines)

        def redistance(m):
            d = rng.randint(-MAX_DISTANCE, MAX_DISTANCE)
            return "[i]" if d == 0 else f"[i {'+' if d > 0 else '-'} {abs(d)}]"

        for b in body:
            new[b] = _OFFSET_RE.sub(redistance, new[b])
        if all(_STORE_RE.match(new[b]) for b in body) and len(body) > 1:
            order = [new[b] for b in body]
            rng.shuffle(order)
            for b, stmt in zip(body, order):
                new[b] = stmt
        offsets = [int(s + k) for b in body for s, k in _OFFSET_RE.findall(new[b])]
        new_lo = max([lo] + [-o for o in offsets])
        new_hi = max([hi] + offsets)
        new[head] = (f"{hm.group(1)}for (int i = {new_lo}; i < LEN"
                     f"{f' - {new_hi}' if new_hi else ''}; i++) {{")
        if new != lines:
            break
    else:
        raise LoopKernelError(f"{kernel.name}: no mutation differs from the kernel")
    name = f"{kernel.name}_m{index}"
    new[0] = f"void {name}(void) {{"
    return (f"/* Mutation {index} (seed {seed}) of {kernel.name} ({kernel.source.name}), "
            f"generated by mlbridge.corpus.loops. */\n#include \"loops.h\"\n\n" + "\n".join(new))


def generate(out_dir: Path, per_kernel: int, *, seed: int = 0, split: str = "train",
             root: Path = ROOT) -> List[Kernel]:
    """Writes ``per_kernel`` mutations of every mutable kernel of ``split``
    to ``out_dir`` (one file per mutation) and returns them as kernels."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for k in kernels(split, root=root):
        if not mutable(k):
            continue
        for i in range(per_kernel):
            path = out_dir / f"{k.name}_m{i}.c"
            path.write_text(mutate(k, i, seed=seed))
            written.append(path)
    return generated(written, root=root)


# ---- the command line ------------------------------------------------------------------


def _by_source(ks: Sequence[Kernel]) -> Dict[Path, List[Kernel]]:
    groups: Dict[Path, List[Kernel]] = {}
    for k in ks:
        groups.setdefault(k.source, []).append(k)
    return groups


def _check_all(ks, flag_sets, work: Path, *, with_ir=(), log=lambda msg: None):
    """Builds every source once per flag set (FLAG_SETS or "sanitize"), runs
    every kernel; returns {kernel: {"family", "split", "outputs": {set:
    checksums}, "ir": {set: Ir} (sets in ``with_ir``), "llvm_distribute":
    {set: remarks}}}."""
    results: Dict[str, dict] = {}
    for src, group in _by_source(ks).items():
        for fs in flag_sets:
            flags = list(SANITIZE_FLAGS if fs == "sanitize" else FLAG_SETS[fs])
            remarks = fs in ("O3-distribute", "O3-pragma")
            if remarks:
                flags += REMARK_FLAGS
            exe = work / f"{src.stem}.{fs}"
            comp = build(src, flags, exe)
            marks = distribute_remarks(comp.stderr, src) if remarks else {}
            for k in group:
                r = results.setdefault(k.name, {"family": k.family, "split": k.split,
                                                "outputs": {}, "ir": {}, "llvm_distribute": {}})
                if fs in with_ir:
                    r["ir"][fs], r["outputs"][fs] = measure(exe, k.name)
                else:
                    r["outputs"][fs] = run(exe, k.name)
                if remarks:
                    r["llvm_distribute"][fs] = marks.get(k.name, {})
        log(f"{src.stem}: {len(group)} kernels, {', '.join(flag_sets)}")
    return results


def _geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def summarize(table: Dict[str, dict]) -> Dict[str, dict]:
    """Per family, per split and overall: the kernel count, the geometric
    means of Ir(config) / Ir(O3), how many kernels a configuration changes
    and in how many LLVM distributed a loop."""
    rows = list(table.values())
    groups: Dict[str, List[dict]] = {"all": rows}
    for sp in SPLITS:
        groups[f"split:{sp}"] = [r for r in rows if r["split"] == sp]
    for r in rows:
        groups.setdefault(f"family:{r['family']}", []).append(r)
    out = {}
    for g, rows in groups.items():
        s = {"kernels": len(rows)}
        for fs in ("O3-distribute", "O3-pragma"):
            s[f"{fs}/O3"] = round(_geomean([r["ir"][fs] / r["ir"]["O3"] for r in rows]), 4)
            s[f"{fs} changes Ir"] = sum(r["ir"][fs] != r["ir"]["O3"] for r in rows)
            s[f"{fs} distributes"] = sum(r["llvm_distribute"][fs]["distributed"] > 0
                                         for r in rows)
        out[g] = s
    return out


def _mismatches(results):
    bad = []
    for name, r in results.items():
        outs = r["outputs"]
        ref = outs.get("O0", next(iter(outs.values())))
        bad += [f"{name}: {fs} differs from {'O0' if 'O0' in outs else 'the first'}"
                for fs, o in outs.items() if o != ref]
    return bad


def main(argv=None) -> int:
    p = cli.ArgumentParser(prog="python -m mlbridge.corpus.loops", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list", help="kernels with family and split")
    ls.add_argument("--split", choices=SPLITS)
    gen = sub.add_parser("generate", help="write mutations of a split's kernels")
    gen.add_argument("out_dir", type=Path)
    gen.add_argument("--per-kernel", type=int, default=4)
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--split", choices=SPLITS, default="train")
    orc = sub.add_parser("oracle", help="outputs of every kernel equal at O0, O3, O3 with "
                         "distribution, and sanitized at O1")
    orc.add_argument("--generated", type=Path, help="also check the mutations in this directory")
    base = sub.add_parser("baseline", help="Ir of every kernel at O3, O3-distribute, "
                          "O3-pragma; writes corpus/loops/baselines.json")
    base.add_argument("--out", type=Path, default=ROOT / "baselines.json")
    args = p.parse_args(argv)
    return cli.run(f"mlbridge.corpus.loops {args.cmd}", _run, args)


def _run(args):
    if args.cmd == "list":
        for k in kernels(args.split):
            print(f"{k.name}\t{k.family}\t{k.split}")
        return 0
    if args.cmd == "generate":
        made = generate(args.out_dir, args.per_kernel, seed=args.seed, split=args.split)
        print(f"{len(made)} mutations written to {args.out_dir}")
        return 0
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="mlbridge-loops-") as tmp:
        if args.cmd == "oracle":
            ks = kernels(extra=sorted(args.generated.glob("*.c")) if args.generated else ())
            res = _check_all(ks, ["O0", "O3", "O3-distribute", "O3-pragma", "sanitize"],
                             Path(tmp), log=log)
            bad = _mismatches(res)
            print("\n".join(bad) if bad else f"{len(res)} kernels: outputs equal at O0, O3, "
                  "O3-distribute, O3-pragma and sanitized O1")
            return 1 if bad else 0
        measured = ["O3", "O3-distribute", "O3-pragma"]
        res = _check_all(kernels(), ["O0"] + measured, Path(tmp), with_ir=measured, log=log)
    bad = _mismatches(res)
    if bad:
        print("\n".join(bad))
        return 1
    vg = run_tool([shutil.which("valgrind") or "valgrind", "--version"]).strip()
    for r in res.values():
        del r["outputs"]
    doc = {
        "about": "Ir (callgrind instructions executed by the kernel and its callees, "
                 "NTIMES=4 calls) per kernel; regenerate with "
                 "`python -m mlbridge.corpus.loops baseline` (docs/loop-kernels.md).",
        "clang": toolchain().version, "valgrind": vg,
        "build": "<clang> <flags> -I corpus/loops -rdynamic corpus/loops/driver.c "
                 "corpus/loops/kernels/<family>.c -o <exe>",
        "flags": {fs: FLAG_SETS[fs] for fs in measured},
        "measure": "valgrind --tool=callgrind --callgrind-out-file=<out> "
                   "--collect-atstart=no --toggle-collect=<kernel> <exe> <kernel>",
        "summary": summarize(res),
        "kernels": res,
    }
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(res)} kernels measured; written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
