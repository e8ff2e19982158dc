"""A per-module search against the measured size: how much a perfect
inlining policy could gain at most, found by compiling (``python -m
mlbridge.train oracle``)."""

import time

from ..cluster import TaskFailed
from .task import make_task

__all__ = ["search_oracle"]


def search_oracle(pool, modules, *, passes=2, max_requests=None, max_seconds=None,
                  progress=None):
    """Greedy search per module: start from LLVM's decisions; in each pass
    visit every call site (request index) of the module in order, reverse
    its decision on top of the reversals kept so far, compile, and keep the
    reversal if the object got smaller. The smallest ``.text`` seen is the
    module's oracle size (a lower bound on what an exhaustive search would
    find). Modules are searched side by side on ``pool`` (a
    :class:`~mlbridge.train.cluster.WorkerPool`), one compile per module
    and step. ``max_requests``: modules asking more questions are left out
    (rows with ``"skipped"``). ``max_seconds``: no step starts after that
    time; the rows of modules whose search was cut then say
    ``"complete": False``. Returns per-module rows ``{module, library,
    requests, oz_text, oracle_text, kept, compiles, complete}``."""
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    irs = [m.ir() for m in modules]
    base = pool.map([make_task(ir, key=m.name) for m, ir in zip(modules, irs)],
                    progress=progress)
    rows, state = [], []
    for m, ir, b in zip(modules, irs, base):
        if isinstance(b, TaskFailed):
            rows.append({"module": m.name, "library": m.library, "skipped": str(b.error)})
            continue
        row = {"module": m.name, "library": m.library, "requests": b["requests"],
               "oz_text": b["text"], "oracle_text": b["text"], "kept": [], "compiles": 1,
               "complete": True}
        rows.append(row)
        if max_requests is not None and b["requests"] > max_requests:
            row["skipped"] = f"{b['requests']} requests > {max_requests}"
            continue
        state.append({"row": row, "ir": ir, "n": b["requests"]})
    for _ in range(passes):
        step = 0
        while True:
            live = [s for s in state if step < s["n"]]
            if not live:
                break
            if deadline is not None and time.monotonic() > deadline:
                for s in state:
                    s["row"]["complete"] = False
                return rows
            tasks = []
            for s in live:
                flips = sorted(set(s["row"]["kept"]) ^ {step})
                tasks.append(make_task(s["ir"], flip=flips, key=s["row"]["module"]))
            for s, r in zip(live, pool.map(tasks, progress=progress)):
                s["row"]["compiles"] += 1
                if isinstance(r, TaskFailed) or r["text"] >= s["row"]["oracle_text"]:
                    continue
                s["row"]["oracle_text"] = r["text"]
                s["row"]["kept"] = sorted(set(s["row"]["kept"]) ^ {step})
                s["n"] = r["requests"]   # the trajectory changed
            step += 1
    return rows
