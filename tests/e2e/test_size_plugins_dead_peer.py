"""End to end: a Python model over pipes that dies mid-compile, for both size
plugins in clang (LLVM 19 and 22): one warning per runner for the compile,
then quiet; LLVM's default decisions (the inliner) or the end of the
episode (phase ordering); nothing on stdout; the program still correct.

The peer answers a few requests, then closes its end of the pipes (a
dead peer: EOF on the next read, EPIPE on the next write).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from conftest import plugins_of_each_llvm

E2E = Path(__file__).resolve().parent
PROGRAM = E2E / "programs" / "plugins" / "interp.c"
RUN_TIMEOUT = 120.0


plugins = plugins_of_each_llvm()


def warnings(stderr: str):
    return [l for l in stderr.splitlines() if re.search(r"\bwarning:", l)]


def answers_then_dies(answers: int, action: int):
    def peer(iface):
        for _ in range(answers):
            assert iface.evaluate(timeout=30) is not None
            iface.populate_buffer(action)
        iface.close()
    return peer


def compile_with_dead_peer(e2e, clang, plugins, plugin, env_prefix, peer, tmp: Path,
                           extra_env=None):
    from mlbridge.llvm.plugins import tool_env
    obj = tmp / "out.o"
    env = tool_env(plugins, dict(os.environ, **(extra_env or {})))

    def cmd(base):
        env[f"{env_prefix}CHANNEL"] = base
        env[f"{env_prefix}TIMEOUT_MS"] = "20000"
        return [clang, "-Oz", f"-fpass-plugin={plugin}", "-c", str(PROGRAM), "-o", str(obj)]

    rc, stdout, stderr = e2e.run_against_pipe(cmd, peer, timeout=RUN_TIMEOUT, env=env)
    return rc, stdout, stderr, obj


def check_program(e2e, clang, obj: Path, tmp: Path):
    exe, ref = tmp / "prog", tmp / "ref"
    e2e.run_checked([clang, str(obj), "-o", str(exe)])
    e2e.run_checked([clang, "-O0", str(PROGRAM), "-o", str(ref)])
    assert e2e.run_checked([str(exe)], timeout=60) == e2e.run_checked([str(ref)], timeout=60)


def test_inliner_dead_peer_one_warning(plugins, clang, tmp_path, e2e):
    rc, stdout, stderr, obj = compile_with_dead_peer(
        e2e, clang, plugins, plugins.inline_advisor, "MLBRIDGE_INLINE_", answers_then_dies(3, 0), tmp_path)
    assert rc == 0, stderr
    assert stdout == ""
    w = warnings(stderr)
    assert len(w) == 1, stderr
    assert "mlbridge-inline:" in w[0] and "default inlining decisions" in w[0], w
    check_program(e2e, clang, obj, tmp_path)


def test_phase_order_dead_peer_one_warning(plugins, clang, tmp_path, e2e):
    # mem2reg-combine once (a change, so the episode goes on), then the peer is gone.
    rc, stdout, stderr, obj = compile_with_dead_peer(
        e2e, clang, plugins, plugins.phase_order, "MLBRIDGE_PO_", answers_then_dies(1, 2), tmp_path,
        {"MLBRIDGE_PO_ENABLE": "1", "MLBRIDGE_PO_SIZE": "tti"})
    assert rc == 0, stderr
    assert stdout == ""
    w = warnings(stderr)
    assert len(w) == 1, stderr
    assert "mlbridge-phase-order:" in w[0], w
    check_program(e2e, clang, obj, tmp_path)
