"""Every command line ends a failure in ONE line on stderr and a non-zero
exit, never a traceback (mlbridge.cli; issue 34, item 13): a bad argument,
a missing manifest, IR file, plugin or build, a folder that cannot be
written, a corpus that is not fetched, Ctrl-C. Real subprocess runs of
``python -m ...``, no compiler (what the compiler-side runs add is in
tests/e2e/test_cli_errors_measure.py). Also in-process: ``--train-ir`` is
exactly what regalloc trains on, a cache that cannot be written never
stops a run, a loop-distribution run with no loop to learn says so.
"""

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from mlbridge import cli
from mlbridge.errors import MLBridgeError

MISSING_MANIFEST = "/nonexistent/mlbridge-manifest.json"


def _run(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **(env or {})))


def _one_line(res, status, *fragments):
    """The run failed with ``status`` and exactly one stderr line holding
    every fragment; returns the line."""
    lines = res.stderr.strip().splitlines()
    assert res.returncode == status, res.stderr[-3000:]
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    assert len(lines) == 1, res.stderr[-3000:]
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def a_file(tmp_path):
    f = tmp_path / "a-file"
    f.write_text("not a folder\n")
    return f


# ---- arguments refused before any work -------------------------------------------

@pytest.mark.parametrize("args", [
    ("mlbridge.train", "size-report", "--jobs", "0"),
    ("mlbridge.train", "evaluate", "--jobs", "0"),
    ("mlbridge.train", "inliner", "--workers", "0", "--out", "x"),
    ("mlbridge.train", "phase-order", "heldout", "--jobs", "0"),
    ("mlbridge.corpus", "build", "-j", "0"),
    ("mlbridge.mir2vec", "train", "--units", "0"),
])
def test_zero_jobs_or_workers_are_refused(args):
    _one_line(_run(*args), cli.EXIT_USAGE, "expected an integer >= 1, got 0")


@pytest.mark.parametrize("args", [
    ("mlbridge.train", "regalloc", "heldout", "--workers", "-1"),
    ("mlbridge.train", "loop-distribution", "evaluate", "--out", "r.json", "--workers", "-1"),
])
def test_negative_workers_are_refused(args):
    _one_line(_run(*args), cli.EXIT_USAGE, "expected an integer >= 0, got -1")


@pytest.mark.parametrize("args,what", [
    (("mlbridge.train", "regalloc", "--out", "{tmp}/run", "--train-ir", "{tmp}/none.ll"),
     "argument --train-ir: no such file: {tmp}/none.ll"),
    (("mlbridge.train", "inliner", "train", "--out", "{tmp}/run", "--validation-ir",
      "{tmp}/none.ll"), "argument --validation-ir: no such file"),
    (("mlbridge.train", "inliner", "--out", "{tmp}/run", "--validation-ir", "{tmp}/none.ll"),
     "argument --validation-ir: no such file"),
    (("mlbridge.train", "evaluate", "--plugin", "{tmp}/none.so"),
     "argument --plugin: no such file: {tmp}/none.so"),
    (("mlbridge.train", "phase-order", "--out", "{tmp}/run", "--plugin", "{tmp}/none.so"),
     "argument --plugin: no such file"),
    (("mlbridge.train", "loop-distribution", "--out", "{tmp}/run", "--plugin", "{tmp}/none.so"),
     "argument --plugin: no such file"),
    (("mlbridge.train", "loop-distribution", "demo", "--plugin", "{tmp}/none.so"),
     "argument --plugin: no such file"),
])
def test_missing_files_and_plugins_are_refused(tmp_path, args, what):
    args = [a.format(tmp=tmp_path) for a in args]
    _one_line(_run(*args), cli.EXIT_USAGE, what.format(tmp=tmp_path))
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("args", [
    ("mlbridge.train", "inliner", "--manifest", MISSING_MANIFEST, "--out", "{tmp}/run"),
    ("mlbridge.train", "regalloc", "--manifest", MISSING_MANIFEST, "--out", "{tmp}/run"),
    ("mlbridge.train", "phase-order", "--manifest", MISSING_MANIFEST, "--out", "{tmp}/run"),
    ("mlbridge.train", "evaluate", "--manifest", MISSING_MANIFEST),
    ("mlbridge.train", "size-report", "--manifest", MISSING_MANIFEST, "--no-lto"),
    ("mlbridge.corpus", "--manifest", MISSING_MANIFEST, "list"),
    ("mlbridge.mir2vec", "train", "--manifest", MISSING_MANIFEST, "--out", "{tmp}/v.json"),
])
def test_a_missing_manifest_is_one_line(tmp_path, args):
    args = [a.format(tmp=tmp_path) for a in args]
    _one_line(_run(*args), cli.EXIT_ERROR,
              f"error: cannot read the corpus manifest {MISSING_MANIFEST}")
    assert list(tmp_path.iterdir()) == []  # no run folder, no vocabulary


def test_a_missing_build_is_one_line(tmp_path):
    """No build manifest: the plugins are not found (one line naming it)."""
    env = {"MLBRIDGE_BUILD_DIR": str(tmp_path / "no-build")}
    line = _one_line(_run("mlbridge.train", "loop-distribution", "--out", str(tmp_path / "run"),
                          env=env), cli.EXIT_ERROR, "mlbridge.train loop-distribution train: error:")
    assert str(tmp_path / "no-build") in line


@pytest.mark.parametrize("under", ["file", "sys"])
@pytest.mark.parametrize("args", [
    ("mlbridge.train", "inliner", "--out", "{out}", "--manifest", MISSING_MANIFEST),
    ("mlbridge.train", "regalloc", "--out", "{out}", "--train-ir", "{ir}",
     "--manifest", MISSING_MANIFEST),
    ("mlbridge.train", "phase-order", "--out", "{out}", "--manifest", MISSING_MANIFEST),
    ("mlbridge.train", "loop-distribution", "--out", "{out}"),
    ("mlbridge.train", "evaluate", "--out", "{out}/rows.json", "--manifest", MISSING_MANIFEST),
    ("mlbridge.train", "size-report", "--out", "{out}/sizes.json",
     "--manifest", MISSING_MANIFEST),
    ("mlbridge.train", "loop-distribution", "heldout", "--out", "{out}/r.json"),
    ("mlbridge.mir2vec", "train", "--out", "{out}/vocab.json", "--manifest", MISSING_MANIFEST),
])
def test_an_output_folder_that_cannot_be_written_is_refused_first(a_file, args, under):
    """A folder under a file (ENOTDIR) or in /sys (EPERM, root too): refused
    before any work (a corpus command never reaches its missing manifest)."""
    out = f"{a_file}/run" if under == "file" else "/sys/mlbridge-run"
    args = [a.format(out=out, ir=a_file) for a in args]
    _one_line(_run(*args), cli.EXIT_USAGE, "cannot write", out)


def test_mir2vec_train_without_a_corpus(tmp_path):
    env = {"MLBRIDGE_CORPUS_CACHE": str(tmp_path / "empty"),
           "MLBRIDGE_CORPUS_BUILD": str(tmp_path / "build")}
    _one_line(_run("mlbridge.mir2vec", "train", "--out", str(tmp_path / "v.json"), "--units", "1",
                   "--validation-units", "0", env=env), cli.EXIT_ERROR,
              "mlbridge.mir2vec train: error:", str(tmp_path / "empty"),
              "the corpus is not fetched (python -m mlbridge.corpus fetch)")
    assert not (tmp_path / "v.json").exists()


# ---- Ctrl-C -----------------------------------------------------------------------

class _SilentServer:
    """An HTTP 'mirror' that takes requests and never answers: a download
    waits on it (the corpus fetch's)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.asked = threading.Event()
        self.conns = []
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            c.recv(4096)
            self.asked.set()

    def close(self):
        for c in self.conns:
            c.close()
        self.sock.close()


@pytest.mark.parametrize("args,prog", [
    (("mlbridge.corpus", "fetch", "--libraries", "zlib"), "mlbridge.corpus fetch"),
    (("mlbridge.train", "size-report", "--split", "heldout", "--libraries", "snappy",
      "--no-lto", "--no-cache"), "mlbridge.train size-report"),
])
def test_ctrl_c_is_one_line_and_status_130(tmp_path, args, prog):
    server = _SilentServer()
    env = dict(os.environ, MLBRIDGE_CORPUS_MIRROR=server.url,
               MLBRIDGE_CORPUS_CACHE=str(tmp_path / "cache"),
               MLBRIDGE_CORPUS_BUILD=str(tmp_path / "build"))
    proc = subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert server.asked.wait(60), "the command never reached its download"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        server.close()
    assert proc.returncode == cli.EXIT_INTERRUPTED, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert err.strip().splitlines()[-1] == f"{prog}: interrupted", err[-3000:]


def test_a_full_results_disk_names_the_file(tmp_path):
    """A training run's log on a full disk (/dev/full: a real ENOSPC): the
    error names the file (one line through cli.run)."""
    from mlbridge.train.results import RunResults
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "log.jsonl").symlink_to("/dev/full")
    with pytest.raises(OSError) as e, RunResults(tmp_path / "run") as results:
        results.log({"stage": "probe"})
    assert cli.describe(e.value) == f"{tmp_path / 'run' / 'log.jsonl'}: No space left on device"


# ---- --train-ir is exactly the training set ----------------------------------------

def test_regalloc_trains_on_exactly_the_given_ir(tmp_path, monkeypatch):
    """Neither split of the corpus is read (its manifest is missing)."""
    from mlbridge.train.__main__ import build_parser
    from mlbridge.train.regalloc import main, trainer
    irs = []
    for name in ("a.ll", "b.ll", "v.ll"):
        irs.append(tmp_path / name)
        irs[-1].write_text("; IR\n")
    seen = {}
    monkeypatch.setattr(trainer, "load_items", lambda mods: [str(m.ir()) for m in mods])
    monkeypatch.setattr(trainer, "train", lambda tr, val, out, **kw: seen.update(
        train=tr, val=val, out=out) or {"ok": True})
    args = build_parser().parse_args(
        ["regalloc", "train", "--out", str(tmp_path / "run"), "--manifest", MISSING_MANIFEST,
         "--train-ir", str(irs[0]), str(irs[1]), "--validation-ir", str(irs[2])])
    assert main(args) == {"ok": True}
    assert seen["train"] == [str(irs[0]), str(irs[1])]
    assert seen["val"] == [str(irs[2])]


# ---- caches are best-effort -------------------------------------------------------

def _cache_warnings(caplog):
    return [r for r in caplog.records if "cannot write" in r.getMessage()]


def test_a_cache_folder_that_cannot_be_made_warns_once_and_the_run_goes_on(a_file, caplog):
    """A real failure (ENOTDIR): the cache folder would be under a file."""
    from mlbridge.train.cache import RolloutCache
    from mlbridge.train.evaluate import _Cache
    caplog.set_level(logging.WARNING, logger="mlbridge.train")
    rc = RolloutCache(a_file / "rollouts")
    for i in range(3):
        rc.save(f"k{i}", x=np.arange(3))
        assert rc.load(f"k{i}") is None
    mc = _Cache(a_file / "sizes")
    for i in range(3):
        mc.put(f"k{i}", {"text": i})
        assert mc.get(f"k{i}") is None
    warnings = _cache_warnings(caplog)
    assert [w.getMessage().split(":")[0] for w in warnings] == ["rollout cache",
                                                               "measurement cache"]
    assert all("Not a directory" in w.getMessage() for w in warnings)


def test_a_full_cache_disk_warns_once_and_the_run_goes_on(tmp_path, caplog, monkeypatch):
    """ENOSPC through the fault-injection hook (a full disk cannot be made
    without privileges): every write fails, one warning, nothing raised."""
    from mlbridge.train.cache import FAULT_INJECTION, RolloutCache
    from mlbridge.train.evaluate import _Cache
    caplog.set_level(logging.WARNING, logger="mlbridge.train")
    rc = RolloutCache(tmp_path / "rollouts")   # made before the disk is "full"
    mc = _Cache(tmp_path / "sizes")
    monkeypatch.setenv(FAULT_INJECTION, "cache-enospc")
    for i in range(3):
        rc.save(f"k{i}", x=np.arange(3))
        mc.put(f"k{i}", {"text": i})
    warnings = _cache_warnings(caplog)
    assert len(warnings) == 2 and all("No space left on device" in w.getMessage()
                                      for w in warnings)
    assert os.listdir(tmp_path / "rollouts") == [] and os.listdir(tmp_path / "sizes") == []
    monkeypatch.delenv(FAULT_INJECTION)
    rc.save("k0", x=np.arange(3))       # space again: written, no new warning
    assert rc.load("k0")["x"].tolist() == [0, 1, 2]
    assert len(_cache_warnings(caplog)) == 2


# ---- loop distribution: nothing to learn -----------------------------------------

def test_loop_distribution_with_no_loop_to_learn_says_so(tmp_path, monkeypatch):
    """Every probed training kernel has no loop the plugin can distribute:
    a TrainingError naming the cause, not a failure inside the fit."""
    from mlbridge.corpus import loops as corpus
    from mlbridge.train.loop_distribution import trainer
    from mlbridge.train.results import TrainingError

    class NoLoops:
        def __init__(self, *a, **kw):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def map(self, tasks, progress=None):
            return [{"ir": {k: 1000 for k in t["kernels"]}, "out": {k: "0" for k in t["kernels"]},
                     "loops": []} for t in tasks]

    monkeypatch.setattr(trainer, "WorkerPool", NoLoops)
    ks = corpus.kernels("train")[:1]
    with pytest.raises(TrainingError, match="have no loop the plugin can distribute"):
        trainer.train(ks, corpus.kernels("validation")[:1], tmp_path / "run",
                      plugin=None, workers=1, iterations=1, progress=False)
    log = [json.loads(x) for x in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert log[-1]["stage"] == "probe" and log[-1]["loops"] == 0


# ---- the mechanism itself ----------------------------------------------------------

def test_run_folds_a_message_into_one_line(capsys):
    def boom(_):
        raise MLBridgeError("first\n  second\n\nthird")
    assert cli.run("prog", boom) == cli.EXIT_ERROR
    assert capsys.readouterr().err == "prog: error: first | second | third\n"

    def full(_):
        raise OSError(28, "No space left on device", "/x/y.json")
    assert cli.run("prog", full) == cli.EXIT_ERROR
    assert capsys.readouterr().err == "prog: error: /x/y.json: No space left on device\n"

    def bug(_):
        raise KeyError("a bug")
    with pytest.raises(KeyError):   # not an expected failure: its traceback stays
        cli.run("prog", bug)


def test_regalloc_es_batch_whose_compile_fails_does_not_end_the_run(tmp_path):
    """Each ES step re-measures its batch; when that compile fails (a worker
    lost, a timeout) the step stands without its ratio instead of the run
    ending in the selection's internal exception."""
    from mlbridge.train.cluster import TaskFailed
    from mlbridge.train.regalloc.evict import NUM_PARAMS
    from mlbridge.train.regalloc.trainer import Item, train

    class Pool:
        candidates = 0

        def map(self, tasks, progress=None):
            out = []
            for t in tasks:
                if t.get("allocator") == "greedy":                 # greedy itself
                    out.append({"total": 100.0})
                elif t.get("rule") == "greedy-rule":               # the imitation data
                    X = np.zeros((2, 33, NUM_PARAMS), np.float32)
                    M = np.ones((2, 33), bool)
                    out.append({"total": 100.0, "requests": 2,
                                "data": (X, M, np.array([32, 32]))})
                else:  # validation 0, then per step: member +, member -, batch, validation
                    Pool.candidates += 1
                    out.append(TaskFailed(t["key"], "lost worker", 1)
                               if Pool.candidates in (4, 8) else {"total": 90.0})
            return out

    items = [Item("m", "lib", b"ir")]
    summary = train(items, items, tmp_path / "run", mode="evict", pool=Pool(), iterations=2,
                    population=1, batch=1, progress=False)
    log = [json.loads(x) for x in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    steps = [r for r in log if r.get("stage") == "es" and r.get("iteration", 0) > 0]
    assert steps and all(r["batch_ratio"] is None for r in steps), steps
    assert summary
