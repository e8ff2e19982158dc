"""Evolution-strategies fine-tuning of a phase-ordering policy against the
measured ``.text`` of its own whole episodes (the stage after the oracle
fit; ``python -m mlbridge.train phase-order train --warm-start policy.json
--es-iterations N``).

The oracle fit learns each action's gain one state at a time, on the states
the greedy oracle visited; the deployed policy then walks its own states,
through a threshold and per-action margins chosen by hand on validation.
ES instead scores the policy as deployed: the plugin runs the candidate
(ONNX) in ``clang-19 -Oz`` from the policy's start flags, and the reward is
the object's ``.text``.

* Parameters searched: the network's output layer (``W2``, ``b2``: 21 x 32
  + 21). The hidden layer (counts and IR2Vec projection, ~10k weights) is
  the fitted representation and stays; a few antithetic pairs cannot
  estimate a gradient over all of it. The threshold (STOP's score) stays
  too: a shift of ``b2`` expresses any change of it.
* ``sigma`` is set once so that a perturbation changes ``change`` of the
  decisions on the recorded oracle states; Adam ascends (:mod:`..es`).
* Reward of a candidate: the mean over the sampled training modules of
  ``(size at start - size under the candidate) / size at start`` (the
  start: STOP at once, i.e. ``-Oz`` with the start flags). Only modules
  with a recorded oracle episode are sampled: their first observation is
  known, so a candidate that stops there at once needs no compile.
* Every ``eval_every``-th iterate (and the last) is compiled on every
  validation module; the warm start is candidate 0, and the selection
  (:mod:`..selection`) keeps the smallest validation total, rejecting a
  candidate with a failed compile.
"""

import logging
import time

import numpy as np

from ..cluster import TaskFailed
from ..es import Adam, calibrate_sigma, evolve, sample_modules
from ..es_knobs import ESKnobs
from ..results import TrainingError
from ..selection import best, sweep
from .policy import STOP, PhasePolicy
from .task import compile_task

__all__ = ["ESConfig", "finetune", "head", "with_head", "decisions"]

_log = logging.getLogger("mlbridge.train")


class ESConfig(ESKnobs):
    """Knobs of :func:`finetune` (all have defaults); the Adam step ``lr``
    defaults to sigma / 5."""

    def __init__(self, *, iterations=40, pairs=4, modules_per_iteration=8, change=0.05,
                 lr=None, eval_every=5, max_minutes=None, seed=0):
        super().__init__(iterations=iterations, pairs=pairs,
                         modules_per_iteration=modules_per_iteration, change=change, lr=lr,
                         max_minutes=max_minutes)
        self.eval_every = int(eval_every)
        self.seed = int(seed)


def head(policy):
    """The searched parameters: ``W2`` and ``b2``, flat."""
    return np.concatenate([policy.W2.ravel(), policy.b2.ravel()]).astype(np.float64)


def with_head(policy, theta):
    """``policy`` with the output layer ``theta`` (as :func:`head` lays it out)."""
    n = policy.W2.size
    return PhasePolicy(policy.W1, policy.b1, np.reshape(theta[:n], policy.W2.shape),
                       theta[n:], policy.threshold, We=policy.We)


def decisions(policy, X):
    """The action the plugin takes on each observation row of ``X``: the
    argmax of ``[gains, threshold]``."""
    g = policy.gains(X)
    a = g.argmax(axis=1)
    return np.where(g[np.arange(len(g)), a] > policy.threshold, a, STOP)


class _Module:
    """A training module for ES: its bitcode, library, first observation
    (from its oracle episode) and, once measured, its size at start."""

    def __init__(self, m, first_state):
        self.name, self.library = m.name, m.library
        with open(m.ir(), "rb") as f:
            self.ir = f.read()
        self.first = np.asarray(first_state, dtype=np.float32)[None, :]
        self.start_text = None


def _rewards(pool, policies, modules, stop_model, task_args):
    """Mean relative reward of each policy over ``modules``, and the number
    of compiles. A module where every policy stops at once gives 0 to all
    (nothing compiled); elsewhere its start size is measured once (the
    STOP model) and each acting policy is compiled. A module with a failed
    compile under any policy is left out of all."""
    acting = {(pi, m.name) for pi, p in enumerate(policies) for m in modules
              if decisions(p, m.first)[0] != STOP}
    live = [m for m in modules if any((pi, m.name) in acting for pi in range(len(policies)))]
    tasks, where = [], []
    for m in live:
        if m.start_text is None:
            tasks.append(compile_task(m.ir, model=stop_model, key=m.name, **task_args))
            where.append((None, m))
    models = [p.to_onnx() for p in policies]
    for pi in range(len(policies)):
        for m in live:
            if (pi, m.name) in acting:
                tasks.append(compile_task(m.ir, model=models[pi], key=m.name, **task_args))
                where.append((pi, m))
    sizes, bad = {}, set()
    for (pi, m), r in zip(where, pool.map(tasks) if tasks else []):
        if isinstance(r, TaskFailed):
            _log.warning("ES compile of %s failed: %s", m.name, str(r.error).strip()[-300:])
            bad.add(m.name)
        elif pi is None:
            m.start_text = int(r["text"])
        else:
            sizes[pi, m.name] = int(r["text"])
    keep = [m for m in modules if m.name not in bad and (m not in live or m.start_text > 0)]
    if not keep:
        return None, len(tasks)
    out = []
    for pi in range(len(policies)):
        out.append(float(np.mean([
            0.0 if (pi, m.name) not in sizes else (m.start_text - sizes[pi, m.name]) / m.start_text
            for m in keep])))
    return out, len(tasks)


def finetune(pool, policy, train_modules, episodes, validate, *, plugin, max_steps, start,
             stop_model, config=None, log=None, save_candidate=None):
    """ES from ``policy`` (the warm start); returns the validation
    candidates (:class:`..selection.Candidate`, label = iteration, 0 = the
    warm start) and the winner (None if every one was rejected).

    ``train_modules``: corpus modules (``name``, ``library``, ``ir()``);
    only those with an episode in ``episodes`` (oracle data) take part.
    ``validate(policy)`` returns the validation total or raises
    :class:`..selection.Rejected`. ``log(row)`` gets one row per iteration;
    ``save_candidate(label, policy)`` is called for each validated one."""
    cfg = config or ESConfig()
    rng = np.random.default_rng(cfg.seed)
    t_start = time.monotonic()
    # A module without code at the start has no relative reward to give.
    first = {e["module"]: e["states"][0] for e in episodes
             if len(e["states"]) and e["sizes"][0] > 0}
    mods = [_Module(m, first[m.name]) for m in train_modules if m.name in first]
    if not mods:
        raise TrainingError("no training module has an oracle episode to start ES from")
    X = np.concatenate([np.asarray(e["states"], np.float32) for e in episodes])
    task_args = dict(plugin=plugin, max_steps=max_steps, start=start)
    candidates = []

    def validated(label, p, row):
        c = sweep([(label, p)], validate)[0]
        candidates.append(c)
        if c.rejected is None:
            row["validation_text"] = int(c.total)
        else:
            row["validation_rejected"] = c.rejected
        if save_candidate is not None:
            save_candidate(label, p)
        return row

    warm = policy
    base_decisions = decisions(warm, X)
    t0 = time.monotonic()
    row = validated(0, warm, {"stage": "es-warm-start", "iteration": 0,
                              "es_modules": len(mods), "states": int(len(X))})
    row["seconds"] = round(time.monotonic() - t0, 1)
    if log:
        log(row)
    sigma = calibrate_sigma(head(warm), lambda th: decisions(with_head(warm, th), X),
                            cfg.change, rng)

    def rewards(thetas, sample, row):
        row["modules"] = [m.name for m in sample]
        got, row["compiled"] = _rewards(pool, [with_head(warm, th) for th in thetas], sample,
                                        stop_model, task_args)
        return got

    def after_step(theta, sample, row):
        row["decisions_changed"] = float(np.mean(
            decisions(with_head(warm, theta), X) != base_decisions))

    evolve(head(warm), iterations=cfg.iterations, pairs=cfg.pairs, sigma=sigma, rng=rng,
           sample=lambda r: sample_modules(mods, cfg.modules_per_iteration, r),
           rewards=rewards, after_step=after_step,
           validate=lambda it, theta, row: validated(it, with_head(warm, theta), row),
           optimizer=Adam(cfg.lr if cfg.lr is not None else sigma / 5),
           eval_every=cfg.eval_every, stop_at=cfg.stop_at(t_start), log=log)
    return candidates, best(candidates)
