"""A Python stand-in for the compiler side of a pipe channel (tests only).

Opens the FIFOs in the order of LLVM's InteractiveModelRunner (``B.in`` for
reading, then ``B.out`` for writing) and speaks a SerDes with mlbridge's
compiler-side encoders. Usable in a thread (``CompilerPeer``) or as a
subprocess: ``python compiler_peer.py BASE SERDES SCENARIO``.
"""

import errno
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from mlbridge import FdReader, TensorSpec, serdes  # noqa: E402


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
