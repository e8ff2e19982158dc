"""A broken model during a real ``make -j2``: zlib (Debian's source package,
its own configure, Makefile and tests) built with both size plugins loaded
the way docs/deployment.md says (LLVM 19 and 22), while the model cannot be used -- a
missing model file, a corrupt one, or a model side that is gone (its
channel exists, nobody serves it).

Every compile warns once per plugin, names the cause, and goes on with
LLVM's decisions; the build and zlib's own tests pass; nothing of ours
reaches stdout (``make -s``: the only stdout is the project's own; the
output of each target kept together, ``--output-sync``, so it can be counted).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

BUILD_TIMEOUT = 600.0


@pytest.fixture(scope="module")
def zlib_env(plugins_any_llvm, llvm_major):
    from mlbridge.builds import build, configs, projects
    from mlbridge.builds.fetch import unpack
    project = projects.by_name("zlib")
    comp = configs.compilers(llvm_major)
    env = build.build_env(configs.by_name("size"), comp, project)
    return project, env, unpack


def _broken(kind: str, tmp: Path) -> dict:
    """Both plugins' settings for one kind of broken model."""
    if kind == "missing":
        return {"MLBRIDGE_INLINE_RUNNER": "onnx", "MLBRIDGE_INLINE_MODEL": str(tmp / "none.onnx"),
                "MLBRIDGE_PO_RUNNER": "onnx", "MLBRIDGE_PO_MODEL": str(tmp / "none.onnx")}
    if kind == "corrupt":
        bad = tmp / "corrupt.onnx"
        bad.write_bytes(b"\x08\x07this is not an onnx model" * 40)
        return {"MLBRIDGE_INLINE_RUNNER": "onnx", "MLBRIDGE_INLINE_MODEL": str(bad),
                "MLBRIDGE_PO_RUNNER": "onnx", "MLBRIDGE_PO_MODEL": str(bad)}
    assert kind == "gone"
    out = {}
    for plugin, prefix in (("inline", "MLBRIDGE_INLINE_"), ("po", "MLBRIDGE_PO_")):
        base = tmp / f"{plugin}-channel"
        for end in (".in", ".out"):
            os.mkfifo(str(base) + end, 0o600)
        out.update({f"{prefix}RUNNER": "pipe", f"{prefix}CHANNEL": str(base),
                    f"{prefix}TIMEOUT_MS": "300"})
    return out


def _run(cmd, cwd, env):
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT)


@pytest.mark.parametrize("kind", ["missing", "corrupt", "gone"])
def test_broken_model_during_make(kind, zlib_env, tmp_path):
    project, base_env, unpack = zlib_env
    env = dict(base_env, **_broken(kind, tmp_path))
    src = unpack(project, tmp_path / "src")
    cfg = _run(["./configure"], src, env)
    assert cfg.returncode == 0, cfg.stdout + cfg.stderr

    made = _run(["make", "-s", "-j2", "--output-sync=target"], src, env)
    assert made.returncode == 0, made.stderr[-3000:]
    assert "mlbridge" not in made.stdout.lower(), made.stdout[:2000]

    objects = sorted(p.name for p in src.iterdir() if p.suffix in (".o", ".lo"))
    assert objects, "zlib built no objects"
    warnings = [l for l in made.stderr.splitlines() if re.search(r"\bwarning:", l)]
    for prefix in ("mlbridge-inline", "mlbridge-phase-order"):
        ours = [w for w in warnings if prefix in w]
        # one warning per compile (the runner is unusable from the start);
        # make -s does not echo, so the count is the object files built
        assert len(ours) == len(objects), (prefix, len(ours), len(objects), ours[:3])

    for target in project.tests:
        t = _run(["make", target], src, env)
        assert t.returncode == 0, (target, t.stdout[-2000:], t.stderr[-2000:])
