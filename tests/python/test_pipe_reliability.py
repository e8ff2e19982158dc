"""The model side of a pipe never lets an answer reach the wrong request,
never uses a FIFO others can open, and bounds what a peer can make it
buffer or parse (issue 16; protocol §4, §5)."""

import os
import struct
import threading
import time
import tracemalloc

import pytest

from compiler_peer import ADVICE, SPECS, CompilerPeer
from mlbridge import (BufferReader, FdReader, MessageTooLarge, MLBridgeError,
                      PipeCompilerInterface, TensorSpec, serdes)
from mlbridge.messages import SessionState

MATRIX = [[1, 2, 3], [4, 5, 6]]
FRAME = struct.Struct("<QQQ")


@pytest.fixture(params=["bitstream", "json"])
def iface(request):
    with PipeCompilerInterface(serdes=request.param, timeout=5) as i:
        yield i


def header_with_session(codec, session_hex):
    line = codec.encode_header(SPECS, ADVICE)
    assert line.endswith(b"}\n")
    return line[:-2] + b',"session":"' + session_hex.encode() + b'"}\n'


def test_dangling_symlink_is_an_mlbridge_error(tmp_path):
    base = tmp_path / "ch"
    os.symlink(tmp_path / "nowhere", f"{base}.in")
    with pytest.raises(MLBridgeError, match="symbolic link"):
        PipeCompilerInterface(base=base)


def test_fifo_others_can_open_is_refused(tmp_path):
    base = tmp_path / "ch"
    for suffix in (".in", ".out"):
        os.mkfifo(f"{base}{suffix}", 0o600)
    os.chmod(f"{base}.out", 0o666)
    with pytest.raises(MLBridgeError, match="mode 0666"):
        PipeCompilerInterface(base=base)


def test_fifo_of_another_user_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to make a FIFO owned by another user")
    base = tmp_path / "ch"
    for suffix in (".in", ".out"):
        os.mkfifo(f"{base}{suffix}", 0o600)
    os.chown(f"{base}.in", 65534, 65534)
    with pytest.raises(MLBridgeError, match="belongs to user 65534"):
        PipeCompilerInterface(base=base)


def run_compiler(iface, script):
    """Runs script(peer) in a thread on a connected CompilerPeer; returns a
    join() giving its result (or raising its exception)."""
    out = {}

    def body():
        peer = CompilerPeer(iface.base, iface.serdes, timeout=5).open()
        try:
            out["result"] = script(peer)
        except BaseException as e:  # re-raised by join()
            out["error"] = e
        finally:
            peer.close(handshake=False)

    t = threading.Thread(target=body, daemon=True)
    t.start()

    def join():
        t.join(10)
        assert not t.is_alive(), "compiler thread hung"
        if "error" in out:
            raise out["error"]
        return out.get("result")
    return join


def test_reply_is_dropped_when_the_compiler_moved_on(iface):
    """The compiler wrote again (a new session) instead of waiting: the late
    answer must not be written where the new session would read it."""
    moved_on = threading.Event()

    def compiler(peer):
        peer.header(SPECS, ADVICE)
        peer.send_observation([0, MATRIX])
        peer.header(SPECS, ADVICE)  # gave up waiting; a new session begins
        moved_on.set()
        peer.reader.deadline = time.monotonic() + 0.5
        try:
            return bytes(peer.reader.read_exact(1))
        except MLBridgeError:
            return None  # nothing arrived

    join = run_compiler(iface, compiler)
    assert iface.evaluate() is not None
    assert moved_on.wait(5)
    time.sleep(0.05)
    assert iface.populate_buffer(1) is False
    assert join() is None, "the late answer reached the next session"
    assert iface.evaluate(timeout=2) is None  # the new session's header ends this one


def test_offered_session_id_frames_every_reply(iface):
    session = 0x0123456789ABCDEF

    def compiler(peer):
        peer.specs, peer.advice = SPECS, ADVICE
        peer.send(header_with_session(peer.codec, f"{session:016x}"))
        got = []
        for i in range(2):
            peer.send_observation([i, MATRIX])
            peer.reader.deadline = time.monotonic() + 5
            frame = FRAME.unpack(bytes(peer.reader.read_exact(FRAME.size)))
            body = bytes(peer.reader.read_exact(frame[2]))
            value = peer.codec.decode_advice(BufferReader(body), ADVICE)
            got.append((frame[:2], int(value.ravel()[0])))
        return got

    join = run_compiler(iface, compiler)
    for _ in range(2):
        obs = iface.evaluate()
        assert iface.populate_buffer(10 + int(obs["a"][0])) is True
    assert join() == [((session, 0), 10), ((session, 1), 11)]


def test_a_line_without_newline_is_refused_without_growing_past_the_limit():
    limit = 4 << 20
    r, w = os.pipe()
    reader = FdReader(r, deadline=time.monotonic() + 10)

    def feed():
        chunk = b"x" * (1 << 16)
        try:
            for _ in range(2 * limit // len(chunk)):
                os.write(w, chunk)
        except OSError:
            pass

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    tracemalloc.start()
    try:
        with pytest.raises(MessageTooLarge):
            reader.read_line(limit)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        os.close(r)
        t.join(5)
        os.close(w)
    # The buffer may hold limit + 1 bytes and, while growing, one older copy.
    assert peak < 2.1 * limit, f"{peak} bytes buffered for a {limit}-byte limit"


@pytest.mark.parametrize("name", ["bitstream", "json"])
def test_header_with_too_many_features_is_refused_at_once(name):
    codec = serdes.get(name)
    specs = [TensorSpec(f"f{i}", "int8_t", [1]) for i in range(300_000)]
    line = codec.encode_header(specs, ADVICE)
    state = SessionState(max_header_bytes=len(line) + 1)
    start = time.monotonic()
    with pytest.raises(MessageTooLarge, match="feature"):
        codec.decode_message(BufferReader(line), state)
    assert time.monotonic() - start < 0.5
    # The limit is configurable, and a header under it is parsed.
    small = codec.encode_header(specs[:100], ADVICE)
    assert len(codec.decode_message(BufferReader(small), SessionState(max_features=100))
               .feature_specs) == 100
