# Fallback: the imitation stage of the trainer, run here on a few training units.
import json, numpy as np, sys
from mlbridge.corpus import Corpus
from mlbridge.train.cluster import Workdir
from mlbridge.train.regalloc.task import alloc_task, run_task
from mlbridge.train.regalloc.trainer import load_items, _Alloc
mods = [m for m in Corpus.load().modules(split="train") if m.library in ("zlib", "bzip2")]
items = load_items(mods)[:10]
wd = Workdir()
data = []
for it in items:
    r = run_task(alloc_task(it.ir, policy="heuristic-rule", record=True), wd)
    data.append(r["data"]); print(it.name, r["requests"], flush=True)
theta, info = _Alloc.fit(data, 0)
print(info)
json.dump({"theta": theta.tolist(), "info": info, "units": [it.name for it in items]}, open("build/imit_local.json", "w"))
