"""Loop distribution trained on measured callgrind Ir.

1. **Probe** (Ray workers): every training kernel, built alone
   (:func:`mlbridge.corpus.loops.kernel_source`) with the plugin and a
   policy that keeps each loop whole, reports its loops' graphs; its Ir and
   checksums are those of plain ``-O3`` (checked).
2. **Oracle**: per loop, up to ``max_partitions`` valid ordered partitions
   (:func:`.partitions.enumerate_partitions`: fewest loops first), each
   built with the plugin replaying it on that loop (the kernel's other
   loops whole) and measured. A partition whose checksums differ from
   ``-O3`` is a wrong result: counted, logged, never a label. The loop's
   label is the partition of least Ir, if it beats the whole loop by more
   than ``margin`` (else the whole loop).
   ``reuse_oracle``: a previous run's ``oracle.json``; its measurements of
   the probed kernels' partitions are taken instead of measured again (the
   kernels' sources and the transformation must be the same).
3. **Imitate**: the network (:class:`.policy.GraphPolicy`) learns the
   labels' walks (:func:`.episodes.imitation_steps`), once per entry of
   ``embedding_dims`` (0: the count features only; d > 0: also the IR2Vec
   node embeddings, projected to d dimensions).
4. **Select on validation**: the validation families are built with the
   plugin running each exported ONNX model at each ``new_loop_bias`` of
   ``biases`` (a negative bias keeps loops whole unless the network is
   sure); the geometric mean of Ir / ``-O3`` over the validation kernels
   decides; "never distribute" (``-O3`` itself) is always a candidate. With
   ``max_kernel_ratio``, a candidate that makes any validation kernel
   slower than that many times ``-O3`` is rejected.
5. **Iterate**: the next iteration measures the partitions the current
   network makes on the training loops that the oracle had not measured
   (its own mistakes become labels), then fits again.

Writes ``log.jsonl``, ``curve.png``, ``oracle.json``, ``policy.json``,
``policy.onnx`` and ``summary.json`` into ``out_dir``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from typing import Dict

import numpy as np

from ...corpus import loops as corpus
from ...toolchain import toolchain
from ..cache import RolloutCache
from ..cluster import WorkerPool
from ..results import RunResults, TrainingError, plot_learning_curve, write_atomically
from ..selection import Rejected, best, sweep
from .episodes import Graph, imitation_steps, walk
from .partitions import canonical, enumerate_partitions, format_partition, parse
from .policy import fit
from .serve import walk_text
from .task import measure_task

__all__ = ["Measurer", "geomean", "train", "family_sources", "write_json"]

_log = logging.getLogger("mlbridge.train")


def geomean(xs):
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def family_sources(ks):
    """{source path: [kernels]} in order (one build per family file)."""
    out: Dict = {}
    for k in ks:
        out.setdefault(k.source, []).append(k)
    return out


class Measurer:
    """Runs measure tasks on the pool through the cache; a task's result is
    a fact of (source, flags, policy, compiler, plugin file)."""

    def __init__(self, pool, plugin, cache_dir=None, progress=True):
        self.pool, self.plugin, self.progress = pool, plugin, progress
        self.cache = RolloutCache(cache_dir) if cache_dir else None
        self.tasks = 0
        self.plugin_tag = ""
        if plugin:
            with open(plugin, "rb") as f:
                self.plugin_tag = hashlib.sha256(f.read()).hexdigest()[:16]

    def _key(self, task):
        spec = json.dumps({k: task[k] for k in ("source", "kernels", "flags", "record")},
                          sort_keys=True)
        pol = task["policy"]
        pol = json.dumps(pol, sort_keys=True, default=lambda b: hashlib.sha256(b).hexdigest())
        h = hashlib.sha256((spec + pol + toolchain().tag + self.plugin_tag).encode())
        return h.hexdigest()[:40]

    def run(self, tasks, desc="measure"):
        """Results in task order (a TaskFailed where one failed)."""
        results = [None] * len(tasks)
        todo = []
        for i, t in enumerate(tasks):
            hit = self.cache.load(self._key(t)) if self.cache else None
            if hit is not None:
                results[i] = json.loads(str(hit["result"]))
            else:
                todo.append(i)
        bar = None
        if self.progress and todo:
            from tqdm import tqdm
            bar = tqdm(total=len(todo), desc=desc, leave=False)
        got = self.pool.map([tasks[i] for i in todo], progress=bar.update if bar else None)
        if bar:
            bar.close()
        self.tasks += len(todo)
        for i, r in zip(todo, got):
            results[i] = r
            if self.cache and isinstance(r, dict):
                self.cache.save(self._key(tasks[i]), result=np.asarray(json.dumps(r)))
        return results


def _loop_graphs(loops):
    return [Graph(np.asarray(lp["features"], np.float32),
                  np.asarray(lp["adjacency"], np.float32),
                  np.asarray(lp["embeddings"], np.float32) if "embeddings" in lp else None)
            for lp in loops]


def probe(meas, ks, *, o3=None):
    """Per kernel: its loops (graphs, in the plugin's order), the -O3 Ir and
    checksums. Kernels whose probe failed are left out (logged)."""
    tasks = [measure_task(corpus.kernel_source(k), k.name, [k.name], plugin=meas.plugin,
                          policy={"kind": "replay", "partitions": {}}, record=True,
                          key=f"probe:{k.name}") for k in ks]
    plain = [measure_task(corpus.kernel_source(k), k.name, [k.name], key=f"O3:{k.name}")
             for k in ks]
    got = meas.run(tasks + plain, desc="probe")
    out, failed = {}, []
    for k, r, p in zip(ks, got[: len(ks)], got[len(ks):]):
        if not isinstance(r, dict) or not isinstance(p, dict):
            failed.append(f"{k.name}: {(r if not isinstance(r, dict) else p).error[-300:]}")
            continue
        if r["ir"][k.name] != p["ir"][k.name] or r["out"][k.name] != p["out"][k.name]:
            failed.append(f"{k.name}: the plugin keeping every loop whole differs from -O3 "
                          f"(Ir {r['ir'][k.name]} vs {p['ir'][k.name]})")
            continue
        out[k.name] = {"kernel": k, "graphs": _loop_graphs(r["loops"]),
                       "O3": p["ir"][k.name], "out": p["out"][k.name]}
    return out, failed


def measure_partitions(meas, probed, wanted):
    """``wanted``: [(kernel name, loop index, partition text)]; returns
    {(kernel, loop, text): Ir or "wrong" or "failed: ..."}."""
    def replay(k, li, text):
        g = probed[k]["graphs"][li]
        return {"kind": "replay", "partitions": {str(li): walk_text(parse(text), g.edges)}}
    tasks = [measure_task(corpus.kernel_source(probed[k]["kernel"]), k, [k], plugin=meas.plugin,
                          policy=replay(k, li, text), key=f"{k}#{li}={text}")
             for k, li, text in wanted]
    res = {}
    for (k, li, text), r in zip(wanted, meas.run(tasks, desc="oracle")):
        if not isinstance(r, dict):
            res[(k, li, text)] = f"failed: {r.error[-300:]}"
        elif r["out"][k] != probed[k]["out"]:
            res[(k, li, text)] = "wrong"
        else:
            res[(k, li, text)] = r["ir"][k]
    return res


class Oracle:
    """Every measured (kernel, loop, partition) and the labels it implies."""

    def __init__(self, probed, margin):
        self.probed, self.margin = probed, margin
        self.measured: Dict = {}

    def add(self, found):
        self.measured.update(found)

    def wrong(self):
        return sorted(f"{k}#{li}={t}" for (k, li, t), v in self.measured.items() if v == "wrong")

    def label(self, k, li):
        g = self.probed[k]["graphs"][li]
        whole = format_partition([list(range(g.n))])
        base = self.probed[k]["O3"]
        cands = [(v, len(parse(t)), t) for (kk, l2, t), v in self.measured.items()
                 if kk == k and l2 == li and isinstance(v, int)]
        if not cands:
            return whole, base
        v, _, t = min(cands)
        return (t, v) if v < base * (1 - self.margin) else (whole, base)

    def labelled(self):
        """(graphs, target partitions, Ir gains) of every probed loop."""
        graphs, targets, rows = [], [], []
        for k, p in self.probed.items():
            for li, g in enumerate(p["graphs"]):
                t, v = self.label(k, li)
                graphs.append(g)
                targets.append(parse(t))
                rows.append({"kernel": k, "loop": li, "label": t, "ir": v, "O3": p["O3"]})
        return graphs, targets, rows

    def kernel_best(self, k):
        """Ir with each loop's label, assuming the loops add up independently."""
        base = self.probed[k]["O3"]
        return base + sum(self.label(k, li)[1] - base
                          for li in range(len(self.probed[k]["graphs"])))


def reused_measurements(path, probed):
    """The measured partitions of a previous run's ``oracle.json`` for the
    kernels and loops of ``probed`` (Ir, or "wrong")."""
    with open(path) as f:
        measured = json.load(f)["measured"]
    out = {}
    for key, v in measured.items():
        k, rest = key.split("#", 1)
        li, text = rest.split("=", 1)
        li = int(li)
        if k in probed and li < len(probed[k]["graphs"]) and (isinstance(v, int) or v == "wrong"):
            n = probed[k]["graphs"][li].n
            if sorted(x for part in parse(text) for x in part) == list(range(n)):
                out[(k, li, text)] = v
    return out


def evaluate_model(meas, ks, model_spec, o3):
    """{kernel: Ir} of the families of ``ks`` built with the plugin running
    ``model_spec``; raises Rejected when a build failed or a checksum
    differs from -O3 (``o3``: {kernel: (Ir, checksums)})."""
    groups = family_sources(ks)
    tasks = [measure_task(src.read_text(), src.stem, [k.name for k in g], plugin=meas.plugin,
                          policy=model_spec, key=f"{src.stem}:{model_spec['kind']}")
             for src, g in groups.items()]
    irs = {}
    for (src, g), r in zip(groups.items(), meas.run(tasks, desc="validation")):
        if not isinstance(r, dict):
            raise Rejected(f"{src.stem}: {r.error[-300:]}")
        for k in g:
            if r["out"][k.name] != o3[k.name][1]:
                raise Rejected(f"{k.name}: wrong result (checksums differ from -O3)")
            irs[k.name] = r["ir"][k.name]
    return irs


def plain_o3(meas, ks, flags=("-O3",)):
    """{kernel: (Ir, checksums)} of the families of ``ks`` with ``flags``."""
    groups = family_sources(ks)
    tasks = [measure_task(src.read_text(), src.stem, [k.name for k in g], flags=flags,
                          key=f"{src.stem}:{' '.join(flags)}") for src, g in groups.items()]
    out = {}
    for (src, g), r in zip(groups.items(), meas.run(tasks, desc=" ".join(flags))):
        if not isinstance(r, dict):
            raise TrainingError(f"{' '.join(flags)} build of {src.name} failed: {r.error[-300:]}")
        out.update({k.name: (r["ir"][k.name], r["out"][k.name]) for k in g})
    return out


def write_json(path, obj):
    def write(tmp):
        with open(tmp, "w") as f:
            f.write(json.dumps(obj, indent=1) + "\n")
    write_atomically(path, write)


def _curve(path, rows):
    it = [r["iteration"] for r in rows]
    plot_learning_curve(path, [
        (it, [r["validation_geomean"] for r in rows], "o-", "validation (selected)"),
        (it, [r["train_policy_geomean"] for r in rows], "s--", "training kernels"),
        (it, [r["train_oracle_geomean"] for r in rows], "^:", "training oracle"),
    ], baseline="clang-19 -O3", xlabel="iteration", ylabel="Ir / clang-19 -O3 (geomean)",
        title="Loop distribution: learning curve")


def train(train_kernels, validation_kernels, out_dir, *, plugin, workers=2, address=None,
          iterations=2, max_partitions=8, max_loops=4, margin=0.01,
          biases=(-4.0, -2.0, -1.0, 0.0, 1.0), hidden=24, epochs=300, seed=0,
          cache_dir=None, progress=True, reuse_oracle=None, embedding_dims=(0,),
          max_kernel_ratio=None, seeds=None):
    """The whole run (module docstring); returns the summary dict."""
    results = RunResults(out_dir)
    t0 = time.monotonic()

    def log(rec):
        _log.info("%s", results.log(rec))

    curve_rows, best_overall = [], None
    with WorkerPool(workers, address=address) as pool, results:
        meas = Measurer(pool, plugin, cache_dir, progress)
        probed, failed = probe(meas, train_kernels)
        if not probed:
            raise TrainingError(f"no training kernel could be probed ({len(failed)} failed): "
                                + "; ".join(failed[:3]))
        loops = sum(len(p["graphs"]) for p in probed.values())
        log({"stage": "probe", "kernels": len(probed), "loops": loops, "failed": failed,
             "seconds": round(time.monotonic() - t0, 1)})
        if not loops:  # nothing to label, nothing to fit
            raise TrainingError(f"the {len(probed)} probed training kernel(s) have no loop the "
                                "plugin can distribute: nothing to learn (train on more "
                                "kernels: --max-train, --families, --mutations)")
        oracle = Oracle(probed, margin)
        if reuse_oracle:
            old = reused_measurements(reuse_oracle, probed)
            oracle.add(old)
            log({"stage": "reuse", "from": str(reuse_oracle), "measured": len(old)})
        wanted = []
        for k, p in probed.items():
            for li, g in enumerate(p["graphs"][:max_loops]):
                for part in enumerate_partitions(g.n, g.edges, limit=max_partitions,
                                                 seed=seed)[1:]:
                    if (k, li, format_partition(part)) not in oracle.measured:
                        wanted.append((k, li, format_partition(part)))
        oracle.add(measure_partitions(meas, probed, wanted))
        val_o3 = plain_o3(meas, validation_kernels)
        # one network per embedding size and fit seed, each warm-started
        nets = [(d, s) for d in embedding_dims for s in (seeds or (seed,))]
        policies = {n: None for n in nets}
        chosen = None
        for it in range(1, iterations + 1):
            if chosen is not None:   # the selected network's partitions on the training loops
                mine = []
                for k, p in probed.items():
                    for li, g in enumerate(p["graphs"][:max_loops]):
                        t = format_partition(canonical(walk(chosen, g)))
                        if (k, li, t) not in oracle.measured and len(parse(t)) > 1:
                            mine.append((k, li, t))
                oracle.add(measure_partitions(meas, probed, mine))
            graphs, targets, rows = oracle.labelled()
            steps = [s for i, (g, t) in enumerate(zip(graphs, targets))
                     for s in imitation_steps(g, t, i)]
            losses = {}
            for d, s in nets:
                policies[(d, s)], losses[f"{d}:{s}"] = fit(
                    graphs, steps, hidden=hidden, epochs=epochs, seed=s,
                    init=policies[(d, s)], embedding_dim=d)
            distributed = sum(len(t) > 1 for t in targets)
            train_oracle = geomean(oracle.kernel_best(k) / p["O3"] for k, p in probed.items())
            log({"stage": "fit", "iteration": it, "loops": len(graphs),
                 "labels_distributed": distributed, "measured": len(oracle.measured),
                 "wrong_results": oracle.wrong(), "losses": losses,
                 "train_oracle_geomean": round(train_oracle, 4)})

            def measure_bias(pol):
                irs = evaluate_model(meas, validation_kernels,
                                     {"kind": "onnx", "model": pol.to_onnx()}, val_o3)
                total = geomean(irs[k] / val_o3[k][0] for k in irs)
                worst = max(irs, key=lambda k: irs[k] / val_o3[k][0])
                if max_kernel_ratio and irs[worst] / val_o3[worst][0] > max_kernel_ratio:
                    raise Rejected(f"{worst} is {irs[worst] / val_o3[worst][0]:.4f}x -O3 "
                                   f"(more than {max_kernel_ratio}x); geomean {total:.4f}")
                return total, irs

            # "never distribute" (a bias of -1e3 or less) is one candidate, not one per network
            trials = [(n, b) for n in nets for b in biases if b > -1e3 or n == nets[0]]
            cands = sweep((((*n, b), policies[n].with_bias(b)) for n, b in trials), measure_bias,
                          on_result=lambda c: log(dict(stage="validation", iteration=it,
                                                       **c.as_row())))
            win = best(cands)
            if win is None:
                raise TrainingError(f"iteration {it}: every validation candidate was "
                                    "rejected: " + "; ".join(c.rejected for c in cands[:3]))
            sel_dim, sel_seed, sel_bias = win.label
            by_dim = {str(d): min((c.total for c in cands if c.label[0] == d
                                   and c.rejected is None), default=None)
                      for d in embedding_dims}
            # The network's partitions on the training loops, as measured (or
            # the whole loop where a partition is unmeasured: its Ir is unknown).
            chosen = policies[(sel_dim, sel_seed)].with_bias(sel_bias)
            tr = []
            for k, p in probed.items():
                ir = p["O3"]
                for li, g in enumerate(p["graphs"]):
                    t = format_partition(canonical(walk(chosen, g)))
                    v = oracle.measured.get((k, li, t))
                    ir += (v - p["O3"]) if isinstance(v, int) else 0
                tr.append(ir / p["O3"])
            row = {"stage": "iteration", "iteration": it, "bias": sel_bias,
                   "embedding_dim": sel_dim, "seed": sel_seed,
                   "validation_by_embedding_dim": by_dim,
                   "validation_geomean": round(win.total, 4),
                   "train_policy_geomean": round(geomean(tr), 4),
                   "train_oracle_geomean": round(train_oracle, 4),
                   "tasks": meas.tasks, "seconds": round(time.monotonic() - t0, 1)}
            log(row)
            curve_rows.append(row)
            _curve(results.path("curve.png"), curve_rows)
            if best_overall is None or win.total < best_overall[0]:
                best_overall = (win.total, it, chosen, win.extra)
        total, it, chosen, irs = best_overall
        if total >= 1.0:
            log({"stage": "note", "message": "no network beat -O3 on validation; the "
                 "shipped policy keeps every loop whole"})
        chosen.save(results.path("policy.json"))
        chosen.to_onnx(results.path("policy.onnx"))
        _, _, rows = oracle.labelled()
        write_json(results.path("oracle.json"),
                   {"labels": rows, "measured": {f"{k}#{li}={t}": v for (k, li, t), v
                                                 in sorted(oracle.measured.items())}})
        summary = {"stage": "done", "selected_iteration": it, "new_loop_bias": chosen.new_loop_bias,
                   "embedding_dim": chosen.embedding_dim,
                   "validation_geomean": round(total, 4),
                   "validation": {k: {"ir": v, "O3": val_o3[k][0]} for k, v in irs.items()},
                   "train_kernels": len(probed), "validation_kernels": len(validation_kernels),
                   "wrong_results": oracle.wrong(), "tasks": meas.tasks,
                   "features": chosen.features, "hidden": chosen.hidden,
                   "seconds": round(time.monotonic() - t0, 1)}
        log(summary)
    return results.summary(summary)
