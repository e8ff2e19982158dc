"""Python stand-ins for the compiler side of a channel (tests only).

``CompilerPeer`` opens a pipe pair's FIFOs in the order of LLVM's
InteractiveModelRunner (``B.in`` for reading, then ``B.out`` for writing)
and speaks a SerDes with mlbridge's compiler-side encoders; usable in a
thread or as a subprocess: ``python compiler_peer.py BASE SERDES SCENARIO``.
``RingCompiler`` is the compiler's end of a shared-memory channel, written
the way ShmChannel writes it (docs/shm.md).
"""

import array
import errno
import mmap
import os
import select
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from mlbridge import FdReader, PeerClosed, TensorSpec, serdes  # noqa: E402
from mlbridge.shm import layout as L  # noqa: E402


class CompilerPeer:
    def __init__(self, base, serdes_name="bitstream", timeout=10.0):
        self.base = base
        self.codec = serdes.get(serdes_name)
        self.timeout = timeout
        self.in_fd = self.out_fd = None
        self.reader = None
        self.specs = None
        self.advice = None
        self.counters = {}
        self.current_context = None

    def open(self, blocking=False):
        """LLVM's order. ``blocking=True`` uses plain blocking opens exactly
        like LLVM; otherwise the same order with a bounded retry."""
        in_path, out_path = self.base + ".in", self.base + ".out"
        if blocking:
            self.in_fd = os.open(in_path, os.O_RDONLY)
            self.out_fd = os.open(out_path, os.O_WRONLY)
        else:
            self.in_fd = os.open(in_path, os.O_RDONLY | os.O_NONBLOCK)
            deadline = time.monotonic() + self.timeout
            while True:
                try:
                    self.out_fd = os.open(out_path, os.O_WRONLY | os.O_NONBLOCK)
                    break
                except OSError as e:
                    if e.errno != errno.ENXIO or time.monotonic() > deadline:
                        raise
                    time.sleep(0.002)
            os.set_blocking(self.out_fd, True)
        self.reader = FdReader(self.in_fd)
        return self

    def send(self, data):
        view = memoryview(data)
        while view:
            n = os.write(self.out_fd, view)
            view = view[n:]

    def header(self, specs, advice):
        self.specs = list(specs)
        self.advice = advice
        self.send(self.codec.encode_header(self.specs, advice))

    def context(self, name):
        self.current_context = name
        self.send(self.codec.encode_context(name))

    def send_observation(self, values):
        index = self.counters.get(self.current_context, 0)
        self.counters[self.current_context] = index + 1
        self.send(self.codec.encode_observation(index, list(zip(self.specs, values))))

    def read_advice(self, timeout=None):
        self.reader.deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        return self.codec.decode_advice(self.reader, self.advice)

    def observe(self, values):
        """Send one observation and return the decoded advice."""
        self.send_observation(values)
        return self.read_advice()

    def close(self, handshake=True):
        """End the session: close B.out, then (``handshake``) wait briefly for
        the host to close B.in, so an immediate reconnect cannot attach to
        the pipe ends the host is about to drop."""
        if self.out_fd is not None:
            os.close(self.out_fd)
        if self.in_fd is not None and handshake:
            self.reader.deadline = time.monotonic() + 0.25
            try:
                self.reader.drain()
            except Exception:
                pass
        if self.in_fd is not None:
            os.close(self.in_fd)
        self.in_fd = self.out_fd = None


class PeerThread(threading.Thread):
    """Runs fn(peer) in a thread; join() re-raises the peer's exception."""

    def __init__(self, base, serdes, fn, open_peer=True):
        super().__init__(daemon=True)
        self.peer = CompilerPeer(base, serdes, timeout=5)
        self.fn = fn
        self.open_peer = open_peer
        self.result = None
        self.error = None
        self.start()

    def run(self):
        try:
            if self.open_peer:
                self.peer.open()
            self.result = self.fn(self.peer)
        except BaseException as e:  # reported by join()
            self.error = e
        finally:
            self.peer.close()

    def join(self, timeout=10):
        super().join(timeout)
        assert not self.is_alive(), "peer thread hung"
        if self.error is not None:
            raise self.error
        return self.result


class RingCompiler:
    """The compiler's end of a shared-memory channel: one record per
    message, restarting at the ring's start once the model has read
    everything (so consecutive requests land at the same place)."""

    def __init__(self, path, timeout=10.0):
        self.timeout = timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        hello, anc, _, _ = self.sock.recvmsg(L.HELLO.size, socket.CMSG_SPACE(3 * 4))
        fds = array.array("i")
        fds.frombytes(anc[0][2])
        self.memfd, self.wake_model, self.wake_self = fds
        self.cap = L.HELLO.unpack(hello)[3]
        self.mm = mmap.mmap(self.memfd, L.file_size(self.cap))
        self.head = self.read = 0

    def close(self):
        self.mm.close()
        for fd in (self.memfd, self.wake_model, self.wake_self):
            os.close(fd)
        self.sock.close()

    def word(self, offset, value=None):
        """The control-block word at ``offset`` (or store ``value`` there)."""
        if value is None:
            return L.U64.unpack_from(self.mm, offset)[0]
        L.U64.pack_into(self.mm, offset, value)

    def send(self, data, length=None):
        """One request record, once the ring has room for it (within the
        timeout); ``length``: a record length field that lies."""
        need = L.record_bytes(len(data))
        off = self.head % self.cap
        end = time.monotonic() + self.timeout
        while self.head + need + (self.cap - off if off + need > self.cap else 0) \
                - self.word(L.REQUEST_TAIL) > self.cap:
            assert time.monotonic() < end, "the model took no request"
            time.sleep(0.001)
        empty = self.word(L.REQUEST_TAIL) == self.head
        if off + need > self.cap or (empty and need <= off):
            self.word(L.CONTROL_BYTES + off, L.WRAP_MARKER)
            self.head += self.cap - off
            off = 0
        at = L.CONTROL_BYTES + off
        self.word(at, len(data) if length is None else length)
        self.mm[at + 8:at + 8 + len(data)] = data
        self.head += need
        self.publish(self.head)

    def publish(self, head):
        """Store the request ring's head and wake the model (harmless when
        it is not asleep)."""
        self.word(L.REQUEST_HEAD, head)
        os.eventfd_write(self.wake_model, 1)

    # Ways to corrupt the request ring's indices (docs/reliability.md): a
    # wrap marker at the ring's start with a head far ahead (a reader that
    # follows markers by the head walks the ring for hours), a marker
    # before the end followed by another at the start, a head behind the
    # model's read position.
    CORRUPTIONS = ("marker at the start, head far ahead",
                   "marker before the end, head far ahead", "head behind the read position")

    def corrupt(self, how):
        if how == self.CORRUPTIONS[0]:
            self.word(L.CONTROL_BYTES, L.WRAP_MARKER)
            self.publish(self.head + (1 << 62))
        elif how == self.CORRUPTIONS[1]:
            off = self.head % self.cap
            self.word(L.CONTROL_BYTES + off, L.WRAP_MARKER)
            self.word(L.CONTROL_BYTES, L.WRAP_MARKER)
            self.publish(self.head + (1 << 40))
        else:
            self.publish(self.head - 8 if self.head else (1 << 64) - 8)

    def wait_hang_up(self, timeout):
        """True when the model closes the channel within ``timeout`` s."""
        ready, _, _ = select.select([self.sock], [], [], timeout)
        return bool(ready)

    def reply(self, timeout=10.0):
        """The next reply record's bytes (frame included); PeerClosed when
        the model hangs up first."""
        end = time.monotonic() + timeout
        while self.word(L.REPLY_HEAD) == self.read:
            assert time.monotonic() < end, "no reply"
            ready, _, _ = select.select([self.wake_self, self.sock], [], [], 0.01)
            if self.sock in ready and self.word(L.REPLY_HEAD) == self.read:
                raise PeerClosed("the model closed the channel")
        base = L.reply_ring(self.cap)
        while True:
            off = self.read % self.cap
            n = self.word(base + off)
            if n != L.WRAP_MARKER:
                break
            self.read += self.cap - off
        data = bytes(self.mm[base + off + 8:base + off + 8 + n])
        self.read += L.record_bytes(n)
        self.word(L.REPLY_TAIL, self.read)
        return data


SPECS = [TensorSpec("a", "int64_t", [1]), TensorSpec("b", "float", [2, 3])]
ADVICE = TensorSpec("inlining_decision", "int64_t", [1])


def _scenario(base, serdes_name, name):
    peer = CompilerPeer(base, serdes_name)
    if name == "never_open":
        time.sleep(0.3)
        return 0
    peer.open(blocking=True)
    if name == "open_and_exit":
        return 0
    if name == "hang_after_one":
        peer.header(SPECS, ADVICE)
        advice = peer.observe([7, [[1, 2, 3], [4, 5, 6]]])
        print(f"advice {advice.tolist()}", flush=True)
        time.sleep(60)
        return 0
    if name == "two_requests":
        peer.header(SPECS, ADVICE)
        for i in range(2):
            advice = peer.observe([i, [[1, 2, 3], [4, 5, 6]]])
            print(f"advice {advice.tolist()}", flush=True)
        peer.close()
        return 0
    raise SystemExit(f"unknown scenario {name}")


if __name__ == "__main__":
    sys.exit(_scenario(sys.argv[1], sys.argv[2], sys.argv[3]))
