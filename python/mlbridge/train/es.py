"""Antithetic evolution strategies, shared by the trainers that search a
policy's parameters against measured code size (as google/ml-compiler-opt's
blackbox ES does): the gradient estimate, the Adam ascent step, and the
per-iteration sample of training modules spread over libraries, and the
perturbation scale."""

import numpy as np

__all__ = ["es_gradient", "Adam", "sample_modules", "calibrate_sigma"]


def es_gradient(rewards_plus, rewards_minus, eps, sigma):
    """The antithetic ES estimate of the reward's gradient:
    ``sum_p (R+_p - R-_p) eps_p / (2 P sigma)``, the reward differences
    divided by their standard deviation (scale-free steps)."""
    d = np.asarray(rewards_plus, np.float64) - np.asarray(rewards_minus, np.float64)
    s = d.std()
    if s > 0:
        d = d / s
    return (d[:, None] * np.asarray(eps)).sum(axis=0) / (2 * len(d) * sigma)


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
