"""What mlbridge.llvm.run keeps of a compiler's output. The "compiler" is a
small Python program (tool="opt", no advisor: it serves no channel).

A compiler that floods stderr once grew the host by three times the stream
(512 MiB of stderr: 1.6 GiB); the host now holds only the stream's end and
writes the whole of it to a file.
"""

import json
import os
import subprocess
import sys
import tempfile

import pytest

from conftest import PYTHON_DIR
from mlbridge.llvm import RunError, host, run

LAST_WORDS = "x.c:1:1: error: the compiler's last words\n"


def noisy_compiler(lines, status=3):
    """A command writing ``lines`` lines of 1 KiB to stderr, then LAST_WORDS,
    and exiting with ``status``."""
    code = ("import sys\n"
            "w = sys.stderr.buffer.write\n"
            "line = b'%05d' + b'n' * 1018 + b'\\n'\n"
            f"for i in range({lines}):\n"
            "    w(line % (i % 100000))\n"
            f"w({LAST_WORDS.encode()!r})\n"
            f"sys.exit({status})\n")
    return [sys.executable, "-c", code]


def stream_bytes(lines):
    return lines * 1024 + len(LAST_WORDS)


HOST = r"""
import json, sys
from mlbridge.llvm import run

def peak_kib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))

cmd = json.loads(sys.argv[1])
before = peak_kib()
res = run(cmd, tool="opt", timeout=120)
growth = peak_kib() - before
print(json.dumps({"growth_kib": growth, "returncode": res.returncode,
                  "stderr_len": len(res.stderr), "stderr_end": res.stderr[-200:],
                  "stderr_bytes": getattr(res, "stderr_bytes", None),
                  "stderr_path": getattr(res, "stderr_path", None)}))
"""


def test_a_flood_of_stderr_keeps_the_host_small_and_the_tail_and_file_whole(tmp_path):
    lines = 128 * 1024                          # 128 MiB of stderr
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR), TMPDIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", HOST, json.dumps(noisy_compiler(lines))],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    # Held before: the chunks, their join and the decoded text (~400 MiB).
    assert r["growth_kib"] < 48 * 1024, f"the host grew by {r['growth_kib']} KiB"
    assert r["returncode"] == 3
    assert r["stderr_len"] == host.STDERR_TAIL_BYTES
    assert r["stderr_end"].endswith("n\n" + LAST_WORDS)
    assert r["stderr_bytes"] == stream_bytes(lines)
    path = r["stderr_path"]
    assert os.path.dirname(path) == str(tmp_path)
    assert os.path.basename(path).startswith("mlbridge-stderr-")
    assert os.path.getsize(path) == stream_bytes(lines)
    with open(path, "rb") as f:
        assert f.read(6) == b"00000n"
        f.seek(-len(LAST_WORDS) - 1024, os.SEEK_END)
        assert f.read() == b"%05d" % ((lines - 1) % 100000) + b"n" * 1018 + b"\n" \
            + LAST_WORDS.encode()


def test_the_tail_is_the_streams_end_and_check_names_the_file(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    res = run(noisy_compiler(40), tool="opt", timeout=60, stderr_tail=3000)
    assert f"the whole stream is in {res.stderr_path}" in caplog.text
    assert res.returncode == 3 and res.stderr_bytes == stream_bytes(40)
    with open(res.stderr_path, "rb") as f:
        whole = f.read()
    assert len(whole) == stream_bytes(40)
    assert res.stderr.encode() == whole[-3000:]
    with pytest.raises(RunError) as e:
        res.check()
    assert LAST_WORDS.strip() in str(e.value) and res.stderr_path in str(e.value)


def test_a_short_stream_stays_in_memory_and_writes_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    res = run(noisy_compiler(2, status=0), tool="opt", timeout=60, text=False)
    assert res.ok and res.stderr_path is None
    assert res.stderr.endswith(LAST_WORDS.encode()) and len(res.stderr) == stream_bytes(2)
    assert list(tmp_path.iterdir()) == []


def test_stderr_file_receives_the_whole_stream(tmp_path):
    out = tmp_path / "clang.log"
    res = run(noisy_compiler(10, status=0), tool="opt", timeout=60, stderr_file=out,
              stderr_tail=100)
    assert res.stderr_path == str(out) and out.stat().st_size == stream_bytes(10)
    assert len(res.stderr) == 100 and out.read_text().endswith(res.stderr)
    with pytest.raises(FileNotFoundError):   # before any compiler starts
        run(noisy_compiler(1), tool="opt", stderr_file=tmp_path / "no" / "such.log")
    with pytest.raises(ValueError, match="stderr_tail"):
        run(noisy_compiler(1), tool="opt", stderr_tail=-1)
    with pytest.raises(ValueError, match="capture_output"):
        run(noisy_compiler(1), tool="opt", stderr_file=out, capture_output=False)
