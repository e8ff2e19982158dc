"""The Python model of mlbridge-bench (started by the C++ program itself).

One fully connected layer returning a scalar, computed with numpy:
    y = x . W[:n] + B,  W = linspace(-1, 1, 50000) (float32), B = 0.5
(the ONNX model made by make_fc_model.py computes the same). A request with
the feature "f" (one float) is the small-message test: the answer is the
int64 1 if f > 0 else 0.

    bench_peer.py --mode pipe --serdes bitstream|json|protobuf --dir D [--channels K]
                  (FIFO pairs D/ch0 ... D/ch<K-1>, one event loop serves them all)
    bench_peer.py --mode shm --serdes ... --dir D   (socket D/ch0.sock, one event loop)
    bench_peer.py --mode grpc

Prints one JSON line when ready ({"bases": [...]} or {"address": ...},
plus "pid"), then serves until its stdin reaches EOF (the benchmark closes it,
or dies), and exits.
"""
import argparse
import json
import os
import sys
import threading
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

MAX_N = 50000
W = np.linspace(-1.0, 1.0, MAX_N, dtype=np.float32)
B = np.float32(0.5)


def fc(obs):
    # Observation arrays are float32 numpy arrays shaped as their specs
    # ("x": [n], "f": [1]).
    if "x" in obs:
        x = obs["x"]
        return float(np.dot(x, W[:x.size]) + B)
    return int(obs["f"].item() > 0)  # (numpy scalar arithmetic costs µs)


def watch_stdin():
    # The benchmark owns us: exit as soon as it closes our stdin or dies.
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


def serve_forever(loop, timeout):
    while True:
        try:
            loop.run(timeout=timeout)
        except Exception as e:  # a broken session: keep serving the others
            print(f"bench_peer: {type(e).__name__}: {e}", file=sys.stderr, flush=True)


def serve_pipe(args):
    # Every channel in one event loop (one thread, no GIL contention).
    from mlbridge import EventLoop, PipeCompilerInterface
    ifaces = [PipeCompilerInterface(base=os.path.join(args.dir, f"ch{i}"),
                                    serdes=args.serdes, timeout=args.timeout)
              for i in range(args.channels)]
    loop = EventLoop()
    for iface in ifaces:
        loop.add(iface, fc)
    threading.Thread(target=watch_stdin, daemon=True).start()
    print(json.dumps({"pid": os.getpid(), "bases": [i.base for i in ifaces]}), flush=True)
    serve_forever(loop, args.timeout)


def serve_shm(args):
    # One interface whose event loop serves every connected compiler.
    from mlbridge import EventLoop, ShmCompilerInterface
    iface = ShmCompilerInterface(os.path.join(args.dir, "ch0.sock"), serdes=args.serdes,
                                 timeout=args.timeout)
    loop = EventLoop()
    loop.add(iface, fc)
    threading.Thread(target=watch_stdin, daemon=True).start()
    print(json.dumps({"pid": os.getpid(), "path": iface.path}), flush=True)
    serve_forever(loop, args.timeout)


def serve_grpc(args):
    from mlbridge.grpc import GrpcCompilerInterface
    iface = GrpcCompilerInterface(timeout=args.timeout)
    print(json.dumps({"pid": os.getpid(), "address": iface.address}), flush=True)

    def loop():
        while True:
            try:
                iface.serve(fc, sessions=None, timeout=args.timeout)
            except Exception as e:
                print(f"bench_peer: {type(e).__name__}: {e}", file=sys.stderr, flush=True)

    threading.Thread(target=loop, daemon=True).start()
    watch_stdin()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("pipe", "shm", "grpc"), required=True)
    ap.add_argument("--serdes", default="bitstream")
    ap.add_argument("--dir", default=".")
    ap.add_argument("--channels", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600.0)
    args = ap.parse_args()
    {"pipe": serve_pipe, "shm": serve_shm, "grpc": serve_grpc}[args.mode](args)


if __name__ == "__main__":
    main()
