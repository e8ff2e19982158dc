"""Policies for LLVM greedy's eviction advisor (``-regalloc-enable-advisor``,
served over pipes by :mod:`mlbridge.llvm`).

LLVM asks, for the live range being allocated, which of 33 columns to
evict: columns 0-31 are physical registers (their interfering live ranges),
column 32 is the live range itself ("evict nothing": it is then split or
spilled). Each column carries 19 features (``mask`` says which columns are
legal; ``progress`` is one number per request).

* :class:`LinearEviction` -- the trained policy: a score per column, linear
  in the column's features (``sign(x) log(1 + |x|)``); the registers'
  columns share one weight vector, column 32 has its own and a bias; the
  best legal column wins. Comparing a register's score with column 32's
  compares its interfering ranges with the range being allocated.
* :class:`GreedyRule` -- the warm start: the test LLVM's default advisor
  makes, rebuilt from the features (fewest broken hints, then the lowest
  spill-weight density; evict only a lighter range, else split or spill;
  when evicting is compulsory, the cheapest legal register). Its inputs are
  normalised per request, so it approximates the default advisor (measured
  as such in the results); :meth:`GreedyRule.theta` is the same rule as
  :class:`LinearEviction` weights.
* :class:`TrainedEviction` -- the shipped :class:`LinearEviction`
  (``models/plugins/regalloc_evict_policy.json``), for
  ``python -m mlbridge.llvm evict --policy
  mlbridge.train.regalloc.evict:TrainedEviction -- llc-19 ...``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ...kit.actions import masked_argmax

from ...llvm.policies import Policy

__all__ = ["COLUMN_FEATURES", "NUM_COLUMNS", "NUM_FEATURES", "NUM_PARAMS",
           "column_matrix", "column_feature", "LinearEviction",
           "GreedyRule", "TrainedEviction", "Recorder", "SHIPPED_POLICY", "fit_imitation",
           "masked_argmax", "JsonFile"]

#: Per-column features the policy reads (LLVM 19's eviction header without
#: ``mask``), in this order.
COLUMN_FEATURES = (
    "is_free", "nr_urgent", "nr_broken_hints", "is_hint", "is_local", "nr_rematerializable",
    "nr_defs_and_uses", "weighed_reads_by_max", "weighed_writes_by_max",
    "weighed_read_writes_by_max", "weighed_indvars_by_max", "hint_weights_by_max",
    "start_bb_freq_by_max", "end_bb_freq_by_max", "hottest_bb_freq_by_max",
    "liverange_size", "use_def_density", "max_stage", "min_stage",
)
NUM_COLUMNS = 33
CANDIDATE = NUM_COLUMNS - 1
NUM_FEATURES = len(COLUMN_FEATURES)
#: Weights of :class:`LinearEviction`: the registers' columns' (one per
#: feature), column 32's (one per feature), column 32's bias.
NUM_PARAMS = 2 * NUM_FEATURES + 1

SHIPPED_POLICY = (Path(__file__).resolve().parents[4] / "models" / "plugins"
                  / "regalloc_evict_policy.json")

_BROKEN = COLUMN_FEATURES.index("nr_broken_hints")
_DENSITY = COLUMN_FEATURES.index("use_def_density")


def column_matrix(obs):
    """(design [33, NUM_PARAMS] float64, mask [33] bool) of one request: the
    transformed features of the register columns in the first
    ``NUM_FEATURES`` entries of their rows, column 32's in the next
    ``NUM_FEATURES`` of its row, then column 32's indicator (a non-finite
    feature counts as 1, the largest normalised value)."""
    F = np.empty((NUM_COLUMNS, NUM_FEATURES))
    for j, name in enumerate(COLUMN_FEATURES):
        F[:, j] = np.asarray(obs[name], dtype=np.float64).reshape(-1)
    # An unspillable range's weight is infinite, so normalised by the
    # maximum it reads NaN (inf / inf): it is the maximum, 1.
    F[~np.isfinite(F)] = 1.0
    F = np.sign(F) * np.log1p(np.abs(F))
    X = np.zeros((NUM_COLUMNS, NUM_PARAMS))
    X[:CANDIDATE, :NUM_FEATURES] = F[:CANDIDATE]
    X[CANDIDATE, NUM_FEATURES:-1] = F[CANDIDATE]
    X[CANDIDATE, -1] = 1.0
    mask = np.asarray(obs["mask"]).reshape(-1) != 0
    return X, mask


def column_feature(X, j):
    """Feature ``j`` of every column of a :func:`column_matrix` design."""
    return X[:, j] + X[:, NUM_FEATURES + j]


class JsonFile:
    """``save(path)``/``load(path)`` of a policy through its ``to_dict`` and
    ``from_dict`` (the regalloc policies' one file format: JSON)."""

    def save(self, path):
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=1)

    @classmethod
    def load(cls, path):
        with open(path) as f:
            return cls.from_dict(json.load(f))


class LinearEviction(JsonFile, Policy):
    """Scores ``X @ theta`` per column, the best legal one is the advice."""

    advisor = "evict"
    name = "linear"

    def __init__(self, theta):
        self.theta = np.asarray(theta, dtype=np.float64).reshape(NUM_PARAMS)

    def decide(self, X, mask):
        return int(masked_argmax(X @ self.theta, mask))

    def __call__(self, obs):
        return self.decide(*column_matrix(obs))

    def to_dict(self):
        return {"features": list(COLUMN_FEATURES), "theta": self.theta.tolist()}

    @classmethod
    def from_dict(cls, d):
        if list(d["features"]) != list(COLUMN_FEATURES):
            raise ValueError("the eviction policy was trained on other features")
        theta = list(d["theta"])
        if len(theta) == NUM_FEATURES + 1:
            # the first format: one weight vector shared by all 33 columns
            theta = theta[:-1] + theta
        return cls(theta)


class GreedyRule(Policy):
    """The default advisor's eviction test rebuilt from the features (see
    the module docstring). ``decide`` works on :func:`column_matrix`'s
    output, whose columns are monotone in the raw features."""

    advisor = "evict"
    name = "greedy-rule"

    def decide(self, X, mask):
        regs = mask.copy()
        regs[CANDIDATE] = False
        if regs.any():
            broken, density = column_feature(X, _BROKEN), column_feature(X, _DENSITY)
            cost = np.where(regs, broken * 1e6 + density, np.inf)
            best = int(np.argmin(cost))
            if not mask[CANDIDATE] or density[best] < density[CANDIDATE]:
                return best
        return CANDIDATE if mask[CANDIDATE] else int(np.argmax(mask))

    def __call__(self, obs):
        return self.decide(*column_matrix(obs))

    @staticmethod
    def theta(scale=4.0):
        """The rule as :class:`LinearEviction` weights (the same answer
        wherever no two densities are within 1e-9; ``scale``: the density
        weight's size): registers score ``-scale (2 broken hints +
        density)`` (a broken hint, log1p 1 > any normalised density,
        outweighs the density), column 32 ``-scale density`` plus a bias
        that breaks a tie towards not evicting."""
        theta = np.zeros(NUM_PARAMS)
        theta[_BROKEN] = -2.0 * scale
        theta[_DENSITY] = -scale
        theta[NUM_FEATURES + _DENSITY] = -scale
        theta[-1] = 1e-9
        return theta


class TrainedEviction(LinearEviction):
    """The shipped trained eviction policy (``SHIPPED_POLICY``)."""

    name = "trained"

    def __init__(self, path=None):
        path = Path(path or os.environ.get("MLBRIDGE_REGALLOC_EVICT_POLICY") or SHIPPED_POLICY)
        if not path.is_file():
            raise FileNotFoundError(f"no trained eviction policy at {path} (train one: "
                                    f"python -m mlbridge.train regalloc train --mode evict)")
        super().__init__(LinearEviction.load(path).theta)


class Recorder(Policy):
    """Wraps a policy with ``decide(X, mask)``; counts the requests and, with
    ``keep``, keeps every request's features, mask and the answer given
    (imitation data)."""

    advisor = "evict"
    name = "recorder"

    def __init__(self, policy, keep=True):
        self.policy, self.keep = policy, keep
        self.requests = 0
        self.X, self.masks, self.actions = [], [], []

    def __call__(self, obs):
        X, mask = column_matrix(obs)
        a = self.policy.decide(X, mask)
        self.requests += 1
        if self.keep:
            self.X.append(X.astype(np.float32))
            self.masks.append(mask)
            self.actions.append(a)
        return a

    def arrays(self):
        if not self.X:
            return (np.zeros((0, NUM_COLUMNS, NUM_PARAMS), np.float32),
                    np.zeros((0, NUM_COLUMNS), bool), np.zeros(0, np.int64))
        return np.stack(self.X), np.stack(self.masks), np.asarray(self.actions, np.int64)


def fit_imitation(X, masks, actions, *, steps=400, lr=0.1, l2=1e-3, seed=0):
    """Weights ``theta`` [P] of a linear choice ``argmax_c X[c] @ theta``
    over the legal ``c`` that imitates ``actions``, from designs ``X``
    [n, C, P] (cross-entropy of the softmax over each request's legal
    choices, full batch Adam). Returns (theta, accuracy on the data)."""
    X = np.asarray(X, dtype=np.float64)
    legal = np.asarray(masks, dtype=bool)
    y = np.asarray(actions, dtype=np.int64)
    n = len(y)
    if n == 0:
        raise ValueError("no imitation data")
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 0.01, X.shape[2])
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    rows = np.arange(n)
    for t in range(1, steps + 1):
        s = np.where(legal, X @ theta, -np.inf)
        s -= s.max(axis=1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=1, keepdims=True)
        p[rows, y] -= 1.0
        grad = np.einsum("nc,ncp->p", p, X) / n + l2 * theta
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad ** 2
        theta -= lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    return theta, float(np.mean(masked_argmax(X @ theta, legal) == y))
