"""Failures a compiler must survive over gRPC, each with a clear error and
no hang: server absent (error within the connect budget), server killed
mid-call and slow server (error within the call deadline), garbage bytes on
the port, port already in use (training-mode bind fails loudly)."""

import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import grpc_helpers as H  # noqa: E402


def requests_cmd(address, *extra):
    return H.compiler_cmd("--address", address, "--scenario", "requests", "--count", 3, *extra)


def test_server_absent_fails_within_the_budget(procs):
    address = f"127.0.0.1:{H.free_port()}"
    start = time.monotonic()
    proc = procs.spawn(requests_cmd(address, "--connect-timeout-ms", 1000), text=True)
    lines, err = H.events(proc)
    elapsed = time.monotonic() - start
    first, again = H.by_event(lines, "error")
    assert first["code"] == "unavailable", first
    assert "no model server reachable" in first["message"]
    assert 950 <= first["elapsed_ms"] <= 2500, first
    assert again["code"] == "unavailable" and again["elapsed_ms"] < 50
    assert proc.returncode == 1 and elapsed < 10


def test_server_killed_mid_call(procs):
    # The model receives the request, then dies without answering.
    model, address = H.start_model_process(procs, """
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = procs.spawn(requests_cmd(address, "--call-timeout-ms", 5000), text=True)
    lines, err = H.events(proc)
    first, again = H.by_event(lines, "error")
    assert first["code"] == "peer-closed", first
    assert "UNAVAILABLE" in first["message"]
    assert first["elapsed_ms"] < 5000
    assert again["code"] == "unavailable" and again["elapsed_ms"] < 50
    assert model.wait(5) == -signal.SIGKILL


def test_slow_server_hits_the_deadline(procs):
    model, address = H.start_model_process(procs, """
        time.sleep(3)
        iface.populate_buffer(0)
    """)
    proc = procs.spawn(requests_cmd(address, "--call-timeout-ms", 500), text=True)
    lines, err = H.events(proc)
    first, again = H.by_event(lines, "error")
    assert first["code"] == "timeout", first
    assert "DEADLINE_EXCEEDED" in first["message"]
    assert 450 <= first["elapsed_ms"] < 2500
    assert again["elapsed_ms"] < 50


def test_garbage_bytes_on_the_port(procs):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.1)
    stop = threading.Event()
    connections = []

    def serve_garbage():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            connections.append(conn)
            try:
                conn.sendall(os.urandom(64) + b"HTTP/1.1 400 Bad Request\r\n\r\n")
            except OSError:
                pass
            conn.close()

    t = threading.Thread(target=serve_garbage, daemon=True)
    t.start()
    try:
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        proc = procs.spawn(requests_cmd(address, "--connect-timeout-ms", 1000), text=True)
        lines, err = H.events(proc)
    finally:
        stop.set()
        t.join(5)
        listener.close()
    first = H.by_event(lines, "error")[0]
    assert first["code"] in ("unavailable", "malformed", "peer-closed"), first
    assert first["elapsed_ms"] < 3000
    assert connections, "the compiler never connected"
    assert proc.returncode == 1


def test_port_in_use_is_a_clear_error(procs):
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    try:
        port = holder.getsockname()[1]
        proc = procs.spawn(H.compiler_cmd("--mode", "training", "--address",
                                          f"127.0.0.1:{port}", "--scenario", "requests"),
                           text=True)
        lines, err = H.events(proc)
    finally:
        holder.close()
    first = H.by_event(lines, "error")[0]
    assert first["where"] == "create" and first["code"] == "io-error", first
    assert "in use" in first["message"]
    assert proc.returncode == 1
