"""The reward of register-allocation training: MLGO's RegAllocScore
weights applied to what ``llc-19``'s greedy allocator reports.

MLGO's formula (LLVM ``RegAllocScore.cpp``) is, per function, the sum over
blocks of ``freq(block) / freq(entry)`` times ``0.2 * copies + 4 * loads +
1 * stores + 5 * load-and-stores + 0.2 * cheap remats + 1 * expensive
remats``. Greedy reports, per function, frequency-weighted (same
normalisation) costs of what the allocation *added* in its
``SpillReloadCopies`` remark (``-pass-remarks-output``, pass ``regalloc``):

==========================  ======  =========================================
remark argument             weight  MLGO term
==========================  ======  =========================================
``TotalCopiesCost``         0.2     copies
``TotalReloadsCost``        4       loads (a reload from a stack slot)
``TotalFoldedReloadsCost``  4       loads (a reload folded into an operand)
``TotalSpillsCost``         1       stores (a spill to a stack slot)
``TotalFoldedSpillsCost``   1       stores (a spill folded into an operand)
==========================  ======  =========================================

So this score counts only the allocator's own memory traffic and copies;
the full formula also counts the function's other loads and stores (the
same for every allocation of the same input) and rematerialized
instructions (the remarks do not report them). Zero-cost folded reloads
cost nothing in both. Only greedy emits these remarks (``basic`` and
``fast`` do not), so comparisons across allocators use the score pass of
``MLBridgeRegAlloc.so`` (docs/register-allocation.md).
"""

from __future__ import annotations

import re
from typing import Dict

__all__ = ["REMARK_WEIGHTS", "remark_scores", "remark_flags"]

#: Remark argument -> MLGO weight (module docstring).
REMARK_WEIGHTS = {
    "TotalCopiesCost": 0.2,
    "TotalReloadsCost": 4.0,
    "TotalFoldedReloadsCost": 4.0,
    "TotalSpillsCost": 1.0,
    "TotalFoldedSpillsCost": 1.0,
}


def remark_flags(path):
    """The ``llc-19`` options that write greedy's remarks to ``path``."""
    return [f"-pass-remarks-output={path}", "-pass-remarks-filter=regalloc"]


_DOC = re.compile(r"^--- !\w+\n(.*?)^\.\.\.$", re.S | re.M)
_FIELD = re.compile(r"^(Name|Function):\s+'?([^'\n]*)'?$", re.M)
_ARG = re.compile(r"^\s+- (\w+):\s+'?([^'\n]*)'?$", re.M)


def remark_scores(yaml_text: str) -> Dict[str, float]:
    """``{function: score}`` from a remarks file (the function-level
    ``SpillReloadCopies`` remark of each function; a function without one
    had nothing to spill, reload or copy: it is absent, i.e. 0). Raises
    ValueError on a remark argument that is not a number."""
    scores: Dict[str, float] = {}
    for doc in _DOC.finditer(yaml_text):
        body = doc.group(1)
        fields = dict(_FIELD.findall(body))
        if fields.get("Name") != "SpillReloadCopies" or "Function" not in fields:
            continue
        total = 0.0
        for key, value in _ARG.findall(body):
            w = REMARK_WEIGHTS.get(key)
            if w is not None:
                total += w * float(value)
        fn = fields["Function"]
        scores[fn] = scores.get(fn, 0.0) + total
    return scores
