"""Inlining for size: learn where LLVM's ``-Oz`` inlining decision should be
reversed, from measured object sizes.

The search-then-imitate loop, iterated (each step on Ray workers):

1. *Roll out* the current policy on every training module (one compile
   each, features of every request recorded). The first policy is LLVM's
   own decision everywhere, which reproduces ``clang-19 -Oz`` exactly.
2. *Explore*: for a sample of requests per module, reverse that one
   decision and compile again. ``gain = .text(non-default) - .text(default)``
   at that request is a measured label: negative means LLVM's decision
   was the worse one there. Random reversals rarely help (most make code
   larger), so from the second iteration on half the sample goes to the
   requests the current network most wants to reverse -- the mistakes it
   would make are the labels it needs.
3. *Fit* the network on all labels so far (logistic regression weighted
   by ``sqrt(|gain|)``: a reversal that costs 600 bytes weighs more than
   one that saves 3, without drowning the rare savings).
4. *Select on validation*: the network shifted by a few thresholds (set so
   that it reverses a given share of the training requests, ``rates``:
   its scores are not calibrated probabilities), each compiled on the
   validation modules; the smallest total ``.text`` wins
   (LLVM's default, i.e. "never reverse", is always a candidate, so the
   selected policy is never worse than ``-Oz`` on validation). A candidate
   with a failed compile on any validation module (timeout, crash, lost
   worker) is rejected, and the log says why (:mod:`..selection`).
   Held-out libraries are never touched.

A module's requests follow from the decisions before them, so a policy
that reverses nothing on the default trajectory produces exactly the
default object: those modules are not compiled again (their size is
known), which makes validation sweeps cheap.

Every iteration appends one JSON line to ``<out>/log.jsonl``; the learning
curve is ``<out>/curve.png``; the selected policy is ``<out>/policy.json``
and ``<out>/policy.onnx``; the labels are ``<out>/labels.npz``. A run in
which no module compiles stops with :class:`TrainingError` and writes none
of them.
"""

import hashlib
import logging
import os
import time

import numpy as np

from ...toolchain import toolchain
from ..cache import RolloutCache
from ..cluster import TaskFailed, WorkerPool
from ..results import RunResults, TrainingError, write_atomically
from ..selection import Rejected, best, sweep
from .policy import MODEL_FEATURES, InlinePolicy
from .task import make_task

__all__ = ["TrainConfig", "train", "label_from_flip", "validation_sweep"]

_log = logging.getLogger("mlbridge.train")
_DEFAULT_COL = MODEL_FEATURES.index("inlining_default")


class TrainConfig:
    """Knobs of :func:`train` (all have defaults)."""

    def __init__(self, *, iterations=3, flips_per_module=6, rates=(0.0005, 0.001, 0.002, 0.005),
                 later_flips=None, hidden=16, epochs=400, seed=0, task_timeout=900.0):
        self.iterations = int(iterations)
        self.flips_per_module = int(flips_per_module)
        self.later_flips = int(later_flips if later_flips is not None
                               else max(2, flips_per_module // 3))
        self.rates = tuple(float(r) for r in rates)
        self.hidden = int(hidden)
        self.epochs = int(epochs)
        self.seed = int(seed)
        self.task_timeout = float(task_timeout)

    def as_dict(self):
        return dict(vars(self))


def label_from_flip(decision, default, delta):
    """Measured value of the non-default decision at one request:
    ``delta`` is ``.text`` with the policy's decision reversed there minus
    ``.text`` without. Returns ``gain`` (bytes; negative = non-default is
    smaller)."""
    return delta if decision == default else -delta


class _Module:
    """A module as the trainer sees it: a key, its IR file and sizes."""

    def __init__(self, key, ir, library):
        self.key, self.ir, self.library = key, os.fspath(ir), library
        self.default_text = None
        self.X = None          # features on the default trajectory
        self.default_flips = {}  # request index -> .text with only that decision reversed
        self._data = None

    def data(self):
        if self._data is None:
            with open(self.ir, "rb") as f:
                self._data = f.read()
        return self._data

    def digest(self):
        return hashlib.sha256(self.data()).hexdigest()

    def task(self, policy=None, flip=None, record=False, timeout=900.0):
        return make_task(self.data(), key=self.key, policy=policy, flip=flip, record=record,
                         timeout=timeout)


class _DefaultRollouts:
    """What compiling with LLVM's own decisions yields -- a module's ``-Oz``
    size, its requests' features, the size after reversing any single
    decision -- kept in a :class:`RolloutCache` under the IR's sha256 and
    the compiler's tag, so that a run on a grown corpus compiles only what
    is new."""

    def __init__(self, path):
        self.cache = RolloutCache(path)
        self.tag = toolchain().tag

    def _key(self, m):
        return f"{m.digest()[:32]}-{self.tag}"

    def load(self, m):
        z = self.cache.load(self._key(m))
        if z is None:
            return False
        X = z.get("X")
        if not {"text", "X", "flip_index", "flip_text"} <= set(z) or X.ndim != 2 or \
                X.shape[1] != len(MODEL_FEATURES) or len(z["flip_index"]) != len(z["flip_text"]):
            _log.warning("rollout cache: %s has another layout; recomputing it",
                         self.cache.file(self._key(m)))
            return False
        m.default_text = int(z["text"])
        m.X = X
        m.default_flips = dict(zip(z["flip_index"].tolist(), z["flip_text"].tolist()))
        return True

    def save(self, m):
        idx = np.array(sorted(m.default_flips), dtype=np.int64)
        self.cache.save(self._key(m), text=np.int64(m.default_text), X=m.X, flip_index=idx,
                        flip_text=np.array([m.default_flips[i] for i in idx.tolist()],
                                           dtype=np.int64))


class _Run:
    """Bookkeeping of one training run: the pool, compile counts, failures.
    ``progress(total=, desc=)``: a progress bar (tqdm) per map, or None."""

    def __init__(self, pool, progress=None):
        self.pool, self.progress = pool, progress
        self.compiles = 0
        self.compile_seconds = 0.0
        self.failures = 0

    def map(self, tasks, what):
        if not tasks:
            return []
        bar = self.progress(total=len(tasks), desc=what) if self.progress else None
        try:
            results = self.pool.map(tasks, progress=None if bar is None
                                    else (lambda: bar.update(1)))
        finally:
            if bar is not None:
                bar.close()
        self.compiles += len(tasks)
        for r in results:
            if isinstance(r, TaskFailed):
                self.failures += 1
                _log.warning("%s failed: %s", r.key, r.error)
            else:
                self.compile_seconds += r["seconds"]
        return results


def _failed_list(failed, total):
    """``"2 of 5 compiles failed: key: error; ..."`` (first three named)."""
    named = "; ".join(f"{f.key}: {str(f.error).strip()[-300:]}" for f in failed[:3])
    more = f"; and {len(failed) - 3} more" if len(failed) > 3 else ""
    return f"{len(failed)} of {total} compiles failed: {named}{more}"


def _modules_of(corpus_modules, build_dir):
    return [_Module(m.name, m.ir(build_dir), m.library) for m in corpus_modules]


def _rollout_defaults(run, modules, what, cache=None):
    """Default trajectory of every module: features and ``-Oz`` size.
    Returns the modules that compiled and the failures."""
    todo = [m for m in modules if cache is None or not cache.load(m)]
    res = run.map([m.task(record=True) for m in todo], what)
    failed = []
    for m, r in zip(todo, res):
        if isinstance(r, TaskFailed):
            failed.append(r)
            continue
        m.default_text, m.X = r["text"], r["X"]
        if cache is not None:
            cache.save(m)
    keys = {f.key for f in failed}
    return [m for m in modules if m.key not in keys], failed


def _deviates(policy, m):
    """Whether ``policy`` reverses any decision on m's default trajectory
    (if not, it compiles m exactly like -Oz)."""
    if policy is None or m.X is None or len(m.X) == 0:
        return False
    return bool(np.any(policy.decide(m.X) != m.X[:, _DEFAULT_COL].astype(np.int64)))


def _evaluate(run, policy, modules, what):
    """``(total .text, modules changed)`` of ``policy`` on ``modules``,
    compiling only the modules where it deviates. Raises :class:`Rejected`
    if any of those compiles failed: its size is unknown, and the module's
    ``-Oz`` size must not stand in for it."""
    todo = [m for m in modules if _deviates(policy, m)]
    res = run.map([m.task(policy=policy.to_dict()) for m in todo], what)
    failed = [r for r in res if isinstance(r, TaskFailed)]
    if failed:
        raise Rejected(_failed_list(failed, len(todo)))
    sizes = {m.key: m.default_text for m in modules}
    for m, r in zip(todo, res):
        sizes[m.key] = r["text"]
    return sum(sizes.values()), len(todo)


def validation_sweep(run, net, thresholds, modules, iteration):
    """Each threshold's shifted network measured on ``modules``; returns the
    measured candidates (:class:`mlbridge.train.selection.Candidate`, label
    = threshold, ``extra`` = modules changed) and the chosen one (None when
    every candidate was rejected). Ties go to the higher threshold (fewer
    reversals)."""
    measured = sweep(((tau, net.shifted(tau)) for tau in thresholds),
                     lambda cand: _evaluate(run, cand, modules,
                                            f"it{iteration} validation t={cand.meta['threshold']}"))
    return measured, best(measured, prefer=lambda c: -c.label)


def _explore(run, policy, modules, cfg, rng, iteration, cache=None):
    """Reverse single decisions and measure; returns (X rows, gains).
    Reversals of LLVM's own decisions (no policy yet) come from the cache
    when it has them."""
    pdict = policy.to_dict() if policy is not None else None
    if policy is None:
        base = {m.key: (m.default_text, m.X) for m in modules}
    else:  # the policy's own trajectory is the reference
        res = run.map([m.task(policy=pdict, record=True) for m in modules],
                      f"it{iteration} rollout")
        base = {m.key: (r["text"], r["X"]) for m, r in zip(modules, res)
                if not isinstance(r, TaskFailed)}
    tasks, meta = [], []
    for m in modules:
        if m.key not in base:
            continue
        text, X = base[m.key]
        n = len(X)
        if n == 0:
            continue
        # Later iterations need fewer labels per module: they aim at the
        # network's own candidates, and each costs a rollout of the policy.
        k = min(cfg.flips_per_module if policy is None else cfg.later_flips, n)
        if policy is not None and k > 1:
            # Half where the network most wants to deviate, half at random.
            scores = policy.scores(X)
            top = list(np.argsort(-scores)[: k // 2])
            rest = [i for i in rng.permutation(n) if i not in top][: k - len(top)]
            picks = top + rest
        else:
            picks = [int(i) for i in rng.choice(n, size=k, replace=False)]
        decisions = policy.decide(X) if policy is not None else X[:, _DEFAULT_COL]
        for i in picks:
            meta.append((m, int(i), X[i], int(decisions[i]), int(X[i, _DEFAULT_COL]), text))
            if policy is None and int(i) in m.default_flips:
                continue  # known
            tasks.append(m.task(policy=pdict, flip=int(i)))
    res = iter(run.map(tasks, f"it{iteration} explore"))
    rows, gains, touched = [], [], set()
    for m, i, x, a, d, text in meta:
        if policy is None and i in m.default_flips:
            size = m.default_flips[i]
        else:
            r = next(res)
            if isinstance(r, TaskFailed):
                continue
            size = r["text"]
            if policy is None:
                m.default_flips[i] = size
                touched.add(m)
        rows.append(x)
        gains.append(label_from_flip(a, d, size - text))
    if cache is not None:
        for m in touched:
            cache.save(m)
    return rows, gains


def _plot(log_rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    it = [r["iteration"] for r in log_rows]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(it, [r["validation_ratio"] for r in log_rows], "o-", label="validation (selected)")
    ax.plot(it, [np.nan if r["train_ratio"] is None else r["train_ratio"] for r in log_rows],
            "s--", label="training modules")
    ax.axhline(1.0, color="gray", lw=0.8, ls=":", label="clang-19 -Oz")
    ax.set(xlabel="iteration", ylabel=".text / clang-19 -Oz",
           title="Inlining for size: learning curve")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _save_labels(path, X, g):
    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, X=np.array(X), gain=np.array(g, dtype=np.float64))
    write_atomically(path, write)


def train(train_modules, validation_modules, out_dir, *, workers=2, address=None,
          config=None, build_dir=None, progress=True, cache_dir=None, labels_from=()):
    """Trains the inlining policy; returns the summary dict (also written
    to ``<out_dir>/summary.json``). ``*_modules`` are corpus modules
    (:class:`mlbridge.corpus.Module`: ``name``, ``library``, ``ir()``).
    ``cache_dir``: a rollout-cache folder shared between runs;
    ``labels_from``: ``labels.npz`` files of earlier runs, added to the
    labels before the first fit. Raises :class:`TrainingError` when no
    training or validation module compiles, no label could be measured or
    every validation candidate of an iteration was rejected."""
    cfg = config or TrainConfig()
    bar = None
    if progress:
        from functools import partial
        from tqdm import tqdm
        bar = partial(tqdm, unit="compile", leave=False)
    rng = np.random.default_rng(cfg.seed)
    train_mods = _modules_of(train_modules, build_dir)
    val_mods = _modules_of(validation_modules, build_dir)
    results = RunResults(out_dir)
    log_rows = []
    t_start = time.monotonic()
    with WorkerPool(workers, address=address, task_timeout=cfg.task_timeout) as pool, results:
        run = _Run(pool, bar)
        cache = _DefaultRollouts(cache_dir) if cache_dir else None
        n_train, n_val = len(train_mods), len(val_mods)
        train_mods, train_failed = _rollout_defaults(run, train_mods, "train: -Oz rollout", cache)
        val_mods, val_failed = _rollout_defaults(run, val_mods, "validation: -Oz rollout", cache)
        for mods, failed, n, split in ((train_mods, train_failed, n_train, "training"),
                                       (val_mods, val_failed, n_val, "validation")):
            if not mods:
                raise TrainingError(f"no {split} module compiled with LLVM's own decisions: "
                                    f"{_failed_list(failed, n)}")
        base_train = sum(m.default_text for m in train_mods)
        base_val = sum(m.default_text for m in val_mods)
        X_all, g_all = [], []
        for path in labels_from:
            with np.load(path) as z:
                X_all += list(z["X"])
                g_all += z["gain"].tolist()
        policy = None
        chosen = {"policy": InlinePolicy.never_deviate(), "total": base_val,
                  "iteration": 0, "threshold": None}
        for it in range(1, cfg.iterations + 1):
            t_it = time.monotonic()
            c0, f0 = run.compiles, run.failures
            rows, gains = _explore(run, policy, train_mods, cfg, rng, it, cache)
            X_all += rows
            g_all += gains
            if not g_all:
                raise TrainingError(f"iteration {it}: no label measured ({run.failures - f0} "
                                    f"of {run.compiles - c0} exploration compiles failed)")
            _save_labels(results.path("labels.npz"), X_all, g_all)
            X = np.array(X_all)
            g = np.array(g_all, dtype=np.float64)
            y = (g < 0).astype(np.float64)
            # sqrt: costly mistakes weigh more, without drowning the rare,
            # small savings (chosen by cross-validation on the labels).
            w = np.sqrt(np.abs(g)) + 1.0
            net = InlinePolicy.fit(X, y, w, hidden=cfg.hidden, epochs=cfg.epochs,
                                   seed=cfg.seed + it)
            train_scores = net.scores(np.concatenate([m.X for m in train_mods if len(m.X)]))
            thresholds = sorted({round(float(np.quantile(train_scores, 1 - r)), 4)
                                 for r in cfg.rates})
            measured, winner = validation_sweep(run, net, thresholds, val_mods, it)
            row = {
                "iteration": it, "labels": len(g_all), "labels_new": len(gains),
                "better_reversals": int((np.array(gains) < 0).sum()) if gains else 0,
                "validation_baseline": int(base_val),
                "validation_sweep": {str(c.label): int(c.total) for c in measured
                                     if c.rejected is None},
                "validation_rejected": {str(c.label): c.rejected for c in measured
                                        if c.rejected is not None},
            }
            if winner is None:
                results.log(row)
                raise TrainingError(f"iteration {it}: every validation candidate was "
                                    f"rejected: {row['validation_rejected']}")
            tau_best, total, changed, cand = (winner.label, winner.total, winner.extra,
                                              winner.policy)
            policy = cand  # the next iteration explores around it
            try:
                train_total, train_changed = _evaluate(run, cand, train_mods,
                                                       f"it{it} train eval")
            except Rejected as e:
                train_total, train_changed = None, None
                row["train_rejected"] = str(e)
            if total < chosen["total"]:
                chosen = {"policy": cand, "total": total, "iteration": it,
                          "threshold": tau_best}
            elapsed = time.monotonic() - t_it
            row.update({
                "threshold": tau_best, "validation_total": int(total),
                "validation_ratio": total / base_val, "validation_modules_changed": changed,
                "train_total": None if train_total is None else int(train_total),
                "train_baseline": int(base_train),
                "train_ratio": None if train_total is None else train_total / base_train,
                "train_modules_changed": train_changed,
                "compiles": run.compiles - c0, "seconds": elapsed,
                "compiles_per_second": (run.compiles - c0) / elapsed if elapsed > 0 else None,
                "failures": run.failures,
            })
            log_rows.append(results.log(row))
            _log.info("iteration %d: validation %.4f, train %s", it,
                      row["validation_ratio"], row["train_ratio"])
            if progress:
                train_ratio = ("rejected" if train_total is None
                               else f"{row['train_ratio']:.4f}")
                print(f"iteration {it}: validation .text ratio {row['validation_ratio']:.4f} "
                      f"(t={tau_best}, {changed} modules changed), train {train_ratio}, "
                      f"{row['compiles']} compiles in {elapsed:.0f} s", flush=True)
        workers_used = len(pool)
        replaced = pool.replaced
    _plot(log_rows, results.path("curve.png"))
    selected = chosen["policy"]
    selected.meta.update({"selected_iteration": chosen["iteration"],
                          "validation_ratio": chosen["total"] / base_val})
    selected.save(results.path("policy.json"))
    selected.to_onnx(results.path("policy.onnx"))
    return results.summary({
        "config": cfg.as_dict(), "labels_from": [os.fspath(p) for p in labels_from],
        "workers": workers_used, "workers_replaced": replaced,
        "train_modules": len(train_mods), "validation_modules": len(val_mods),
        "train_libraries": sorted({m.library for m in train_mods}),
        "validation_libraries": sorted({m.library for m in val_mods}),
        "validation_baseline": int(base_val), "selected_iteration": chosen["iteration"],
        "selected_threshold": chosen["threshold"],
        "selected_validation_ratio": chosen["total"] / base_val,
        "compiles": run.compiles, "failures": run.failures,
        "seconds": time.monotonic() - t_start,
        "compile_seconds": run.compile_seconds,
    })
