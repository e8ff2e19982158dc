"""Loop distribution under ThinLTO with several backend threads (issue 34,
item 6): lld loads MLBridgeLoopDistribution.so into its LTO backends
(``-Wl,--load-pass-plugin``), which compile many modules at once, each on
its own thread with its own pipeline. The plugin keeps no process-wide state
(a session per module), so a link with 8 backend threads does not crash,
gives the same bytes as a link with one, and the program prints what the
plain ``-O2`` build prints. The settings come from MLBRIDGE_LD_* variables
(lld parses ``-mllvm`` before it loads plugins): none (the shipped model
decides) and the built-in policy, which distributes loops of every unit on
both versions. On LLVM 19 and 22 (ld.lld-19 / ld.lld-22).
"""

from __future__ import annotations

import os

import pytest
from conftest import plugins_of_each_llvm

from mlbridge.difftest.loop_kernels import many_units_program
from mlbridge.llvm.plugins import loop_distribution as ld
from mlbridge.toolchain import run_command

UNITS = 20
#: Links with 8 backend threads compared with the one-thread link.
THREADED_LINKS = 2
RUNNERS = {"shipped": {}, "builtin": {"MLBRIDGE_LD_RUNNER": "default"}}


plugins = plugins_of_each_llvm()


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_thinlto_link_with_many_threads_is_correct_and_deterministic(plugins, clang,
                                                                     tmp_path, runner):
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(ld.ENV_PREFIX)},
           **RUNNERS[runner]}
    sources = []
    for name, text in many_units_program(UNITS).items():
        (tmp_path / name).write_text(text)
        sources.append(tmp_path / name)

    def run(cmd, what, extra_env=None):
        res = run_command(cmd, timeout=300, env={**env, **(extra_env or {})})
        assert res.returncode == 0, f"{what} failed ({res.returncode}): {res.stderr[-2000:]}"
        return res

    plain = tmp_path / "plain"
    run([clang, "-O2", *map(str, sources), "-o", str(plain)], "plain build")
    expected = run([str(plain)], "plain program").stdout
    objects = []
    for src in sources:
        obj = src.with_suffix(".o")
        run([clang, "-O2", "-flto=thin", "-c", str(src), "-o", str(obj)], f"compile {src.name}")
        objects.append(str(obj))

    def link(jobs: int, tag: str) -> bytes:
        exe = tmp_path / f"lto-{tag}"
        log = tmp_path / f"lto-{tag}.jsonl"
        run([clang, "-O2", "-flto=thin", "-fuse-ld=lld",
             f"-Wl,--load-pass-plugin={ld.plugin(plugins)}", f"-Wl,--thinlto-jobs={jobs}",
             *objects, "-o", str(exe)], f"ThinLTO link with {jobs} backend threads",
            {"MLBRIDGE_LD_LOG": str(log)})
        assert run([str(exe)], f"program linked with {jobs} threads").stdout == expected
        rows = ld.read_log(log)
        assert len({r["module"] for r in rows}) >= UNITS, "the plugin did not run per unit"
        if runner == "builtin":
            assert sum(r["result"] == "distributed" for r in rows) >= UNITS, rows[:5]
        # Loop ids count per module: the same in every link.
        ids = sorted((r["module"], r["function"], r["loop_id"]) for r in rows
                     if r["loop_id"] >= 0)
        return exe.read_bytes(), ids

    one, one_ids = link(1, "j1")
    for n in range(THREADED_LINKS):
        many, many_ids = link(8, f"j8-{n}")
        assert many_ids == one_ids
        assert many == one, f"the link with 8 backend threads (#{n}) differs from one thread"
