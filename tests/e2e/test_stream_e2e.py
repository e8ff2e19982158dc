"""C++ and C compilers <-> the Python model interfaces, over real FIFOs and
over shared memory: what both transports promise alike (docs/pipes.md,
docs/shm.md). What only one of them does is in test_pipe_e2e.py and
test_shm_e2e.py."""
import json
import signal
import threading
import time

import numpy as np
import pytest

import mlbridge
from stream_e2e import (FORMATS, INTERFACES, TRANSPORTS, c_program_model, channel, cpu_seconds,
                        echo, events, start_c_compiler, start_compiler, start_model_process,
                        twice)

DTYPES = {"float", "double", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
          "uint32_t", "uint64_t", "bool", "string"}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("serdes", FORMATS)
def test_every_type_round_trips_exactly(transport, serdes):
    with INTERFACES[transport](serdes=serdes, timeout=20) as iface:
        proc = start_compiler(transport, channel(iface), serdes, "types")
        iface.process = proc
        served = iface.serve(echo, sessions=12, timeout=20)
        lines, err = events(proc)
    assert proc.returncode == 0, err + json.dumps(lines)
    echoed = {e["dtype"]: e["ok"] for e in lines if e["event"] == "echo"}
    assert served == 12
    assert set(echoed) == DTYPES
    assert all(echoed.values()), echoed
    assert lines[-1] == {"event": "done", "ok": True}, err


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("serdes", FORMATS)
def test_c_program_against_python(transport, serdes):
    with INTERFACES[transport](serdes=serdes, timeout=20) as iface:
        proc = start_c_compiler(transport, channel(iface), serdes)
        iface.process = proc
        seen = []

        def model(obs):  # copies: shared-memory views show the next request later
            seen.append((obs.context, obs["s"], np.array(obs["ba"]), np.array(obs["l"]))
                        if "s" in obs else (obs.context,))
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
    context, text, bools, longs = seen[0]
    assert context == "c-main"
    assert text == "héllo"
    assert bools.dtype == np.bool_ and bools.tolist() == [True, False]
    assert longs.dtype == np.int64 and longs[0] == -9000000000


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_consecutive_sessions_with_contexts_on_one_interface(transport):
    with INTERFACES[transport](serdes="bitstream", timeout=20) as iface:
        results, contexts = [], []

        def compile_three_times():
            for _ in range(3):
                results.append(events(start_compiler(transport, channel(iface), "bitstream",
                                                     "requests", "--count", 4)))

        def model(obs):
            contexts.append((obs.context, obs.index))
            return twice(obs)

        t = threading.Thread(target=compile_three_times)
        t.start()
        served = iface.serve(model, sessions=3, timeout=20)
        t.join(30)
    assert served == 12
    for lines, err in results:
        assert [e["value"] for e in lines if e["event"] == "advice"] == [0, 2, 4, 6], err
        assert lines[-1] == {"event": "done", "ok": True}
    # Every request is in its own context, so every index restarts at 0.
    assert contexts == [(f"request{k}", 0) for k in range(4)] * 3


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("serdes", FORMATS)
def test_model_killed_mid_request_gives_error_within_deadline(tmp_path, transport, serdes):
    where = tmp_path / ("ch" if transport == "pipe" else "model.sock")
    model = start_model_process(transport, where, serdes, "os.kill(os.getpid(), signal.SIGKILL)")
    proc = start_compiler(transport, where, serdes, "requests", "--count", 3,
                          "--reply-timeout-ms", 10000)
    lines, err = events(proc)
    model.wait(10)
    assert proc.returncode == 1
    errors = [e for e in lines if e["event"] == "error"]
    assert errors[0]["code"] == "peer-closed", errors
    assert errors[0]["elapsed_ms"] < 2000, "must not wait for the 10 s deadline"
    assert errors[1]["code"] == "unavailable" and errors[1]["elapsed_ms"] < 50


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_slow_model_hits_the_reply_deadline(tmp_path, transport):
    where = tmp_path / ("ch" if transport == "pipe" else "model.sock")
    model = start_model_process(transport, where, "bitstream", "time.sleep(30)")
    try:
        lines, err = events(start_compiler(transport, where, "bitstream", "requests",
                                           "--reply-timeout-ms", 500))
    finally:
        model.kill()
        model.wait()
    error = next(e for e in lines if e["event"] == "error")
    assert error["code"] == "timeout", error
    assert 450 <= error["elapsed_ms"] < 2500


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_compiler_killed_python_side_returns(transport):
    with INTERFACES[transport](serdes="bitstream", timeout=20) as iface:
        proc = start_compiler(transport, channel(iface), "bitstream", "requests",
                              "--count", 1000000)
        try:
            for _ in range(3):
                obs = iface.evaluate()
                iface.populate_buffer(twice(obs))
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            start = time.monotonic()
            obs = iface.evaluate(timeout=10)
            if obs is not None and transport == "pipe":  # a request in the pipe when it died
                with pytest.raises(mlbridge.PeerClosed):
                    iface.populate_buffer(0)
            elif obs is not None:  # in the ring: its answer goes to memory nobody reads
                iface.populate_buffer(0)
                assert iface.evaluate(timeout=10) is None
            assert not iface.session_open
            assert time.monotonic() - start < 2.0
        finally:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("transport, absent, message", [
    ("pipe", "absent/ch", "does not exist"), ("shm", "absent.sock", "no model listening")])
def test_no_model_is_an_error_in_bounded_time(tmp_path, transport, absent, message):
    start = time.monotonic()
    lines, err = events(start_compiler(transport, tmp_path / absent, "json", "requests",
                                       "--open-timeout-ms", 500))
    error = next(e for e in lines if e["event"] == "error")
    assert error["code"] == "not-found" and message in error["message"]
    assert time.monotonic() - start < 3.0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_python_side_times_out_when_no_compiler_comes(transport):
    with INTERFACES[transport](timeout=0.5) as iface:
        start = time.monotonic()
        with pytest.raises(mlbridge.TimeoutError):
            iface.evaluate()
        assert time.monotonic() - start < 1.5


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_idle_channel_uses_no_cpu(transport):
    """Both sides wait a second each (the model for a request, the compiler
    for a reply), with spinning on (the default) on both: neither may spin
    through it."""
    with INTERFACES[transport](serdes="bitstream", timeout=20) as iface:
        proc = start_compiler(transport, channel(iface), "bitstream", "requests", "--count", 3,
                              "--pause-ms", 1000)
        iface.process = proc
        obs = iface.evaluate()
        iface.populate_buffer(0)
        before = time.process_time()
        obs = iface.evaluate()  # the compiler pauses 1 s first
        model_cpu = time.process_time() - before
        before = cpu_seconds(proc.pid)
        time.sleep(1.0)  # now the compiler waits 1 s for its reply
        compiler_cpu = cpu_seconds(proc.pid) - before
        iface.populate_buffer(twice(obs))
        iface.serve(twice, sessions=1, timeout=20)
        lines, err = events(proc)
    assert lines[-1] == {"event": "done", "ok": True}, err
    assert model_cpu < 0.1, f"the waiting model used {model_cpu:.3f} s of CPU in 1 s"
    assert compiler_cpu < 0.1, f"the waiting compiler used {compiler_cpu:.3f} s of CPU in 1 s"
