"""Spinning on the pipe paths stays bounded: a compiler and a Python model
that wait a second each on an idle FIFO channel use no CPU meanwhile, with
spinning on (the default) on both sides."""
import time

from mlbridge import PipeCompilerInterface
from test_pipe_e2e import events, start_compiler
from test_shm_e2e import cpu_seconds


def test_idle_pipe_channel_uses_no_cpu():
    with PipeCompilerInterface(serdes="bitstream", timeout=20) as iface:
        proc = start_compiler(iface.base, "bitstream", "requests", "--count", 3,
                              "--pause-ms", 1000)
        iface.process = proc
        obs = iface.evaluate()
        iface.populate_buffer(0)
        before = time.process_time()
        obs = iface.evaluate()  # the compiler pauses 1 s first
        model_cpu = time.process_time() - before
        before = cpu_seconds(proc.pid)
        time.sleep(1.0)  # now the compiler waits 1 s for its reply
        compiler_cpu = cpu_seconds(proc.pid) - before
        iface.populate_buffer(2 * int(obs["i"][0]))
        iface.serve(lambda o: 2 * int(o["i"][0]), sessions=1, timeout=20)
        lines, err = events(proc)
    assert lines[-1] == {"event": "done", "ok": True}, err
    assert model_cpu < 0.1, f"the waiting model used {model_cpu:.3f} s of CPU in 1 s"
    assert compiler_cpu < 0.1, f"the waiting compiler used {compiler_cpu:.3f} s of CPU in 1 s"
