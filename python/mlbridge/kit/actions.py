"""An action from a model's scores: the rule of the C++ library
(``decodeAction`` with ``ActionRule::Argmax``, ``rl::Agent``) and of the C
API (``mlb_evaluate_action``), for the Python side of a problem."""

from __future__ import annotations

import numpy as np

__all__ = ["masked_argmax"]


def masked_argmax(scores, legal, axis: int = -1):
    """The index of the largest score whose ``legal`` entry is true, the
    first on ties, along ``axis`` (an int for 1-D input, an array of
    indices otherwise). ``legal`` is a bool (or 0/1) mask of the scores'
    shape; where a row has no legal entry the result is 0, which the caller
    must not take for a decision (the C++ rule calls that a caller error)."""
    s = np.where(np.asarray(legal, dtype=bool), np.asarray(scores, dtype=np.float64), -np.inf)
    best = np.argmax(s, axis=axis)
    return int(best) if np.ndim(best) == 0 else best
