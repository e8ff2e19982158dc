"""mlbridge.toolchain, the one compiler-process layer, against clang-19:
the toolchain is found once and honours $MLBRIDGE_CLANG; a compile returns
the object's .text, the child's CPU seconds and wall seconds; failures,
crashes, timeouts and missing objects raise CompileError saying which."""

import os
import time

import pytest

from conftest import require_llvm_tool

from mlbridge.llvm.host import advisor_host
from mlbridge.toolchain import process
from mlbridge.toolchain.measure import elf_text_size
from mlbridge.toolchain import CompileError, compile, run_tool, toolchain

SOURCE = "int f(int x) { return x * 3 + 1; }\nint g(int y) { return f(y) - f(y + 1); }\n"


@pytest.fixture
def clang():
    return require_llvm_tool("clang-19")


def test_the_toolchain_is_the_one_named_by_mlbridge_clang(clang, monkeypatch):
    monkeypatch.setenv("MLBRIDGE_CLANG", clang)
    tc = toolchain()
    assert tc.clang == clang and tc.major == 19
    assert tc.version.startswith(("clang version 19", "Debian clang version 19"))
    assert len(tc.tag) == 8
    assert "19" in run_tool([tc.tool("llvm-dis"), "--version"])
    monkeypatch.setenv("MLBRIDGE_CLANG", "/nonexistent/clang")
    with pytest.raises(CompileError, match="cannot run the compiler '/nonexistent/clang'"):
        toolchain()


def test_a_compile_reports_text_cpu_and_wall_seconds(clang, tmp_path):
    src = tmp_path / "a.c"
    src.write_text(SOURCE)
    obj = tmp_path / "a.o"
    res = compile([clang, "-Oz", "-c", src, "-o", obj])
    assert res.output == str(obj) and res.text == elf_text_size(obj) > 0
    assert 0 < res.cpu_seconds < 60 and res.wall_seconds > 0 and res.run is None


@pytest.fixture
def ir(clang, tmp_path):
    """SOURCE as -Oz bitcode before any pass (what training compiles)."""
    src = tmp_path / "a.c"
    src.write_text(SOURCE)
    out = tmp_path / "a.bc"
    compile([clang, "-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-c", src,
             "-o", out], measure_text=False)
    return out


def test_an_interactive_compile_is_served_and_measured(clang, ir, tmp_path):
    asked = []

    def never(obs):
        asked.append(obs)
        return 0
    res = compile([clang, "-Oz", "-c", ir, "-o", tmp_path / "a.o"],
                  host=advisor_host({"inline": never}))
    assert res.text > 0 and res.cpu_seconds > 0 and res.run.requests["inline"] == len(asked) > 0


def test_a_policy_that_raises_stops_the_served_compile_and_is_named(clang, ir, tmp_path):
    def broken(obs):
        raise ZeroDivisionError("no policy today")
    with pytest.raises(CompileError, match="ZeroDivisionError: no policy today"):
        compile([clang, "-Oz", "-c", ir, "-o", tmp_path / "a.o"],
                host=advisor_host({"inline": broken}), timeout=60)


def test_serving_takes_a_callable_and_names_where_policies_by_name_are(clang, tmp_path):
    from mlbridge.toolchain import serve_compiler
    with pytest.raises(TypeError, match=r"policy must be a callable.*got str 'default'.*"
                                        r"mlbridge\.llvm\.policies\.resolve"):
        serve_compiler(lambda ch: [clang, "--version"], "default")


def test_a_failed_compile_names_the_error(clang, tmp_path):
    src = tmp_path / "bad.c"
    src.write_text("int f( { return }\n")
    with pytest.raises(CompileError, match=r"error: .*\(clang-19, exit status 1\)"):
        compile([clang, "-Oz", "-c", src, "-o", tmp_path / "bad.o"])


def test_no_object_and_missing_compiler_are_errors(clang, tmp_path):
    src = tmp_path / "a.c"
    src.write_text(SOURCE)
    with pytest.raises(CompileError, match="wrote no ELF object"):
        compile([clang, "-Oz", "-S", src, "-o", tmp_path / "a.s"])
    with pytest.raises(CompileError, match="cannot run /nonexistent/cc"):
        compile(["/nonexistent/cc", "-c", src, "-o", tmp_path / "a.o"])


def test_a_crash_and_a_timeout_are_reported_and_leave_nothing_running(tmp_path):
    crash = tmp_path / "crash.sh"
    crash.write_text("#!/bin/sh\necho 'fatal: boom' >&2\nkill -SEGV $$\n")
    crash.chmod(0o755)
    with pytest.raises(CompileError, match=r"fatal: boom \(crash.sh, killed by signal 11\)"):
        compile([crash, "-o", tmp_path / "x.o"])
    hang = tmp_path / "hang.sh"
    pidfile = tmp_path / "pid"
    hang.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pidfile}\nwait\n")
    hang.chmod(0o755)
    t0 = time.monotonic()
    with pytest.raises(CompileError, match=r"timed out after 1 s"):
        compile([hang, "-o", tmp_path / "x.o"], timeout=1.0)
    assert time.monotonic() - t0 < 15
    child = int(pidfile.read_text())   # the compiler's own child is gone too
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and os.path.exists(f"/proc/{child}") and \
            open(f"/proc/{child}/stat").read().split()[2] != "Z":
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{child}") or \
        open(f"/proc/{child}/stat").read().split()[2] == "Z"


def test_the_supervisor_keeps_the_rusage_of_exactly_its_child(tmp_path):
    busy = ["sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"]
    polled = process.start(busy)
    while polled.poll() is None:
        time.sleep(0.01)
    waited = process.start(busy)
    waited.wait(timeout=60)
    for p in (polled, waited):
        assert p.returncode == 0 and 0 < process.cpu_seconds(p) < 30
    idle = process.start(["sleep", "0.2"])
    idle.wait(timeout=10)
    assert process.cpu_seconds(idle) < 0.05   # not the busy siblings' time
