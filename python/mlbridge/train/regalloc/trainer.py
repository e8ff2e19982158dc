"""Register-allocation policies trained against the allocation score.

    python -m mlbridge.train regalloc train --mode alloc --out runs/regalloc  # -regalloc=mlbridge
    python -m mlbridge.train regalloc train --mode evict --out runs/evict     # greedy's eviction advisor

Both modes run the same four steps on the Ray workers; every allocation is
scored by the plugin's score pass (:mod:`.task`).

1. **Baselines**: every module allocated by LLVM's ``greedy`` (default
   advisor); its total score is cached (:class:`RolloutCache`, keyed by the
   machine IR and the compiler).
2. **Imitation** (warm start): a rule answers every request of the
   training modules over the pipes. ``alloc``: the plugin's built-in
   heuristic, rebuilt in Python (:class:`~.allocator.HeuristicRule`, which
   makes exactly the plugin's decisions); a linear policy per agent is
   fitted to its answers (softmax cross-entropy over the legal choices).
   ``evict``: :class:`~.evict.GreedyRule`, greedy's eviction test rebuilt
   from the features, is itself linear: its weights are the warm start (the
   log says how often they answer as the rule did).
3. **Evolution strategies** against the score: each iteration draws a
   batch of training modules and ``population`` antithetic pairs of
   Gaussian perturbations of ``theta``; each perturbed policy allocates
   the batch (``alloc``: exported to ONNX and run in-process by the
   plugin; ``evict``: served over pipes); a module's reward is ``1 - score
   / greedy's score`` (MLGO's), a policy's fitness the mean; ``theta``
   moves along the rank-weighted perturbations (one implementation for
   every trainer: :func:`..es.evolve` with :func:`..es.rank_gradient`).
4. **Selection on validation**: the imitation policy and the policy after
   each iteration are measured on the validation modules; the smallest
   mean over modules of ``score / greedy's score`` (what ES optimises) is
   kept. The total-score ratio is logged too: a few hot functions dominate
   it (one of libdeflate's is two thirds of the validation total), which
   makes it a noisy criterion. A candidate with a failed compile is
   rejected (``log.jsonl`` says why).

Writes ``log.jsonl``, ``curve.png``, the selected policy
(``evict_policy.json``, or ``regalloc_policy.json`` and
``regalloc_policy.onnx``) and ``summary.json`` in ``--out``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time

import numpy as np

from ...toolchain import toolchain
from ..cache import RolloutCache
from ..cluster import TaskFailed, WorkerPool
from ..es import Step, evolve, rank_gradient
from ..results import RunResults, TrainingError, plot_learning_curve
from ..selection import Rejected, best, sweep
from . import allocator as alloc
from .evict import NUM_PARAMS, GreedyRule, LinearEviction, fit_imitation, masked_argmax
from .task import alloc_task, evict_task, machine_ir

__all__ = ["Item", "load_items", "measure", "greedy_scores", "train", "by_library", "MODES"]

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


def measure(pool, items, make_task, *, progress=None):
    """``{name: result}`` of ``make_task(item.ir, key=name)`` on every item;
    raises :class:`Rejected` naming the failed compiles."""
    results = pool.map([make_task(it.ir, key=it.name) for it in items], progress=progress)
    failed = [f"{it.name}: {str(r.error).strip()[-300:]}" for it, r in zip(items, results)
              if isinstance(r, TaskFailed)]
    if failed:
        raise Rejected(f"{len(failed)} of {len(items)} compiles failed: " + "; ".join(failed[:3]))
    return {it.name: r for it, r in zip(items, results)}


def _greedy(ir, key=None):
    return alloc_task(ir, allocator="greedy", key=key)


def greedy_scores(pool, items, cache=None, progress=None):
    """(``{name: total score}`` of LLVM's greedy (cached), ``{name: error}``
    of the modules it could not be measured on)."""
    out, todo, failed = {}, [], {}
    for it in items:
        hit = cache.load(_cache_key(it)) if cache is not None else None
        if hit is not None:
            out[it.name] = float(hit["total"])
        else:
            todo.append(it)
    if todo:
        res = pool.map([_greedy(it.ir, key=it.name) for it in todo], progress=progress)
        for it, r in zip(todo, res):
            if isinstance(r, TaskFailed):
                failed[it.name] = str(r.error).strip()[-300:]
                continue
            out[it.name] = r["total"]
            if cache is not None:
                cache.save(_cache_key(it), total=np.float64(out[it.name]))
    return out, failed


def _cache_key(item):
    return f"regalloc-score-greedy-{item.digest}-{toolchain().tag}"


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


# ---- the two modes ---------------------------------------------------------------------

class _Evict:
    name = "evict"
    title = "Greedy eviction advisor"
    size = NUM_PARAMS

    @staticmethod
    def teacher(ir, key=None):
        return evict_task(ir, rule="greedy-rule", record=True, key=key)

    @staticmethod
    def fit(data, seed):
        # the rule is linear in the features: its own weights, no fit;
        # ``accuracy`` is how often they answer as the rule did
        X, M, A = (np.concatenate([d[k] for d in data]) for k in range(3))
        theta = GreedyRule.theta()
        pred = masked_argmax(X.astype(np.float64) @ theta, M)
        return theta, {"requests": int(len(A)), "accuracy": float(np.mean(pred == A))}

    @staticmethod
    def candidate(theta):
        th = [float(t) for t in theta]
        return lambda ir, key=None: evict_task(ir, theta=th, key=key)

    @staticmethod
    def save(theta, results):
        LinearEviction(theta).save(results.path("evict_policy.json"))


class _Alloc:
    name = "alloc"
    title = "-regalloc=mlbridge"
    size = alloc.AllocatorPolicy.size

    @staticmethod
    def teacher(ir, key=None):
        return alloc_task(ir, policy="heuristic-rule", record=True, key=key)

    @staticmethod
    def fit(data, seed):
        heads, info = [], {}
        for k, agent in enumerate(("select", "action", "register")):
            # a module without requests of this agent has empty 1-D arrays
            rows = [d[k] for d in data if len(d[k][2])]
            X, M, A = (np.concatenate([r[j] for r in rows]) for j in range(3))
            w, acc = fit_imitation(X, M, A, seed=seed)
            heads.append(w)
            info[f"{agent}_requests"], info[f"{agent}_accuracy"] = int(len(A)), acc
        return alloc.AllocatorPolicy.from_heads(heads).theta, info

    @staticmethod
    def candidate(theta):
        model = alloc.AllocatorPolicy(theta).to_onnx()
        return lambda ir, key=None: alloc_task(ir, onnx=model, key=key)

    @staticmethod
    def save(theta, results):
        policy = alloc.AllocatorPolicy(theta)
        policy.save(results.path("regalloc_policy.json"))
        policy.to_onnx(results.path("regalloc_policy.onnx"))


MODES = {m.name: m for m in (_Evict, _Alloc)}


def _plot(rows, path, title):
    it = [r["iteration"] for r in rows]
    plot_learning_curve(path, [
        (it, [r["validation_mean_ratio"] for r in rows], "o-",
         "validation, mean per module (selection)"),
        (it, [r["validation_ratio"] for r in rows], "^-", "validation, total"),
        (it, [r["batch_ratio"] for r in rows], "s--", "training batch, total"),
    ], baseline="LLVM greedy", xlabel="ES iteration (0 = imitation)",
        ylabel="score / greedy's score", title=f"{title}: learning curve")


def train(train_items, val_items, out_dir, *, mode="alloc", workers=2, address=None,
          iterations=6, population=4, sigma=0.3, lr=0.2, batch=16, seed=0, cache_dir=None,
          progress=True, pool=None):
    """The whole run (module docstring); returns the summary dict. ``pool``:
    a running :class:`WorkerPool` to use (default: ``workers`` new ones at
    ``address``)."""
    m = MODES[mode]
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

    def run(items, desc, make_task):
        nonlocal compiles
        b = bar(len(items), desc)
        try:
            return measure(pool, items, make_task, progress=b.update if b else None)
        finally:
            compiles += len(items)
            if b:
                b.close()

    def totals(res):
        return {k: r["total"] for k, r in res.items()}

    def ratio(tot, items):
        g = sum(base[it.name] for it in items)
        return sum(tot[it.name] for it in items) / g if g else None

    owned = None if pool is not None else WorkerPool(workers, address=address)
    pool = pool or owned
    with contextlib.ExitStack() as stack, results:
        if owned is not None:
            stack.enter_context(owned)
        b = bar(len(train_items) + len(val_items), "greedy baselines")
        base, failed = greedy_scores(pool, train_items + val_items, cache,
                                     progress=b.update if b else None)
        if b:
            b.close()
        if failed:
            # e.g. MIR that llc prints but cannot read back: no score, left out
            results.log({"stage": "left out", "modules": failed})
            train_items = [it for it in train_items if it.name in base]
            val_items = [it for it in val_items if it.name in base]
        scored = [it for it in train_items if base[it.name] > 0]
        if not scored or not any(base[it.name] > 0 for it in val_items):
            raise TrainingError("greedy's score is 0 on every training or validation module: "
                                "no reward to learn from")
        try:
            teach = run(scored, "imitation data", m.teacher)
        except Rejected as e:
            raise TrainingError(f"the imitation rule: {e}") from None
        # ES compiles only modules where the policy is asked something
        useful = [it for it in scored if teach[it.name]["requests"] > 0]
        if not useful:
            raise TrainingError("no training module asks the policy anything: nothing to learn")
        theta, info = m.fit([r["data"] for r in teach.values()], seed)
        results.log(dict(stage="imitation", modules=len(scored), asking_modules=len(useful),
                         rule_train_ratio=ratio(totals(teach), scored),
                         rule_train_mean_ratio=1.0 - _reward(totals(teach), base), **info))

        candidates, curve = [], []

        def validate(it, theta, row):
            row["theta"] = theta.tolist()
            try:
                val = totals(run(val_items, f"validation {it}", m.candidate(theta)))
                row.update(validation_ratio=ratio(val, val_items),
                           validation_mean_ratio=1.0 - _reward(val, base))
                candidates.append((it, theta.copy()))
            except Rejected as e:
                row["rejected"] = str(e)

        def sample(r):
            pick = r.choice(len(useful), size=min(batch, len(useful)), replace=False)
            return [useful[i] for i in sorted(pick)]

        def rewards(thetas, items, row):
            fit = []
            for k, th in enumerate(thetas):
                member = f"ES {row['iteration']} member {k % population + 1}" \
                         f"{'+-'[k // population]}"
                try:
                    fit.append(_reward(totals(run(items, member, m.candidate(th))), base))
                except Rejected as e:
                    _log.warning("ES member rejected: %s", e)
                    fit.append(-1.0)
            return fit

        def after_step(theta, items, row):
            row["batch_ratio"] = None
            try:
                row["batch_ratio"] = ratio(totals(run(items, f"ES {row['iteration']} batch",
                                                      m.candidate(theta))), items)
            except Rejected as e:  # the step stands; its batch ratio is unknown
                _log.warning("ES batch rejected: %s", e)

        def log(row):
            results.log(dict(row, compiles=compiles))
            if "validation_ratio" in row:
                curve.append(row)

        row = {"stage": "es", "iteration": 0, "batch_ratio": None}
        validate(0, np.asarray(theta, np.float64), row)
        log(row)
        evolve(theta, iterations=iterations, pairs=population, sigma=sigma, rng=rng,
               sample=sample, rewards=rewards, after_step=after_step, validate=validate,
               gradient=rank_gradient, optimizer=Step(lr), log=log)
        _plot([dict(r, batch_ratio=np.nan if r.get("batch_ratio") is None else r["batch_ratio"])
               for r in curve], results.path("curve.png"), m.title)

        # every candidate was measured once above; selection keeps the smallest mean ratio
        measured = {r["iteration"]: r["validation_mean_ratio"] for r in curve}
        winner = best(sweep(((i, (i, th)) for i, th in candidates), lambda c: measured[c[0]]))
        if winner is None:
            raise TrainingError("every candidate failed on the validation modules")
        m.save(winner.policy[1], results)
        chosen = next(r for r in curve if r["iteration"] == winner.label)
        summary = {"stage": "done", "mode": mode, "selected_iteration": winner.label,
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
