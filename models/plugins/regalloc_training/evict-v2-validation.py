"""The validation table of docs/results.md (eviction advisor): the 96 validation
units of training (same selection as `python -m mlbridge.train regalloc`), each
with greedy's default advisor, the first policy and v2, scored by the plugin's
score pass. Run from the repository root:

    RAY_AUTH_MODE=disabled PYTHONPATH=python .venv/bin/python \\
        models/plugins/regalloc_training/evict-v2-validation.py

writes build/evict-v2/validation.json (kept as evict-v2.validation.json)."""

import argparse
import json
import os

from mlbridge.train.cluster import TaskFailed, WorkerPool
from mlbridge.train.modules import training_modules
from mlbridge.train.regalloc import add_arguments
from mlbridge.train.regalloc.__main__ import evict_table
from mlbridge.train.regalloc.evict import LinearEviction
from mlbridge.train.regalloc.task import evict_task
from mlbridge.train.regalloc.trainer import load_items

POLICIES = {"first": "models/plugins/regalloc_training/evict_policy.json",
            "v2": "models/plugins/regalloc_training/evict-v2.policy.json"}

parser = argparse.ArgumentParser()
add_arguments(parser)
_, validation = training_modules(parser.parse_args(["--out", "unused", "--max-train", "1"]))
items = load_items(validation)
rows = {it.name: {"library": it.library} for it in items}
columns = [("greedy", None)] + [(k, LinearEviction.load(v).theta) for k, v in POLICIES.items()]
with WorkerPool(2, task_timeout=1800) as pool:
    for col, theta in columns:
        results = pool.map([evict_task(it.ir, theta=theta, key=it.name) for it in items])
        for it, r in zip(items, results):
            rows[it.name][col] = None if isinstance(r, TaskFailed) else r["total"]
os.makedirs("build/evict-v2", exist_ok=True)
with open("build/evict-v2/validation.json", "w") as f:
    json.dump(rows, f, indent=1)
for name in POLICIES:
    table, _ = evict_table({n: {"library": r["library"], "greedy": r["greedy"],
                                "trained": r[name]} for n, r in rows.items()})
    print(f"## {name}\n{table}\n")
