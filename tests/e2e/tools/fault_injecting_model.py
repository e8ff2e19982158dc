"""A fault-injecting fake model host (tests only): serves one compiler
session on BASE.in / BASE.out like PipeCompilerInterface (framed replies
of 2*i for {"i": i}), except that at one protocol step it injects a fault:

  steps   open | header | context | observation | reply | close
  faults  kill (SIGKILL itself) | stop (SIGSTOP itself) | delay (sleeps
          DELAY seconds, then goes on) | truncate (reply: half the bytes,
          then holds the pipe) | duplicate (reply: written twice)

    python fault_injecting_model.py BASE SERDES STEP FAULT DELAY
"""

import os
import signal
import struct
import sys
import time

from mlbridge import FdReader, serdes
from mlbridge.messages import Context, Header, Observation, SessionState

FRAME = struct.Struct("<QQQ")


def main(base, serdes_name, step, fault, delay):
    codec = serdes.get(serdes_name)

    def inject(here):
        if here != step:
            return
        if fault == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif fault == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        elif fault == "delay":
            time.sleep(delay)

    for path in (base + ".in", base + ".out"):
        os.mkfifo(path, 0o600)
    print("ready", flush=True)
    inject("open")
    deadline = time.monotonic() + 10
    while True:
        try:
            wfd = os.open(base + ".in", os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:
            if time.monotonic() > deadline:
                return 1
            time.sleep(0.002)
    rfd = os.open(base + ".out", os.O_RDONLY | os.O_NONBLOCK)
    os.set_blocking(wfd, True)
    reader = FdReader(rfd, deadline=time.monotonic() + 10)
    state = SessionState()
    while True:
        try:
            msg = codec.decode_message(reader, state)
        except Exception:  # EOF (or garbage): the session is over
            inject("close")
            time.sleep(delay)  # hold the pipes a little, then leave
            return 0
        if type(msg) is Header:
            inject("header")
        elif type(msg) is Context:
            inject("context")
        elif type(msg) is Observation:
            inject("observation")
            body = bytes(codec.encode_advice(msg.advice_spec, 2 * int(msg["i"][0])))
            data = (FRAME.pack(state.session, state.requests, len(body)) + body
                    if state.session else body)
            state.requests += 1
            if step == "reply" and fault == "truncate":
                os.write(wfd, data[:len(data) // 2])
                time.sleep(delay)
                return 0
            if step == "reply" and fault == "duplicate":
                data += data
            if step == "reply" and fault == "kill":
                os.write(wfd, data[:len(data) // 2])
            inject("reply")
            os.write(wfd, data)


if __name__ == "__main__":
    b, s, st, f, d = sys.argv[1:6]
    sys.exit(main(b, s, st, f, float(d)))
