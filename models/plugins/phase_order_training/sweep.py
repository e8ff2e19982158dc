"""Validation .text and compile CPU of phase-ordering candidates on every
validation unit (mlbridge.train.evaluate, cached): plain -Oz, the best
flags, the start flags, a fitted policy at each (threshold, IR-outliner
margin), and the shipped policy:

    PYTHONPATH=python .venv/bin/python models/plugins/phase_order_training/sweep.py \\
        --policy run/policy.json --thresholds 0.3 --margins 0 1.0 --shipped \\
        --dir run/sweep --out sweep.json
"""
import argparse
import json
from pathlib import Path
from mlbridge.train import baselines, evaluate
from mlbridge.train.evaluate import Config
from mlbridge.train.modules import corpus_modules
from mlbridge.train.phase_order import PhasePolicy
from mlbridge.llvm.plugins import ACTIONS
ap = argparse.ArgumentParser()
ap.add_argument("--policy", required=True)
ap.add_argument("--start", nargs="*", default=["mergefunc", "machine-outliner"])
ap.add_argument("--thresholds", type=float, nargs="+", default=[0.5])
ap.add_argument("--margins", type=float, nargs="+", default=[0.0])
ap.add_argument("--shipped", action="store_true", help="also the shipped policy (models/plugins)")
ap.add_argument("--dir", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--jobs", type=int, default=2)
a = ap.parse_args()
mods = corpus_modules("validation", argparse.Namespace(manifest=None, libraries=None))
pol = PhasePolicy.from_dict(json.load(open(a.policy)))
d = Path(a.dir); d.mkdir(parents=True, exist_ok=True)
iro = ACTIONS.index("iroutliner")
best = baselines.best_flags_config()
cfgs = [evaluate.PLAIN, best, baselines.flag_config(a.start)]
for t in a.thresholds:
    for m in a.margins:
        f = d / f"t{t}_m{m}.onnx"
        pol.with_threshold(t).with_margin(iro, m).to_onnx(f)
        cfgs.append(Config(f"policy t={t} m={m}", plugins=("phase-order",),
                           phase_order_model=str(f), phase_order_start=tuple(a.start)))
if a.shipped:
    cfgs.append(Config("shipped", plugins=("phase-order",),
                       phase_order_model="models/plugins/phase_order_policy.onnx",
                       phase_order_start=tuple(json.load(open("models/plugins/phase_order_policy.json"))["start"])))
rows = evaluate.measure(mods, cfgs, jobs=a.jobs, cache=evaluate.default_cache_dir())
names = [c.name for c in cfgs]
s = evaluate.summarize(rows, names)
json.dump({"summary": evaluate.as_json(s), "rows": rows}, open(a.out, "w"), indent=1)
tot = s["total"]
for n in names:
    print(f"{n:40s} {tot.text[n]:>9,} {tot.text[n]/tot.text[best.name]:.4f}x flags  cpu {tot.cpu_ratio(n):.3f}x")
print("errors", s["errors"][:3])
