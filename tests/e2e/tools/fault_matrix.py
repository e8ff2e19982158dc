"""Pieces shared by the fault-injection matrices (tests/e2e/test_fault_injection*.py)
and the fault-injecting fakes next to this file: the deadline the real
compiler runs with, what counts as a clear error, how a fake injects a
fault into itself, and the checks every matrix makes.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
SOURCE = Path(os.environ.get("MLBRIDGE_SOURCE_DIR", TOOLS.parents[2]))
BUILD = Path(os.environ.get("MLBRIDGE_BUILD_DIR", SOURCE / "build"))
STREAM_COMPILER = BUILD / "tests" / "mlbridge-e2e-compiler"
ENV = dict(os.environ, PYTHONPATH=str(SOURCE / "python"))

DEADLINE_MS = 400
SLACK_MS = 1500  # scheduling on a loaded 2-core machine
CLEAR_ERRORS = {"timeout", "peer-closed", "malformed", "unavailable", "not-found",
                "type-mismatch"}
# The longest a fake waits for, or holds on to, its real peer (the tests
# end the fakes much sooner: it only bounds a failing run).
FAKE_PATIENCE_S = 10


def inject_into_self(fault, delay):
    """kill (SIGKILL), stop (SIGSTOP) or delay (sleep ``delay`` seconds)."""
    if fault == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif fault == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
        # SIGSTOP is process-wide and may take effect a moment later: the
        # faulting thread must not go on (and answer) meanwhile.
        time.sleep(FAKE_PATIENCE_S)
    elif fault == "delay":
        time.sleep(delay)


def json_lines(proc, timeout=10):
    """The JSON events a finished compiler program printed, and its stderr."""
    out, err = proc.communicate(timeout=timeout)
    return [json.loads(l) for l in out.splitlines() if l.strip()], err


def end(proc):
    """Kill ``proc`` (even a stopped one) and reap it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGCONT)
        proc.kill()
    proc.wait(5)


def wait_until(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def wait_until_stopped(proc, timeout=10):
    wait_until(lambda: open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()[0] == "T",
               timeout, "the fake never stopped")


def wait_for_fault(proc, fault, frozen_for):
    """Until the fake compiler's fault took effect: it exited, or (stop) it
    has been frozen for ``frozen_for`` seconds (the model side's timeout)."""
    if fault == "stop":
        wait_until_stopped(proc)
        time.sleep(frozen_for)
    else:
        proc.wait(FAKE_PATIENCE_S)


def check_requests_outcome(lines, err, count=3, usable_after=()):
    """The events of a compiler program's "requests" scenario under a fault:
    every answer it accepted is its own (2 i); an error is a clear one,
    within its deadline + slack, and the broken runner refuses the next
    call at once -- unless the error is one of ``usable_after`` (codes a
    transport reports without breaking the runner: its next call is a new
    request). Returns the outcome: the first error's code, or "answers"."""
    answers = [(e["i"], e["value"]) for e in lines if e["event"] == "advice"]
    assert all(v == 2 * i for i, v in answers), f"a wrong answer: {answers}"
    errors = [e for e in lines if e["event"] == "error"]
    if not errors:
        assert len(answers) == count and lines[-1] == {"event": "done", "ok": True}, \
            (lines, err)
        return "answers"
    assert errors[0]["code"] in CLEAR_ERRORS, errors
    assert errors[0]["elapsed_ms"] <= DEADLINE_MS + SLACK_MS, errors
    if errors[1]["code"] == "ok":
        assert errors[0]["code"] in usable_after, errors
    else:
        assert errors[1]["code"] == "unavailable", errors  # refuses at once after
        assert errors[1]["elapsed_ms"] < 50, errors
    return errors[0]["code"]


def serve_in_background(serve_once, stop):
    """Runs ``serve_once()`` again and again until ``stop`` is set; a fault
    that breaks one session (MLBridgeError) goes on to the next."""
    import mlbridge

    def loop():
        while not stop.is_set():
            try:
                serve_once()
            except mlbridge.MLBridgeError:
                pass
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return t


def spawn(cmd, **kwargs):
    return subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


# ---- the matrix of the stream transports (pipes, shared memory) --------------
# The fakes: tools/fault_injecting_model.py and fault_injecting_compiler.py.

STREAM_MODEL_FAULTS = [(step, fault)
                       for step in ("open", "header", "context", "observation")
                       for fault in ("kill", "stop", "delay")]
STREAM_MODEL_FAULTS += [("reply", f) for f in ("kill", "delay", "truncate", "duplicate")]
STREAM_MODEL_FAULTS += [("close", f) for f in ("kill", "stop")]
# Every case in bitstream; the reply faults in JSON too (the other steps
# do not depend on the format).
STREAM_MODEL_CASES = ([(s, f, "bitstream") for s, f in STREAM_MODEL_FAULTS]
                      + [(s, f, "json") for s, f in STREAM_MODEL_FAULTS if s == "reply"])

STREAM_COMPILER_FAULTS = [(step, fault)
                          for step in ("open", "header", "context", "observation", "reply",
                                       "close")
                          for fault in ("kill", "stop")]
STREAM_COMPILER_FAULTS += [(step, fault) for step in ("header", "context", "observation")
                           for fault in ("truncate", "duplicate")]


def stream_compiler(transport, channel, serdes, count=3):
    """The real C++ compiler (mlbridge-e2e-compiler, scenario "requests")."""
    assert STREAM_COMPILER.exists(), f"{STREAM_COMPILER} not built"
    return spawn([STREAM_COMPILER, "--base" if transport == "pipe" else "--shm", channel,
                  "--serdes", serdes, "--scenario", "requests", "--count", count,
                  "--reply-timeout-ms", DEADLINE_MS, "--open-timeout-ms", DEADLINE_MS])


def run_stream_model_fault(transport, channel, step, fault, serdes):
    """The real compiler against the fake model faulting at one step;
    returns the outcome (check_requests_outcome)."""
    model = subprocess.Popen(
        [sys.executable, str(TOOLS / "fault_injecting_model.py"), transport, str(channel),
         serdes, step, fault, "1.0"], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert model.stdout.readline() == b"ready\n", model.stderr.read()
        started = time.monotonic()
        lines, err = json_lines(stream_compiler(transport, channel, serdes))
        took_ms = (time.monotonic() - started) * 1000
    finally:
        end(model)
    outcome = check_requests_outcome(lines, err)
    # Three requests, each bounded by its deadline (+ one open deadline).
    assert took_ms < 4 * DEADLINE_MS + 2 * SLACK_MS
    return outcome


def twice(obs):
    """The model of every matrix: {"i": i} -> 2 i."""
    return 2 * int(obs["i"][0])


def pipe_model_idle(iface):
    """The pipe model side holds nothing of an earlier compiler: no session,
    or one opened (possibly against a compiler that was exiting) that has
    neither read a header nor bytes waiting. Reads the interface's private
    state: a test's view, not an API."""
    reader = iface._reader
    return reader is None or (not iface._session_started and reader.input_state() is None)


def check_ready_after_compiler_fault(transport, iface, channel, step, fault):
    """The fake compiler faults at one step against ``iface`` (a model-side
    interface with a 1 s timeout, served in the background); then the next,
    well-behaved compiler on it must be served correctly. Returns the
    fake's exit status (None: it was stopped and killed)."""
    stop = threading.Event()
    server = serve_in_background(lambda: iface.serve(twice, timeout=0.5), stop)
    faulty = subprocess.Popen(
        [sys.executable, str(TOOLS / "fault_injecting_compiler.py"), transport, channel,
         "bitstream", step, fault], env=ENV, stderr=subprocess.PIPE)
    try:
        # A frozen session may hold the channel until the model side's 1 s
        # timeout.
        wait_for_fault(faulty, fault, frozen_for=1.5)
        if transport == "pipe" and fault != "stop":
            # Bytes from two writers of one FIFO cannot be told apart: a
            # compiler that opens the pair while the model still reads the
            # dead one's unfinished message is refused (peer-closed; pipes.md).
            wait_until(lambda: pipe_model_idle(iface), FAKE_PATIENCE_S,
                       "the model side never finished with the faulty compiler")
        lines, err = json_lines(stream_compiler(transport, channel, "bitstream"), timeout=20)
    finally:
        end(faulty)
        stop.set()
        server.join(5)
    assert [e["value"] for e in lines if e["event"] == "advice"] == [0, 2, 4], (lines, err)
    assert lines[-1] == {"event": "done", "ok": True}
    return None if fault == "stop" else faulty.returncode


# Shared memory: request ring indices the model must refuse (fault_injecting_compiler.py).
RING_CORRUPTION_FAULTS = [(step, "corrupt") for step in ("header", "context", "observation")]


# ---- a frozen peer under the event loop ----------------------------------------
# A compiler frozen in the middle of a message (pipes: a message is bytes in
# a FIFO) or one that never reads its replies (shared memory: the reply ring
# fills) must cost only its own session.
FROZEN_PEER_FAULTS = {"pipe": [(step, "half-stop") for step in ("header", "context",
                                                                "observation")],
                      "shm": [("reply", "unread")]}


def check_frozen_peers_cost_only_their_sessions(frozen, good_per_transport=2, requests=20):
    """The fakes ``frozen`` ([(transport, step, fault)]) and, once they are
    frozen, ``good_per_transport`` real compilers on pipes and on shared
    memory, all under one EventLoop whose interfaces wait 30 s for a peer:
    every good compiler must get all its answers within its 1 s reply
    deadline. Returns the frozen channels' ChannelStats."""
    import mlbridge
    timeout = 30.0
    pipes = [mlbridge.PipeCompilerInterface(serdes="bitstream", timeout=timeout)
             for _ in range(sum(t == "pipe" for t, _, _ in frozen) + good_per_transport)]
    shm = mlbridge.ShmCompilerInterface(serdes="bitstream", timeout=timeout, capacity=4096)
    fakes, good = [], []
    loop = mlbridge.EventLoop()
    try:
        stats = {"shm": loop.add(shm, twice)}
        stats["pipe"] = [loop.add(iface, twice) for iface in pipes]
        free_pipes = list(pipes)
        for transport, step, fault in frozen:
            channel = free_pipes.pop(0).base if transport == "pipe" else shm.path
            fakes.append(subprocess.Popen(
                [sys.executable, str(TOOLS / "fault_injecting_compiler.py"), transport,
                 channel, "bitstream", step, fault], env=ENV, stderr=subprocess.PIPE))
        served = {}
        server = threading.Thread(target=lambda: served.update(
            answered=loop.run(sessions=2 * good_per_transport, timeout=timeout)))
        server.start()
        for fake, (_, _, fault) in zip(fakes, frozen):
            if fault == "half-stop":
                wait_until_stopped(fake)
        time.sleep(0.5)  # the unread replies fill the ring meanwhile
        started = time.monotonic()
        for transport in ("pipe", "shm"):
            for k in range(good_per_transport):
                channel = free_pipes.pop(0).base if transport == "pipe" else shm.path
                good.append(spawn([STREAM_COMPILER, "--base" if transport == "pipe" else "--shm",
                                   channel, "--serdes", "bitstream", "--scenario", "requests",
                                   "--count", requests, "--first", 1000 * len(good),
                                   "--reply-timeout-ms", 1000, "--open-timeout-ms", 5000]))
        results = [json_lines(p, timeout=20) for p in good]
        took = time.monotonic() - started
        server.join(timeout)
    finally:
        for p in fakes + good:
            end(p)
        loop.close()
        for iface in pipes + [shm]:
            iface.close()
    for k, (lines, err) in enumerate(results):
        assert lines[-1] == {"event": "done", "ok": True}, (k, lines, err)
        assert [e["value"] for e in lines if e["event"] == "advice"] == \
            [2 * (1000 * k + i) for i in range(requests)]
    assert took < timeout / 3, f"the good compilers took {took:.1f} s"
    return stats
