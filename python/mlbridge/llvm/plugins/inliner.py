"""Serving the inline advisor plugin (or LLVM's own interactive inliner) from
a Python policy over named pipes.

    from mlbridge.llvm.plugins import find_plugins, serve_inliner

    info = find_plugins()
    run = serve_inliner(
        lambda base: ["opt-19", f"-load-pass-plugin={info.inline_advisor}",
                      "-passes=default<Oz>", f"-mlbridge-inline-channel={base}",
                      "-mlbridge-inline-include-default", "in.ll", "-o", "out.bc"],
        policy="default")
    run.features      # numpy int64 [decisions, 39], columns run.feature_names
    run.decisions     # what the policy answered

A policy is what :mod:`mlbridge.llvm` policies are (``policies.resolve``):
a built-in name -- "always", "never", "default" (answer LLVM's default
decision: needs -mlbridge-inline-include-default) -- or any callable taking
the observation (feature name -> numpy array) and returning 0/1. The
compiler runs under the package's process supervisor
(:mod:`mlbridge.llvm.process`).
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from ...errors import TimeoutError
from ...pipe import PipeCompilerInterface
from .. import process
from ..policies import resolve

@dataclass
class InlinerRun:
    returncode: int
    stdout: str
    stderr: str
    feature_names: List[str] = field(default_factory=list)
    features: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    decisions: np.ndarray = field(default_factory=lambda: np.zeros((0,), np.int64))
    sessions: int = 0
    contexts: List[str] = field(default_factory=list)


def _open_interface(transport: str, serdes: str, timeout: float):
    if transport == "pipe":
        return PipeCompilerInterface(serdes=serdes, timeout=timeout)
    if transport == "grpc":
        from ...grpc import GrpcCompilerInterface
        return GrpcCompilerInterface("127.0.0.1:0", timeout=timeout)
    raise ValueError("transport must be 'pipe' or 'grpc'")


def serve_inliner(command: Callable[[str], Sequence[str]], policy, *,
                  timeout: float = 120.0, env: Optional[Dict[str, str]] = None,
                  serdes: str = "bitstream", transport: str = "pipe",
                  cwd=None) -> InlinerRun:
    """Runs ``command(endpoint)`` and answers every inlining request with
    ``policy`` until the process exits. The whole run is bounded by
    ``timeout`` seconds (the process is killed and TimeoutError raised).

    ``transport="pipe"``: ``endpoint`` is a FIFO base path, for the plugin
    (``-mlbridge-inline-channel``) or for LLVM's own interactive mode
    (``-inliner-interactive-channel-base``), which send the same stream.
    ``transport="grpc"``: ``endpoint`` is the ``host:port`` this function
    serves on, for ``-mlbridge-inline-server``."""
    decide = resolve(policy, "inline")
    rows: List[List[int]] = []
    decisions: List[int] = []
    names: List[str] = []
    contexts: List[str] = []
    sessions = 0
    deadline = time.monotonic() + timeout
    with _open_interface(transport, serdes, min(timeout, 60.0)) as iface:
        endpoint = iface.base if transport == "pipe" else iface.address
        argv = list(map(str, command(endpoint)))
        proc = process.start(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                             cwd=cwd)
        if transport == "pipe":
            iface.process = proc
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{argv[0]} did not finish within {timeout:.0f} s")
                try:
                    # gRPC learns of a dead compiler only from the process.
                    wait = min(left, 30.0 if transport == "pipe" else 0.5)
                    obs = iface.evaluate(timeout=wait)
                except TimeoutError:
                    if proc.poll() is not None:
                        break
                    continue
                if obs is None:
                    if proc.poll() is not None:
                        break
                    continue
                keys = list(obs.keys())
                if not names:
                    names = keys
                if obs.index == 0:  # LLVM numbers the requests per session
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
    return InlinerRun(proc.returncode, out.decode(errors="replace"),
                      err.decode(errors="replace"), names,
                      np.asarray(rows, dtype=np.int64).reshape(len(rows), len(names)),
                      np.asarray(decisions, dtype=np.int64), sessions, contexts)
