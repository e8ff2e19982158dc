"""The differential checks. Each builds or compiles one input with one
configuration (:mod:`.configs`) of one LLVM version and returns a
:class:`Result`: ``ok`` or what went wrong, with the command to reproduce.

* :func:`check_program` -- a C program (csmith, a loop kernel, a kept case)
  built with the configuration; its output must equal the ``-O0`` build's.
* :func:`check_stress` -- an ``llvm-stress`` module through opt (the
  optimization pipeline, ``-verify-each``) or llc (``-verify-machineinstrs``):
  no crash, verifier clean.
* :func:`check_thinlto` -- a multi-unit program linked by lld with ThinLTO
  and the plugins in its backends, with 1, 2 and 8 backend threads: no
  crash, byte-identical binaries, the ``-O0`` output.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence

from ..toolchain import process
from ..llvm.plugins import tool_env
from .configs import Config, Toolset

__all__ = ["Result", "Run", "Program", "STATUSES", "FAILURES", "run", "compiler_status",
           "crash_signature", "served_settings", "reference", "check_program", "check_stress",
           "check_thinlto", "check_project", "THINLTO_JOBS", "reproducer"]

#: What a check can find. ``error``: the compiler refused without crashing
#: (a diagnostic, a plugin that cannot load); ``nondeterministic``: ThinLTO
#: links with different thread counts gave different binaries.
STATUSES = ("ok", "wrong-output", "crash", "verifier", "timeout", "error", "nondeterministic")
FAILURES = STATUSES[1:]

#: The backend thread counts every ThinLTO link is made with; the first is
#: the one the others must equal.
THINLTO_JOBS = (1, 2, 8)

#: A verifier's report (IR: -verify-each; machine code: -verify-machineinstrs).
_VERIFIER = re.compile(r"Broken module found|Broken function found|\*\*\* Bad machine code|"
                       r"verification failed|Module verification failed")
#: A crash of the tool (or of clang's cc1 under the driver).
_CRASH = re.compile(r"PLEASE submit a bug report|Stack dump:|command failed due to signal|"
                    r"Segmentation fault|Aborted|ERROR: AddressSanitizer|runtime error:|"
                    r"symbol lookup error|LLVM ERROR:")


#: Freed memory filled by glibc with this byte in every compiler: a read of
#: stale memory (issue 34 item 5) then fails on every run, not on some.
_PERTURB = {"MALLOC_PERTURB_": "165"}


@dataclass
class Run:
    """One finished (or killed) process."""

    returncode: Optional[int]
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False


def run(cmd: Sequence, *, timeout: float, env: Optional[Dict[str, str]] = None,
        cwd=None) -> Run:
    """Runs ``cmd`` (killed with everything it started past ``timeout``)."""
    cmd = [os.fspath(c) for c in cmd]
    t0 = time.monotonic()
    try:
        proc = process.start(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                             cwd=cwd)
    except OSError as e:
        return Run(None, "", f"cannot run {cmd[0]}: {e}", 0.0)
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        process.kill(proc, wait=10)
        out, err = proc.communicate()
        timed_out = True
    except BaseException:
        process.kill(proc, wait=10)
        raise
    return Run(proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"),
               time.monotonic() - t0, timed_out)


def compiler_status(r: Run) -> str:
    """How a compiler run ended: ok, timeout, verifier, crash or error."""
    if r.timed_out:
        return "timeout"
    if r.returncode == 0:
        return "ok"
    if _VERIFIER.search(r.stderr):
        return "verifier"
    if r.returncode is not None and (r.returncode < 0 or r.returncode >= 128
                                     or _CRASH.search(r.stderr)):
        return "crash"
    return "error"


#: A frame of LLVM's stack dump: its function and where it is (a source
#: line, or the module in parentheses).
_FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ (.+?) (\S+:\d+:\d+|\(\S+\))$")


def crash_signature(stderr: str) -> str:
    """A short fixed string of a failure's report that another run of the
    same bug prints too (a reduction keeps it): the function of the first
    stack frame in the project's code, else the innermost pass that was
    running, else the first error line."""
    for line in stderr.splitlines():
        m = _FRAME.match(line)
        if m and ("MLBridge" in m.group(2) or "/integrations/" in m.group(2)
                  or "mlbridge" in m.group(1)):
            name = re.sub(r"\(anonymous namespace\)::", "", m.group(1))
            return name.split("(")[0].strip()
    passes = re.findall(r"Running pass '([^']+)'", stderr)
    if passes:
        return f"Running pass '{passes[-1]}'"
    for pat in (r"Bad machine code: [^\n]*", r"LLVM ERROR: [^\n]*", r"symbol lookup error: [^\n]*",
                r"error: [^\n]*"):
        m = re.search(pat, stderr)
        if m:
            return m.group(0).strip()[:200]
    return ""


@dataclass
class Program:
    """A C program to build: its sources, the compile flags it needs, and how
    it was made (a shell line, for the reproducer)."""

    name: str
    sources: List[Path]
    flags: List[str] = field(default_factory=list)
    origin: str = ""
    #: ``main(int, char **)`` rather than ``main(void)`` (a ThinLTO unit's
    #: main is called by a driver)
    main_takes_args: bool = False


@dataclass
class Result:
    """The outcome of one check of one input in one configuration."""

    check: str
    case: str
    config: str
    llvm: int
    status: str
    detail: str = ""
    command: str = ""
    origin: str = ""
    seconds: float = 0.0
    #: on a failure, whether LLVM alone (the same build without the plugins)
    #: fails the same way: then the plugin is not the cause
    stock_fails: Optional[bool] = None

    @property
    def failed(self) -> bool:
        return self.status in FAILURES

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v not in ("", None)}


@contextlib.contextmanager
def served_settings(config: Config, timeout: float) -> Iterator[Dict[str, str]]:
    """The environment that points ``config``'s plugin at the Python policy
    serving it while the block runs ({} for a configuration not served)."""
    if config.served is None:
        yield {}
        return
    if config.served != "ld-random":
        raise ValueError(f"unknown served policy '{config.served}' of {config.name}")
    from ..llvm.plugins import loop_distribution as ld
    from ..toolchain import ModelServer
    policy = ld.RandomPolicy(seed=config.seed)

    def answer(raw):
        obs = ld.Observation.of(raw)
        return ld.scores_for(policy(obs), obs)

    with ModelServer(answer, timeout=timeout) as server:
        yield ld.plugin_settings(runner="pipe", channel=server.endpoint,
                                 timeout_ms=int(timeout * 1000))


def reproducer(ts: Toolset, config: Optional[Config], cmd: Sequence[str],
               host: str = "clang") -> str:
    """A shell line that repeats ``cmd`` with ``config``'s settings; a served
    configuration is repeated through ``python -m mlbridge.difftest build``."""
    if config is not None and config.served:
        return shlex.join(["python", "-m", "mlbridge.difftest", "build", "--config", config.name,
                           "--llvm", str(ts.llvm), "--host", host, "--", *map(str, cmd)])
    settings = {**_PERTURB, **(ts.settings(config, host) if config else {})}
    return shlex.join(["env", *(f"{k}={v}" for k, v in settings.items()), *map(str, cmd)])


def compile_with(ts: Toolset, config: Optional[Config], cmd: Sequence, *, timeout: float,
                 host: str = "clang", cwd=None) -> Run:
    """Runs compiler command ``cmd`` with ``config``'s settings (and the
    sanitizer runtime a sanitized plugin build needs); None: stock."""
    env = {**os.environ, **_PERTURB}
    if config is None:
        return run(cmd, timeout=timeout, env=env, cwd=cwd)
    env = tool_env(ts.info, env)
    env.update(ts.settings(config, host))
    with served_settings(config, timeout) as extra:
        env.update(extra)
        return run(cmd, timeout=timeout, env=env, cwd=cwd)


def _program_env() -> Dict[str, str]:
    """A built program's environment: without this process's preloads."""
    env = dict(os.environ)
    for key in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS"):
        env.pop(key, None)
    return env


def reference(ts: Toolset, program: Program, workdir: Path, *, timeout: float,
              extra: Sequence[str] = ()) -> Optional[Run]:
    """The program built by plain clang -O0 and run; None when it does not
    build, fails or runs past ``timeout`` (such a program is not used)."""
    exe = workdir / f"{program.name}.O0"
    b = run([ts.clang, "-O0", *program.flags, *extra, *map(str, program.sources), "-o", exe],
            timeout=120)
    if b.returncode != 0 or b.timed_out:
        return None
    r = run([exe], timeout=timeout, env=_program_env())
    return None if (r.timed_out or r.returncode != 0) else r


def _result(check, case, config, ts, status, detail, command, origin, seconds):
    return Result(check, case, config.name if config else "stock", ts.llvm, status, detail,
                  command, origin, round(seconds, 2))


def _tail(text: str, n: int = 600) -> str:
    text = text.strip()
    return text if len(text) <= n else "..." + text[-n:]


def build_and_run(ts: Toolset, config: Optional[Config], program: Program, level: str,
                  workdir: Path, *, compile_timeout: float, run_timeout: float):
    """(build status, Run of the program or the failed build, command)."""
    tag = config.name if config else f"stock{level}"
    exe = workdir / f"{program.name}.{tag}"
    flags = ts.flags(config, "clang") if config else []
    cmd = [ts.clang, level, *program.flags, *flags, *map(str, program.sources), "-o", str(exe)]
    b = compile_with(ts, config, cmd, timeout=compile_timeout)
    status = compiler_status(b)
    if status != "ok":
        return status, b, cmd
    return "ok", run([exe], timeout=run_timeout, env=_program_env()), cmd


def check_program(ts: Toolset, config: Config, program: Program, ref: Run, workdir: Path, *,
                  check: str = "program", compile_timeout: float = 300.0,
                  run_timeout: Optional[float] = None) -> Result:
    """``program`` built with ``config``: its output (and exit status) must
    be ``ref``'s (the -O0 build's)."""
    run_timeout = run_timeout or 10.0 + 5 * ref.seconds
    t0 = time.monotonic()
    status, r, cmd = build_and_run(ts, config, program, config.level, workdir,
                                   compile_timeout=compile_timeout, run_timeout=run_timeout)
    command = reproducer(ts, config, cmd)
    if status != "ok":
        detail = (f"compile ran past {compile_timeout:g} s" if status == "timeout"
                  else f"{crash_signature(r.stderr)} | {_tail(r.stderr)}")
    elif r.timed_out:
        status, detail = "timeout", (f"the program ran past {run_timeout:g} s "
                                     f"(-O0: {ref.seconds:.2f} s)")
    elif r.returncode != ref.returncode or r.stdout != ref.stdout:
        status = "wrong-output"
        detail = (f"exit {r.returncode} (-O0: {ref.returncode}); output "
                  f"{_tail(r.stdout, 200)!r} (-O0: {_tail(ref.stdout, 200)!r})")
    else:
        detail = ""
    res = _result(check, program.name, config, ts, status, detail, command, program.origin,
                  time.monotonic() - t0)
    if res.failed:
        # Does LLVM alone do the same? Then the plugin is not to blame.
        s2, r2, _ = build_and_run(ts, None, program, config.level, workdir,
                                  compile_timeout=compile_timeout, run_timeout=run_timeout)
        res.stock_fails = not (s2 == "ok" and not r2.timed_out and
                               r2.returncode == ref.returncode and r2.stdout == ref.stdout)
    return res


def stress_module(ts: Toolset, seed: int, workdir: Path, *, size: int = 100) -> Path:
    """The llvm-stress module of ``seed`` (its own LLVM version's generator)."""
    ll = workdir / f"stress{seed}.ll"
    r = run([ts.stress, f"-seed={seed}", f"-size={size}", "-o", ll], timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"{ts.stress} -seed={seed} failed: {_tail(r.stderr)}")
    return ll


def stress_command(ts: Toolset, config: Optional[Config], level: str, codegen: bool,
                   module: Path) -> List[str]:
    """opt (the -O pipeline, the verifier after each pass) or llc (the
    machine verifier) over ``module``, with ``config``'s plugins (None: stock)."""
    if codegen:
        flags = ts.flags(config, "llc") if config else ["-verify-machineinstrs"]
        return [ts.llc, level, *flags, str(module), "-o", os.devnull]
    flags = ts.flags(config, "opt") if config else []
    return [ts.opt, *flags, f"-passes=default<{level[1:]}>", "-verify-each", str(module),
            "-o", os.devnull]


def check_stress(ts: Toolset, config: Config, seed: int, module: Path, *,
                 timeout: float = 300.0, size: int = 100) -> Result:
    """``module`` (llvm-stress ``seed``) through ``config``'s IR host."""
    cmd = stress_command(ts, config, config.level, config.codegen, module)
    host = "llc" if config.codegen else "opt"
    r = compile_with(ts, config, cmd, timeout=timeout, host=host)
    status = compiler_status(r)
    detail = "" if status == "ok" else f"{crash_signature(r.stderr)} | {_tail(r.stderr)}"
    origin = f"{os.path.basename(ts.stress)} -seed={seed} -size={size} -o {module.name}"
    res = _result("stress", f"stress{seed}", config, ts, status, detail,
                  reproducer(ts, config, cmd, host), origin, r.seconds)
    if res.failed:
        stock = compile_with(ts, None, stress_command(ts, None, config.level, config.codegen,
                                                      module), timeout=timeout)
        res.stock_fails = compiler_status(stock) != "ok"
    return res


@dataclass
class LtoProgram:
    """Units linked into one program. Made :meth:`of` whole programs, unit
    ``i``'s ``main`` is renamed ``unit<i>_main`` and a generated driver calls
    them in turn; made :meth:`of_files`, the files are the program."""

    name: str
    units: List[Program]
    driver: Optional[Path] = None

    @classmethod
    def of(cls, name: str, units: Sequence[Program], workdir: Path) -> "LtoProgram":
        decls = "".join(f"int unit{i}_main({'int, char **' if u.main_takes_args else 'void'});\n"
                        for i, u in enumerate(units))
        calls = "".join(f"  unit{i}_main({'argc, argv' if u.main_takes_args else ''});\n"
                        for i, u in enumerate(units))
        driver = workdir / f"{name}.main.c"
        driver.write_text(f"{decls}int main(int argc, char **argv) {{\n{calls}  return 0;\n}}\n")
        return cls(name, list(units), driver)

    @classmethod
    def of_files(cls, name: str, files: Dict[str, str], workdir: Path,
                 origin: str = "") -> "LtoProgram":
        units = []
        for fname, text in files.items():
            path = workdir / f"{name}.{fname}"
            path.write_text(text)
            units.append(Program(path.stem, [path], origin=origin))
        return cls(name, units)

    def compile_units(self):
        """(source, flags) of every translation unit."""
        if self.driver is None:
            return [(u.sources[0], list(u.flags)) for u in self.units]
        return ([(u.sources[0], [*u.flags, f"-Dmain=unit{i}_main"])
                 for i, u in enumerate(self.units)] + [(self.driver, [])])

    @property
    def origin(self) -> str:
        return "; ".join(dict.fromkeys(u.origin for u in self.units if u.origin))


def lto_reference(ts: Toolset, prog: LtoProgram, workdir: Path, *,
                  timeout: float) -> Optional[Run]:
    """The units built by plain clang -O0 (no LTO) and run; None as for
    :func:`reference`."""
    objs = []
    for i, (src, flags) in enumerate(prog.compile_units()):
        obj = workdir / f"{prog.name}.{i}.O0.o"
        b = run([ts.clang, "-O0", *flags, "-c", str(src), "-o", obj], timeout=120)
        if b.returncode != 0:
            return None
        objs.append(obj)
    exe = workdir / f"{prog.name}.O0"
    if run([ts.clang, *objs, "-o", exe], timeout=120).returncode != 0:
        return None
    r = run([exe], timeout=timeout, env=_program_env())
    return None if (r.timed_out or r.returncode != 0) else r


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def check_thinlto(ts: Toolset, config: Config, prog: LtoProgram, ref: Run, workdir: Path, *,
                  jobs: Sequence[int] = THINLTO_JOBS, timeout: float = 600.0) -> Result:
    """``prog`` compiled with -flto=thin and ``config``'s plugins, linked by
    lld with the plugins in its ThinLTO backends, once per backend thread
    count in ``jobs``: every link succeeds, the binaries are identical, the
    program prints ``ref``'s output."""
    t0 = time.monotonic()
    res = _thinlto(ts, config, config.level, prog, ref, workdir, jobs, timeout)
    res.seconds = round(time.monotonic() - t0, 2)
    if res.failed:
        res.stock_fails = _thinlto(ts, None, config.level, prog, ref, workdir, jobs,
                                   timeout).failed
    return res


def _thinlto(ts, config, level, prog, ref, workdir, jobs, timeout) -> Result:
    """One ThinLTO check (``config`` None: without the plugins)."""
    tag = f"{prog.name}.{config.name if config else 'stock' + level}"
    objs = []

    def result(status, detail, cmd):
        return _result("thinlto", prog.name, config, ts, status, detail,
                       reproducer(ts, config, cmd, "lld"), prog.origin, 0.0)

    def flags(host):
        return ts.flags(config, host) if config else []

    for i, (src, unit_flags) in enumerate(prog.compile_units()):
        obj = workdir / f"{tag}.{i}.o"
        cmd = [ts.clang, level, "-flto=thin", *unit_flags, *flags("clang"), "-c", str(src),
               "-o", str(obj)]
        r = compile_with(ts, config, cmd, timeout=timeout)
        status = compiler_status(r)
        if status != "ok":
            return result(status, f"compiling {Path(src).name}: {crash_signature(r.stderr)} | "
                                  f"{_tail(r.stderr)}", cmd)
        objs.append(str(obj))
    digests, exes = {}, {}
    for j in jobs:
        exe = workdir / f"{tag}.j{j}"
        cmd = [ts.clang, level, "-flto=thin", "-fuse-ld=lld", f"--ld-path={ts.lld}",
               *flags("lld"), f"-Wl,--thinlto-jobs={j}", *objs, "-o", str(exe)]
        r = compile_with(ts, config, cmd, timeout=timeout, host="lld")
        status = compiler_status(r)
        if status != "ok":
            return result(status, f"linking with --thinlto-jobs={j}: "
                                  f"{crash_signature(r.stderr)} | {_tail(r.stderr)}", cmd)
        digests[j], exes[j] = _digest(exe), exe
    first = jobs[0]
    differ = [j for j in jobs if digests[j] != digests[first]]
    if differ:
        return result("nondeterministic", f"binaries differ from --thinlto-jobs={first}: " +
                      ", ".join(f"jobs={j} {digests[j]} vs {digests[first]}" for j in differ),
                      cmd)
    limit = 10.0 + 5 * ref.seconds
    r = run([exes[first]], timeout=limit, env=_program_env())
    if r.timed_out:
        return result("timeout", f"the program ran past {limit:g} s", cmd)
    if r.returncode != ref.returncode or r.stdout != ref.stdout:
        return result("wrong-output", f"exit {r.returncode} (-O0: {ref.returncode}); output "
                                      f"{_tail(r.stdout, 200)!r} (-O0: {_tail(ref.stdout, 200)!r})",
                      cmd)
    return result("ok", "", cmd)


def check_project(ts: Toolset, config: Config, source: Path, workdir: Path, *,
                  build: Sequence[str], test: Sequence[str], cflags: Sequence[str] = (),
                  name: str, origin: str = "", timeout: float = 900.0) -> Result:
    """A real project built by its own build system (``build``, e.g. make
    with ``CC=`` and ``CFLAGS=`` appended) with ``config``'s plugins in its
    compiler, then its own test suite (``test``), which must pass. One
    compiler at a time (``make -j1``): a served configuration has one channel."""
    t0 = time.monotonic()
    tree = workdir / f"{name}.{config.name}"
    shutil.copytree(source, tree)
    flags = " ".join([config.level, *cflags, *ts.flags(config, "clang")])
    cmd = [*build, f"CC={ts.clang}", f"CFLAGS={flags}"]
    r = compile_with(ts, config, cmd, timeout=timeout, cwd=tree)
    status = compiler_status(r)
    command = f"cd {shlex.quote(str(tree))} && {reproducer(ts, config, cmd)}"
    if status != "ok":
        detail = f"{crash_signature(r.stderr)} | {_tail(r.stderr)}"
    else:
        t = run(list(test), timeout=timeout, env=_program_env(), cwd=tree)
        command += f" && {shlex.join(test)}"
        status = ("timeout" if t.timed_out else "ok" if t.returncode == 0 else "wrong-output")
        detail = "" if status == "ok" else f"its tests fail: {_tail(t.stdout + t.stderr)}"
    res = _result("project", name, config, ts, status, detail, command, origin,
                  time.monotonic() - t0)
    if not res.failed:
        shutil.rmtree(tree, ignore_errors=True)
    return res
