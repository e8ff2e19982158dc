"""The shared-memory model side's per-session fast path: feature arrays made
once per place in the ring and reused while the header stays the same.
Every test runs twice: with the rings read and written in Python, and with
the native module mlbridge_shm_native doing the common case (docs/shm.md,
"The native fast path"), which must behave the same, errors included.

The compiler is played here over a real channel (socket, memory file,
eventfds) by compiler_peer.RingCompiler."""

import struct
import threading

import numpy as np
import pytest

from build_components import require_component
from compiler_peer import RingCompiler
from mlbridge import ProtocolError, ShmCompilerInterface, TensorSpec, _native
from mlbridge.serdes import bitstream as bs
from mlbridge.shm import fast_path

SESSION = 0x5EED


@pytest.fixture(autouse=True, params=["python", "native"])
def native_taken(request, monkeypatch):
    """Runs the test on one path; the indices of the observations the
    native module found (always empty on the Python path)."""
    taken = []
    if request.param == "python":
        monkeypatch.setattr(_native, "load", lambda name: (None, "turned off by the test"))
    else:
        require_component("shm_python_fast_path")
        assert ShmCompilerInterface(capacity=1 << 16).fast_path  # (closed when collected)
        native_observation = fast_path.native_observation

        def counted(session, state, layout, index, *rest):
            taken.append(index)
            return native_observation(session, state, layout, index, *rest)
        monkeypatch.setattr(fast_path, "native_observation", counted)
    return taken if request.param == "native" else None


def header(features, advice, continues=False):
    line = bs.encode_header(features, advice, continues=continues)
    return line[:-2] + b',"session":"%016x"}\n' % SESSION


def observation(index, features):
    return bs.encode_observation(index, features)


def reply_value(data, request, dtype):
    session, number, length = struct.unpack_from("<QQQ", data)
    assert (session, number, length) == (SESSION, request, len(data) - 24)
    return np.frombuffer(data, dtype, offset=24)[0]


ADVICE = TensorSpec("y", "int64_t", [1])
X_FLOAT = TensorSpec("x", "float", [4])
X_INT = TensorSpec("x", "int32_t", [4])  # same name and size, other dtype
FLAG = TensorSpec("flag", "bool", [2])


class CompilerThread(threading.Thread):
    """Connects, sends each request and waits for its reply (the model
    answers in the test's thread; ``refused``: none comes for the last);
    ``replies`` collects them."""

    def __init__(self, path, requests, refused=False):
        super().__init__(daemon=True)
        self.path, self.requests, self.refused = path, requests, refused
        self.replies, self.error = [], None
        self.start()

    def run(self):
        try:
            compiler = RingCompiler(self.path)
            try:
                for k, request in enumerate(self.requests):
                    compiler.send(*request) if type(request) is tuple else compiler.send(request)
                    if k + 1 < len(self.requests) or not self.refused:
                        self.replies.append(compiler.reply())
            finally:
                compiler.close()
        except Exception as e:  # reported by the test
            self.error = e

    def finish(self):
        self.join(10)
        assert not self.is_alive() and self.error is None, self.error
        return self.replies


def first(k, spec):
    return header([spec], ADVICE) if k == 0 else b""


def test_arrays_are_reused_at_the_same_place_with_the_new_values(native_taken):
    xs = [np.arange(4, dtype=np.float32) + 10 * k for k in range(5)]
    with ShmCompilerInterface(serdes="bitstream", timeout=10, capacity=1 << 16) as iface:
        compiler = CompilerThread(iface.path, [first(k, X_FLOAT) + observation(k, [(X_FLOAT, x)])
                                               for k, x in enumerate(xs)])
        seen = []
        for k, x in enumerate(xs):
            obs = iface.evaluate()
            assert obs.index == k and np.array_equal(obs["x"], x)
            seen.append(obs["x"])
            iface.populate_buffer(int(obs["x"].sum()))
        replies = compiler.finish()
    assert [reply_value(r, k, "<i8") for k, r in enumerate(replies)] == [int(x.sum()) for x in xs]
    # Every request after the first landed where the previous one was: its
    # array is the one already made (a view of the ring), showing the new bytes.
    assert all(a is seen[1] for a in seen[2:])
    assert not seen[1].flags.writeable and not seen[1].flags.owndata
    if native_taken is not None:  # all but the first, which has the header
        assert native_taken == [1, 2, 3, 4]


def test_a_new_header_mid_session_replaces_the_cached_arrays(native_taken):
    xf = np.array([1.5, -2, 3, 4], dtype=np.float32)
    xi = np.array([7, -8, 9, 1 << 30], dtype=np.int32)
    # Same feature name and byte size, so the payloads land at the same
    # place: only the header tells the arrays apart.
    requests = [header([X_FLOAT], ADVICE) + observation(0, [(X_FLOAT, xf)]),
                observation(1, [(X_FLOAT, xf)]),
                header([X_INT], ADVICE, continues=True) + observation(2, [(X_INT, xi)]),
                observation(3, [(X_INT, xi)])]
    with ShmCompilerInterface(serdes="bitstream", timeout=10, capacity=1 << 16) as iface:
        compiler = CompilerThread(iface.path, requests)
        for k, (dtype, x) in enumerate([(np.float32, xf)] * 2 + [(np.int32, xi)] * 2):
            obs = iface.evaluate()
            assert obs["x"].dtype == dtype and np.array_equal(obs["x"], x), k
            iface.populate_buffer(k)
        replies = compiler.finish()
    assert [reply_value(r, k, "<i8") for k, r in enumerate(replies)] == [0, 1, 2, 3]
    if native_taken is not None:  # the records with a header take the Python path
        assert native_taken == [1, 3]


def test_bool_bytes_are_checked_on_every_request():
    requests = [header([FLAG], ADVICE) + observation(0, [(FLAG, [True, False])]),
                observation(1, [(FLAG, [False, True])]),
                b'{"observation":2}\n\x01\x02\n']  # same place, a byte that is no bool
    with ShmCompilerInterface(serdes="bitstream", timeout=10, capacity=1 << 16) as iface:
        compiler = CompilerThread(iface.path, requests, refused=True)
        for expected in ([True, False], [False, True]):
            obs = iface.evaluate()
            assert obs["flag"].tolist() == expected
            iface.populate_buffer(0)
        with pytest.raises(ProtocolError, match="bool bytes must be 0 or 1"):
            iface.evaluate()
        compiler.finish()


def test_several_sessions_each_get_their_own_arrays():
    with ShmCompilerInterface(serdes="bitstream", timeout=10, capacity=1 << 16) as iface:
        for session, spec in enumerate([X_FLOAT, X_INT, X_FLOAT]):
            xs = [(np.arange(4) * (session + 1) + k).astype(spec.np_dtype) for k in range(3)]
            compiler = CompilerThread(iface.path, [first(k, spec) + observation(k, [(spec, x)])
                                                   for k, x in enumerate(xs)])
            for k, x in enumerate(xs):
                obs = iface.evaluate()
                assert obs["x"].dtype == spec.np_dtype and np.array_equal(obs["x"], x)
                iface.populate_buffer(k)
            assert [reply_value(r, k, "<i8") for k, r in enumerate(compiler.finish())] == [0, 1, 2]
            assert iface.evaluate(timeout=5) is None  # the hang-up ends the session


@pytest.mark.parametrize("record, length, message", [
    (b'{"observation":1}\n' + b"\0" * 16 + b"X", None,
     r"observation 1: expected '\\n' after the 16-byte payload, got byte 0x58"),
    (b'{"observation":01}\n' + b"\0" * 16 + b"\n", None,
     r"malformed message \(Expecting ',' delimiter at column 17\)"),
    (b'{"observation":1}\n' + b"\0" * 16 + b"\n", 4096, "corrupt request ring: a record of 4096 bytes"),
], ids=["no newline after the payload", "index with a leading zero", "record length too large"])
def test_malformed_records_are_the_same_errors_on_both_paths(native_taken, record, length,
                                                             message):
    x = np.arange(4, dtype=np.float32)
    requests = [header([X_FLOAT], ADVICE) + observation(0, [(X_FLOAT, x)]),
                observation(1, [(X_FLOAT, x)]),  # well formed: the native path's
                (record, length)]
    with ShmCompilerInterface(serdes="bitstream", timeout=10, capacity=1 << 16) as iface:
        compiler = CompilerThread(iface.path, requests, refused=True)
        for k in range(2):
            assert np.array_equal(iface.evaluate()["x"], x)
            iface.populate_buffer(k)
        with pytest.raises(ProtocolError, match=message):
            iface.evaluate()
        assert not iface.session_open
        compiler.finish()
    if native_taken is not None:
        assert native_taken == [1]
