"""A fault-injecting fake model host (tests only): serves one compiler
session over pipes (BASE.in / BASE.out, like PipeCompilerInterface) or
shared memory (the socket BASE, through the real ShmCompilerInterface's
session), answering 2*i for {"i": i} in framed replies (protocol.md
§5.1), except that at one protocol step it injects a fault:

  steps   open | header | context | observation | reply | close
  faults  kill (SIGKILL itself) | stop (SIGSTOP itself) | delay (sleeps
          DELAY seconds, then goes on) | truncate (reply: half the bytes,
          then holds the channel) | duplicate (reply: written twice)

    python fault_injecting_model.py pipe|shm BASE SERDES STEP FAULT DELAY
"""

import os
import sys
import time

from fault_matrix import FAKE_PATIENCE_S, inject_into_self
from mlbridge import FdReader, ShmCompilerInterface, serdes
from mlbridge.messages import Context, Header, Observation, SessionState


class PipeEnds:
    """A reply torn by a crash leaves half its bytes in the pipe."""

    def __init__(self, base, serdes_name):
        self.base = base
        for path in (base + ".in", base + ".out"):
            os.mkfifo(path, 0o600)

    def open(self):
        deadline = time.monotonic() + FAKE_PATIENCE_S
        while True:
            try:
                self.wfd = os.open(self.base + ".in", os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit(1)
                time.sleep(0.002)
        rfd = os.open(self.base + ".out", os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(self.wfd, True)
        return FdReader(rfd, deadline=time.monotonic() + FAKE_PATIENCE_S)

    def reply(self, data):
        os.write(self.wfd, data)

    def reply_torn(self, data):
        os.write(self.wfd, data[:len(data) // 2])


class ShmEnds:
    """The real ShmCompilerInterface's session: one ring record per reply,
    published whole, so a crash while writing leaves nothing."""

    def __init__(self, path, serdes_name):
        self.iface = ShmCompilerInterface(path, serdes=serdes_name, timeout=FAKE_PATIENCE_S)

    def open(self):
        self.session = self.iface._accept(time.monotonic() + FAKE_PATIENCE_S)
        self.session.deadline = time.monotonic() + FAKE_PATIENCE_S
        return self.session

    def reply(self, data):
        self.session.release()
        self.session.write(data, FAKE_PATIENCE_S)

    def reply_torn(self, data):
        pass


def main(transport, base, serdes_name, step, fault, delay):
    codec = serdes.get(serdes_name)

    def inject(here):
        if here == step:
            inject_into_self(fault, delay)

    ends = (PipeEnds if transport == "pipe" else ShmEnds)(base, serdes_name)
    print("ready", flush=True)
    inject("open")
    reader = ends.open()
    state = SessionState()
    while True:
        try:
            msg = codec.decode_message(reader, state)
        except Exception:  # the end of the session (or garbage)
            inject("close")
            time.sleep(delay)  # hold the channel a little, then leave
            return 0
        if type(msg) is Header:
            inject("header")
        elif type(msg) is Context:
            inject("context")
        elif type(msg) is Observation:
            inject("observation")
            data = state.frame(codec.encode_advice(msg.advice_spec, 2 * int(msg["i"][0])))
            state.requests += 1
            if step == "reply" and fault == "truncate":
                ends.reply(data[:len(data) // 2])
                time.sleep(delay)
                return 0
            if step == "reply" and fault == "kill":
                ends.reply_torn(data)
            inject("reply")
            ends.reply(data)
            if step == "reply" and fault == "duplicate":
                ends.reply(data)


if __name__ == "__main__":
    t, b, s, st, f, d = sys.argv[1:7]
    sys.exit(main(t, b, s, st, f, float(d)))
