"""The shared-memory model side's native fast path (mlbridge_shm_native,
docs/shm.md "The native fast path") against the real C++ compiler
(tests/e2e/tools/e2e_compiler.cpp --shm): the model sees the same
observations and the compiler gets the same replies as with the
pure-Python path, also with several compilers and interfaces in one
EventLoop."""

import pytest

from build_components import require_component
from mlbridge import EventLoop, ShmCompilerInterface
from mlbridge.shm import fast_path
from stream_e2e import echo, events, start_compiler

require_component("shm_python_fast_path")


@pytest.fixture
def native_taken(monkeypatch):
    """The indices of the observations the native module found."""
    taken = []
    native_observation = fast_path.native_observation

    def counted(session, state, layout, index, *rest):
        taken.append(index)
        return native_observation(session, state, layout, index, *rest)
    monkeypatch.setattr(fast_path, "native_observation", counted)
    return taken


def double(obs):
    return 2 * int(obs["i"][0])


def serve_one_compiler(fast_path, scenario, model, sessions, *extra):
    """Everything the model saw (context, index, each feature's dtype,
    shape and bytes) and the compiler's report, served on one path."""
    seen = []

    def recording(obs):
        seen.append((obs.context, obs.index, [
            (name, value) if isinstance(value, str) else
            (name, str(value.dtype), value.shape, value.tobytes()) for name, value in obs.items()]))
        return model(obs)

    with ShmCompilerInterface(serdes="bitstream", timeout=20, fast_path=fast_path) as iface:
        assert iface.fast_path is fast_path
        proc = start_compiler("shm", iface.path, "bitstream", scenario, *extra)
        iface.process = proc
        served = iface.serve(recording, sessions=sessions, timeout=20)
        lines, err = events(proc)
    assert lines and lines[-1] == {"event": "done", "ok": True}, err
    return served, seen, lines


@pytest.mark.parametrize("scenario, model, sessions, extra", [
    ("types", echo, 12, ()),  # every dtype; headers, contexts, strings and bools between
    # in one context: every request is one observation record (the native
    # path's); each in its own context: a context line before each
    ("requests", double, 1, ("--count", 300, "--first", 7, "--contexts", 0)),
    ("requests", double, 1, ("--count", 50, "--first", 7)),
], ids=["types", "requests in one context", "a context per request"])
def test_native_and_python_paths_see_and_answer_the_same(native_taken, scenario, model,
                                                        sessions, extra):
    python = serve_one_compiler(False, scenario, model, sessions, *extra)
    assert native_taken == []
    native = serve_one_compiler(True, scenario, model, sessions, *extra)
    assert native == python
    if "--contexts" in extra:
        assert len(native_taken) == 300  # (header and context are records of their own)


def test_several_compilers_on_both_paths_in_one_event_loop(native_taken):
    count = 150
    with ShmCompilerInterface(serdes="bitstream", timeout=30, fast_path=True) as fast, \
         ShmCompilerInterface(serdes="bitstream", timeout=30, fast_path=False) as slow, \
         EventLoop() as loop:
        loop.add(fast, double)
        loop.add(slow, double)
        procs = [start_compiler("shm", iface.path, "bitstream", "requests", "--count", count,
                                "--first", 1000 * p, "--contexts", 0)
                 for p, iface in enumerate([fast, slow, fast, slow, fast, slow])]
        loop.run(sessions=len(procs), timeout=30)
        results = [events(p) for p in procs]
    for p, (lines, err) in enumerate(results):
        values = [(e["i"], e["value"]) for e in lines if e["event"] == "advice"]
        assert values == [(1000 * p + k, 2 * (1000 * p + k)) for k in range(count)], err
        assert lines[-1] == {"event": "done", "ok": True}, err
    # Only the fast interface's compilers went through the module.
    assert len(native_taken) == 3 * count
