"""Helpers shared by tests/e2e/test_grpc_*.py: start the C++ compiler
program (mlbridge-grpc-e2e-compiler), read its JSON lines, run a Python
model in a separate process (so a test can kill it), find free ports.
Every process has a bounded lifetime (the tests' ``procs`` guard kills it).
Importing it skips the test module only when the build says gRPC is off.
"""

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

from build_components import require_component

# Every test module using these helpers needs the C++ gRPC component.
require_component("grpc")

SOURCE = Path(os.environ.get("MLBRIDGE_SOURCE_DIR", Path(__file__).resolve().parents[3]))
BUILD = Path(os.environ.get("MLBRIDGE_BUILD_DIR", SOURCE / "build"))
COMPILER = BUILD / "tests" / "mlbridge-grpc-e2e-compiler"
C_COMPILER = BUILD / "tests" / "mlbridge-grpc-e2e-compiler-c"
USER_PROTO = SOURCE / "tests" / "e2e" / "tools" / "grpc_user.proto"
TIMEOUT = 30


def binary(path=COMPILER):
    assert path.exists(), f"{path} not built; build the project first (scripts/build.sh)"
    return str(path)


def compiler_cmd(*args):
    return [binary(), *map(str, args)]


def events(proc, timeout=TIMEOUT):
    out, err = proc.communicate(timeout=timeout)
    return [json.loads(l) for l in out.splitlines() if l.strip()], err


def by_event(lines, name):
    return [e for e in lines if e["event"] == name]


def listening_address(proc, timeout=10):
    """Training mode: the first line of the compiler is its port."""
    deadline = time.monotonic() + timeout
    line = proc.stdout.readline()
    assert line, f"compiler exited before listening: {proc.stderr.read()[-2000:]}"
    first = json.loads(line)
    assert first["event"] == "listening", first
    assert time.monotonic() < deadline
    return f"127.0.0.1:{first['port']}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def echo(obs):
    """The model of scenario "types": echo s_<dtype> + v_<dtype> (or text)."""
    spec = obs.advice_spec
    if spec.dtype == "string":
        return obs["text"]
    return np.concatenate([np.ravel(obs["s_" + spec.dtype]), np.ravel(obs["v_" + spec.dtype])])


ALL_DTYPES = {"float", "double", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t",
              "uint16_t", "uint32_t", "uint64_t", "bool", "string"}


def check_every_type_echoed(proc):
    """The "types" scenario's compiler ended well and every dtype came back
    bit-exact."""
    lines, err = events(proc)
    assert proc.returncode == 0, err + str(lines)
    echoed = {e["dtype"]: e["ok"] for e in by_event(lines, "echo")}
    assert set(echoed) == ALL_DTYPES and all(echoed.values()), echoed


def start_model_process(procs, body, *, address="127.0.0.1:0", extra_kwargs=""):
    """A separate Python model process serving inference requests; ``body``
    runs for each observation with ``iface`` and ``obs`` bound. Returns
    (process, address)."""
    script = textwrap.dedent(f"""
        import os, signal, sys, time
        from mlbridge.grpc import GrpcCompilerInterface
        with GrpcCompilerInterface({address!r}, timeout=30{extra_kwargs}) as iface:
            print(iface.address, flush=True)
            while True:
                obs = iface.evaluate()
                if obs is None:
                    continue
        """) + textwrap.indent(textwrap.dedent(body), " " * 8)
    env = dict(os.environ, PYTHONPATH=str(SOURCE / "python"))
    proc = procs.spawn([sys.executable, "-c", script], env=env, text=True)
    line = proc.stdout.readline().strip()
    assert line, f"model process did not start: {proc.stderr.read()[-2000:]}"
    return proc, line
