"""Inlining for size: a policy that makes every inlining decision, trained
against the measured ``.text`` of the training modules.

1. *Roll out LLVM's own decisions* on every training and validation module
   (one compile each, features -- and, for a policy with embeddings, the
   plugin's IR2Vec vectors -- of every request recorded). This is exactly
   ``clang-19 -Oz``; the sizes are the baselines of the rewards.
2. *Behavioural cloning* (warm start): the network imitates LLVM's
   decisions on those requests, so training starts near ``-Oz``.
3. *Evolution strategies* (antithetic, as google/ml-compiler-opt's
   blackbox ES): each iteration samples a bounded set of training modules
   spread over all training libraries and ``pairs`` Gaussian perturbations
   ``eps`` of the parameters; ``theta + sigma eps`` and ``theta - sigma
   eps`` are compiled on every sampled module, the reward of a policy is
   the mean over the modules of ``(size under -Oz - size under the
   policy) / size under -Oz``, and Adam ascends the estimated gradient.
   ``sigma`` is set once so that a perturbation changes a given share of
   the decisions on the recorded requests.
4. *Selection on validation only*: the cloned policy and every
   ``eval_every``-th ES iterate are compiled on the validation modules; the
   smallest total ``.text`` wins. A candidate with a failed compile on any
   validation module is rejected (:mod:`..selection`). Held-out libraries
   are never touched.
5. *Deferral margin*, selected on validation too: the winner, made to let
   LLVM's decision stand on its least confident ``defer_shares`` of the
   training requests (the margin is that quantile of ``|f|``; see
   :class:`.policy.InlinePolicy`), competes with the candidates above.
   This is the guard against the policy's disagreements with LLVM that do
   not carry over to other code.

A module's requests follow from the decisions before them, so a policy
that makes LLVM's decision at every request of the default trajectory
produces exactly the ``-Oz`` object: such modules are not compiled (their
size is known). That makes most perturbations of a cloned policy cheap.

Every stage appends one JSON line to ``<out>/log.jsonl``; the learning
curve is ``<out>/curve.png``; the selected policy is ``<out>/policy.json``
and ``<out>/policy.onnx``. A run in which no module compiles stops with
:class:`TrainingError` and writes none of them.
"""

import hashlib
import logging
import os
import time

import numpy as np

from ...toolchain import toolchain
from ..cache import RolloutCache
from ..cluster import TaskFailed, WorkerPool
from ..es import Adam, calibrate_sigma, evolve, sample_modules
from ..es_knobs import ESKnobs
from ..results import RunResults, TrainingError, plot_learning_curve
from ..selection import Rejected, best, sweep
from .policy import MODEL_FEATURES, InlinePolicy
from .task import make_task

__all__ = ["TrainConfig", "train", "evaluate_policy"]

_log = logging.getLogger("mlbridge.train")


class TrainConfig(ESKnobs):
    """Knobs of :func:`train` (all have defaults); the Adam step ``lr``
    defaults to sigma / 10."""

    def __init__(self, *, iterations=12, pairs=6, modules_per_iteration=16, change=0.02,
                 lr=None, hidden=32, project=8, embeddings=False, eval_every=3,
                 bc_epochs=300, seed=0, task_timeout=900.0, defer_shares=(0.02, 0.05, 0.2),
                 warm_start=None, max_minutes=None):
        super().__init__(iterations=iterations, pairs=pairs,
                         modules_per_iteration=modules_per_iteration, change=change, lr=lr,
                         max_minutes=max_minutes)
        self.hidden = int(hidden)
        self.project = int(project)
        self.embeddings = bool(embeddings)
        self.eval_every = int(eval_every)
        self.bc_epochs = int(bc_epochs)
        self.seed = int(seed)
        self.task_timeout = float(task_timeout)
        # shares of the training requests on which the margin lets LLVM decide
        self.defer_shares = [float(q) for q in defer_shares]
        # a policy.json to start from instead of cloning LLVM's decisions
        self.warm_start = None if warm_start is None else os.fspath(warm_start)


class _Module:
    """A module as the trainer sees it: a key, its IR file, its ``-Oz``
    size and the requests of LLVM's own trajectory (features ``X``, LLVM's
    decisions ``defaults``, embeddings ``E`` when recorded)."""

    def __init__(self, key, ir, library):
        self.key, self.ir, self.library = key, os.fspath(ir), library
        self.default_text = None
        self.X = self.defaults = self.E = None
        self._data = None

    def data(self):
        if self._data is None:
            with open(self.ir, "rb") as f:
                self._data = f.read()
        return self._data

    def digest(self):
        return hashlib.sha256(self.data()).hexdigest()

    def task(self, policy=None, record=False, timeout=900.0):
        return make_task(self.data(), key=self.key, policy=policy, record=record,
                         timeout=timeout)

    def is_default(self, policy):
        """Whether ``policy`` makes LLVM's decision at every request of the
        default trajectory (then it compiles this module exactly like -Oz)."""
        if self.X is None or len(self.X) == 0:
            return True
        return bool(np.array_equal(policy.decide(self.X, self.E, self.defaults),
                                   self.defaults))


class _DefaultRollouts:
    """LLVM's own trajectory of a module (``-Oz`` size, features, decisions,
    embeddings) kept in a :class:`RolloutCache` under the IR's sha256, the
    compiler's tag and whether embeddings were recorded, so that a run on
    a grown corpus compiles only what is new."""

    def __init__(self, path, embeddings):
        self.cache = RolloutCache(path)
        self.tag = toolchain().tag + ("-ir2vec" if embeddings else "")
        self.embeddings = embeddings

    def _key(self, m):
        return f"{m.digest()[:32]}-{self.tag}"

    def load(self, m):
        z = self.cache.load(self._key(m))
        if z is None:
            return False
        need = {"text", "X", "defaults"} | ({"E"} if self.embeddings else set())
        X = z.get("X")
        if not need <= set(z) or X.ndim != 2 or X.shape[1] != len(MODEL_FEATURES):
            _log.warning("rollout cache: %s has another layout; recomputing it",
                         self.cache.file(self._key(m)))
            return False
        m.default_text, m.X, m.defaults = int(z["text"]), X, z["defaults"]
        m.E = z["E"] if self.embeddings else None
        return True

    def save(self, m):
        extra = {"E": m.E} if self.embeddings else {}
        self.cache.save(self._key(m), text=np.int64(m.default_text), X=m.X,
                        defaults=m.defaults, **extra)


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


def _rollout_defaults(run, modules, what, cache=None, embeddings=False):
    """LLVM's trajectory of every module; returns the modules that compiled
    and the failures."""
    todo = [m for m in modules if cache is None or not cache.load(m)]
    tasks = [m.task(record=True) for m in todo]
    for t in tasks:
        t["embeddings"] = embeddings
    res = run.map(tasks, what)
    failed = []
    for m, r in zip(todo, res):
        if isinstance(r, TaskFailed):
            failed.append(r)
            continue
        m.default_text, m.X, m.defaults = r["text"], r["X"], r["defaults"]
        m.E = r.get("E")
        if cache is not None:
            cache.save(m)
    keys = {f.key for f in failed}
    return [m for m in modules if m.key not in keys], failed


def evaluate_policy(run, policy, modules, what):
    """``(total .text, modules changed)`` of ``policy`` on ``modules``,
    compiling only the modules where it leaves LLVM's trajectory. Raises
    :class:`Rejected` if any of those compiles failed: its size is unknown,
    and the module's ``-Oz`` size must not stand in for it."""
    todo = [m for m in modules if not m.is_default(policy)]
    res = run.map([m.task(policy=policy.to_dict()) for m in todo], what)
    failed = [r for r in res if isinstance(r, TaskFailed)]
    if failed:
        raise Rejected(_failed_list(failed, len(todo)))
    sizes = {m.key: m.default_text for m in modules}
    for m, r in zip(todo, res):
        sizes[m.key] = r["text"]
    return sum(sizes.values()), len(todo)


def _rewards(run, policies, modules, what):
    """Mean relative reward of each policy over ``modules`` (one list of
    modules for all, so the policies are compared on the same code);
    modules with a failed compile under any policy are left out of all."""
    tasks, where = [], []
    for pi, p in enumerate(policies):
        d = p.to_dict()
        for m in modules:
            if not m.is_default(p):
                tasks.append(m.task(policy=d))
                where.append((pi, m.key))
    sizes = {}
    bad = set()
    for (pi, key), r in zip(where, run.map(tasks, what)):
        if isinstance(r, TaskFailed):
            bad.add(key)
        else:
            sizes[(pi, key)] = r["text"]
    keep = [m for m in modules if m.key not in bad]
    if not keep:
        return None, 0
    out = []
    for pi in range(len(policies)):
        out.append(float(np.mean([(m.default_text - sizes.get((pi, m.key), m.default_text))
                                  / m.default_text for m in keep])))
    return out, len(tasks)


def _plot(rows, path):
    es = [r for r in rows if r["stage"] == "es"]
    val = [r for r in rows if r.get("validation_ratio") is not None and r["stage"] != "margin"]
    series = [([r["iteration"] for r in es], [1 - r["train_reward"] for r in es], ".-",
               "sampled training modules (ES, mean of ±)")] if es else []
    series.append(([r["iteration"] for r in val], [r["validation_ratio"] for r in val], "o-",
                   "validation"))
    plot_learning_curve(path, series, baseline="clang-19 -Oz",
                        xlabel="ES iteration (0: behavioural cloning)",
                        ylabel=".text / clang-19 -Oz", title="Inlining for size: learning curve")


def train(train_modules, validation_modules, out_dir, *, workers=2, address=None,
          config=None, build_dir=None, progress=True, cache_dir=None):
    """Trains the inlining policy; returns the summary dict (also written
    to ``<out_dir>/summary.json``). ``*_modules`` are corpus modules
    (:class:`mlbridge.corpus.Module`: ``name``, ``library``, ``ir()``).
    ``cache_dir``: a rollout-cache folder shared between runs. Raises
    :class:`TrainingError` when no training or validation module compiles
    or every validation candidate was rejected."""
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
    rows = []
    t_start = time.monotonic()

    def say(text):
        if progress:
            print(text, flush=True)

    with WorkerPool(workers, address=address, task_timeout=cfg.task_timeout) as pool, results:
        run = _Run(pool, bar)
        cache = _DefaultRollouts(cache_dir, cfg.embeddings) if cache_dir else None
        n_train, n_val = len(train_mods), len(val_mods)
        train_mods, train_failed = _rollout_defaults(run, train_mods, "train: -Oz rollout",
                                                     cache, cfg.embeddings)
        val_mods, val_failed = _rollout_defaults(run, val_mods, "validation: -Oz rollout",
                                                 cache, cfg.embeddings)
        for mods, failed, n, split in ((train_mods, train_failed, n_train, "training"),
                                       (val_mods, val_failed, n_val, "validation")):
            if not mods:
                raise TrainingError(f"no {split} module compiled with LLVM's own decisions: "
                                    f"{_failed_list(failed, n)}")
        base_val = sum(m.default_text for m in val_mods)

        # -- behavioural cloning ---------------------------------------------------
        have = [m for m in train_mods if len(m.X)]
        X = np.concatenate([m.X for m in have])
        y = np.concatenate([m.defaults for m in have])
        E = np.concatenate([m.E for m in have]) if cfg.embeddings else None
        t0 = time.monotonic()
        if cfg.warm_start:
            policy = InlinePolicy.load(cfg.warm_start).with_margin(0.0)
            if (policy.P is not None) != cfg.embeddings:
                raise TrainingError(f"{cfg.warm_start}: a policy "
                                    f"{'with' if policy.P is not None else 'without'} "
                                    "embeddings; pass --embeddings to match")
        else:
            policy = InlinePolicy.clone(X, y, E, hidden=cfg.hidden, project=cfg.project,
                                        epochs=cfg.bc_epochs, seed=cfg.seed)
        vhave = [m for m in val_mods if len(m.X)]
        vX = np.concatenate([m.X for m in vhave])
        vy = np.concatenate([m.defaults for m in vhave])
        vE = np.concatenate([m.E for m in vhave]) if cfg.embeddings else None
        acc = float(np.mean(policy.decide(X, E) == y))
        vacc = float(np.mean(policy.decide(vX, vE) == vy))
        candidates = []

        def validate(p, it, row):
            measured = sweep([(it, p)], lambda c: evaluate_policy(
                run, c, val_mods, f"it{it} validation"))
            c = measured[0]
            candidates.append(c)
            if c.rejected is None:
                row.update({"validation_total": int(c.total),
                            "validation_ratio": c.total / base_val,
                            "validation_modules_changed": c.extra})
            else:
                row["validation_rejected"] = c.rejected
            return row

        row = {"stage": "warm-start" if cfg.warm_start else "clone", "iteration": 0,
               "requests": int(len(y)),
               "llvm_inline_share": float(y.mean()), "train_accuracy": acc,
               "validation_accuracy": vacc, "validation_baseline": int(base_val),
               "seconds": time.monotonic() - t0}
        rows.append(results.log(validate(policy, 0, row)))
        say(f"cloned LLVM's decisions: accuracy {acc:.4f} train, {vacc:.4f} validation; "
            f"validation .text ratio {row.get('validation_ratio', 'rejected')}")

        # -- evolution strategies --------------------------------------------------
        sigma = calibrate_sigma(policy.params(),
                                lambda th: policy.with_params(th).decide(X, E), cfg.change, rng)
        # A module without code or without a question has no reward to give.
        es_mods = [m for m in train_mods if m.default_text > 0 and len(m.X)]
        at_start = {}

        def rewards(thetas, mods, row):
            at_start["compiles"] = run.compiles
            row["modules"] = [m.key for m in mods]
            got, row["compiled"] = _rewards(run, [policy.with_params(th) for th in thetas],
                                            mods, f"it{row['iteration']} ES")
            return got

        def after_step(theta, mods, row):
            row["train_agreement_with_llvm"] = float(np.mean(
                policy.with_params(theta).decide(X, E) == y))

        def log(row):
            row.update({"compiles": run.compiles - at_start["compiles"],
                        "failures": run.failures})
            rows.append(results.log(row))
            say(f"ES iteration {row['iteration']}: sampled-module reward "
                f"{row.get('train_reward', float('nan')):+.5f}, "
                f"validation {row.get('validation_ratio', '-')}, {row['compiles']} compiles "
                f"in {row['seconds']:.0f} s")

        theta = evolve(policy.params(), iterations=cfg.iterations, pairs=cfg.pairs,
                       sigma=sigma, rng=rng,
                       sample=lambda r: sample_modules(es_mods, cfg.modules_per_iteration, r),
                       rewards=rewards, after_step=after_step,
                       validate=lambda it, th, row: validate(policy.with_params(th), it, row),
                       optimizer=Adam(cfg.lr if cfg.lr is not None else sigma / 10),
                       eval_every=cfg.eval_every, stop_at=cfg.stop_at(t_start), log=log)
        policy = policy.with_params(theta)
        # -- deferral margin (on the best candidate so far) -------------------------
        winner = best(candidates)
        if winner is not None:
            scores = np.abs(winner.policy.logits(X, E))
            for q in cfg.defer_shares:
                m = float(np.quantile(scores, q))
                p = winner.policy.with_margin(m)
                row = {"stage": "margin", "iteration": winner.label, "defer_share": q,
                       "margin": m,
                       "train_agreement_with_llvm": float(np.mean(p.decide(X, E, y) == y))}
                rows.append(results.log(validate(p, f"{winner.label} margin {m:.4g}", row)))
                say(f"deferral margin {m:.4g} ({q:.0%} of the training requests): "
                    f"validation {row.get('validation_ratio', 'rejected')}")
        workers_used = len(pool)
        replaced = pool.replaced
    # Ties: the candidate that agrees with LLVM on more training requests
    # (the fewer deviations validation cannot tell apart, the fewer to lose
    # on other code), then the first measured.
    winner = best(candidates, prefer=lambda c: -float(np.mean(c.policy.decide(X, E, y) == y)))
    if winner is None:
        raise TrainingError("every validation candidate was rejected: " + "; ".join(
            f"iteration {c.label}: {c.rejected}" for c in candidates))
    _plot(rows, results.path("curve.png"))
    selected = winner.policy
    selected.meta.update({"selected_candidate": winner.label,
                          "validation_ratio": winner.total / base_val,
                          "embeddings": cfg.embeddings})
    selected.save(results.path("policy.json"))
    selected.to_onnx(results.path("policy.onnx"))
    return results.summary({
        "config": cfg.as_dict(), "workers": workers_used, "workers_replaced": replaced,
        "train_modules": len(train_mods), "validation_modules": len(val_mods),
        "train_libraries": sorted({m.library for m in train_mods}),
        "validation_libraries": sorted({m.library for m in val_mods}),
        "validation_baseline": int(base_val), "selected_candidate": winner.label,
        "selected_validation_ratio": winner.total / base_val,
        "validation_candidates": {str(c.label): (None if c.total is None else int(c.total))
                                  for c in candidates},
        "compiles": run.compiles, "failures": run.failures,
        "seconds": time.monotonic() - t_start, "compile_seconds": run.compile_seconds,
    })
