"""A fault-injecting fake compiler (tests only): opens a pipe channel like
LLVM (BASE.in for reading, then BASE.out for writing) or a shared-memory
channel like ShmModelRunner (connects to the socket BASE, maps the rings;
one ring record per message), sends a header, a context and observations
{"i": k}, and at one protocol step injects a fault:

  steps   open | header | context | observation | reply | close
  faults  kill (SIGKILL itself) | stop (SIGSTOP itself) | truncate (half
          the step's message, then exits) | duplicate (the step's message
          twice, without waiting for a reply)

    python fault_injecting_compiler.py pipe|shm BASE SERDES STEP FAULT
"""

import mmap
import os
import select
import signal
import socket
import struct
import sys
import time

from fault_matrix import FAKE_PATIENCE_S
from mlbridge import BufferReader, FdReader, PeerClosed, TensorSpec, serdes
from mlbridge._spin import full_fence

SPECS = [TensorSpec("i", "int64_t", [1])]
ADVICE = TensorSpec("twice", "int64_t", [1])


class PipeChannel:
    def __init__(self, base):
        in_fd = os.open(base + ".in", os.O_RDONLY | os.O_NONBLOCK)
        deadline = time.monotonic() + FAKE_PATIENCE_S
        while True:
            try:
                self.out_fd = os.open(base + ".out", os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit(1)
                time.sleep(0.002)
        os.set_blocking(self.out_fd, True)
        self.reader = FdReader(in_fd)

    def write(self, data):
        os.write(self.out_fd, data)

    def reply_reader(self):
        self.reader.deadline = time.monotonic() + FAKE_PATIENCE_S
        return self.reader


class ShmChannel:
    """The compiler's end of docs/shm.md, for a few short messages (it
    never wraps the request ring)."""

    REQ_HEAD, REQ_TAIL, REP_HEAD, REP_TAIL = 64, 128, 192, 256
    MODEL_SLEEPING = 320
    WRAP = (1 << 64) - 1
    CONTROL = 4096
    U64 = struct.Struct("<Q")

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.connect(path)
        self.sock.settimeout(FAKE_PATIENCE_S)
        hello, fds, _, _ = socket.recv_fds(self.sock, 24, 3)
        self.capacity = struct.unpack("<QIIQ", hello)[3]
        self.mm = mmap.mmap(fds[0], self.CONTROL + 2 * self.capacity)
        self.wake_model, self.wake_self = fds[1], fds[2]
        self.req_head = self.rep_read = 0

    def word(self, offset, value=None):
        if value is None:
            return self.U64.unpack_from(self.mm, offset)[0]
        self.U64.pack_into(self.mm, offset, value)

    def write(self, data):
        at = self.CONTROL + self.req_head
        self.word(at, len(data))
        self.mm[at + 8:at + 8 + len(data)] = data
        self.req_head += 8 + (len(data) + 7) // 8 * 8
        assert self.req_head <= self.capacity, "the fake never wraps the ring"
        self.word(self.REQ_HEAD, self.req_head)
        full_fence()
        if self.word(self.MODEL_SLEEPING):
            os.eventfd_write(self.wake_model, 1)

    def reply_reader(self):
        deadline = time.monotonic() + FAKE_PATIENCE_S
        while self.word(self.REP_HEAD) == self.rep_read:
            if time.monotonic() > deadline:
                sys.exit(4)
            ready, _, _ = select.select([self.wake_self, self.sock], [], [], 0.01)
            if self.sock in ready and self.word(self.REP_HEAD) == self.rep_read:
                raise PeerClosed("the model closed the channel")
        at = self.CONTROL + self.capacity + self.rep_read % self.capacity
        n = self.word(at)
        if n == self.WRAP:  # the model went back to the start of the ring
            self.rep_read += self.capacity - self.rep_read % self.capacity
            return self.reply_reader()
        data = self.mm[at + 8:at + 8 + n]
        self.rep_read += 8 + (n + 7) // 8 * 8
        self.word(self.REP_TAIL, self.rep_read)
        return BufferReader(data)


def main(transport, base, serdes_name, step, fault):
    codec = serdes.get(serdes_name)
    channel = (PipeChannel if transport == "pipe" else ShmChannel)(base)

    def send(here, data):
        if here == step and fault == "truncate":
            channel.write(data[:max(1, len(data) // 2)])
            sys.exit(0)
        if data:
            channel.write(data)
        if here == step and fault == "duplicate":
            channel.write(data)
        if here == step and fault == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if here == step and fault == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)

    if step == "open":
        send("open", b"")
    send("header", codec.encode_header(SPECS, ADVICE))
    for k in range(3):
        send("context", codec.encode_context(f"f{k}"))
        send("observation", codec.encode_observation(0, [(SPECS[0], k)]))
        if step == "reply":
            send("reply", b"")  # gone (or frozen) while the model answers
        value = int(codec.decode_advice(channel.reply_reader(), ADVICE).ravel()[0])
        if value != 2 * k:
            return 3
    send("close", b"")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))
