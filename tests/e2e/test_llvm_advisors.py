"""End to end: mlbridge.llvm serving stock opt-19 / llc-19 / clang-19.

Inliner direction and byte-for-byte default, several sessions per process,
the clang driver with several channels at once, and the host's failure
handling (no pipes opened, a policy that raises, an illegal eviction index,
a hung or failing compiler, the command line). Eviction and priority
against run outputs: test_llvm_advisors_regalloc.py; the dataset and the
gymnasium environment: test_llvm_advisors_env.py.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

#: Limit for one served compilation; these take well under a second.
RUN_TIMEOUT = 60.0

_DEFINE_RE = re.compile(r"^define\b[^@\n]*@([\w.$]+)\(", re.M)
_CALL_RE = re.compile(r"\bcall\b[^@\n]*@([\w.$]+)\(")


def ir_counts(text: str):
    """(defined functions, direct calls to them): the call sites the inliner
    decides about (LLVM 22's instcombine adds library calls, e.g. strlen)."""
    defined = set(_DEFINE_RE.findall(text))
    calls = [c for c in _CALL_RE.findall(text) if c in defined]
    return len(defined), len(calls)


@pytest.fixture(scope="module")
def llvm(mlbridge_pkg):
    import mlbridge.llvm as m
    return m


@pytest.fixture(scope="module")
def o2_ir(e2e, clang, program_sources, tmp_path_factory):
    """name -> optimized IR (clang -O2): what llc's register allocator
    has real work on (program_ir is unoptimized, for the inliner)."""
    d = tmp_path_factory.mktemp("o2")
    out = {}
    for name in ("sha256", "mixer"):
        out[name] = d / f"{name}.ll"
        e2e.run_checked([clang, "-O2", "-emit-llvm", "-S", str(program_sources[name]),
                         "-o", str(out[name])])
    return out


def _opt(opt, ll, out, passes="scc-oz-module-inliner"):
    return [opt, f"-passes={passes}", str(ll), "-S", "-o", str(out)]


# ---- inliner ----------------------------------------------------------------------

@pytest.mark.parametrize("program", ["arith", "sort", "strings"])
def test_inline_always_and_never_move_the_ir_in_opposite_directions(
        llvm, opt, program_ir, tmp_path, program):
    ll = program_ir[program]
    before = ir_counts(ll.read_text())
    res = {}
    for policy in ("always", "never"):
        out = tmp_path / f"{program}.{policy}.ll"
        r = llvm.run(_opt(opt, ll, out), inline=policy, timeout=RUN_TIMEOUT).check()
        assert r.requests["inline"] > 0 and r.sessions["inline"] == 1
        assert r.returncode == 0 and r.error is None and not r.killed
        res[policy] = ir_counts(out.read_text())
    (a_def, a_calls), (n_def, n_calls) = res["always"], res["never"]
    assert a_calls < n_calls and a_def < n_def, res
    assert res["never"] == before  # "never" keeps every call the model saw


def test_inline_policies_on_a_csmith_program(llvm, e2e, opt, clang, csmith, tmp_path):
    """A generated program (fixed seed): "always" < "never" in call sites,
    and "default" is byte for byte plain opt-19, as for hand-written ones."""
    src = tmp_path / "gen.c"
    e2e.run_checked([csmith["csmith"], "--seed", "10", "--max-funcs", "4",
                     "--no-volatiles", "-o", str(src)])
    ll = tmp_path / "gen.ll"
    e2e.run_checked([clang, "-O2", "-w", "-I", csmith["include"], "-Xclang",
                     "-disable-llvm-passes", "-emit-llvm", "-S", str(src), "-o", str(ll)])
    counts = {}
    for policy in ("always", "never", "default"):
        out = tmp_path / f"gen.{policy}.ll"
        r = llvm.run(_opt(opt, ll, out), inline=policy, timeout=RUN_TIMEOUT).check()
        assert r.requests["inline"] > 0
        counts[policy] = ir_counts(out.read_text())
    assert counts["always"][1] < counts["never"][1], counts
    assert counts["always"][0] <= counts["never"][0], counts
    plain = tmp_path / "gen.plain.ll"
    e2e.run_checked(_opt(opt, ll, plain))
    assert (tmp_path / "gen.default.ll").read_bytes() == plain.read_bytes()


# LLVM 19's -Oz decisions on these programs (so "default" is neither
# "always" nor "never" on strings, and is "never" on sha256).
DEFAULT_DECISIONS = {"strings": {0, 1}, "sha256": {0}, "sort": {1}}


@pytest.mark.parametrize("program", sorted(DEFAULT_DECISIONS))
def test_inline_default_reproduces_plain_opt_byte_for_byte(
        llvm, e2e, opt, llvm_major, program_ir, tmp_path, program):
    """The "default" policy answers LLVM's own decision, which LLVM 17-20
    misplace (index 25); the host puts it back, so the IR is exactly plain
    opt's. The trace shows both decisions and, on 17-20, the lost feature as
    -1; LLVM 22 sends both in their places."""
    ll = program_ir[program]
    served = tmp_path / f"{program}.default.ll"
    trace = tmp_path / f"{program}.npz"
    r = llvm.run(_opt(opt, ll, served), inline="default", trace=trace,
                 timeout=RUN_TIMEOUT).check()
    assert "-inliner-interactive-include-default" in r.command
    plain = tmp_path / f"{program}.plain.ll"
    e2e.run_checked(_opt(opt, ll, plain))
    assert served.read_bytes() == plain.read_bytes()
    t = llvm.load_trace(trace)
    feats = t.features("inline")
    decisions = feats["inlining_default"][:, 0]
    np.testing.assert_array_equal(t.advice("inline"), decisions)
    assert set(decisions.tolist()) == DEFAULT_DECISIONS[program]
    block_counts = set(feats["callee_basic_block_count"][:, 0].tolist())
    if llvm_major <= 20:
        assert block_counts == {-1}
    else:
        assert min(block_counts) >= 1, block_counts
    assert t.runs["text_bytes"].tolist() == [-1]  # IR output: no ELF text
    assert t.runs["output_bytes"].tolist() == [plain.stat().st_size]


def test_two_inliner_sessions_in_one_opt_run(llvm, opt, program_ir, tmp_path):
    """Two inliner passes: two sessions (new header, counter back to 0).
    Under "never" the second asks the same questions again; under "always"
    it is a header and a context without any observation."""
    ll = program_ir["arith"]
    passes = "scc-oz-module-inliner,scc-oz-module-inliner"
    t = tmp_path / "never.npz"
    r = llvm.run(_opt(opt, ll, tmp_path / "n.ll", passes), inline="never", trace=t,
                 timeout=RUN_TIMEOUT).check()
    assert r.sessions["inline"] == 2
    trace = llvm.load_trace(t)
    session = trace.column("inline", "session")
    first = int((session == 0).sum())
    assert first > 0 and int((session == 1).sum()) == first
    assert trace.column("inline", "index").tolist() == list(range(first)) * 2
    assert r.requests["inline"] == 2 * first

    single = llvm.run(_opt(opt, ll, tmp_path / "a1.ll"), inline="always",
                      timeout=RUN_TIMEOUT).check()
    r2 = llvm.run(_opt(opt, ll, tmp_path / "a2.ll", passes), inline="always",
                  timeout=RUN_TIMEOUT).check()
    assert r2.sessions["inline"] == 2
    assert r2.requests["inline"] == single.requests["inline"] > 0


# ---- the clang driver with several channels -------------------------------------------

def test_clang_driver_serves_inliner_eviction_and_priority_at_once(
        llvm, e2e, clang, program_sources, tmp_path):
    """One clang-19 -O2 process, three advisors on three FIFO pairs served by
    three threads; the program still computes the same thing."""
    src = program_sources["mixer"]
    seen = {"inline": set(), "evict": 0}

    def inline(obs):  # a Python callable: inline small callees only
        seen["inline"].add(obs.context)
        return int(obs["callee_basic_block_count"][0] <= 4)

    def evict(obs):
        seen["evict"] += 1
        return llvm.builtin("evict", "last")(obs)

    exe = tmp_path / "mixer.served"
    r = llvm.run([clang, "-O2", str(src), "-o", str(exe)], inline=inline, evict=evict,
                 priority="size", timeout=RUN_TIMEOUT).check()
    assert r.command.count("-mllvm") == 6
    assert all(r.requests[a] > 0 for a in ("inline", "evict", "priority")), r.requests
    assert r.sessions == {"inline": 1, "evict": 1, "priority": 1}
    assert seen["evict"] == r.requests["evict"]
    ref = tmp_path / "mixer.ref"
    e2e.run_checked([clang, "-O2", str(src), "-o", str(ref)])
    assert e2e.run_checked([str(exe)]) == e2e.run_checked([str(ref)])


# ---- the host's failure handling ----------------------------------------------------

def test_llc_O0_never_opens_the_pipes(llvm, llc, o2_ir, tmp_path):
    t0 = time.monotonic()
    r = llvm.run([llc, "-O0", str(o2_ir["sha256"]), "-o", str(tmp_path / "x.s")],
                 evict="first", priority="size", timeout=RUN_TIMEOUT)
    assert r.ok and r.returncode == 0 and r.error is None
    assert r.requests == {"evict": 0, "priority": 0}
    assert r.sessions == {"evict": 0, "priority": 0}
    assert (tmp_path / "x.s").stat().st_size > 0
    assert time.monotonic() - t0 < 10 and not r.timed_out


def test_policy_that_raises_stops_the_compiler(llvm, llc, o2_ir, tmp_path):
    calls = []

    def flaky(obs):
        calls.append(obs.index)
        if len(calls) == 3:
            raise RuntimeError("model exploded")
        return llvm.builtin("evict", "noevict")(obs)

    t0 = time.monotonic()
    r = llvm.run([llc, "-O2", str(o2_ir["sha256"]), "-o", str(tmp_path / "x.s")],
                 evict=flaky, timeout=RUN_TIMEOUT)
    assert time.monotonic() - t0 < RUN_TIMEOUT / 4
    assert not r.ok and r.killed and r.returncode == -9
    assert r.requests["evict"] == 2
    assert "RuntimeError: model exploded" in r.error and "observation 2" in r.error
    assert isinstance(r.exception, llvm.PolicyError)
    assert isinstance(r.exception.__cause__, RuntimeError)
    with pytest.raises(llvm.RunError, match="model exploded"):
        r.check()


def test_illegal_eviction_index_never_reaches_the_compiler(llvm, e2e, llc, clang,
                                                          o2_ir, program_sources,
                                                          tmp_path):
    """A masked column would crash llc-19: the host refuses it and stops the
    compiler instead (no LLVM crash report). With on_invalid="fallback"
    the compile goes on with a safe answer and the program stays correct."""
    def masked(obs):
        return llvm.eviction_mask(obs).index(0)  # the first illegal column

    ll = o2_ir["sha256"]
    r = llvm.run([llc, "-O2", str(ll), "-o", str(tmp_path / "x.s")], evict=masked,
                 timeout=RUN_TIMEOUT)
    assert not r.ok and r.killed and r.returncode == -9
    assert r.requests["evict"] == 0
    assert isinstance(r.exception, llvm.InvalidAdvice)
    assert "is not a legal column: its mask is 0" in r.error
    assert "Stack dump" not in r.stderr and "PLEASE submit" not in r.stderr

    obj = tmp_path / "fallback.o"
    f = llvm.run([llc, "-O2", "-relocation-model=pic", "-filetype=obj", str(ll),
                  "-o", str(obj)], evict=masked, on_invalid="fallback",
                 timeout=RUN_TIMEOUT).check()
    assert f.fallbacks["evict"] == f.requests["evict"] > 0
    exe = tmp_path / "fallback.exe"
    e2e.run_checked([clang, str(obj), "-o", str(exe)])
    ref = tmp_path / "ref.exe"
    e2e.run_checked([clang, "-O2", str(program_sources["sha256"]), "-o", str(ref)])
    assert e2e.run_checked([str(exe)]) == e2e.run_checked([str(ref)])


def test_hung_compiler_is_killed_at_the_time_limit(llvm, opt, tmp_path):
    """opt-19 blocks forever opening an input FIFO nobody writes: the host
    neither waits for its pipes nor for its exit beyond the limit."""
    stuck = tmp_path / "input.ll"
    os.mkfifo(stuck)
    t0 = time.monotonic()
    r = llvm.run([opt, "-passes=scc-oz-module-inliner", str(stuck), "-S", "-o",
                  str(tmp_path / "o.ll")], inline="always", timeout=1.5)
    elapsed = time.monotonic() - t0
    assert 1.4 < elapsed < 8, elapsed
    assert r.timed_out and r.killed and r.returncode == -9
    assert "did not finish within 1.5 s" in r.error
    assert r.requests == {"inline": 0}


def test_compiler_that_fails_early_is_reported(llvm, llc, tmp_path):
    t0 = time.monotonic()
    r = llvm.run([llc, "-O2", str(tmp_path / "missing.ll")], evict="first",
                 timeout=RUN_TIMEOUT)
    assert time.monotonic() - t0 < 10
    assert r.returncode == 1 and r.error is None and not r.killed
    assert "missing.ll" in r.stderr and "No such file" in r.stderr
    assert r.requests == {"evict": 0}
    with pytest.raises(llvm.RunError, match="exited with status 1"):
        r.check()


def test_compiler_dying_mid_request_is_reported(llvm, llc, o2_ir, tmp_path):
    """The compiler dies (SIGKILL from outside) while it waits for an
    answer: the host notices at once and reports its exit status; it is
    not a host error."""
    holder = {}

    def policy(obs):
        holder["n"] = holder.get("n", 0) + 1
        if holder["n"] == 3:
            os.kill(holder["comp"].proc.pid, signal.SIGKILL)
            holder["comp"].proc.wait(5)
        return llvm.builtin("evict", "noevict")(obs)

    t0 = time.monotonic()
    with llvm.Compilation([llc, "-O2", str(o2_ir["sha256"]), "-o", str(tmp_path / "x.s")],
                          {"evict": policy}, timeout=RUN_TIMEOUT) as comp:
        holder["comp"] = comp
        comp.start()
        r = comp.serve()
    assert time.monotonic() - t0 < 10
    assert r.returncode == -signal.SIGKILL and not r.killed and r.error is None
    assert r.requests["evict"] == 2 and holder["n"] == 3
    assert not r.ok


def test_stdout_and_exit_status_are_returned(llvm, opt, program_ir):
    """opt writing its IR to stdout: captured whole (the host drains it
    while serving, so a large output cannot block the compiler)."""
    r = llvm.run([opt, "-passes=scc-oz-module-inliner", str(program_ir["sha256"]),
                  "-S"], inline="never", timeout=RUN_TIMEOUT).check()
    assert r.stdout.startswith("; ModuleID") and "define" in r.stdout
    assert r.stderr == "" and r.returncode == 0
    b = llvm.run([opt, "-passes=scc-oz-module-inliner", str(program_ir["sha256"])],
                 inline="never", text=False, timeout=RUN_TIMEOUT).check()
    assert b.stdout.startswith(b"BC")  # bitcode magic


# ---- the command line ----------------------------------------------------------------

def _cli(args, cwd, timeout=RUN_TIMEOUT):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "python")
    return subprocess.run([sys.executable, "-m", "mlbridge.llvm", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def test_cli_serves_and_traces(llvm, opt, program_ir, tmp_path):
    out = tmp_path / "o.ll"
    p = _cli(["inline", "--policy", "always", "--stats", "--trace", "t.npz", "--",
              opt, "-passes=scc-oz-module-inliner", str(program_ir["sort"]), "-S", "-o",
              str(out)], tmp_path)
    assert p.returncode == 0, p.stderr
    m = re.search(r"inline: (\d+) requests in 1 session\(s\)", p.stderr)
    assert m and int(m.group(1)) > 0, p.stderr
    assert out.read_text().startswith("; ModuleID")
    t = llvm.load_trace(tmp_path / "t.npz")
    assert len(t) == int(m.group(1)) and set(t.advice("inline").tolist()) == {1}


def test_cli_policy_error_and_compiler_status(llc, o2_ir, tmp_path):
    pol = tmp_path / "pol.py"
    pol.write_text("def broken(obs):\n    raise ValueError('no idea')\n")
    p = _cli(["evict", "--policy", f"{pol}:broken", "--", llc, "-O2",
              str(o2_ir["sha256"]), "-o", "x.s"], tmp_path)
    assert p.returncode == 70, p.stderr
    assert "mlbridge.llvm: error: evict: evict policy 'broken' raised ValueError: no idea" \
        in p.stderr
    q = _cli(["evict", "--policy", "first", "--", llc, "missing.ll"], tmp_path)
    assert q.returncode == 1 and "missing.ll" in q.stderr  # the compiler's own status
