"""mlbridge.llvm tracing: what Tracer records is what numpy (and PyTorch)
read back from the .npz file, without pickle."""

import json
import zipfile

import numpy as np
import pytest

from mlbridge.llvm import Tracer, TraceDataset, load_trace
from mlbridge.llvm.synthetic import (EVICT_ADVICE, INLINE_ADVICE, PRIORITY_ADVICE,
                                     evict_specs, inline_specs, mask_row, observations,
                                     priority_specs)


def _record(tracer, group, run, session, obs_list, advice, steps):
    for obs, a in zip(obs_list, advice):
        tracer.record(group, run, session, obs.context, obs.index, next(steps), obs.raw, a)


def _build(tmp_path):
    rng = np.random.default_rng(0)
    tracer = Tracer()
    steps = iter(range(1000))
    evict_rows = [{"mask": mask_row([i % 5, 32]),
                   "weighed_reads_by_max": rng.random((1, 33)).astype(np.float32),
                   "progress": np.float32(i / 10)} for i in range(6)]
    evict = observations(evict_specs(), EVICT_ADVICE, evict_rows, context="main")
    prio = observations(priority_specs(), PRIORITY_ADVICE,
                        [{"li_size": 10 * i, "stage": i % 3, "weight": 0.5 * i}
                         for i in range(4)], context="helper")
    run0 = tracer.begin_run(["llc-19", "-O2", "a.ll", "-o", "a.o"])
    ge = tracer.group("evict", evict[0].feature_specs, EVICT_ADVICE)
    gp = tracer.group("priority", prio[0].feature_specs, PRIORITY_ADVICE)
    _record(tracer, ge, run0, 0, evict[:4], [32, 1, 2, 32], steps)
    _record(tracer, gp, run0, 0, prio, [0.0, 10.0, 20.5, 30.0], steps)
    tracer.end_run(run0, returncode=0, seconds=0.5, output_bytes=1234, text_bytes=456,
                   requests=8, error=None, reward=-3.5)
    run1 = tracer.begin_run(["llc-19", "b.ll"])
    _record(tracer, ge, run1, 0, evict[4:], [4, 0], steps)
    tracer.end_run(run1, returncode=1, error="evict: boom")
    path = tracer.save(tmp_path / "trace.npz")
    return tracer, path, evict, prio


def test_trace_round_trip_with_numpy(tmp_path):
    tracer, path, evict, prio = _build(tmp_path)
    assert tracer.requests == 10
    with np.load(path, allow_pickle=False) as z:
        keys = set(z.files)
        meta = json.loads(str(z["meta"][()]))
        mask = z["evict.features.mask"]
        assert mask.shape == (6, 1, 33) and mask.dtype == np.int64
        np.testing.assert_array_equal(mask[:, 0, 32], np.ones(6))
        np.testing.assert_array_equal(mask[:, 0, :5].argmax(axis=1), [0, 1, 2, 3, 4, 0])
        reads = z["evict.features.weighed_reads_by_max"]
        assert reads.dtype == np.float32
        np.testing.assert_array_equal(reads[2], evict[2]["weighed_reads_by_max"])
        np.testing.assert_array_equal(z["evict.features.progress"][:, 0],
                                      np.float32([0, .1, .2, .3, .4, .5]))
        np.testing.assert_array_equal(z["evict.advice"], [32, 1, 2, 32, 4, 0])
        assert z["evict.advice"].dtype == np.int64
        np.testing.assert_array_equal(z["evict.run"], [0, 0, 0, 0, 1, 1])
        np.testing.assert_array_equal(z["evict.index"], [0, 1, 2, 3, 4, 5])
        np.testing.assert_array_equal(z["evict.step"], [0, 1, 2, 3, 8, 9])
        np.testing.assert_array_equal(z["priority.step"], [4, 5, 6, 7])
        assert z["priority.advice"].dtype == np.float32
        np.testing.assert_array_equal(z["priority.advice"], np.float32([0, 10, 20.5, 30]))
        np.testing.assert_array_equal(z["priority.features.li_size"][:, 0], [0, 10, 20, 30])
        ctx = z["contexts"]
        assert [ctx[i] for i in z["evict.context"]] == ["main"] * 6
        assert [ctx[i] for i in z["priority.context"]] == ["helper"] * 4
        np.testing.assert_array_equal(z["runs.returncode"], [0, 1])
        np.testing.assert_array_equal(z["runs.output_bytes"], [1234, -1])
        np.testing.assert_array_equal(z["runs.text_bytes"], [456, -1])
        np.testing.assert_array_equal(z["runs.reward"], [-3.5, -1])
        assert list(z["runs.error"]) == ["", "evict: boom"]
        assert json.loads(z["runs.command"][1]) == ["llc-19", "b.ll"]
    assert meta["format"] == "mlbridge.llvm.trace/1" and meta["runs"] == 2
    assert meta["groups"]["evict"]["count"] == 6
    assert meta["groups"]["evict"]["advice"]["name"] == "index_to_evict"
    assert [f["name"] for f in meta["groups"]["priority"]["features"]] == \
        ["li_size", "stage", "weight"]
    assert "evict.features.is_free" in keys
    # No member of the archive is a pickle: every array loads with allow_pickle=False.
    with zipfile.ZipFile(path) as zf:
        assert all(n.endswith(".npy") for n in zf.namelist())


def test_trace_loader_and_dataset(tmp_path):
    _, path, evict, _ = _build(tmp_path)
    trace = load_trace(path)
    assert trace.groups == ["evict", "priority"] and len(trace) == 10
    assert [s.name for s in trace.feature_specs("evict")] == [s.name for s in evict_specs()]
    x = trace.matrix("evict")
    assert x.shape == (6, 20 * 33 + 1) and x.dtype == np.float32
    np.testing.assert_array_equal(x[:, 32], np.ones(6))  # mask column 32
    assert trace.runs["returncode"].tolist() == [0, 1]
    ds = TraceDataset(trace, "evict")
    assert len(ds) == 6
    feats, advice = ds[1]
    assert feats.shape == (20 * 33 + 1,) and int(advice) == 1
    ds2 = TraceDataset(path, "priority", features=["li_size", "weight"], flat=False)
    f, a = ds2[2]
    assert set(f) == {"li_size", "weight"} and int(f["li_size"][0]) == 20
    assert float(a) == 20.5
    with pytest.raises(KeyError, match="no group 'inline'"):
        TraceDataset(trace, "inline")
    try:
        import torch
    except ImportError:
        return
    from torch.utils.data import DataLoader
    batch_x, batch_y = next(iter(DataLoader(ds, batch_size=4)))
    assert tuple(batch_x.shape) == (4, 20 * 33 + 1) and batch_x.dtype == torch.float32
    assert batch_y.tolist() == [32, 1, 2, 32]
    assert torch.from_numpy(trace.features("evict")["mask"]).shape == (6, 1, 33)


def test_two_layouts_of_one_advisor_get_two_groups(tmp_path):
    tracer = Tracer()
    a = observations(inline_specs(), INLINE_ADVICE, [{"callee_users": 1}])
    b = observations(inline_specs(include_default=True), INLINE_ADVICE,
                     [{"inlining_default": 1}, {"inlining_default": 0}])
    run = tracer.begin_run(["opt-19"])
    ga = tracer.group("inline", a[0].feature_specs, INLINE_ADVICE)
    gb = tracer.group("inline", b[0].feature_specs, INLINE_ADVICE)
    assert tracer.group("inline", inline_specs(), INLINE_ADVICE) is ga
    steps = iter(range(10))
    _record(tracer, ga, run, 0, a, [1], steps)
    _record(tracer, gb, run, 1, b, [1, 0], steps)
    tracer.end_run(run, returncode=0)
    trace = load_trace(tracer.save(tmp_path / "t.npz", compress=False))
    assert trace.groups == ["inline", "inline~1"]
    assert trace.features("inline~1")["inlining_default"][:, 0].tolist() == [1, 0]
    assert "inlining_default" not in trace.features("inline")
    assert trace.column("inline~1", "session").tolist() == [1, 1]


def test_empty_tracer_saves_a_loadable_file(tmp_path):
    trace = load_trace(Tracer().save(tmp_path / "empty.npz"))
    assert trace.groups == [] and len(trace) == 0 and trace.runs["returncode"].size == 0


def test_not_a_trace_is_refused(tmp_path):
    p = tmp_path / "other.npz"
    np.savez(p, meta=np.asarray(json.dumps({"format": "something else"})))
    with pytest.raises(ValueError, match="not an mlbridge.llvm.trace/1 file"):
        load_trace(p)
