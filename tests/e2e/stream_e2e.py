"""What the end-to-end tests of the stream transports (pipes, shared memory)
share: the compiler programs (tests/e2e/tools/e2e_compiler.cpp and the C
program e2e_compiler_c.c, which print one JSON object per result), a model
in its own process, and the models the tests serve."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

import mlbridge

SOURCE = Path(os.environ.get("MLBRIDGE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD = Path(os.environ.get("MLBRIDGE_BUILD_DIR", SOURCE / "build"))
COMPILER = BUILD / "tests" / "mlbridge-e2e-compiler"
C_COMPILER = BUILD / "tests" / "mlbridge-e2e-compiler-c"
FORMATS = ["bitstream", "json"]
TRANSPORTS = ["pipe", "shm"]
INTERFACES = {"pipe": mlbridge.PipeCompilerInterface, "shm": mlbridge.ShmCompilerInterface}


def binary(path):
    assert path.exists(), f"{path} not built; build the project first (scripts/build.sh)"
    return str(path)


def channel(iface):
    """What a compiler is given to reach ``iface``: the FIFO base or the socket."""
    return iface.base if isinstance(iface, mlbridge.PipeCompilerInterface) else iface.path


def start_compiler(transport, where, serdes, scenario, *extra):
    """The C++ compiler program on ``transport`` ("pipe": ``where`` is the
    FIFO base; "shm": the socket path)."""
    cmd = [binary(COMPILER), "--base" if transport == "pipe" else "--shm", str(where),
           "--serdes", serdes, "--scenario", scenario, *map(str, extra)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def start_c_compiler(transport, where, serdes):
    cmd = [binary(C_COMPILER), str(where), serdes] + (["shm"] if transport == "shm" else [])
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def events(proc, timeout=30):
    out, err = proc.communicate(timeout=timeout)
    lines = [json.loads(l) for l in out.splitlines() if l.strip()]
    return lines, err


def start_model_process(transport, where, serdes, body):
    """A separate Python model process (so it can be killed) that runs body
    with `iface` and `obs` bound for each observation."""
    cls = INTERFACES[transport].__name__
    script = textwrap.dedent(f"""
        import os, signal, sys, time
        from mlbridge import {cls}
        with {cls}({str(where)!r}, serdes={serdes!r}, timeout=30) as iface:
            print("ready", flush=True)
            while (obs := iface.evaluate()) is not None:
        """) + textwrap.indent(textwrap.dedent(body), " " * 8)
    env = dict(os.environ, PYTHONPATH=str(SOURCE / "python"))
    proc = subprocess.Popen([sys.executable, "-c", script], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    return proc


def cpu_seconds(pid):
    """User + system CPU time of a live process (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def echo(obs):
    if "text" in obs:
        return obs["text"]
    assert obs["label"].startswith("dtype "), obs["label"]
    return np.concatenate([np.ravel(obs["scalar"]), np.ravel(obs["vector"])])


def c_program_model(obs):
    spec = obs.advice_spec
    if spec.dtype == "int32_t":
        return int(obs["i"][0]) + len(obs["ia"])
    if spec.dtype == "int64_t" and list(spec.shape) == [1]:
        return int(obs["l"][0])
    if spec.dtype == "float" and list(spec.shape) == [1]:
        return float(obs["f"][0] + obs["fa"].sum())
    if spec.dtype == "double" and list(spec.shape) == [1]:
        return float(obs["d"][0] + obs["da"].sum())
    if spec.dtype == "bool":
        return not bool(obs["b"][0])
    if spec.dtype == "float":
        return obs["fa"][::-1]
    if spec.dtype == "int64_t":
        return np.concatenate([obs["la"], obs["i"].astype(np.int64)])
    if spec.dtype == "double":
        return np.zeros(0)
    raise AssertionError(f"unexpected advice spec {spec}")


def twice(obs):
    return 2 * int(obs["i"][0])

