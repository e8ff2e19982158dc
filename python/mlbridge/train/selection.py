"""The one model-selection routine of every training problem: measure each
candidate policy on the validation set, reject any whose measurement is
incomplete, keep the smallest total.

A candidate whose evaluation failed anywhere (a compile timed out, crashed,
lost its worker) has no total: it is *rejected*, with the reason, and never
stands in for a result (a failed module must not count as its baseline
size). The caller decides what a failed baseline means (it stops)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, List, Optional

from ..errors import MLBridgeError

__all__ = ["Rejected", "Candidate", "sweep", "best"]


class Rejected(MLBridgeError):
    """Raised by an evaluation: this candidate has no valid total (why)."""


@dataclass
class Candidate:
    """One measured candidate: ``total`` (smaller is better) or, when its
    evaluation failed, ``rejected`` (the reason) and no total."""

    label: Any
    policy: Any
    total: Optional[float] = None
    rejected: Optional[str] = None
    extra: Any = None

    def as_row(self):
        row = {"candidate": self.label}
        if self.rejected is not None:
            row["rejected"] = self.rejected
        else:
            row["total"] = self.total
        return row


def sweep(candidates: Iterable, evaluate: Callable, *,
          on_result: Optional[Callable[[Candidate], None]] = None) -> List[Candidate]:
    """Evaluates every ``(label, policy)``; ``evaluate(policy)`` returns the
    total or ``(total, extra)``, or raises :class:`Rejected`."""
    out = []
    for label, policy in candidates:
        try:
            got = evaluate(policy)
        except Rejected as e:
            c = Candidate(label, policy, rejected=str(e))
        else:
            total, extra = got if isinstance(got, tuple) else (got, None)
            c = Candidate(label, policy, total=total, extra=extra)
        out.append(c)
        if on_result is not None:
            on_result(c)
    return out


def best(measured: Iterable[Candidate], *, prefer: Callable[[Candidate], Any] = None
         ) -> Optional[Candidate]:
    """The candidate with the smallest total (rejected ones never), ties
    broken by the smallest ``prefer(candidate)`` (default: the first
    measured); None when every candidate was rejected."""
    valid = [(c.total, prefer(c) if prefer else i, i, c)
             for i, c in enumerate(measured) if c.rejected is None]
    return min(valid, key=lambda t: t[:3])[3] if valid else None
