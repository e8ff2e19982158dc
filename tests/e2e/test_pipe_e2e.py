"""The pipe transport end to end, what only it does (the promises pipes
and shared memory share are tested in test_stream_e2e.py): late replies,
the examples and the demo."""
import os
import subprocess
import sys
import time

import pytest

from mlbridge import PipeCompilerInterface
from stream_e2e import BUILD, FORMATS, SOURCE, binary, events, start_compiler, twice


@pytest.mark.parametrize("serdes", FORMATS)
def test_late_reply_never_reaches_the_next_compiler(serdes):
    """Compiler A gives up while the model computes; compiler B connects at
    once. The model's late answer to A must not become B's answer (B asks
    0,1,2,3 and must get 0,2,4,6, not 999,0,2,4)."""
    with PipeCompilerInterface(serdes=serdes, timeout=20) as iface:
        first = start_compiler("pipe", iface.base, serdes, "requests", "--count", 1,
                               "--reply-timeout-ms", 300)
        late = iface.evaluate()
        lines, err = events(first)
        assert lines[0]["event"] == "error" and lines[0]["code"] == "timeout", err
        second = start_compiler("pipe", iface.base, serdes, "requests", "--count", 4)
        time.sleep(0.3)  # B is connected, has asked, and waits
        delivered = iface.populate_buffer(999)  # the answer A no longer waits for
        iface.serve(twice, sessions=2, timeout=10)
        lines, err = events(second)
    assert [e["value"] for e in lines if e["event"] == "advice"] == [0, 2, 4, 6], err
    assert lines[-1] == {"event": "done", "ok": True}
    assert delivered is False and late.index == 0


@pytest.mark.parametrize("program", ["ask_model", "ask_model_c"])
def test_examples_work(tmp_path, program):
    base = tmp_path / "mlb"
    env = dict(os.environ, PYTHONPATH=str(SOURCE / "python"))
    model = subprocess.Popen([sys.executable, str(SOURCE / "examples/python/serve_model.py"),
                              str(base)], env=env, stderr=subprocess.PIPE)
    try:
        out = subprocess.run([binary(BUILD / "examples" / program), str(base)],
                             capture_output=True, text=True, timeout=30)
    finally:
        model.terminate()
        model.wait(10)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "decision: 1"


def test_demo_runs_end_to_end():
    out = subprocess.run([binary(BUILD / "tools" / "mlbridge-demo")], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "demo finished: all exchanges succeeded" in out.stdout
    assert out.stdout.count("inline_decision=") == 12  # 6 per SerDes
