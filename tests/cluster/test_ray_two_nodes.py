"""Opt-in (cmake --build build --target train-cluster-test): training on a
two-node Ray cluster made on this machine with ``ray start --head`` and a
second ``ray start --address=...`` node, each with one CPU. Workers must
land on both nodes, and a training iteration must complete through them.

Not in the default suite: it starts and stops a machine-wide Ray cluster
(``ray stop`` ends every Ray process of this user).
"""

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

from mlbridge.llvm.plugins.corpus import csmith_include_dir, csmith_program  # noqa: E402
from mlbridge.train.cluster import TaskFailed, WorkerPool  # noqa: E402
from mlbridge.train.inliner import make_task  # noqa: E402

RAY = str(Path(sys.executable).with_name("ray"))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    port = _free_port()
    # A raylet may need more than Ray's default 10 s to register on a busy
    # 2-core machine.
    # Both nodes and this driver must agree on authentication; a loopback
    # test cluster runs without Ray's token authentication.
    os.environ["RAY_AUTH_MODE"] = "disabled"
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), RAY_USAGE_STATS_ENABLED="0",
               RAY_raylet_start_wait_time_s="120")
    head = [RAY, "start", "--head", f"--port={port}", "--num-cpus=1",
            "--node-ip-address=127.0.0.1", "--include-dashboard=false", "--disable-usage-stats"]
    worker = [RAY, "start", f"--address=127.0.0.1:{port}", "--num-cpus=1",
              "--node-ip-address=127.0.0.1", "--disable-usage-stats"]
    try:
        for cmd in (head, worker):
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
            assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([RAY, "stop", "--force"], env=env, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    clang = shutil.which("clang-19")
    d = tmp_path_factory.mktemp("mods")
    out = []
    for seed in (21, 22, 23):
        src = csmith_program(seed, d / f"c{seed}.c", max_funcs=6)
        ir = d / f"c{seed}.bc"
        subprocess.run([clang, "-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-c",
                        "-w", f"-I{csmith_include_dir()}", str(src), "-o", str(ir)],
                       check=True, timeout=120)
        out.append(ir)
    return out


def test_workers_run_on_both_nodes(cluster, modules):
    with WorkerPool(2, address=cluster) as pool:
        nodes = pool.worker_nodes()
        assert len(set(nodes)) == 2, nodes
        res = pool.map([make_task(p) for p in modules] * 2)
    assert all(not isinstance(r, TaskFailed) for r in res), res


def test_training_command_joins_the_cluster(cluster, modules, tmp_path):
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "mlbridge.train", "inliner", "--address", cluster,
                        "--out", str(out), "--workers", "2", "--iterations", "1",
                        "--flips", "2", "--quiet", "--train-ir", str(modules[0]),
                        str(modules[1]), "--validation-ir", str(modules[2])],
                       env=dict(os.environ, PYTHONPATH=str(REPO / "python")),
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["workers"] == 2 and summary["failures"] == 0
