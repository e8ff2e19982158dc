"""A budgeted per-module search against the measured size: how much a
perfect inlining policy could gain at most, found by compiling (``python -m
mlbridge.train oracle``)."""

import numpy as np

from ..cluster import TaskFailed
from .task import make_task

__all__ = ["search_oracle"]


def search_oracle(pool, modules, *, reversals=6, seed=0, progress=None):
    """A budgeted per-module search against the measured size: LLVM's
    decisions, then up to ``reversals`` single reversals per module (all of
    them when the module asks fewer questions), then all the helpful ones
    together; the smallest ``.text`` seen is the module's oracle size (a
    lower bound on what an exhaustive search would find). ``pool`` is a
    :class:`~mlbridge.train.cluster.WorkerPool`; modules are corpus modules.
    Returns per-module rows ``{module, library, oz_text, oracle_text}``."""
    rng = np.random.default_rng(seed)
    irs = [m.ir() for m in modules]
    base = pool.map([make_task(ir, record=True, key=m.name) for m, ir in zip(modules, irs)],
                    progress=progress)
    tasks, owner = [], []
    for j, (m, ir, b) in enumerate(zip(modules, irs, base)):
        if isinstance(b, TaskFailed) or b["requests"] == 0:
            continue
        n = b["requests"]
        picks = rng.permutation(n)[:reversals].tolist()
        for i in picks:
            tasks.append(make_task(ir, flip=int(i), key=m.name))
            owner.append((j, int(i)))
    single = pool.map(tasks, progress=progress)
    helpful = {}
    best = {}
    for (j, i), r in zip(owner, single):
        if isinstance(r, TaskFailed):
            continue
        if r["text"] < base[j]["text"]:
            helpful.setdefault(j, []).append(i)
        best[j] = min(best.get(j, base[j]["text"]), r["text"])
    combos = [(j, make_task(irs[j], flip=sorted(v), key=modules[j].name))
              for j, v in helpful.items() if len(v) > 1]
    for (j, _), r in zip(combos, pool.map([t for _, t in combos], progress=progress)):
        if not isinstance(r, TaskFailed):
            best[j] = min(best[j], r["text"])
    rows = []
    for j, (m, b) in enumerate(zip(modules, base)):
        if isinstance(b, TaskFailed):
            continue
        rows.append({"module": m.name, "library": m.library, "oz_text": b["text"],
                     "oracle_text": best.get(j, b["text"])})
    return rows
