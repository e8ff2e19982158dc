"""A problem's protocol read from its ``.def`` file, the one definition the
C++ plugin includes (``integrations/llvm/<problem>/<Problem>Protocol.def``).

The file is a list of X-macro items, one per line::

    MLB_CONST(MaxNodes, 16)
    MLB_LIST(NodeFeature, NFLoads, loads)
    MLB_FEATURE(FAdjacency, adjacency, float, MaxNodes, MaxNodes)
    MLB_OPTIONAL_FEATURE(FLookahead, lookahead, int64_t, 1, NumPassActions)
    MLB_ADVICE(scores, float, MaxNodes)

A dim is an integer, a constant or ``Num<List>s``. :meth:`Protocol.description`
is the JSON object the plugin prints with its ``-describe`` option, so a test
can compare both sides.

The files are found beside the installed package (``protocols/``, copied by
the install) or, in a source checkout, under ``integrations/llvm``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

#: .def type -> (numpy dtype, TensorSpec's JSON type name).
DTYPES = {"float": np.float32, "int64_t": np.int64}

_ITEM = re.compile(r"^\s*MLB_(CONST|LIST|FEATURE|OPTIONAL_FEATURE|ADVICE)\((.*)\)\s*$")
_HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Spec:
    name: str
    type: str
    shape: Tuple[int, ...]

    @property
    def dtype(self):
        return DTYPES[self.type]

    def json(self) -> dict:
        return {"name": self.name, "type": self.type, "port": 0, "shape": list(self.shape)}


@dataclass
class Protocol:
    constants: Dict[str, int] = field(default_factory=dict)
    lists: Dict[str, List[str]] = field(default_factory=dict)
    features: List[Spec] = field(default_factory=list)
    #: sent only when an option of the plugin asks for them, after the others
    optional_features: List[Spec] = field(default_factory=list)
    advice: Spec = None

    def feature_map(self) -> dict:
        """name -> (numpy dtype, shape), in the order sent."""
        return {f.name: (f.dtype, f.shape) for f in self.features}

    def description(self) -> dict:
        """The object the plugin's -describe option writes."""
        return {"features": [f.json() for f in self.features],
                "optional_features": [f.json() for f in self.optional_features],
                "advice": self.advice.json(), "lists": dict(self.lists)}


def find(problem_dir: str, file_name: str) -> Path:
    """The .def file of a problem: installed copy first, then the checkout's."""
    for p in (_HERE / "protocols" / file_name,
              _HERE.parents[3] / "integrations" / "llvm" / problem_dir / file_name):
        if p.is_file():
            return p
    raise FileNotFoundError(f"{file_name}: not beside the package nor in a source checkout")


def parse(text: str) -> Protocol:
    p = Protocol()

    def dim(d: str) -> int:
        if d.isdigit():
            return int(d)
        if d in p.constants:
            return p.constants[d]
        m = re.fullmatch(r"Num(\w+)s", d)
        if m and m.group(1) in p.lists:
            return len(p.lists[m.group(1)])
        raise ValueError(f"unknown dim {d!r}")

    for line in text.splitlines():
        m = _ITEM.match(line.split("//", 1)[0])
        if not m:
            continue
        kind, args = m.group(1), [a.strip() for a in m.group(2).split(",")]
        if kind == "CONST":
            p.constants[args[0]] = int(args[1])
        elif kind == "LIST":
            p.lists.setdefault(args[0], []).append(args[2])
        elif kind in ("FEATURE", "OPTIONAL_FEATURE"):
            (p.features if kind == "FEATURE" else p.optional_features).append(
                Spec(args[1], args[2], tuple(dim(d) for d in args[3:])))
        else:
            p.advice = Spec(args[0], args[1], tuple(dim(d) for d in args[2:]))
    return p


def load(problem_dir: str, file_name: str) -> Protocol:
    return parse(find(problem_dir, file_name).read_text())
