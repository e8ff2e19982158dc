"""mlbridge.train.cluster.LocalPool, the pool without Ray (``--workers 0``):
each task runs with the run_task of the problem it names, in order, a task
that raises is a TaskFailed naming the error, progress is called once per
task, and ``pool(0)`` is this pool."""

from types import SimpleNamespace

from mlbridge.train import cluster, registry


def test_tasks_run_in_order_and_a_raising_task_is_a_failure(monkeypatch, tmp_path):
    seen = []

    def run_task(task, workdir):
        seen.append(task["key"])
        assert workdir.file(b"x", ".txt")   # the worker's scratch folder works
        return {"key": task["key"], "half": 1 / task["x"]}

    toy = SimpleNamespace(load=lambda: SimpleNamespace(run_task=run_task))
    monkeypatch.setitem(registry.PROBLEMS, "toy", toy)
    ticks = []
    with cluster.pool(0) as pool:
        assert isinstance(pool, cluster.LocalPool) and len(pool) == 1
        out = pool.map([{"problem": "toy", "key": k, "x": x} for k, x in
                        (("a", 2), ("b", 0), ("c", 4))], progress=lambda: ticks.append(1))
    assert seen == ["a", "b", "c"] and len(ticks) == 3
    assert out[0] == {"key": "a", "half": 0.5} and out[2] == {"key": "c", "half": 0.25}
    assert isinstance(out[1], cluster.TaskFailed)
    assert out[1].key == "b" and "ZeroDivisionError" in str(out[1].error)
