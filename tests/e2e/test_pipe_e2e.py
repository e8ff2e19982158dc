"""C++ and C compilers <-> the Python model interface over real FIFOs.

The compiler side is tests/e2e/tools/e2e_compiler.cpp (and the C program
e2e_compiler_c.c); it prints one JSON object per result, checked here.
"""
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import mlbridge
from mlbridge import PipeCompilerInterface

SOURCE = Path(os.environ.get("MLBRIDGE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD = Path(os.environ.get("MLBRIDGE_BUILD_DIR", SOURCE / "build"))
COMPILER = BUILD / "tests" / "mlbridge-e2e-compiler"
C_COMPILER = BUILD / "tests" / "mlbridge-e2e-compiler-c"
FORMATS = ["bitstream", "json"]


def binary(path):
    assert path.exists(), f"{path} not built; build the project first (scripts/build.sh)"
    return str(path)


def start_compiler(base, serdes, scenario, *extra):
    cmd = [binary(COMPILER), "--base", str(base), "--serdes", serdes,
           "--scenario", scenario, *map(str, extra)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def events(proc, timeout=30):
    out, err = proc.communicate(timeout=timeout)
    lines = [json.loads(l) for l in out.splitlines() if l.strip()]
    return lines, err


def start_model_process(base, serdes, body):
    """A separate Python model process (so it can be killed) that runs body
    with `iface` and `obs` bound for each observation."""
    script = textwrap.dedent(f"""
        import os, signal, sys, time
        from mlbridge import PipeCompilerInterface
        with PipeCompilerInterface(base={str(base)!r}, serdes={serdes!r}, timeout=30) as iface:
            while (obs := iface.evaluate()) is not None:
        """) + textwrap.indent(textwrap.dedent(body), " " * 8)
    env = dict(os.environ, PYTHONPATH=str(SOURCE / "python"))
    proc = subprocess.Popen([sys.executable, "-c", script], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while not Path(f"{base}.out").exists():
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "model process did not create its FIFOs"
        time.sleep(0.01)
    return proc


def echo(obs):
    if "text" in obs:
        return obs["text"]
    assert obs["label"].startswith("dtype "), obs["label"]
    return np.concatenate([np.ravel(obs["scalar"]), np.ravel(obs["vector"])])


@pytest.mark.parametrize("serdes", FORMATS)
def test_every_type_round_trips_exactly(serdes):
    with PipeCompilerInterface(serdes=serdes, timeout=20) as iface:
        proc = start_compiler(iface.base, serdes, "types")
        served = iface.serve(echo, sessions=12, timeout=20)
        lines, err = events(proc)
    assert proc.returncode == 0, err + json.dumps(lines)
    echoed = {e["dtype"]: e["ok"] for e in lines if e["event"] == "echo"}
    assert served == 12
    assert set(echoed) == {"float", "double", "int8_t", "int16_t", "int32_t", "int64_t",
                           "uint8_t", "uint16_t", "uint32_t", "uint64_t", "bool", "string"}
    assert all(echoed.values()), echoed


def c_program_model(obs):
    spec = obs.advice_spec
    if spec.dtype == "int32_t":
        return int(obs["i"][0]) + len(obs["ia"])
    if spec.dtype == "int64_t" and list(spec.shape) == [1]:
        return int(obs["l"][0])
    if spec.dtype == "float" and list(spec.shape) == [1]:
        return float(obs["f"][0] + obs["fa"].sum())
    if spec.dtype == "double" and list(spec.shape) == [1]:
        return float(obs["d"][0] + obs["da"].sum())
    if spec.dtype == "bool":
        return not bool(obs["b"][0])
    if spec.dtype == "float":
        return obs["fa"][::-1]
    if spec.dtype == "int64_t":
        return np.concatenate([obs["la"], obs["i"].astype(np.int64)])
    if spec.dtype == "double":
        return np.zeros(0)
    raise AssertionError(f"unexpected advice spec {spec}")


@pytest.mark.parametrize("serdes", FORMATS)
def test_c_program_against_python(serdes):
    with PipeCompilerInterface(serdes=serdes, timeout=20) as iface:
        proc = subprocess.Popen([binary(C_COMPILER), iface.base, serdes],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen = []

        def model(obs):
            seen.append(obs)
            return c_program_model(obs)

        iface.serve(model, sessions=1, timeout=20)
        lines, err = events(proc)
    by_event = {e["event"]: e for e in lines}
    assert by_event["done"]["ok"], err + json.dumps(lines)
    assert by_event["scalars"] == {"event": "scalars", "int": 10, "int64": -9000000000,
                                   "float": 2.5, "double": 2.75, "bool": False}
    assert by_event["float_array"]["n"] == 2 and by_event["float_array"]["v0"] == 1.5
    assert by_event["int64_array"] == {"event": "int64_array", "n": 3, "v": [4, 5, 7]}
    assert by_event["double_array"]["n"] == 0
    assert by_event["small_buffer"] == {"event": "small_buffer", "code": "too-large", "n": 3}
    assert by_event["wrong_type"]["code"] == "type-mismatch"
    assert by_event["wrong_type"]["has_message"] is True
    first = seen[0]
    assert first.context == "c-main"
    assert first["s"] == "héllo"
    assert first["ba"].dtype == np.bool_ and first["ba"].tolist() == [True, False]
    assert first["l"].dtype == np.int64 and first["l"][0] == -9000000000


def test_two_consecutive_compiler_sessions_on_one_interface():
    with PipeCompilerInterface(serdes="bitstream", timeout=20) as iface:
        results = []

        def compile_twice():
            for _ in range(2):
                proc = start_compiler(iface.base, "bitstream", "requests", "--count", 3)
                results.append(events(proc))

        t = threading.Thread(target=compile_twice)
        t.start()
        served = iface.serve(lambda obs: 2 * int(obs["i"][0]), sessions=2, timeout=20)
        t.join(30)
    assert served == 6
    for lines, err in results:
        assert [e["value"] for e in lines if e["event"] == "advice"] == [0, 2, 4], err
        assert lines[-1] == {"event": "done", "ok": True}


@pytest.mark.parametrize("serdes", FORMATS)
def test_late_reply_never_reaches_the_next_compiler(serdes):
    """Compiler A gives up while the model computes; compiler B connects at
    once. The model's late answer to A must not become B's answer (B asks
    0,1,2,3 and must get 0,2,4,6, not 999,0,2,4)."""
    with PipeCompilerInterface(serdes=serdes, timeout=20) as iface:
        first = start_compiler(iface.base, serdes, "requests", "--count", 1,
                               "--reply-timeout-ms", 300)
        late = iface.evaluate()
        lines, err = events(first)
        assert lines[0]["event"] == "error" and lines[0]["code"] == "timeout", err
        second = start_compiler(iface.base, serdes, "requests", "--count", 4)
        time.sleep(0.3)  # B is connected, has asked, and waits
        delivered = iface.populate_buffer(999)  # the answer A no longer waits for
        iface.serve(lambda obs: 2 * int(obs["i"][0]), sessions=2, timeout=10)
        lines, err = events(second)
    assert [e["value"] for e in lines if e["event"] == "advice"] == [0, 2, 4, 6], err
    assert lines[-1] == {"event": "done", "ok": True}
    assert delivered is False and late.index == 0


@pytest.mark.parametrize("serdes", FORMATS)
def test_model_killed_mid_request_gives_error_within_deadline(tmp_path, serdes):
    base = tmp_path / "ch"
    model = start_model_process(base, serdes, "os.kill(os.getpid(), signal.SIGKILL)")
    proc = start_compiler(base, serdes, "requests", "--count", 3, "--reply-timeout-ms", 10000)
    lines, err = events(proc)
    model.wait(10)
    assert proc.returncode == 1
    errors = [e for e in lines if e["event"] == "error"]
    assert errors[0]["code"] == "peer-closed", errors
    assert errors[0]["elapsed_ms"] < 2000, "must not wait for the 10 s deadline"
    assert errors[1]["code"] == "unavailable" and errors[1]["elapsed_ms"] < 50


def test_slow_model_hits_the_reply_deadline(tmp_path):
    base = tmp_path / "ch"
    model = start_model_process(base, "bitstream", "time.sleep(30)")
    try:
        proc = start_compiler(base, "bitstream", "requests", "--reply-timeout-ms", 500)
        lines, err = events(proc)
    finally:
        model.kill()
        model.wait()
    error = next(e for e in lines if e["event"] == "error")
    assert error["code"] == "timeout", error
    assert 450 <= error["elapsed_ms"] < 2500


def test_compiler_killed_python_side_returns():
    with PipeCompilerInterface(serdes="bitstream", timeout=20) as iface:
        proc = start_compiler(iface.base, "bitstream", "requests", "--count", 1000000)
        try:
            for _ in range(3):
                obs = iface.evaluate()
                iface.populate_buffer(2 * int(obs["i"][0]))
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            start = time.monotonic()
            obs = iface.evaluate(timeout=10)
            if obs is not None:  # a request already in the pipe when it died
                with pytest.raises(mlbridge.PeerClosed):
                    iface.populate_buffer(0)
            else:
                assert not iface.session_open
            assert time.monotonic() - start < 2.0
        finally:
            proc.kill()
            proc.wait()


def test_missing_fifo_is_an_error_in_bounded_time(tmp_path):
    start = time.monotonic()
    proc = start_compiler(tmp_path / "absent" / "ch", "json", "requests",
                          "--open-timeout-ms", 500)
    lines, err = events(proc)
    error = next(e for e in lines if e["event"] == "error")
    assert error["code"] == "not-found" and "does not exist" in error["message"]
    assert time.monotonic() - start < 3.0


def test_python_side_times_out_when_no_compiler_comes():
    with PipeCompilerInterface(timeout=0.5) as iface:
        start = time.monotonic()
        with pytest.raises(mlbridge.TimeoutError):
            iface.evaluate()
        assert time.monotonic() - start < 1.5


@pytest.mark.parametrize("program", ["ask_model", "ask_model_c"])
def test_examples_work(tmp_path, program):
    base = tmp_path / "mlb"
    env = dict(os.environ, PYTHONPATH=str(SOURCE / "python"))
    model = subprocess.Popen([sys.executable, str(SOURCE / "examples/python/serve_model.py"),
                              str(base)], env=env, stderr=subprocess.PIPE)
    try:
        out = subprocess.run([binary(BUILD / "examples" / program), str(base)],
                             capture_output=True, text=True, timeout=30)
    finally:
        model.terminate()
        model.wait(10)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "decision: 1"


def test_demo_runs_end_to_end():
    out = subprocess.run([binary(BUILD / "tools" / "mlbridge-demo")], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "demo finished: all exchanges succeeded" in out.stdout
    assert out.stdout.count("inline_decision=") == 12  # 6 per SerDes
