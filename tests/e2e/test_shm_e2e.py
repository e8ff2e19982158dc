"""The shared-memory transport end to end, what only it does (the promises
pipes and shared memory share are tested in test_stream_e2e.py): views of
the shared memory, several compilers at once, the rings' limits and
wrap-around, reply records that break the rules (docs/shm.md)."""
import functools
import struct
import threading
import time

import numpy as np
import pytest

from mlbridge import ShmCompilerInterface
import stream_e2e
from stream_e2e import events, twice

start_compiler = functools.partial(stream_e2e.start_compiler, "shm")


class FaultInjectingShmInterface(ShmCompilerInterface):
    """Test-only: answers with raw bytes that no codec would produce (in
    the reply frame of the request pending)."""

    def send_raw(self, data):
        self._send(data)

    def send_raw_record(self, data):
        """``data`` as the whole reply record, frame included."""
        self._session.release()
        self._session.write(data, self.timeout)


def test_observations_are_views_of_the_shared_memory():
    with ShmCompilerInterface(serdes="bitstream", timeout=20) as iface:
        proc = start_compiler(iface.path, "bitstream", "rtt", "--size", 1000, "--count", 1)
        obs = iface.evaluate()
        x = obs["x"]
        assert x.shape == (1000,) and x[1] == np.float32(0.5)
        assert not x.flags.owndata and not x.flags.writeable
        iface.populate_buffer(float(x.sum()))
        iface.serve(lambda o: 0.0, sessions=1, timeout=20)
        lines, err = events(proc)
    assert lines[-1] == {"event": "done", "ok": True}, err


@pytest.mark.parametrize("reply, message", [
    (b"\x01\x02\x03", "shorter than the advice"),
    (struct.pack("<qq", 0, 0), "announced 16 bytes but the advice took 8"),
])
def test_malformed_replies_are_clear_errors(reply, message):
    with FaultInjectingShmInterface(serdes="bitstream", timeout=20) as iface:
        proc = start_compiler(iface.path, "bitstream", "requests", "--count", 2)
        iface.evaluate()
        iface.send_raw(reply)
        lines, err = events(proc)
    errors = [e for e in lines if e["event"] == "error"]
    assert errors[0]["code"] == "malformed" and message in errors[0]["message"], errors
    assert errors[1]["code"] == "unavailable", errors


def test_bytes_after_the_framed_reply_in_its_record_are_malformed():
    with FaultInjectingShmInterface(serdes="bitstream", timeout=20) as iface:
        proc = start_compiler(iface.path, "bitstream", "requests", "--count", 2)
        iface.evaluate()
        advice = struct.pack("<q", 0)
        iface.send_raw_record(iface._state.frame(advice) + advice)
        lines, err = events(proc)
    errors = [e for e in lines if e["event"] == "error"]
    assert errors[0]["code"] == "malformed", errors
    assert "8 bytes more than the advice" in errors[0]["message"], errors


def test_oversized_reply_is_refused_before_allocating():
    with FaultInjectingShmInterface(serdes="bitstream", timeout=20) as iface:
        proc = start_compiler(iface.path, "bitstream", "types", "--open-timeout-ms", 200)
        iface.evaluate()  # float echo: a variable-length float vector
        iface.send_raw(struct.pack("<Q", 1 << 60))
        iface.close()  # the other dtypes' sessions fail to connect, quickly
        lines, err = events(proc)
    first = next(e for e in lines if e["event"] == "error")
    assert first["code"] == "too-large", first


def test_message_larger_than_the_ring_is_an_error():
    with ShmCompilerInterface(serdes="bitstream", timeout=20, capacity=4096) as iface:
        proc = start_compiler(iface.path, "bitstream", "rtt", "--size", 2000, "--count", 1)
        iface.process = proc
        assert iface.evaluate(timeout=20) is None  # nothing ever arrives
        lines, err = events(proc)
    error = next(e for e in lines if e["event"] == "error")
    assert error["code"] == "too-large" and "larger capacity" in error["message"], error


def test_records_wrap_around_a_small_ring():
    """4 KiB rings and 1.2 KB requests: records keep crossing the end of the
    ring (wrap markers) and restarting at its beginning."""
    with ShmCompilerInterface(serdes="bitstream", timeout=20, capacity=4096) as iface:
        proc = start_compiler(iface.path, "bitstream", "rtt", "--size", 300, "--count", 60)
        iface.process = proc
        served = iface.serve(lambda o: float(o["x"][0]), sessions=1, timeout=20)
        lines, err = events(proc)
    assert served == 80 and lines[-1] == {"event": "done", "ok": True}, err


def test_one_event_loop_serves_eight_compilers_at_once():
    """Eight compiler processes connected together, each with its own
    request values: every one gets exactly its own answers (no crossed
    replies), and serve() answers them all from one thread."""
    with ShmCompilerInterface(serdes="bitstream", timeout=30) as iface:
        procs = [start_compiler(iface.path, "bitstream", "requests", "--count", 200,
                                "--first", 1000 * p) for p in range(8)]
        threads_before = threading.active_count()
        served = iface.serve(twice, sessions=8, timeout=30)
        assert threading.active_count() == threads_before
        results = [events(p) for p in procs]
    assert served == 8 * 200
    for p, (lines, err) in enumerate(results):
        values = [(e["i"], e["value"]) for e in lines if e["event"] == "advice"]
        assert values == [(1000 * p + k, 2 * (1000 * p + k)) for k in range(200)], err
        assert lines[-1] == {"event": "done", "ok": True}, err


def test_serve_leaves_other_sessions_to_the_next_call():
    with ShmCompilerInterface(serdes="bitstream", timeout=30) as iface:
        first = start_compiler(iface.path, "bitstream", "requests", "--count", 2)
        second = start_compiler(iface.path, "bitstream", "requests", "--count", 2,
                                "--pause-ms", 300, "--first", 100)
        assert iface.serve(twice, sessions=1, timeout=30) >= 2
        obs = iface.evaluate()  # the second compiler, continued
        iface.populate_buffer(2 * int(obs["i"][0]))
        iface.serve(twice, sessions=1, timeout=30)
        for proc in (first, second):
            lines, err = events(proc)
            assert lines[-1] == {"event": "done", "ok": True}, err


@pytest.mark.parametrize("when", ["before the next request", "after the next request"])
def test_a_second_reply_never_answers_the_next_request(when):
    """The model answers request 0 twice, the second time 50 ms later: it
    lands while the compiler idles before request 1, or after request 1
    began to arrive but before the model read it. Either way the compiler
    must not take it as the answer to request 1."""
    with FaultInjectingShmInterface(serdes="bitstream", timeout=20) as iface:
        proc = start_compiler(iface.path, "bitstream", "requests", "--count", 3,
                              "--pause-ms", 300)
        obs = iface.evaluate()
        reply = bytes(iface._codec.encode_advice(obs.advice_spec, 2 * int(obs["i"][0])))
        iface.send_raw(reply)
        if when == "before the next request":
            time.sleep(0.05)
        else:
            deadline = time.monotonic() + 10
            while not iface._session.has_request():  # request 1 began, unread
                assert time.monotonic() < deadline
                time.sleep(0.001)
        iface._pending = obs  # answer request 0 once more, in the same frame
        iface._state.requests -= 1
        iface.send_raw(reply)
        iface.process = proc
        iface.serve(twice, sessions=1, timeout=10)
        lines, err = events(proc)
    assert [e["value"] for e in lines if e["event"] == "advice"] == [0], lines
    errors = [e for e in lines if e["event"] == "error"]
    assert errors[0]["code"] == "malformed" and "more than one reply" in errors[0]["message"], \
        errors
