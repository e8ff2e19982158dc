"""C++ (and C) compilers <-> Python model over gRPC on loopback, both
modes, every dtype, and many compiler processes at once with no crossed
replies. The compiler side is tests/e2e/tools/grpc_compiler.cpp."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import grpc_helpers as H  # noqa: E402

from mlbridge.grpc import GrpcCompilerInterface  # noqa: E402


def test_inference_mode_every_type(procs):
    with GrpcCompilerInterface(timeout=20) as iface:
        proc = procs.spawn(H.compiler_cmd("--address", iface.address, "--scenario", "types"),
                           text=True)
        served = iface.serve(H.echo, sessions=1, timeout=20)
        H.check_every_type_echoed(proc)
    assert served == 12


def test_training_mode_every_type(procs):
    proc = procs.spawn(H.compiler_cmd("--mode", "training", "--scenario", "types"), text=True)
    address = H.listening_address(proc)
    with GrpcCompilerInterface(mode="training", compilers=[address], timeout=20) as iface:
        seen = []

        def model(obs):
            seen.append(obs)
            return H.echo(obs)

        served = iface.serve(model)
        assert iface.ended_sessions == 1
    H.check_every_type_echoed(proc)
    assert served == 12
    assert all(o.compiler == address for o in seen)
    assert [o.id for o in seen] == list(range(1, 13))


def test_c_program_against_python(procs):
    def model(obs):
        spec = obs.advice_spec
        if spec.dtype == "int64_t":
            assert obs.context == "c-main"
            assert obs["s"] == "héllo"
            assert obs["b"].tolist() == [True]
            return int(obs["l"][0])
        if spec.dtype == "float":
            return obs["fa"][::-1]
        raise ValueError("no double model")

    with GrpcCompilerInterface(timeout=20) as iface:
        proc = procs.spawn([H.binary(H.C_COMPILER), iface.address], text=True)
        answered = 0
        while (obs := iface.evaluate(timeout=20)) is not None:
            try:
                iface.populate_buffer(model(obs))
                answered += 1
            except ValueError as e:
                iface.send_error(str(e))
        lines, err = H.events(proc)
    ev = {e["event"]: e for e in lines}
    assert proc.returncode == 0, err
    assert ev["port"]["port"] == 0
    assert ev["int64"] == {"event": "int64", "status": "ok", "value": -9000000000}
    assert ev["float_array"]["n"] == 3 and ev["float_array"]["v0"] == -4
    assert ev["model_error"]["status"] == "unavailable"
    assert ev["after_error"]["status"] == "ok"
    assert ev["end"]["status"] == "ok"
    assert answered == 3


@pytest.mark.parametrize("workers", [4])
def test_many_compilers_one_model_inference(procs, workers):
    """One model server, N concurrent compiler processes, no crossed replies."""
    count = 40
    with GrpcCompilerInterface(timeout=20) as iface:
        ps = [procs.spawn(H.compiler_cmd("--address", iface.address, "--scenario", "requests",
                                         "--count", count, "--offset", w * 1_000_000),
                          text=True) for w in range(workers)]
        sessions = set()

        def model(obs):
            sessions.add(obs.session)
            time.sleep(0.001 if obs.index % 7 == 0 else 0)  # interleave
            return 2 * int(obs["i"][0])

        served = iface.serve(model, sessions=workers, timeout=20)
        results = [H.events(p) for p in ps]
    assert served == workers * count
    assert len(sessions) == workers
    for w, (lines, err) in enumerate(results):
        advice = H.by_event(lines, "advice")
        assert len(advice) == count, err
        assert all(a["value"] == 2 * a["i"] for a in advice), advice
        assert {a["i"] // 1_000_000 for a in advice} == {w}
        assert lines[-1] == {"event": "done", "ok": True}


def test_many_compilers_one_trainer_training(procs):
    """Training mode: one trainer drives a list of compiler processes
    concurrently (each hosts its own server)."""
    workers, count = 4, 25
    ps = [procs.spawn(H.compiler_cmd("--mode", "training", "--scenario", "requests",
                                     "--count", count, "--offset", w * 1_000_000), text=True)
          for w in range(workers)]
    addresses = [H.listening_address(p) for p in ps]
    order = []
    with GrpcCompilerInterface(mode="training", compilers=addresses, timeout=20) as iface:
        def policy(obs):
            order.append(obs.compiler)
            return 2 * int(obs["i"][0])

        served = iface.serve(policy)
        assert iface.ended_sessions == workers
    assert served == workers * count
    assert set(order) == set(addresses)
    for w, p in enumerate(ps):
        lines, err = H.events(p)
        advice = H.by_event(lines, "advice")
        assert len(advice) == count, err
        assert all(a["value"] == 2 * a["i"] and a["i"] // 1_000_000 == w for a in advice)


def test_trainer_ends_an_episode(procs):
    proc = procs.spawn(H.compiler_cmd("--mode", "training", "--scenario", "requests",
                                      "--count", 5), text=True)
    address = H.listening_address(proc)
    with GrpcCompilerInterface(mode="training", compilers=[address], timeout=20) as iface:
        obs = iface.evaluate()
        iface.populate_buffer(2 * int(obs["i"][0]))
        obs = iface.evaluate()
        assert obs.index == 0 and obs.context == "request1"
        iface.end_episode(reason="enough")
        assert iface.pending is None
        assert iface.evaluate() is None  # the compiler ended its session
    lines, err = H.events(proc)
    errors = H.by_event(lines, "error")
    assert errors[0]["code"] == "peer-closed" and "enough" in errors[0]["message"], lines
    assert errors[1]["where"] == "evaluate-again" and errors[1]["elapsed_ms"] < 50
