"""Antithetic evolution strategies, the one implementation every trainer
that searches a policy's parameters against a measured reward uses (as
google/ml-compiler-opt's blackbox ES does): the loop (:func:`evolve`), two
gradient estimates (reward differences scaled by their spread, or centred
ranks), two ascent steps (Adam, plain steps), the per-iteration sample of
training modules spread over libraries, and the perturbation scale.

A trainer gives :func:`evolve` what only it knows -- which modules an
iteration measures, how a parameter vector is compiled and rewarded, how a
candidate is validated -- and keeps its own warm start and selection."""

import time

import numpy as np

__all__ = ["evolve", "es_gradient", "rank_gradient", "Adam", "Step", "sample_modules",
           "calibrate_sigma"]


def es_gradient(rewards_plus, rewards_minus, eps, sigma):
    """The antithetic ES estimate of the reward's gradient:
    ``sum_p (R+_p - R-_p) eps_p / (2 P sigma)``, the reward differences
    divided by their standard deviation (scale-free steps)."""
    d = np.asarray(rewards_plus, np.float64) - np.asarray(rewards_minus, np.float64)
    s = d.std()
    if s > 0:
        d = d / s
    return (d[:, None] * np.asarray(eps)).sum(axis=0) / (2 * len(d) * sigma)


def rank_gradient(rewards_plus, rewards_minus, eps, sigma):
    """The antithetic estimate from centred ranks instead of rewards: each of
    the ``2 P`` rewards is replaced by its rank scaled to ``[-0.5, 0.5]``
    (robust to a few modules with huge rewards), then
    ``sum_p (u+_p - u-_p) eps_p / (P sigma)``."""
    f = np.stack([np.asarray(rewards_plus, np.float64),
                  np.asarray(rewards_minus, np.float64)], axis=1)
    ranks = np.argsort(np.argsort(f.reshape(-1))).reshape(f.shape)
    util = ranks / max(1, f.size - 1) - 0.5
    return ((util[:, 0] - util[:, 1]) @ np.asarray(eps)) / (len(f) * sigma)


def sample_modules(mods, k, rng):
    """``k`` modules spread over all libraries: libraries in a random
    order, one module each, round after round."""
    by_lib = {}
    for m in mods:
        by_lib.setdefault(m.library, []).append(m)
    pools = [list(rng.permutation(len(v))) for v in by_lib.values()]
    libs = list(by_lib.values())
    order = rng.permutation(len(libs))
    out = []
    while len(out) < min(k, len(mods)):
        for li in order:
            if pools[li] and len(out) < k:
                out.append(libs[li][pools[li].pop()])
    return out


class Adam:
    """Adam on a flat parameter vector, ascending."""

    def __init__(self, lr):
        self.lr, self.m, self.v, self.t = lr, 0.0, 0.0, 0

    def step(self, theta, grad):
        """One ascent step along ``grad``."""
        self.t += 1
        self.m = 0.9 * self.m + 0.1 * grad
        self.v = 0.999 * self.v + 0.001 * grad * grad
        mh = self.m / (1 - 0.9 ** self.t)
        vh = self.v / (1 - 0.999 ** self.t)
        return theta + self.lr * mh / (np.sqrt(vh) + 1e-8)


class Step:
    """Plain ascent: ``theta + lr * grad``."""

    def __init__(self, lr):
        self.lr = lr

    def step(self, theta, grad):
        return theta + self.lr * grad


def evolve(theta, *, iterations, pairs, sigma, rng, sample, rewards, validate,
           gradient=es_gradient, optimizer, eval_every=1, stop_at=None, after_step=None,
           log=None):
    """Runs ``iterations`` ES steps from ``theta``; returns the last iterate.

    Each iteration: ``batch = sample(rng)``, then ``pairs`` perturbations
    ``eps`` (standard normal, drawn after the batch), ``rewards(thetas,
    batch, row)`` of the ``2 pairs`` parameter vectors ``theta + sigma eps``
    then ``theta - sigma eps`` (a list of floats in that order, or None when
    nothing could be measured: the iteration takes no step), then
    ``theta = optimizer.step(theta, gradient(r+, r-, eps, sigma))`` and
    ``after_step(theta, batch, row)``. Every ``eval_every``-th iterate and
    the last one (the ``iterations``-th, or the first to end after
    ``stop_at``, a :func:`time.monotonic` time) are given to ``validate(iteration, theta,
    row)``. ``row`` is the iteration's log record (``stage``,
    ``iteration``, ``sigma``, ``train_reward``, ``best_perturbation_reward``
    or ``skipped``, ``seconds``; the callbacks add theirs); ``log(row)``
    gets it at the end of the iteration."""
    theta = np.asarray(theta, np.float64)
    for it in range(1, iterations + 1):
        t_it = time.monotonic()
        batch = sample(rng)
        eps = rng.standard_normal((pairs, theta.size))
        row = {"stage": "es", "iteration": it, "sigma": sigma}
        got = rewards([theta + sigma * e for e in eps] + [theta - sigma * e for e in eps],
                      batch, row)
        if got is None:
            row["skipped"] = "nothing of the sampled batch could be measured"
        else:
            theta = optimizer.step(theta, gradient(got[:pairs], got[pairs:], eps, sigma))
            row.update(train_reward=float(np.mean(got)),
                       best_perturbation_reward=float(np.max(got)))
            if after_step is not None:
                after_step(theta, batch, row)
        last = it == iterations or (stop_at is not None and time.monotonic() > stop_at)
        if it % eval_every == 0 or last:
            validate(it, theta, row)
        row["seconds"] = round(time.monotonic() - t_it, 1)
        if log is not None:
            log(row)
        if last:
            break
    return theta


def calibrate_sigma(theta, decide, target, rng):
    """The perturbation scale at which ``theta + sigma eps`` changes about
    ``target`` (a share) of the decisions ``decide(theta)`` makes on
    recorded states: a scale in decisions, not in raw parameter units."""
    base = decide(theta)
    best_sigma, best_err = None, None
    for sigma in np.geomspace(1e-4, 1.0, 25):
        share = np.mean([np.mean(decide(theta + sigma * rng.standard_normal(theta.shape)) != base)
                         for _ in range(4)])
        err = abs(np.log((share + 1e-6) / target))
        if best_err is None or err < best_err:
            best_sigma, best_err = float(sigma), err
    return best_sigma
