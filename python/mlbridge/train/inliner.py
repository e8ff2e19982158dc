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
   selected policy is never worse than ``-Oz`` on validation). Held-out
   libraries are never touched.

A module's requests follow from the decisions before them, so a policy
that reverses nothing on the default trajectory produces exactly the
default object: those modules are not compiled again (their size is
known), which makes validation sweeps cheap.

Every iteration appends one JSON line to ``<out>/log.jsonl``; the learning
curve is ``<out>/curve.png``; the selected policy is ``<out>/policy.json``
and ``<out>/policy.onnx``.
"""

import hashlib
import json
import logging
import os
import time

import numpy as np

from .cluster import TaskFailed, WorkerPool
from .compile import make_task
from .policy import MODEL_FEATURES, InlinePolicy

__all__ = ["TrainConfig", "train", "label_from_flip", "RolloutCache"]

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


class RolloutCache:
    """What compiling with LLVM's own decisions yields is a fact about the
    module and the compiler alone: its ``-Oz`` size, its requests' features
    and the size after reversing any single decision. Kept on disk (one
    ``.npz`` per module, keyed by the IR's sha256 and the clang version) so
    that a run on a grown corpus compiles only what is new."""

    def __init__(self, path):
        self.path = path
        os.makedirs(path, exist_ok=True)
        self.tag = _clang_version_tag()

    def _file(self, m):
        return os.path.join(self.path, f"{m.digest()[:32]}-{self.tag}.npz")

    def load(self, m):
        try:
            with np.load(self._file(m)) as z:
                m.default_text = int(z["text"])
                m.X = z["X"]
                m.default_flips = dict(zip(z["flip_index"].tolist(), z["flip_text"].tolist()))
            return True
        except (OSError, KeyError, ValueError):
            return False

    def save(self, m):
        tmp = self._file(m) + ".tmp.npz"
        idx = np.array(sorted(m.default_flips), dtype=np.int64)
        np.savez(tmp, text=np.int64(m.default_text), X=m.X, flip_index=idx,
                 flip_text=np.array([m.default_flips[i] for i in idx.tolist()], dtype=np.int64))
        os.replace(tmp, self._file(m))


def _clang_version_tag():
    import subprocess
    from .compile import CLANG
    try:
        out = subprocess.run([CLANG, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except OSError:
        out = CLANG
    return hashlib.sha256(out.encode()).hexdigest()[:8]


class _Run:
    """Bookkeeping of one training run: the pool, the log, compile counts."""

    def __init__(self, pool, progress):
        self.pool, self.progress = pool, progress
        self.compiles = 0
        self.compile_seconds = 0.0
        self.failures = 0

    def map(self, tasks, what):
        if not tasks:
            return []
        bar = self.progress(total=len(tasks), desc=what)
        try:
            results = self.pool.map(tasks, progress=lambda: bar.update(1))
        finally:
            bar.close()
        self.compiles += len(tasks)
        for r in results:
            if isinstance(r, TaskFailed):
                self.failures += 1
                _log.warning("%s failed: %s", r.key, r.error)
            else:
                self.compile_seconds += r["seconds"]
        return results


def _modules_of(corpus_modules, build_dir):
    mods = []
    for m in corpus_modules:
        mods.append(_Module(m.name, m.ir(build_dir), m.library))
    return mods


def _rollout_defaults(run, modules, what, cache=None):
    """Default trajectory of every module: features and ``-Oz`` size."""
    todo = [m for m in modules if cache is None or not cache.load(m)]
    res = run.map([m.task(record=True) for m in todo], what)
    failed = set()
    for m, r in zip(todo, res):
        if isinstance(r, TaskFailed):
            failed.add(m.key)
            continue
        m.default_text, m.X = r["text"], r["X"]
        if cache is not None:
            cache.save(m)
    return [m for m in modules if m.key not in failed]


def _deviates(policy, m):
    """Whether ``policy`` reverses any decision on m's default trajectory
    (if not, it compiles m exactly like -Oz)."""
    if policy is None or m.X is None or len(m.X) == 0:
        return False
    return bool(np.any(policy.decide(m.X) != m.X[:, _DEFAULT_COL].astype(np.int64)))


def _evaluate(run, policy, modules, what):
    """Total .text of ``policy`` on ``modules`` (compiling only the modules
    where it deviates) and the number of modules it changed."""
    todo = [m for m in modules if _deviates(policy, m)]
    res = run.map([m.task(policy=policy.to_dict()) for m in todo], what)
    sizes = {m.key: m.default_text for m in modules}
    for m, r in zip(todo, res):
        if not isinstance(r, TaskFailed):
            sizes[m.key] = r["text"]
    return sum(sizes.values()), len(todo), sizes


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
    ax.plot(it, [r["train_ratio"] for r in log_rows], "s--", label="training modules")
    ax.axhline(1.0, color="gray", lw=0.8, ls=":", label="clang-19 -Oz")
    ax.set_xlabel("iteration")
    ax.set_ylabel(".text / clang-19 -Oz")
    ax.set_title("Inlining for size: learning curve")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _no_bar(total, desc):
    class _Bar:
        def update(self, n):
            pass

        def close(self):
            pass
    return _Bar()


def train(train_modules, validation_modules, out_dir, *, workers=2, address=None,
          config=None, build_dir=None, progress=True, cache_dir=None, labels_from=()):
    """Trains the inlining policy; returns the summary dict (also written
    to ``<out_dir>/summary.json``). ``*_modules`` are corpus modules
    (:class:`mlbridge.corpus.Module`: ``name``, ``library``, ``ir()``).
    ``cache_dir``: a :class:`RolloutCache` folder shared between runs;
    ``labels_from``: ``labels.npz`` files of earlier runs, added to the
    labels before the first fit."""
    cfg = config or TrainConfig()
    os.makedirs(out_dir, exist_ok=True)
    if progress:
        from tqdm import tqdm

        def bar(total, desc):
            return tqdm(total=total, desc=desc, unit="compile", leave=False)
    else:
        bar = _no_bar
    rng = np.random.default_rng(cfg.seed)
    train_mods = _modules_of(train_modules, build_dir)
    val_mods = _modules_of(validation_modules, build_dir)
    log_path = os.path.join(out_dir, "log.jsonl")
    log_rows = []
    t_start = time.monotonic()
    with WorkerPool(workers, address=address, task_timeout=cfg.task_timeout) as pool, \
            open(log_path, "w") as log:
        run = _Run(pool, bar)
        cache = RolloutCache(cache_dir) if cache_dir else None
        train_mods = _rollout_defaults(run, train_mods, "train: -Oz rollout", cache)
        val_mods = _rollout_defaults(run, val_mods, "validation: -Oz rollout", cache)
        base_train = sum(m.default_text for m in train_mods)
        base_val = sum(m.default_text for m in val_mods)
        X_all, g_all = [], []
        for path in labels_from:
            with np.load(path) as z:
                X_all += list(z["X"])
                g_all += z["gain"].tolist()
        policy = None
        best = {"policy": InlinePolicy.never_deviate(), "total": base_val,
                "iteration": 0, "threshold": None}
        for it in range(1, cfg.iterations + 1):
            t_it = time.monotonic()
            c0 = run.compiles
            rows, gains = _explore(run, policy, train_mods, cfg, rng, it, cache)
            np.savez(os.path.join(out_dir, "labels.npz"), X=np.array(X_all + rows),
                     gain=np.array(g_all + gains, dtype=np.float64))
            X_all += rows
            g_all += gains
            X = np.array(X_all)
            g = np.array(g_all, dtype=np.float64)
            y = (g < 0).astype(np.float64)
            # sqrt: costly mistakes weigh more, without drowning the rare,
            # small savings (chosen by cross-validation on the labels).
            w = np.sqrt(np.abs(g)) + 1.0
            net = InlinePolicy.fit(X, y, w, hidden=cfg.hidden, epochs=cfg.epochs,
                                   seed=cfg.seed + it)
            sweep = {}
            train_scores = net.scores(np.concatenate([m.X for m in train_mods if len(m.X)]))
            thresholds = sorted({round(float(np.quantile(train_scores, 1 - r)), 4)
                                 for r in cfg.rates})
            for tau in thresholds:
                cand = net.shifted(tau)
                total, changed, _ = _evaluate(run, cand, val_mods, f"it{it} validation t={tau}")
                sweep[tau] = (total, changed, cand)
            tau_best = min(sweep, key=lambda t: (sweep[t][0], -t))  # ties: fewer reversals
            total, changed, cand = sweep[tau_best]
            policy = cand  # the next iteration explores around it
            train_total, train_changed, _ = _evaluate(run, cand, train_mods, f"it{it} train eval")
            if total < best["total"]:
                best = {"policy": cand, "total": total, "iteration": it, "threshold": tau_best}
            elapsed = time.monotonic() - t_it
            row = {
                "iteration": it, "labels": len(g_all), "labels_new": len(gains),
                "better_reversals": int((np.array(gains) < 0).sum()) if gains else 0,
                "threshold": tau_best,
                "validation_total": int(total), "validation_baseline": int(base_val),
                "validation_ratio": total / base_val, "validation_modules_changed": changed,
                "validation_sweep": {str(t): int(v[0]) for t, v in sweep.items()},
                "train_total": int(train_total), "train_baseline": int(base_train),
                "train_ratio": train_total / base_train, "train_modules_changed": train_changed,
                "compiles": run.compiles - c0, "seconds": elapsed,
                "compiles_per_second": (run.compiles - c0) / elapsed if elapsed > 0 else None,
                "failures": run.failures,
            }
            log.write(json.dumps(row) + "\n")
            log.flush()
            log_rows.append(row)
            _log.info("iteration %d: validation %.4f, train %.4f", it,
                      row["validation_ratio"], row["train_ratio"])
            if progress:
                print(f"iteration {it}: validation .text ratio {row['validation_ratio']:.4f} "
                      f"(t={tau_best}, {changed} modules changed), train "
                      f"{row['train_ratio']:.4f}, {row['compiles']} compiles in "
                      f"{elapsed:.0f} s", flush=True)
        workers_used = len(pool)
        replaced = pool.replaced
    _plot(log_rows, os.path.join(out_dir, "curve.png"))
    chosen = best["policy"]
    chosen.meta.update({"selected_iteration": best["iteration"],
                        "validation_ratio": best["total"] / base_val})
    chosen.save(os.path.join(out_dir, "policy.json"))
    chosen.to_onnx(os.path.join(out_dir, "policy.onnx"))
    summary = {
        "config": cfg.as_dict(), "labels_from": [os.fspath(p) for p in labels_from],
        "workers": workers_used, "workers_replaced": replaced,
        "train_modules": len(train_mods), "validation_modules": len(val_mods),
        "train_libraries": sorted({m.library for m in train_mods}),
        "validation_libraries": sorted({m.library for m in val_mods}),
        "validation_baseline": int(base_val), "selected_iteration": best["iteration"],
        "selected_threshold": best["threshold"],
        "selected_validation_ratio": best["total"] / base_val,
        "compiles": run.compiles, "failures": run.failures,
        "seconds": time.monotonic() - t_start,
        "compile_seconds": run.compile_seconds,
    }
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    return summary
