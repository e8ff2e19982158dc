"""Compiler workers on Ray.

Each worker is a Ray actor (one CPU) that owns its compiler processes, its
FIFOs and a private scratch folder; the learner sends it tasks (plain
dicts naming their problem, e.g. :func:`mlbridge.train.inliner.make_task`)
and collects results; the worker runs a task with its problem's
``run_task`` (:mod:`mlbridge.train.registry`). The same code
runs on a laptop (Ray started in-process, the default) or on a cluster
(``address="auto"`` or ``"host:port"`` of a ``ray start --head`` node);
modules travel inside the tasks, so workers need no shared file system --
only this Python package and the same compiler (``$MLBRIDGE_CLANG``,
default ``clang-19``) on every node.

Failures are the pool's business, not the learner's: a worker that dies
(its process killed, its node lost) or exceeds ``task_timeout`` is killed
and replaced, and its task is sent again (up to ``retries`` times); a task
that fails inside a healthy worker (the compiler crashed on that input) is
reported as an error result. :meth:`WorkerPool.map` therefore always
returns, with one result per task.
"""

import hashlib
import logging
import os
import tempfile
import time

__all__ = ["WorkerPool", "TaskFailed", "CompileWorker", "Workdir"]

_log = logging.getLogger("mlbridge.train")


class TaskFailed:
    """The result of a task that could not be completed: ``error`` says why."""

    def __init__(self, key, error, attempts):
        self.key, self.error, self.attempts = key, error, attempts

    def __repr__(self):
        return f"TaskFailed({self.key!r}, {self.error!r}, attempts={self.attempts})"


class Workdir:
    """A private scratch folder of one worker: the modules it was sent
    (content-addressed, written once) and its object files."""

    def __init__(self, root=None):
        self._tmp = tempfile.TemporaryDirectory(prefix="mlbridge-train-", dir=root)
        self.path = self._tmp.name
        self._files = {}

    def file(self, data, suffix):
        """The path of a file holding ``data`` (written on first use)."""
        name = hashlib.sha256(data).hexdigest()[:24] + suffix
        path = self._files.get(name)
        if path is None:
            path = os.path.join(self.path, name)
            with open(path, "wb") as f:
                f.write(data)
            self._files[name] = path
        return path

    def module(self, data):
        return self.file(data, ".bc")

    def close(self):
        self._tmp.cleanup()


class CompileWorker:
    """The body of a worker actor (wrapped by ``ray.remote`` in the pool):
    runs each task with the ``run_task`` of the problem it names."""

    def __init__(self, scratch=None):
        self.workdir = Workdir(scratch)

    def pid(self):
        return os.getpid()

    def node(self):
        import ray
        return ray.get_runtime_context().get_node_id()

    def run(self, task):
        from .registry import problem
        return problem(task["problem"]).load().run_task(task, self.workdir)


class LocalPool:
    """The pool's interface (``map``, ``len``, a context manager) with the
    tasks run one after the other in this process, by the same
    :class:`CompileWorker`: no Ray (``--workers 0``, for a machine too
    loaded to start it). A task that raises is a :class:`TaskFailed`, as on
    a worker."""

    replaced = 0

    def __init__(self, scratch=None):
        self.worker = CompileWorker(scratch)

    def __len__(self):
        return 1

    def map(self, tasks, *, progress=None):
        out = []
        for t in tasks:
            try:
                out.append(self.worker.run(t))
            except Exception as e:  # noqa: BLE001 - the pool's contract: a result per task
                out.append(TaskFailed(t.get("key"), f"{type(e).__name__}: {e}", 1))
            if progress is not None:
                progress()
        return out

    def close(self):
        self.worker.workdir.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def pool(workers, **options):
    """``workers`` Ray workers (:class:`WorkerPool`, ``options`` its
    keywords), or with 0 a :class:`LocalPool`."""
    return WorkerPool(workers, **options) if workers else LocalPool()


def _ray():
    try:
        import ray
    except ImportError as e:  # pragma: no cover - ray is a pinned dependency
        raise ImportError("mlbridge.train needs Ray: pip install 'ray==2.60.0'") from e
    return ray


class WorkerPool:
    """``workers`` compiler actors on the Ray cluster at ``address`` (None:
    a private local Ray started in this process, stopped by :meth:`close`).

    ``task_timeout``: seconds one task may run before its worker is
    replaced; ``retries``: how often a task is resent after its worker
    died. Use as a context manager.
    """

    def __init__(self, workers, *, address=None, task_timeout=900.0, retries=2,
                 scratch=None):
        ray = _ray()
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.ray = ray
        self.started_ray = False
        if not ray.is_initialized():
            kw = dict(include_dashboard=False, logging_level=logging.WARNING,
                      log_to_driver=False, configure_logging=True)
            if address is None:
                # A private local instance: CPUs for the workers and no more,
                # a small object store (tasks are modules of a few MB at most).
                kw.update(num_cpus=workers, object_store_memory=256 * 1024 * 1024)
                env = {"PYTHONPATH": os.pathsep.join(
                    p for p in (os.path.dirname(os.path.dirname(os.path.dirname(
                        os.path.abspath(__file__)))), os.environ.get("PYTHONPATH")) if p)}
                kw["runtime_env"] = {"env_vars": env}
            else:
                kw["address"] = address
            ray.init(**kw)
            self.started_ray = True
        self.task_timeout = float(task_timeout)
        self.retries = int(retries)
        self._remote_cls = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(
            CompileWorker)
        self._scratch = scratch
        self.actors = [self._spawn() for _ in range(workers)]
        self.replaced = 0

    def _spawn(self):
        return self._remote_cls.remote(self._scratch)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __len__(self):
        return len(self.actors)

    def worker_pids(self):
        return self.ray.get([a.pid.remote() for a in self.actors], timeout=120)

    def worker_nodes(self):
        return self.ray.get([a.node.remote() for a in self.actors], timeout=120)

    def _replace(self, i, why):
        _log.warning("worker %d replaced: %s", i, why)
        try:
            self.ray.kill(self.actors[i], no_restart=True)
        except Exception:  # already gone
            pass
        self.actors[i] = self._spawn()
        self.replaced += 1

    def map(self, tasks, *, progress=None):
        """Runs every task; returns their results in task order (a
        :class:`TaskFailed` for a task that could not be done).
        ``progress``: a callable invoked once per finished task (e.g. a
        tqdm ``update``)."""
        ray = self.ray
        results = [None] * len(tasks)
        attempts = [0] * len(tasks)
        queue = list(range(len(tasks)))[::-1]
        idle = list(range(len(self.actors)))
        inflight = {}   # ref -> (actor index, task index, start time)

        def finish(t, value):
            results[t] = value
            if progress is not None:
                progress()

        def lost(i, t, why, failure):
            """Worker i is gone with task t: replace it, resend t or give up."""
            self._replace(i, why)
            if attempts[t] <= self.retries:
                queue.append(t)
            else:
                finish(t, TaskFailed(tasks[t].get("key"), f"{failure} ({attempts[t]} attempts)",
                                     attempts[t]))
            idle.append(i)

        while queue or inflight:
            while queue and idle:
                i, t = idle.pop(), queue.pop()
                attempts[t] += 1
                ref = self.actors[i].run.remote(tasks[t])
                inflight[ref] = (i, t, time.monotonic())
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=1.0)
            for ref in ready:
                i, t, _ = inflight.pop(ref)
                try:
                    value = ray.get(ref)
                except ray.exceptions.RayActorError as e:
                    lost(i, t, f"died during {tasks[t].get('key')}: {type(e).__name__}",
                         "worker died")
                    continue
                except ray.exceptions.RayTaskError as e:
                    finish(t, TaskFailed(tasks[t].get("key"), str(e.cause if hasattr(e, "cause")
                                                                 else e)[-2000:], attempts[t]))
                    idle.append(i)
                    continue
                finish(t, value)
                idle.append(i)
            now = time.monotonic()
            for ref, (i, t, t0) in list(inflight.items()):
                if now - t0 > self.task_timeout:
                    del inflight[ref]
                    lost(i, t, f"{tasks[t].get('key')} exceeded {self.task_timeout:.0f} s",
                         f"timed out after {self.task_timeout:.0f} s")
        return results

    def close(self):
        for a in self.actors:
            try:
                self.ray.kill(a, no_restart=True)
            except Exception:
                pass
        self.actors = []
        if self.started_ray:
            self.ray.shutdown()
            self.started_ray = False
