"""One project built with one configuration through its own build system,
its own tests run, the result measured (:func:`build_project`).

The source tree is unpacked afresh from the verified tarball for every
build (nothing of one build reaches the next), bootstrapped if it is a git
tag, then configured, built with ``make -j2`` / ``cmake --build -j2`` and
tested with the project's own harness. The build's environment is this
process's minus the variables that would change it (make's jobserver,
the build flags, every ``MLBRIDGE_*`` setting), plus the configuration's
(:func:`mlbridge.builds.configs.environment`).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Dict, List

from ..corpus.fetch import sha256_of
from ..llvm.plugins import tool_env
from .configs import BuildConfig, Compilers, environment
from .fetch import unpack
from .measure import count_tests, header_digests, output_texts, run
from .projects import Project

__all__ = ["build_project", "build_env", "JOBS"]

#: make / cmake --build / ctest parallelism (this machine has 2 cores).
JOBS = 2
CONFIGURE_TIMEOUT = 600.0
BUILD_TIMEOUT = 1800.0
TEST_TIMEOUT = 900.0

_DROPPED = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "CC", "CXX", "CPP", "CFLAGS",
            "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "LIBS", "AR", "NM", "RANLIB", "DESTDIR",
            "CMAKE_GENERATOR", "CTEST_PARALLEL_LEVEL")


def build_env(config: BuildConfig, comp: Compilers, project: Project) -> Dict[str, str]:
    """The environment ``project``'s build system runs in for ``config``."""
    base = {k: v for k, v in os.environ.items()
            if k not in _DROPPED and not k.startswith("MLBRIDGE_")}
    base["LC_ALL"] = "C"
    base.update(environment(config, comp, project.ldflags))
    return tool_env(comp.info, base)


def _tail(text: str, n: int = 4000) -> str:
    return text[-n:]


def build_project(project: Project, config: BuildConfig, comp: Compilers, workdir, *,
                  cache=None, keep: bool = False) -> dict:
    """Builds, tests and measures ``project`` with ``config`` in ``workdir``
    (emptied first; removed afterwards unless ``keep`` or the build or a
    test failed, except its ``build.log``). Returns the record :mod:`mlbridge.builds` stores: ``ok``
    (configured and built), ``failed_step``, ``tests_passed``/``tests_total``,
    ``texts`` (``.text`` per linked output) and ``text_total``, ``cpu``
    (configure + build, user + sys seconds), ``max_rss_kib``, ``headers``
    (sha256 of each config header), ``tests_failed`` (names of failed test
    commands), ``outputs_missing`` (output patterns that matched no ELF
    file), ``error`` (the failed step's output tail)."""
    workdir = Path(workdir).resolve()
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    log = workdir / "build.log"
    rec = {"project": project.name, "version": project.version, "config": config.name,
           "llvm": comp.llvm, "build_system": project.build_system, "ok": False,
           "failed_step": None, "tests_passed": 0, "tests_total": 0, "tests_failed": [],
           "texts": {}, "outputs_missing": [], "text_total": 0, "cpu": 0.0,
           "max_rss_kib": 0, "rss_measure": "gnu-time", "wall": 0.0, "headers": {},
           "error": "", "log": str(log)}
    env = build_env(config, comp, project)
    rec["flags"] = {k: env[k] for k in ("CC", "CFLAGS", "LDFLAGS")}
    rec["settings"] = dict(config.env)
    rec["plugins"] = {p: sha256_of(getattr(comp.info, p)) for p in config.plugins}
    src = unpack(project, workdir / "src", cache)
    bdir = src / "build" if project.build_system == "cmake" else src

    test_env = {**env, **dict(project.test_env)}

    def step(name: str, cmd: List[str], timeout: float, cwd: Path = src, kind="build"):
        """Runs one step; ``kind``: "build" (configure and build: measured),
        "bootstrap" (autoreconf: not the compiler's work) or "test"."""
        with open(log, "a") as f:
            f.write(f"\n=== {name}: {' '.join(cmd)}\n")
        r = run(cmd, cwd=cwd, env=test_env if kind == "test" else env, timeout=timeout, log=log)
        if kind == "build":
            rec["cpu"] += r.cpu
            rec["wall"] += r.wall
            rec["max_rss_kib"] = max(rec["max_rss_kib"], r.max_rss_kib)
        if not r.ok and rec["failed_step"] is None:
            rec["failed_step"] = name
            rec["error"] = _tail(r.output) + (" [timed out]" if r.timed_out else "")
        return r

    try:
        if project.bootstrap and not step("bootstrap", list(project.bootstrap),
                                          CONFIGURE_TIMEOUT, kind="bootstrap").ok:
            return rec
        if project.build_system == "cmake":
            # CMake reads CC, CFLAGS and LDFLAGS from the environment, not AR
            tools = [f"-DCMAKE_{var}={env[var]}" for var in ("AR", "NM", "RANLIB") if var in env]
            cfg = ["cmake", "-S", str(src), "-B", str(bdir), "-G", "Unix Makefiles",
                   "-DCMAKE_BUILD_TYPE=None", *tools, *project.configure_args]
            build = ["cmake", "--build", str(bdir), f"-j{JOBS}"]
        else:
            has_configure = (src / "configure").is_file()
            cfg = (["./configure", f"--prefix={workdir / 'install'}", *project.configure_args]
                   if has_configure else None)
            build = ["make", f"-j{JOBS}", *project.build_targets]
        if cfg and not step("configure", cfg, CONFIGURE_TIMEOUT).ok:
            return rec
        rec["headers"] = header_digests(bdir, project.config_headers)
        if not step("build", build, BUILD_TIMEOUT, cwd=bdir).ok:
            return rec
        rec["ok"] = True
        rec["texts"] = output_texts(bdir, project.outputs)
        rec["outputs_missing"] = [p for p in project.outputs if not output_texts(bdir, [p])]
        rec["text_total"] = sum(rec["texts"].values())
        _tests(project, rec, step, bdir)
        return rec
    finally:
        if not keep and rec["ok"] and not rec["tests_failed"]:  # a failure keeps its tree
            shutil.rmtree(workdir / "src", ignore_errors=True)
            shutil.rmtree(workdir / "install", ignore_errors=True)


def _tests(project: Project, rec: dict, step, bdir: Path) -> None:
    if project.test_format == "ctest":
        r = step("test", ["ctest", f"-j{JOBS}", "--output-on-failure"], TEST_TIMEOUT,
                 cwd=bdir, kind="test")
        rec["tests_passed"], rec["tests_total"] = count_tests("ctest", r.output)
        if not r.ok:
            rec["tests_failed"] = ["ctest"]
    elif project.test_format == "automake":
        outputs = []
        for target in project.tests:
            r = step(f"test {target}", ["make", f"-j{JOBS}", target], TEST_TIMEOUT, cwd=bdir,
                     kind="test")
            outputs.append(r.output)
            if not r.ok:
                rec["tests_failed"].append(target)
        rec["tests_passed"], rec["tests_total"] = count_tests("automake", "\n".join(outputs))
    else:
        results = []
        for target in project.tests:
            r = step(f"test {target}", ["make", *target.split()], TEST_TIMEOUT, cwd=bdir,
                     kind="test")
            results.append(r.ok)
            if not r.ok:
                rec["tests_failed"].append(target)
        rec["tests_passed"], rec["tests_total"] = count_tests("commands", "", results)
