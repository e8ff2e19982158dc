"""Tracing for training: every request (advisor, run, session, context,
observation index, features, advice) and every run's outcome, saved as one
``.npz`` file that ``numpy.load`` reads without pickle and PyTorch uses
through ``torch.from_numpy`` or :class:`TraceDataset`.

File layout (format ``mlbridge.llvm.trace/1``, all keys are plain arrays):

``meta``
    0-d str: JSON ``{"format", "groups": {G: {"advisor", "features": [spec],
    "advice": spec, "count"}}, "runs"}`` (specs in LLVM's JSON form).
``contexts``
    str ``[C]``: context names (function names); ``G.context`` indexes it.
``G.features.NAME``
    ``[N, *shape]`` of the feature's dtype, one row per request.
``G.advice``
    ``[N]`` the advice sent (int64 or float32).
``G.run`` / ``G.session`` / ``G.context`` / ``G.index`` / ``G.step``
    int ``[N]``: run number, session number within the run (from 0),
    context, LLVM's observation index, and the global order of the request
    in its run (to interleave the advisors of one compilation).
``runs.returncode``, ``runs.seconds``, ``runs.output_bytes``,
``runs.text_bytes``, ``runs.requests``, ``runs.command``, ``runs.error``
    one entry per run: exit status, wall time, size of the ``-o`` file and
    of its executable ELF sections (-1: unknown), requests answered, the
    command (JSON) and the host's error message ("" if none). Extra outcome
    values from ``run(..., outcome=f)`` are ``runs.KEY`` (float64).

A group ``G`` is the advisor name (``inline``, ``evict``, ``priority``);
if one advisor is traced with two different headers (e.g. with and
without include-default), the second layout is ``inline~1``.
"""

import json
import os
import threading

import numpy as np

from ..tensor_spec import TensorSpec

__all__ = ["Tracer", "Trace", "load_trace", "TraceDataset", "FORMAT"]

FORMAT = "mlbridge.llvm.trace/1"

_RUN_FIELDS = {"returncode": np.int64, "seconds": np.float64, "output_bytes": np.int64,
               "text_bytes": np.int64, "requests": np.int64}


class _Group:
    __slots__ = ("name", "advisor", "specs", "advice_spec", "nbytes", "payload",
                 "advice", "run", "session", "context", "index", "step", "lock")

    def __init__(self, name, advisor, specs, advice_spec):
        self.name = name
        self.advisor = advisor
        self.specs = tuple(specs)
        self.advice_spec = advice_spec
        self.nbytes = sum(s.nbytes for s in specs)
        self.payload = bytearray()
        self.advice = []
        self.run = []
        self.session = []
        self.context = []
        self.index = []
        self.step = []
        self.lock = threading.Lock()

    def __len__(self):
        return len(self.advice)


class Tracer:
    """Collects requests and outcomes of one or more runs; :meth:`save`
    writes the ``.npz`` file. Safe to share between threads and between
    concurrent ``run()`` calls."""

    def __init__(self):
        self._lock = threading.Lock()
        self._groups = {}      # name -> _Group
        self._by_layout = {}   # (advisor, specs json) -> _Group
        self._contexts = {}    # name -> index
        self._runs = []        # dicts

    # ---- recording (used by the host) -------------------------------------------
    def begin_run(self, command):
        """Start a run; returns its number."""
        with self._lock:
            self._runs.append({"command": json.dumps(list(map(str, command))),
                               "error": "", "returncode": -1, "seconds": 0.0,
                               "output_bytes": -1, "text_bytes": -1, "requests": 0})
            return len(self._runs) - 1

    def end_run(self, run, **outcome):
        """Record a run's outcome (keys of ``runs.*``; extra keys are floats)."""
        with self._lock:
            rec = self._runs[run]
            for k, v in outcome.items():
                if k in ("command", "error"):
                    rec[k] = "" if v is None else str(v)
                else:
                    rec[k] = -1 if v is None else v

    def group(self, advisor, feature_specs, advice_spec):
        """The group recording ``advisor`` requests with this header."""
        key = (advisor, tuple(s.to_json() for s in feature_specs), advice_spec.to_json())
        g = self._by_layout.get(key)
        if g is not None:
            return g
        with self._lock:
            g = self._by_layout.get(key)
            if g is None:
                n = sum(1 for x in self._groups.values() if x.advisor == advisor)
                name = advisor if n == 0 else f"{advisor}~{n}"
                g = _Group(name, advisor, feature_specs, advice_spec)
                self._groups[name] = g
                self._by_layout[key] = g
        return g

    def context_id(self, name):
        cid = self._contexts.get(name)
        if cid is None:
            with self._lock:
                cid = self._contexts.setdefault(name, len(self._contexts))
        return cid

    def record(self, group, run, session, context, index, step, raw, advice):
        """Append one request (``raw``: the observation payload)."""
        cid = self.context_id("" if context is None else context)
        with group.lock:
            group.payload += raw
            group.advice.append(advice)
            group.run.append(run)
            group.session.append(session)
            group.context.append(cid)
            group.index.append(index)
            group.step.append(step)

    # ---- output -----------------------------------------------------------------
    @property
    def requests(self):
        return sum(len(g) for g in self._groups.values())

    def arrays(self):
        """Everything :meth:`save` writes, as a dict of numpy arrays."""
        with self._lock:
            groups = list(self._groups.values())
            runs = [dict(r) for r in self._runs]
            contexts = sorted(self._contexts, key=self._contexts.get)
        out = {}
        meta = {"format": FORMAT, "runs": len(runs), "groups": {}}
        for g in groups:
            with g.lock:
                n = len(g.advice)
                payload = bytes(g.payload[:n * g.nbytes])
                cols = (list(g.advice[:n]), g.run[:n], g.session[:n], g.context[:n],
                        g.index[:n], g.step[:n])
            meta["groups"][g.name] = {"advisor": g.advisor, "count": n,
                                      "features": [json.loads(s.to_json()) for s in g.specs],
                                      "advice": json.loads(g.advice_spec.to_json())}
            fields, off = [], 0
            for s in g.specs:
                if not s.is_string:  # LLVM's advisors have none
                    fields.append((s.name, (s.np_dtype, s.shape), off))
                off += s.nbytes
            rec = np.dtype({"names": [f[0] for f in fields],
                            "formats": [f[1] for f in fields],
                            "offsets": [f[2] for f in fields], "itemsize": g.nbytes})
            table = np.frombuffer(payload, dtype=rec, count=n) if n else \
                np.zeros(0, dtype=rec)
            for name, _, _ in fields:
                out[f"{g.name}.features.{name}"] = np.ascontiguousarray(table[name])
            out[f"{g.name}.advice"] = np.asarray(cols[0], dtype=g.advice_spec.np_dtype)
            for key, col in zip(("run", "session", "context", "index", "step"), cols[1:]):
                out[f"{g.name}.{key}"] = np.asarray(col, dtype=np.int64)
        out["contexts"] = np.asarray(contexts, dtype=str) if contexts else \
            np.zeros(0, dtype="<U1")
        keys = set(_RUN_FIELDS)
        for r in runs:
            keys.update(k for k in r if k not in ("command", "error"))
        for k in sorted(keys):
            dtype = _RUN_FIELDS.get(k, np.float64)
            out[f"runs.{k}"] = np.asarray([r.get(k, -1) for r in runs], dtype=dtype)
        for k in ("command", "error"):
            out[f"runs.{k}"] = np.asarray([r[k] for r in runs], dtype=str) if runs else \
                np.zeros(0, dtype="<U1")
        out["meta"] = np.asarray(json.dumps(meta))
        return out

    def save(self, path, compress=True):
        """Write the ``.npz`` file (``path`` is used as given)."""
        arrays = self.arrays()
        path = os.fspath(path)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            (np.savez_compressed if compress else np.savez)(f, **arrays)
        os.replace(tmp, path)
        return path


class Trace:
    """A loaded trace (see the module docstring for the keys)."""

    def __init__(self, arrays):
        self.arrays = arrays
        self.meta = json.loads(str(arrays["meta"][()]))
        if self.meta.get("format") != FORMAT:
            raise ValueError(f"not an {FORMAT} file (format {self.meta.get('format')!r})")
        self.contexts = arrays["contexts"]

    @property
    def groups(self):
        """Group names (``inline``, ``evict``, ``priority``, ...)."""
        return list(self.meta["groups"])

    def feature_specs(self, group):
        return [TensorSpec.from_json(s) for s in self.meta["groups"][group]["features"]]

    def feature_names(self, group):
        return [s["name"] for s in self.meta["groups"][group]["features"]]

    def features(self, group):
        """``{name: [N, *shape] array}`` in header order."""
        return {n: self.arrays[f"{group}.features.{n}"] for n in self.feature_names(group)}

    def advice(self, group):
        return self.arrays[f"{group}.advice"]

    def column(self, group, key):
        """``run``, ``session``, ``context``, ``index`` or ``step`` of each request."""
        return self.arrays[f"{group}.{key}"]

    def matrix(self, group, features=None, dtype=np.float32):
        """``[N, F]`` feature matrix: the chosen features flattened and
        concatenated in header order (the input of a flat TorchPolicy)."""
        names = self.feature_names(group) if features is None else list(features)
        feats = [self.arrays[f"{group}.features.{n}"] for n in names]
        n = len(self.advice(group))
        if not feats:
            return np.zeros((n, 0), dtype=dtype)
        return np.concatenate([f.reshape(n, -1).astype(dtype) for f in feats], axis=1)

    @property
    def runs(self):
        """``{key: [R] array}`` of the run outcomes."""
        return {k[5:]: v for k, v in self.arrays.items() if k.startswith("runs.")}

    def __len__(self):
        return sum(g["count"] for g in self.meta["groups"].values())


def load_trace(path):
    """Load a trace file (``numpy.load``, no pickle) into a :class:`Trace`."""
    with np.load(os.fspath(path), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return Trace(arrays)


class TraceDataset:
    """A map-style dataset over one group of a trace, usable as is by
    ``torch.utils.data.DataLoader`` (which turns the numpy arrays into
    tensors): item ``i`` is ``(features [F] float32, advice)`` with the
    features flattened as in :meth:`Trace.matrix`, or
    ``({name: array}, advice)`` with ``flat=False``.
    """

    def __init__(self, trace, group, *, features=None, flat=True):
        if not isinstance(trace, Trace):
            trace = load_trace(trace)
        if group not in trace.groups:
            raise KeyError(f"no group {group!r} in the trace (groups: {trace.groups})")
        self.trace = trace
        self.group = group
        self.flat = flat
        self.names = trace.feature_names(group) if features is None else list(features)
        self.advice = trace.advice(group)
        if flat:
            self.x = trace.matrix(group, self.names)
        else:
            self.x = {n: trace.arrays[f"{group}.features.{n}"] for n in self.names}

    def __len__(self):
        return len(self.advice)

    def __getitem__(self, i):
        if self.flat:
            return self.x[i], self.advice[i]
        return {n: v[i] for n, v in self.x.items()}, self.advice[i]
