"""Training LLVM greedy's eviction advisor against the allocation score.

    python -m mlbridge.train regalloc --mode evict --out runs/evict

1. **Baselines**: every module compiled with plain greedy (LLVM's default
   advisor); its per-function scores are cached (:class:`RolloutCache`,
   keyed by the machine IR and the compiler).
2. **Imitation** (warm start): :class:`~.evict.GreedyRule` answers every
   eviction request of the training modules over the pipes; a
   :class:`~.evict.LinearEviction` is fitted to its answers.
3. **Evolution strategies** against the score: each iteration draws a
   batch of training modules and ``population`` antithetic pairs of
   Gaussian perturbations of ``theta``; each perturbed policy compiles the
   batch on the Ray workers; the reward of a module is ``1 - score /
   greedy's score`` (MLGO's), a policy's fitness its mean; ``theta`` moves
   along the rank-weighted perturbations.
4. **Selection on validation**: the imitation policy and the policy after
   each iteration are measured on the validation modules; the smallest
   mean over modules of ``score / greedy's score`` (the quantity ES
   optimises) is kept. The total-score ratio is logged too: it is
   dominated by a few hot functions (one of libdeflate's is two thirds of
   the validation total), so it is a noisy selection criterion. A candidate with a failed
   compile is rejected (``log.jsonl`` says why).

Writes ``log.jsonl``, ``curve.png``, ``evict_policy.json`` (the selected
policy) and ``summary.json`` in ``--out``.
"""

from __future__ import annotations

import hashlib
import logging
import time

import numpy as np

from ...toolchain import toolchain
from ..cache import RolloutCache
from ..cluster import TaskFailed, WorkerPool
from ..results import RunResults, TrainingError
from ..selection import Rejected, best, sweep
from .evict import NUM_PARAMS, LinearEviction, fit_imitation
from .task import evict_task, machine_ir

__all__ = ["Item", "load_items", "measure", "greedy_scores", "train_evict", "by_library"]

_log = logging.getLogger("mlbridge.train")


class Item:
    """One module of the machine-function corpus: its name, library and
    optimised bitcode."""

    def __init__(self, name, library, ir):
        self.name, self.library, self.ir = name, library, ir
        self.digest = hashlib.sha256(ir).hexdigest()[:24]


def load_items(modules):
    """:class:`Item` of each corpus module (``name``, ``library``, ``ir()``);
    modules without code are kept (their score is 0 and they are skipped
    where a ratio is taken)."""
    out = []
    for m in modules:
        with open(machine_ir(m.ir()), "rb") as f:
            out.append(Item(m.name, m.library, f.read()))
    return out


def measure(pool, items, *, theta=None, rule=None, record=False, progress=None):
    """``{name: result}`` of compiling ``items`` with one eviction policy;
    raises :class:`Rejected` naming the failed compiles."""
    tasks = [evict_task(it.ir, theta=theta, rule=rule, record=record, key=it.name)
             for it in items]
    results = pool.map(tasks, progress=progress)
    failed = [f"{it.name}: {str(r.error).strip()[-300:]}" for it, r in zip(items, results)
              if isinstance(r, TaskFailed)]
    if failed:
        raise Rejected(f"{len(failed)} of {len(items)} compiles failed: " + "; ".join(failed[:3]))
    return {it.name: r for it, r in zip(items, results)}


def greedy_scores(pool, items, cache=None, progress=None):
    """``{name: total score}`` of LLVM's default greedy (cached)."""
    out, todo = {}, []
    for it in items:
        hit = cache.load(_cache_key(it)) if cache is not None else None
        if hit is not None:
            out[it.name] = float(hit["total"])
        else:
            todo.append(it)
    if todo:
        try:
            res = measure(pool, todo, progress=progress)
        except Rejected as e:
            raise TrainingError(f"default greedy: {e}") from None
        for it in todo:
            r = res[it.name]
            out[it.name] = r["total"]
            if cache is not None:
                cache.save(_cache_key(it), total=np.float64(r["total"]),
                           functions=np.asarray(sorted(r["scores"]), dtype=str),
                           scores=np.asarray([r["scores"][k] for k in sorted(r["scores"])]))
    return out


def _cache_key(item):
    return f"regalloc-greedy-{item.digest}-{toolchain().tag}"


def _reward(totals, base):
    """MLGO's reward, per module ``1 - policy / greedy`` (>= -1), averaged
    over the modules where greedy's score is positive."""
    r = [max(-1.0, 1.0 - totals[k] / base[k]) for k in totals if base[k] > 0]
    return float(np.mean(r)) if r else 0.0


def by_library(items, totals, base):
    """Rows ``{library, modules, greedy, policy, ratio}`` and the total row."""
    libs = {}
    for it in items:
        row = libs.setdefault(it.library, {"library": it.library, "modules": 0,
                                           "greedy": 0.0, "policy": 0.0})
        row["modules"] += 1
        row["greedy"] += base[it.name]
        row["policy"] += totals[it.name]
    rows = list(libs.values())
    total = {"library": "total", "modules": sum(r["modules"] for r in rows),
             "greedy": sum(r["greedy"] for r in rows), "policy": sum(r["policy"] for r in rows)}
    for r in rows + [total]:
        r["ratio"] = r["policy"] / r["greedy"] if r["greedy"] else None
    return rows, total


def _plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    it = [r["iteration"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(it, [r["validation_mean_ratio"] for r in rows], "o-",
            label="validation, mean per module (selection)")
    ax.plot(it, [r["validation_ratio"] for r in rows], "^-", label="validation, total")
    ax.plot(it, [r["batch_ratio"] for r in rows], "s--", label="training batch, total")
    ax.axhline(1.0, color="gray", lw=0.8, ls=":", label="default greedy")
    ax.set(xlabel="ES iteration (0 = imitation)", ylabel="score / greedy's score",
           title="Greedy eviction advisor: learning curve")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def train_evict(train_items, val_items, out_dir, *, workers=2, address=None, iterations=6,
                population=4, sigma=0.3, lr=0.2, batch=16, seed=0, cache_dir=None,
                progress=True):
    """The whole run (module docstring); returns the summary dict."""
    results = RunResults(out_dir)
    cache = RolloutCache(cache_dir) if cache_dir else None
    rng = np.random.default_rng(seed)
    t0 = time.monotonic()
    compiles = 0

    def bar(n, desc):
        if not progress:
            return None
        from tqdm import tqdm
        return tqdm(total=n, desc=desc, leave=False)

    def run(items, desc, **kw):
        nonlocal compiles
        b = bar(len(items), desc)
        try:
            return measure(pool, items, progress=b.update if b else None, **kw)
        finally:
            compiles += len(items)
            if b:
                b.close()

    def totals(res):
        return {k: r["total"] for k, r in res.items()}

    def ratio(tot, items):
        g = sum(base[it.name] for it in items)
        return sum(tot[it.name] for it in items) / g if g else None

    with WorkerPool(workers, address=address) as pool, results:
        b = bar(len(train_items) + len(val_items), "greedy baselines")
        base = greedy_scores(pool, train_items + val_items, cache,
                             progress=b.update if b else None)
        if b:
            b.close()
        scored = [it for it in train_items if base[it.name] > 0]
        if not scored or not any(base[it.name] > 0 for it in val_items):
            raise TrainingError("greedy spills, reloads and copies nothing in the training or "
                                "validation modules: no reward to learn from")
        try:
            teach = run(scored, "imitation data", rule="greedy-rule", record=True)
        except Rejected as e:
            raise TrainingError(f"the imitation rule: {e}") from None
        # ES compiles only modules where greedy asks its advisor something
        useful = [it for it in scored if teach[it.name]["requests"] > 0]
        if not useful:
            raise TrainingError("greedy never asks its eviction advisor in the training "
                                "modules: nothing to learn")
        X = np.concatenate([r["X"] for r in teach.values()])
        M = np.concatenate([r["masks"] for r in teach.values()])
        A = np.concatenate([r["actions"] for r in teach.values()])
        theta, acc = fit_imitation(X, M, A, seed=seed)
        results.log({"stage": "imitation", "modules": len(scored), "asking_modules": len(useful),
                     "requests": int(len(A)), "accuracy": acc,
                     "rule_train_ratio": ratio(totals(teach), scored),
                     "rule_train_mean_ratio": 1.0 - _reward(totals(teach), base)})

        candidates, curve = [], []
        for it in range(iterations + 1):
            if it > 0:
                pick = rng.choice(len(useful), size=min(batch, len(useful)), replace=False)
                items = [useful[i] for i in sorted(pick)]
                eps = rng.normal(size=(population, NUM_PARAMS))
                fit = np.zeros((population, 2))
                for p in range(population):
                    for s, sign in enumerate((1.0, -1.0)):
                        try:
                            tot = totals(run(items, f"ES {it} member {p + 1}{'+-'[s]}",
                                             theta=theta + sign * sigma * eps[p]))
                            fit[p, s] = _reward(tot, base)
                        except Rejected as e:
                            _log.warning("ES member rejected: %s", e)
                            fit[p, s] = -1.0
                ranks = np.argsort(np.argsort(fit.reshape(-1))).reshape(fit.shape)
                util = ranks / max(1, fit.size - 1) - 0.5
                theta = theta + lr / (population * sigma) * ((util[:, 0] - util[:, 1]) @ eps)
                batch_ratio = ratio(totals(run(items, f"ES {it} batch", theta=theta)), items)
            else:
                batch_ratio = None
            try:
                val = totals(run(val_items, f"validation {it}", theta=theta))
                row = {"iteration": it, "validation_ratio": ratio(val, val_items),
                       "validation_mean_ratio": 1.0 - _reward(val, base),
                       "batch_ratio": batch_ratio}
                candidates.append((it, theta.copy()))
            except Rejected as e:
                row = {"iteration": it, "rejected": str(e), "batch_ratio": batch_ratio}
            if it > 0:
                row["fitness_mean"] = float(fit.mean())
                row["fitness_best"] = float(fit.max())
            results.log(dict(stage="es", theta=theta.tolist(), compiles=compiles,
                             seconds=round(time.monotonic() - t0, 1), **row))
            if "validation_ratio" in row:
                curve.append(row)
        _plot([dict(r, batch_ratio=np.nan if r["batch_ratio"] is None else r["batch_ratio"])
               for r in curve], results.path("curve.png"))

        # every candidate was measured once above; selection keeps the smallest ratio
        measured = {r["iteration"]: r["validation_mean_ratio"] for r in curve}
        winner = best(sweep(((it, (it, th)) for it, th in candidates),
                            lambda c: measured[c[0]]))
        if winner is None:
            raise TrainingError("every candidate failed on the validation modules")
        policy = LinearEviction(winner.policy[1])
        policy.save(results.path("evict_policy.json"))
        chosen = next(r for r in curve if r["iteration"] == winner.label)
        summary = {"stage": "done", "selected_iteration": winner.label,
                   "validation_mean_ratio": winner.total,
                   "validation_ratio": chosen["validation_ratio"],
                   "train_modules": len(train_items), "validation_modules": len(val_items),
                   "train_libraries": sorted({it.library for it in train_items}),
                   "validation_libraries": sorted({it.library for it in val_items}),
                   "iterations": iterations, "population": population, "sigma": sigma,
                   "lr": lr, "batch": batch, "seed": seed, "compiles": compiles,
                   "seconds": round(time.monotonic() - t0, 1)}
        results.log(summary)
    return results.summary(summary)
