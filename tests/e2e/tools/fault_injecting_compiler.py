"""A fault-injecting fake compiler (tests only): opens a pipe channel like
LLVM (BASE.in for reading, then BASE.out for writing) or a shared-memory
channel like ShmModelRunner (connects to the socket BASE, maps the rings;
one ring record per message), sends a header, a context and observations
{"i": k}, and at one protocol step injects a fault:

  steps   open | header | context | observation | reply | close
  faults  kill (SIGKILL itself) | stop (SIGSTOP itself) | truncate (half
          the step's message, then exits) | duplicate (the step's message
          twice, without waiting for a reply) | half-stop (half the step's
          message, then SIGSTOP: frozen mid-message) | unread (reply: keeps
          sending observations and never reads a reply, until the model
          stops taking them) | corrupt (shm: instead of the step's message,
          request ring indices the model must refuse -- RingCompiler's
          first corruption; exits 0 once the model hangs up, 5 if it does
          not within FAKE_PATIENCE_S)

    python fault_injecting_compiler.py pipe|shm BASE SERDES STEP FAULT
"""

import os
import signal
import sys
import time
from pathlib import Path

from fault_matrix import FAKE_PATIENCE_S, inject_into_self
from mlbridge import BufferReader, FdReader, TensorSpec, serdes

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from compiler_peer import RingCompiler  # noqa: E402

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


class ShmChannel(RingCompiler):
    """The compiler's end of docs/shm.md (one ring record per message)."""

    def __init__(self, path):
        super().__init__(path, timeout=FAKE_PATIENCE_S)

    def write(self, data):
        self.send(data)

    def reply_reader(self):
        return BufferReader(self.reply(FAKE_PATIENCE_S))


def main(transport, base, serdes_name, step, fault):
    codec = serdes.get(serdes_name)
    channel = (PipeChannel if transport == "pipe" else ShmChannel)(base)

    def send(here, data):
        if here == step and fault == "corrupt":
            channel.corrupt(channel.CORRUPTIONS[0])
            sys.exit(0 if channel.wait_hang_up(FAKE_PATIENCE_S) else 5)
        if here == step and fault in ("truncate", "half-stop"):
            channel.write(data[:max(1, len(data) // 2)])
            if fault == "half-stop":
                inject_into_self("stop", 0)
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
    if step == "reply" and fault == "unread":
        k = 0
        while True:  # until a write finds no room for FAKE_PATIENCE_S
            channel.write(codec.encode_observation(k, [(SPECS[0], k)]))
            k += 1
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
