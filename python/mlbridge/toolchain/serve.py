"""Compilers whose model requests arrive over an endpoint they are given (a
pipe, shared-memory or gRPC channel: the project's plugins and C tool, any
program using the runners): :func:`serve_compiler` runs one and answers
each request with a policy; :class:`ModelServer` answers an endpoint from a
thread while compilers are run one after the other.
"""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from ..errors import TimeoutError
from . import process
from .run import _start

__all__ = ["serve_compiler", "ServedRun", "ModelServer", "open_interface", "TRANSPORTS"]


@dataclass
class ServedRun:
    """What :func:`serve_compiler` saw: one row of features and one decision
    per request (columns ``feature_names``), the request contexts, the
    compiler's exit status and output."""

    returncode: int
    stdout: str
    stderr: str
    feature_names: List[str] = field(default_factory=list)
    features: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    decisions: np.ndarray = field(default_factory=lambda: np.zeros((0,), np.int64))
    sessions: int = 0
    contexts: List[str] = field(default_factory=list)
    cpu_seconds: float = 0.0


#: The model-side transports a compiler can be served over.
TRANSPORTS = ("pipe", "shm", "grpc")


def open_interface(transport: str, serdes: str = "bitstream", timeout: float = 60.0):
    """(interface, endpoint) of a new private channel: a FIFO pair (the
    endpoint is its base path), a shared-memory socket (its path) or a
    loopback gRPC server (``host:port``; ``serdes`` is protobuf's own)."""
    if transport == "pipe":
        from ..pipe import PipeCompilerInterface
        iface = PipeCompilerInterface(serdes=serdes, timeout=timeout)
        return iface, iface.base
    if transport == "shm":
        from ..shm import ShmCompilerInterface
        iface = ShmCompilerInterface(serdes=serdes, timeout=timeout)
        return iface, iface.path
    if transport == "grpc":
        from ..grpc import GrpcCompilerInterface
        iface = GrpcCompilerInterface("127.0.0.1:0", timeout=timeout)
        return iface, iface.address
    raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}")


def serve_compiler(command: Callable[[str], Sequence[str]], policy: Callable, *,
                   timeout: float = 120.0, env: Optional[Dict[str, str]] = None,
                   serdes: str = "bitstream", transport: str = "pipe",
                   cwd=None) -> ServedRun:
    """Runs ``command(endpoint)`` and answers every request with ``policy``
    until the process exits; the whole run is bounded by ``timeout``
    seconds (the process is killed and TimeoutError raised).

    ``transport="pipe"``: ``endpoint`` is a FIFO base path (the plugins'
    ``-mlbridge-inline-channel``, the MLIR plugin's and the C tool's
    channel, or LLVM's own ``-inliner-interactive-channel-base``).
    ``transport="shm"``: the Unix socket of a shared-memory channel
    (``mlbridge::ShmModelRunner``). ``transport="grpc"``: the
    ``host:port`` served here. ``policy``: a callable ``observation ->
    int`` (LLVM's inliner policies by name, "default", "always", "never":
    ``mlbridge.llvm.policies.resolve(name, "inline")``)."""
    if not callable(policy):
        raise TypeError(f"policy must be a callable observation -> int, got "
                        f"{type(policy).__name__} {policy!r} (a policy by name: "
                        "mlbridge.llvm.policies.resolve(name, advisor))")
    decide = policy
    rows: List[List[int]] = []
    decisions: List[int] = []
    names: List[str] = []
    contexts: List[str] = []
    sessions = 0
    deadline = time.monotonic() + timeout
    iface, endpoint = open_interface(transport, serdes, min(timeout, 60.0))
    with iface:
        argv = list(map(str, command(endpoint)))
        proc = _start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
        if transport != "grpc":
            iface.process = proc
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{argv[0]} did not finish within {timeout:.0f} s")
                try:
                    # gRPC learns of a dead compiler only from the process.
                    wait = min(left, 0.5 if transport == "grpc" else 30.0)
                    obs = iface.evaluate(timeout=wait)
                except TimeoutError:
                    if proc.poll() is not None:
                        break
                    continue
                if obs is None:
                    if proc.poll() is not None:
                        break
                    continue
                if not names:
                    names = list(obs.keys())
                if obs.index == 0:  # requests are numbered per session
                    sessions += 1
                d = int(np.asarray(decide(obs)).reshape(-1)[0])
                iface.populate_buffer(d)
                rows.append([int(np.asarray(obs[k]).reshape(-1)[0]) for k in names])
                decisions.append(d)
                contexts.append(obs.context)
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except BaseException:
            process.kill(proc)
            proc.communicate()
            raise
    return ServedRun(proc.returncode, out.decode(errors="replace"),
                     err.decode(errors="replace"), names,
                     np.asarray(rows, dtype=np.int64).reshape(len(rows), len(names)),
                     np.asarray(decisions, dtype=np.int64), sessions, contexts,
                     process.cpu_seconds(proc) or 0.0)


class ModelServer:
    """Answers every request arriving at a pipe, shared-memory or gRPC
    endpoint with ``policy(observation) -> int`` in a thread of this
    process, for compilers started meanwhile with :func:`compile` (one at a
    time on a pipe; concurrently over gRPC). ``endpoint`` is what the compiler is
    given; :meth:`close` stops the thread and raises the first error it
    met."""

    def __init__(self, policy, *, transport: str = "pipe", serdes: str = "bitstream",
                 timeout: float = 600.0):
        self.policy = policy
        self.iface, self.endpoint = open_interface(transport, serdes, timeout)
        self._stop = False
        self.error = None
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name="mlbridge-model-server")
        self._thread.start()

    def _loop(self):
        while not self._stop:
            try:
                obs = self.iface.evaluate(timeout=0.5)
                if obs is not None:
                    self.iface.populate_buffer(self.policy(obs))
            except TimeoutError:
                continue
            except Exception as e:  # noqa: BLE001 - raised by close()
                if not self._stop:
                    self.error = e
                return

    def close(self):
        self._stop = True
        self._thread.join(timeout=5)
        self.iface.close()
        if self.error is not None:
            raise self.error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
