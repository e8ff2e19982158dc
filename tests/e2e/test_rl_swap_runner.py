"""Swap the runner, keep the pass: the toy phase-ordering environment of
examples/rl runs unchanged against Python agents over pipes (the PyTorch
modules, as while training) and against the exported ONNX agents
in-process (as when deployed), and takes identical decisions.

C++: build/examples/rl/mlbridge-rl-example (examples/rl/swap_runner.cpp).
Python: examples/rl/python_agent.py (two PipeCompilerInterface loops).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from build_components import require_component

SOURCE = Path(os.environ.get("MLBRIDGE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD = Path(os.environ.get("MLBRIDGE_BUILD_DIR", SOURCE / "build"))
EXAMPLE = BUILD / "examples" / "rl" / "mlbridge-rl-example"
AGENT = SOURCE / "examples" / "rl" / "python_agent.py"
PROGRAMS = 12


require_component("onnx")  # the in-process ONNX agents


def episodes(stdout):
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def run_example(*args, timeout=60):
    assert EXAMPLE.exists(), f"{EXAMPLE} not built; build the project first (scripts/build.sh)"
    res = subprocess.run([str(EXAMPLE), *map(str, args), "--programs", str(PROGRAMS)],
                         capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, res.stderr
    return episodes(res.stdout)


def run_with_python_agents(tmp_path, procs):
    base = tmp_path / "rl"
    env = dict(os.environ, PYTHONPATH=str(SOURCE / "python"))
    agent = procs.spawn([sys.executable, str(AGENT), "--base", str(base), "--timeout", "30"],
                        env=env)
    # The C++ runners wait (with a deadline) for the agent's FIFOs.
    result = run_example("--pipe", base)
    code, _, err = procs.finish(agent)
    assert code == 0, err
    return result


def test_same_environment_same_decisions_over_pipes_and_in_process(tmp_path, procs):
    in_process = run_example("--onnx", SOURCE / "models")
    over_pipes = run_with_python_agents(tmp_path, procs)
    assert len(in_process) == len(over_pipes) == PROGRAMS
    for onnx_ep, pipe_ep in zip(in_process, over_pipes):
        assert onnx_ep["fallbacks"] == pipe_ep["fallbacks"] == 0
        assert pipe_ep["decisions"] == onnx_ep["decisions"], onnx_ep["program"]
        assert pipe_ep["final"] == onnx_ep["final"]
    # The comparison means something: both agents act, with varied choices.
    decisions = [tuple(d) for ep in in_process for d in ep["decisions"]]
    assert {a for a, _ in decisions} == {"pass", "factor"}
    assert len({d for d in decisions if d[0] == "pass"}) >= 4
    assert len({d for d in decisions if d[0] == "factor"}) >= 2
    assert sum(len(ep["decisions"]) for ep in in_process) >= 3 * PROGRAMS


def test_in_process_agents_are_deterministic():
    assert run_example("--onnx", SOURCE / "models") == run_example("--onnx", SOURCE / "models")
