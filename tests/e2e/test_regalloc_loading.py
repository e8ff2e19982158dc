"""End to end: every way of loading MLBridgeRegAlloc.so and MLBridgeMIR2Vec.so,
and the register allocator in real builds (issue 34 items 7 and 10), on
every LLVM version the build has plugins for.

* Loaded as pass plugins (clang -fpass-plugin, opt -load-pass-plugin, lld
  --load-pass-plugin), neither kills the host: MLBridgeMIR2Vec.so (legacy
  passes for llc only) says so once, naming llc -load, and the host goes on;
  MLBridgeRegAlloc.so without MLBRIDGE_RA_ENABLE says how to select it.
* MLBRIDGE_RA_ENABLE=1 with the plugin loaded as a pass plugin makes it the
  allocator of optimized code generation: a project of a .c and a .S file
  built with those flags (the integrated assembler never sees an option of
  the plugin); a ThinLTO link with two backend threads in lld, whose log
  shows our allocator ran in both modules' backends (the same bytes as with
  one thread). Never at -O0 (clang
  -O0, lld --lto-O0), never over an explicit -regalloc.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import plugins_of_each_llvm

from mlbridge.llvm.plugins.regalloc import settings_env

E2E = Path(__file__).resolve().parent
PROJECT = E2E / "programs" / "regalloc" / "project"
TIMEOUT = 120.0


plugins = plugins_of_each_llvm("regalloc", "mir2vec")


def run(cmd, env, cwd=None):
    """(returncode, stdout, stderr); never a signal or the dynamic linker's death."""
    from mlbridge.toolchain import run_command
    r = run_command([str(c) for c in cmd], timeout=TIMEOUT, env=env, cwd=cwd)
    assert r.returncode >= 0, f"killed by signal {-r.returncode}: {r.stderr[-2000:]}"
    for fatal in ("symbol lookup error", "Stack dump", "PLEASE submit", "LLVM ERROR"):
        assert fatal not in r.stderr, r.stderr[-2000:]
    return r.returncode, r.stdout, r.stderr


def logged(log: Path):
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.fixture(scope="module")
def objects(plugins, tmp_path_factory):
    """The project's units as objects and as ThinLTO bitcode, and what the
    program prints built at -O0."""
    tmp = tmp_path_factory.mktemp("ra-project")
    clang = plugins.tool("clang")
    env = settings_env(plugins)
    for unit in ("app.c", "mix.c", "add3.S"):
        assert run([clang, "-O2", "-c", PROJECT / unit, "-o", tmp / f"{unit}.o"], env)[0] == 0
    for unit in ("app.c", "mix.c"):
        assert run([clang, "-O2", "-flto=thin", "-c", PROJECT / unit, "-o", tmp / f"{unit}.thin.o"],
                   env)[0] == 0
    ref = tmp / "ref"
    assert run([clang, "-O0", *(PROJECT / u for u in ("app.c", "mix.c", "add3.S")), "-o", ref],
               env)[0] == 0
    return tmp, run([ref], env)[1]


def test_mir2vec_as_pass_plugin_says_how(plugins, objects, tmp_path):
    tmp, _ = objects
    mir2vec = plugins.mir2vec
    env = settings_env(plugins)
    ways = {
        "clang": [plugins.tool("clang"), "-O2", f"-fpass-plugin={mir2vec}", "-c",
                  PROJECT / "mix.c", "-o", tmp_path / "mix.o"],
        "opt": [plugins.tool("opt"), f"-load-pass-plugin={mir2vec}", "-passes=instcombine",
                tmp / "mix.c.thin.o", "-o", os.devnull],
        "lld": [plugins.tool("clang"), "-O2", "-flto=thin", "-fuse-ld=lld",
                f"-Wl,--load-pass-plugin={mir2vec}", "-Wl,--thinlto-jobs=2",
                tmp / "app.c.thin.o", tmp / "mix.c.thin.o", tmp / "add3.S.o", "-o", tmp_path / "app"],
    }
    for host, cmd in ways.items():
        rc, _, err = run(cmd, env)
        assert rc == 0, f"{host}: {err}"
        notes = [l for l in err.splitlines() if "has no passes" in l]
        assert len(notes) == 1, f"{host}: {err}"
        assert f"llc -load={mir2vec}" in notes[0], notes


def test_regalloc_as_pass_plugin_without_enable_says_how(plugins, objects, tmp_path):
    rc, _, err = run([plugins.tool("clang"), "-O2", f"-fpass-plugin={plugins.regalloc}", "-c",
                      PROJECT / "mix.c", "-o", tmp_path / "mix.o"], settings_env(plugins))
    assert rc == 0, err
    assert "MLBRIDGE_RA_ENABLE=1" in err and err.count("warning:") == 1, err
    # opt loads it too, enabled or not (it runs no code generator).
    tmp, _ = objects
    for env in (settings_env(plugins), settings_env(plugins, MLBRIDGE_RA_ENABLE=1)):
        rc, _, err = run([plugins.tool("opt"), f"-load-pass-plugin={plugins.regalloc}",
                          "-passes=instcombine", tmp / "mix.c.thin.o", "-o", os.devnull], env)
        assert rc == 0, err


def build_project(plugins, objects, tmp: Path, *flags, env):
    """The project built as a build system would, with CFLAGS `flags` for
    every unit (.c and .S): what the program prints."""
    clang = plugins.tool("clang")
    objs = []
    for unit in ("app.c", "mix.c", "add3.S"):
        obj = tmp / f"{unit}.o"
        rc, _, err = run([clang, *flags, "-c", PROJECT / unit, "-o", obj], env)
        assert rc == 0, err
        assert "warning" not in err, err
        objs.append(obj)
    rc, _, err = run([clang, *objs, "-o", tmp / "app"], env)
    assert rc == 0, err
    return run([tmp / "app"], env)[1]


def test_project_with_assembly_enabled_by_environment(plugins, objects, tmp_path):
    _, want = objects
    log = tmp_path / "ra.jsonl"
    cflags = ["-O2", "-Wall", "-Werror", f"-fpass-plugin={plugins.regalloc}"]
    got = build_project(plugins, objects, tmp_path, *cflags,
                        env=settings_env(plugins, MLBRIDGE_RA_ENABLE=1, MLBRIDGE_RA_LOG=log))
    assert got == want
    assert {r["function"] for r in logged(log)} >= {"main", "mix"}


def test_not_at_O0_nor_over_an_explicit_regalloc(plugins, objects, tmp_path):
    _, want = objects
    log = tmp_path / "ra.jsonl"
    env = settings_env(plugins, MLBRIDGE_RA_ENABLE=1, MLBRIDGE_RA_LOG=log)
    plugin = f"-fpass-plugin={plugins.regalloc}"
    assert build_project(plugins, objects, tmp_path, "-O0", plugin, env=env) == want
    assert build_project(plugins, objects, tmp_path, "-O2", plugin, "-mllvm", "-regalloc=greedy",
                         env=env) == want
    assert logged(log) == []


def thinlto_link(plugins, objects, out: Path, *flags, env):
    tmp, _ = objects
    rc, _, err = run([plugins.tool("clang"), "-O2", "-flto=thin", "-fuse-ld=lld",
                      f"-Wl,--load-pass-plugin={plugins.regalloc}", "-Wl,--thinlto-jobs=2",
                      *flags, tmp / "app.c.thin.o", tmp / "mix.c.thin.o", tmp / "add3.S.o", "-o", out],
                     env)
    assert rc == 0, err
    return run([out], env)[1]


def test_thinlto_backends_allocate_with_ours(plugins, objects, tmp_path):
    _, want = objects
    log = tmp_path / "ra.jsonl"
    env = settings_env(plugins, MLBRIDGE_RA_ENABLE=1, MLBRIDGE_RA_LOG=log)
    assert thinlto_link(plugins, objects, tmp_path / "app", env=env) == want
    modules = {(Path(r["module"]).name, r["function"]) for r in logged(log)}
    assert {("app.c.thin.o", "main"), ("mix.c.thin.o", "mix")} <= modules, modules
    # One backend thread links the same bytes (nothing shared between them).
    assert thinlto_link(plugins, objects, tmp_path / "app1", "-Wl,--thinlto-jobs=1",
                        env=env) == want
    assert (tmp_path / "app1").read_bytes() == (tmp_path / "app").read_bytes()
    # lld's -O0 backends and an explicit -regalloc keep LLVM's allocators.
    log.unlink()
    assert thinlto_link(plugins, objects, tmp_path / "app0", "-Wl,--lto-O0", env=env) == want
    assert thinlto_link(plugins, objects, tmp_path / "appg", "-Wl,-mllvm,-regalloc=greedy",
                        env=env) == want
    assert logged(log) == []
