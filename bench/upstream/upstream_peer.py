"""The model side of the published ML-Compiler-Bridge for upstream_compare.py.

Serves bench_peer.py's layer (y = x . W[:n] + 0.5, numpy, float32) through
the published Python package `compilerinterface`, the way its examples use
it: PipeCompilerInterface(format, name) + reset_pipes() + an evaluate /
populate_buffer loop for pipes; GrpcCompilerInterface(mode="server", ...)
with a servicer whose getAdvice answers for gRPC.

    upstream_peer.py --upstream-src DIR --mode pipe --serdes bytes|json --dir D
    upstream_peer.py --upstream-src DIR --mode grpc --stubs DIR

Prints one JSON line when ready ({"base": ...} or {"address": ...}) on
stdout; the package's own messages go to stderr. Exits when stdin reaches
EOF.
"""
import argparse
import json
import os
import socket
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from bench_peer import W, B, watch_stdin  # noqa: E402  (the same layer)


def layer(x):
    return float(np.dot(x, W[:x.size]) + B)


def serve_pipe(args, ready):
    from compilerinterface import PipeCompilerInterface
    fmt = args.serdes
    base = os.path.join(args.dir, "upstream")
    ci = PipeCompilerInterface(fmt, base)  # makes the FIFOs
    ready({"base": base})
    ci.reset_pipes()  # blocks until the compiler opens them
    while True:
        try:
            obs = ci.evaluate()
        except Exception:
            if ci.fc_buffer.peek(1) == b"":
                os._exit(0)  # the compiler closed its end: done
            raise
        if fmt == "json":
            x = np.asarray(obs["x"], dtype=np.float32)
        else:
            # A TensorValue over the raw bytes: read them as one numpy view
            # (the fastest this package allows; element access is per item).
            x = np.frombuffer(obs[0]._buffer, dtype=np.float32)
        ci.populate_buffer(layer(x))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_grpc(args, ready):
    sys.path.insert(0, args.stubs)
    import compare_bench_pb2
    import compare_bench_pb2_grpc
    from compilerinterface import GrpcCompilerInterface

    class Servicer(compare_bench_pb2_grpc.CompareBenchServicer):
        def getAdvice(self, request, context):
            # fromiter: the fastest of asarray / array(list) / fromiter on
            # a repeated float field (measured with this grpcio/protobuf).
            x = np.fromiter(request.x, dtype=np.float32, count=len(request.x))
            return compare_bench_pb2.Reply(y=layer(x))

    port = free_port()

    def announce():
        # start_server() blocks inside the package: report once it listens.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                ready({"address": f"127.0.0.1:{port}"})
                return
            except OSError:
                time.sleep(0.02)
        os._exit(1)

    threading.Thread(target=announce, daemon=True).start()
    GrpcCompilerInterface(mode="server", hostport=port,
                          add_server_method=compare_bench_pb2_grpc.add_CompareBenchServicer_to_server,
                          grpc_service_obj=Servicer())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream-src", required=True)
    ap.add_argument("--mode", choices=("pipe", "grpc"), required=True)
    ap.add_argument("--serdes", choices=("bytes", "json"), default="bytes")
    ap.add_argument("--dir", default=".")
    ap.add_argument("--stubs", default=".")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.upstream_src, "CompilerInterface"))
    # The package prints progress to stdout: keep stdout for our ready line.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def ready(info):
        out.write(json.dumps(dict(info, pid=os.getpid())) + "\n")
        out.flush()

    threading.Thread(target=watch_stdin, daemon=True).start()
    {"pipe": serve_pipe, "grpc": serve_grpc}[args.mode](args, ready)


if __name__ == "__main__":
    main()
