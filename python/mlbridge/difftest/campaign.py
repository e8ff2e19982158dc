"""A differential campaign: generated inputs (csmith programs, llvm-stress
modules, multi-unit ThinLTO programs, loop kernels when the generator is
there, the kept regression cases) x configurations x LLVM versions, run on a
few worker threads; per-case results and one summary."""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from ..llvm.plugins.corpus import csmith_include_dir, csmith_program
from .checks import (FAILURES, LtoProgram, Program, Result, check_program, check_project,
                     check_stress, check_thinlto, lto_reference, reference, stress_module)
from .configs import Config, Toolset

__all__ = ["Plan", "run_campaign", "summarize", "format_summary", "csmith_input",
           "project_programs", "CASES_DIR", "kept_cases", "snapshot_plugins"]

REPO = Path(__file__).resolve().parents[3]
#: The reduced regression cases the harness found.
CASES_DIR = REPO / "tests" / "differential" / "cases"
PROGRAMS_DIR = REPO / "tests" / "e2e" / "programs"


@dataclass
class Plan:
    """What a campaign runs. Seeds are fixed, so a campaign is repeatable
    (for given csmith and LLVM versions)."""

    configs: List[Config]
    toolsets: List[Toolset]
    csmith: Sequence[int] = ()
    stress: Sequence[int] = ()
    #: one tuple of csmith seeds (its units) per ThinLTO program
    thinlto: Sequence[Sequence[int]] = ()
    cases: bool = False
    #: the project's own programs, each alone
    programs: bool = False
    #: ... and all of them as one ThinLTO program
    lto_programs: bool = False
    #: seeds of generated loop kernels (:mod:`.loop_kernels`)
    kernels: Sequence[int] = ()
    #: units of a ThinLTO program of distributable loops (0: none)
    kernel_units: int = 0
    #: bzip2 (the corpus's pinned source) built by its own Makefile with each
    #: configuration, then its own ``make test``
    project: bool = False
    max_funcs: int = 8
    unit_max_funcs: int = 4
    stress_size: int = 100
    #: programs whose -O0 build runs longer are discarded
    reference_timeout: float = 10.0
    compile_timeout: float = 300.0
    jobs: int = 2


def csmith_input(seed: int, workdir: Path, max_funcs: int) -> Program:
    src = csmith_program(seed, workdir / f"csmith{seed}.c", max_funcs=max_funcs)
    return Program(f"csmith{seed}", [src], ["-w", f"-I{csmith_include_dir()}"],
                   f"csmith --seed {seed} --max-funcs {max_funcs} > csmith{seed}.c",
                   main_takes_args=True)


def project_programs() -> List[Program]:
    """The project's own test programs (tests/e2e/programs: one file, a
    main(void), deterministic output)."""
    files = [*sorted(PROGRAMS_DIR.glob("*.c")),
             *(PROGRAMS_DIR / "plugins" / f"{n}.c" for n in ("bitops", "interp"))]
    return [Program(p.stem, [p], origin=str(p.relative_to(REPO))) for p in files]


def kept_cases() -> List[Program]:
    """The kept cases: ``<name>.c`` with ``<name>.json`` (``flags``,
    ``origin``) in tests/differential/cases."""
    out = []
    for src in sorted(CASES_DIR.glob("*.c")):
        meta = json.loads(src.with_suffix(".json").read_text())
        flags = [f.replace("{csmith_include}", csmith_include_dir()) for f in meta.get("flags", [])]
        out.append(Program(f"case:{src.stem}", [src], flags, meta.get("origin", "")))
    return out


def kernel_input(seed: int, workdir: Path) -> Program:
    """The generated loop kernel of ``seed``."""
    from .loop_kernels import generate
    src = workdir / f"k{seed}.c"
    src.write_text(generate(seed).source)
    return Program(f"k{seed}", [src], origin=f"mlbridge.difftest.loop_kernels.generate({seed})")


def kernel_units_program(units: int, workdir: Path) -> LtoProgram:
    from .loop_kernels import many_units_program
    return LtoProgram.of_files(f"lto-kernels{units}", many_units_program(units), workdir,
                               f"mlbridge.difftest.loop_kernels.many_units_program({units})")


def _configs_for(plan: Plan, host: str) -> List[Config]:
    return [c for c in plan.configs if host in c.hosts()]


def _program_task(plan, ts, make: Callable[[Path], Program], check: str):
    def task(workdir: Path) -> List[Result]:
        prog = make(workdir)
        ref = reference(ts, prog, workdir, timeout=plan.reference_timeout)
        if ref is None:
            return [Result(check, prog.name, "-O0", ts.llvm, "discarded",
                           f"the -O0 build fails or runs past {plan.reference_timeout:g} s",
                           origin=prog.origin)]
        return [check_program(ts, c, prog, ref, workdir, check=check,
                              compile_timeout=plan.compile_timeout)
                for c in _configs_for(plan, "clang")]
    return task


def _stress_task(plan, ts, seed):
    def task(workdir: Path) -> List[Result]:
        module = stress_module(ts, seed, workdir, size=plan.stress_size)
        return [check_stress(ts, c, seed, module, timeout=plan.compile_timeout,
                             size=plan.stress_size)
                for c in plan.configs if ("llc" if c.codegen else "opt") in c.hosts()]
    return task


def _thinlto_task(plan, ts, name, make_units):
    def task(workdir: Path) -> List[Result]:
        made = make_units(workdir)
        prog = made if isinstance(made, LtoProgram) else LtoProgram.of(name, made, workdir)
        ref = lto_reference(ts, prog, workdir, timeout=plan.reference_timeout)
        if ref is None:
            return [Result("thinlto", name, "-O0", ts.llvm, "discarded",
                           f"the -O0 build fails or runs past {plan.reference_timeout:g} s",
                           origin=prog.origin)]
        return [check_thinlto(ts, c, prog, ref, workdir, timeout=plan.compile_timeout)
                for c in _configs_for(plan, "lld")]
    return task


def _project_task(plan, ts):
    def task(workdir: Path) -> List[Result]:
        from ..corpus import Corpus
        corpus = Corpus.load()
        corpus.fetch(["bzip2"])
        lib = corpus.libraries["bzip2"]
        src = corpus.source_dir(lib) / "bzip2-1.0.8"
        return [check_project(ts, c, src, workdir, build=["make", "-j1", "bzip2"],
                              test=["make", "test"], cflags=["-w", "-D_FILE_OFFSET_BITS=64"],
                              name="bzip2", origin=f"corpus {lib.crate} {lib.version}",
                              timeout=plan.compile_timeout)
                for c in _configs_for(plan, "clang")]
    return task


def _tasks(plan: Plan):
    """Every input on every LLVM version. The kinds of input are spread
    evenly over the campaign and the versions side by side, so a campaign
    stopped early has counts of each."""
    kinds = [
        [lambda ts, s=s: _program_task(plan, ts, lambda d: csmith_input(s, d, plan.max_funcs),
                                       "csmith") for s in plan.csmith],
        [lambda ts, s=s: _stress_task(plan, ts, s) for s in plan.stress],
        [lambda ts, ss=tuple(ss): _thinlto_task(
            plan, ts, "lto-csmith" + "-".join(map(str, ss)),
            lambda d: [csmith_input(s, d, plan.unit_max_funcs) for s in ss])
         for ss in plan.thinlto],
        [lambda ts, p=p: _program_task(plan, ts, lambda d: p, "programs")
         for p in (project_programs() if plan.programs else [])],
        [lambda ts: _thinlto_task(plan, ts, "lto-programs", lambda d: project_programs())
         ] if plan.lto_programs else [],
        [lambda ts, c=c: _program_task(plan, ts, lambda d: c, "case")
         for c in (kept_cases() if plan.cases else [])],
        [lambda ts, k=k: _program_task(plan, ts, lambda d: kernel_input(k, d), "kernels")
         for k in plan.kernels],
        [lambda ts: _project_task(plan, ts)] if plan.project else [],
        [lambda ts: _thinlto_task(plan, ts, f"lto-kernels{plan.kernel_units}",
                                  lambda d: kernel_units_program(plan.kernel_units, d))
         ] if plan.kernel_units else [],
    ]
    spread = sorted(((i + 0.5) / len(kind), k, make)
                    for k, kind in enumerate(kinds) for i, make in enumerate(kind))
    for _, _, make in spread:
        for ts in plan.toolsets:
            yield make(ts)


def run_campaign(plan: Plan, *, workdir: Optional[Path] = None,
                 progress: Optional[Callable[[List[Result]], None]] = None) -> List[Result]:
    """Runs every check of ``plan`` (``plan.jobs`` inputs at a time). Each
    input's files live in their own directory under ``workdir`` (default: a
    temporary one), removed unless a check of the input failed."""
    own = workdir is None
    root = Path(tempfile.mkdtemp(prefix="mlbridge-difftest-")) if own else Path(workdir)
    root.mkdir(parents=True, exist_ok=True)
    results: List[Result] = []
    lock = threading.Lock()
    tasks = list(_tasks(plan))

    def work(i_task):
        i, task = i_task
        d = root / f"input{i:05d}"
        d.mkdir(exist_ok=True)
        try:
            got = task(d)
        except Exception as e:  # noqa: BLE001 - a broken input is a result, not the end
            got = [Result("harness", d.name, "-", 0, "error", f"{type(e).__name__}: {e}")]
        if not any(r.status in FAILURES for r in got):
            shutil.rmtree(d, ignore_errors=True)
        with lock:
            results.extend(got)
            if progress:
                progress(got)

    try:
        with ThreadPoolExecutor(max_workers=max(1, plan.jobs)) as pool:
            list(pool.map(work, enumerate(tasks)))
    finally:
        if own and not any(r.status in FAILURES for r in results):
            shutil.rmtree(root, ignore_errors=True)
    return results


def summarize(results: Sequence[Result]) -> Dict:
    """Counts: inputs per check, configurations, LLVM versions, builds, and
    each kind of failure, in total and per configuration and version."""
    checked = [r for r in results if r.status != "discarded"]
    inputs: Dict[str, set] = {}
    for r in checked:
        inputs.setdefault(r.check, set()).add(r.case)
    summary = {
        "inputs": {k: len(v) for k, v in sorted(inputs.items())},
        "discarded": sum(r.status == "discarded" for r in results),
        "configurations": sorted({r.config for r in checked}),
        "llvm": sorted({r.llvm for r in checked}),
        "checks": len(checked),
        "failures": {s: sum(r.status == s for r in checked) for s in FAILURES},
        "stock_fails_too": sum(bool(r.stock_fails) for r in checked),
    }
    per: Dict[str, Dict[str, int]] = {}
    for r in checked:
        if r.failed:
            key = f"{r.check}/{r.config}/llvm{r.llvm}"
            per.setdefault(key, {}).setdefault(r.status, 0)
            per[key][r.status] += 1
    summary["failing"] = dict(sorted(per.items()))
    return summary


def format_summary(s: Dict) -> str:
    inputs = ", ".join(f"{n} {k}" for k, n in s["inputs"].items()) or "no inputs"
    fails = ", ".join(f"{n} {k}" for k, n in s["failures"].items())
    lines = [f"{inputs} ({s['discarded']} discarded) x {len(s['configurations'])} configurations "
             f"x LLVM {'/'.join(map(str, s['llvm']))}: {s['checks']} checks; {fails}"
             f" ({s['stock_fails_too']} also without the plugins)"]
    lines += [f"  {k}: " + ", ".join(f"{n} {st}" for st, n in v.items())
              for k, v in s["failing"].items()]
    return "\n".join(lines)


def snapshot_plugins(dest: Path, build_dir=None) -> Dict:
    """Copies the built plugins of every LLVM version into ``dest`` with a
    build manifest naming the copies (point ``MLBRIDGE_BUILD_DIR`` at it): a
    long campaign then tests one set of plugins while the build directory
    is rebuilt. Returns what was copied (the commit, each file's sha256)."""
    import hashlib
    import subprocess
    from ..build_manifest import MANIFEST_NAME, load
    from ..llvm.plugins._plugins import PLUGIN_SECTIONS
    manifest = load(build_dir)
    data = json.loads(json.dumps(manifest.data))
    dest = Path(dest)
    copied = {}
    for name in PLUGIN_SECTIONS.values():
        if not manifest.built(name):
            continue
        for key, value in data[name].items():
            if isinstance(value, str) and value.endswith(".so") and Path(value).is_file():
                target = dest / name / Path(value).name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(value, target)
                data[name][key] = str(target)
                copied[f"{name}/{target.name}"] = hashlib.sha256(target.read_bytes()).hexdigest()
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    data["snapshot"] = {"of": str(manifest.path.parent), "head": head, "sha256": copied}
    (dest / MANIFEST_NAME).write_text(json.dumps(data, indent=1))
    return data["snapshot"]
