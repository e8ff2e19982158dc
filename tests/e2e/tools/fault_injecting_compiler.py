"""A fault-injecting fake compiler (tests only): opens BASE like LLVM
(B.in for reading, then B.out for writing), sends a header, a context and
observations {"i": k}, and at one protocol step injects a fault:

  steps   open | header | context | observation | reply | close
  faults  kill (SIGKILL itself) | stop (SIGSTOP itself) | truncate (half
          the step's message, then exits) | duplicate (the step's message
          twice, without waiting for a reply)

    python fault_injecting_compiler.py BASE SERDES STEP FAULT
"""

import os
import signal
import sys
import time

from mlbridge import FdReader, TensorSpec, serdes

SPECS = [TensorSpec("i", "int64_t", [1])]
ADVICE = TensorSpec("twice", "int64_t", [1])


def main(base, serdes_name, step, fault):
    codec = serdes.get(serdes_name)
    in_fd = os.open(base + ".in", os.O_RDONLY | os.O_NONBLOCK)
    deadline = time.monotonic() + 10
    while True:
        try:
            out_fd = os.open(base + ".out", os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:
            if time.monotonic() > deadline:
                return 1
            time.sleep(0.002)
    os.set_blocking(out_fd, True)
    reader = FdReader(in_fd, deadline=time.monotonic() + 10)

    def send(here, data):
        if here == step and fault == "truncate":
            os.write(out_fd, data[:max(1, len(data) // 2)])
            sys.exit(0)
        os.write(out_fd, data)
        if here == step and fault == "duplicate":
            os.write(out_fd, data)
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
        reader.deadline = time.monotonic() + 5
        value = int(codec.decode_advice(reader, ADVICE).ravel()[0])
        if value != 2 * k:
            return 3
    send("close", b"")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
