"""Observation: the features of one request, as a read-only mapping."""

from collections.abc import Mapping

import numpy as np

__all__ = ["Observation"]


class Observation(Mapping):
    """One request from the compiler: feature name -> value.

    Numeric features are read-only numpy arrays shaped as their spec;
    ``string`` features are Python ``str``. Iteration follows header order.

    Attributes: ``index`` (observation number within its context),
    ``context`` (the current context name or None), ``feature_specs``
    (tuple of TensorSpec), ``advice_spec`` (the TensorSpec the reply must
    follow), ``raw`` (bitstream: the payload bytes as a read-only
    memoryview; JSON: None).

    For bitstream, arrays are views of ``raw`` created on first access with
    ``numpy.frombuffer`` (no copy); touching only a few features of a large
    observation costs only those.
    """

    __slots__ = ("index", "context", "feature_specs", "advice_spec", "raw",
                 "_values", "_layout", "_buf", "_names", "_scalars")

    def __init__(self, index, context, feature_specs, advice_spec, *,
                 values=None, raw=None, layout=None, buf=None, names=None, scalars=None):
        self.index = index
        self.context = context
        self.feature_specs = feature_specs
        self.advice_spec = advice_spec
        self.raw = raw
        # name -> value, for values already built (JSON: all of them)
        self._values = {} if values is None else values
        # name -> (dtype, count, byte offset, shape), for lazy bitstream views
        self._layout = layout
        self._buf = buf
        # name -> TensorSpec, in header order
        self._names = names if names is not None else {s.name: s for s in feature_specs}
        # name -> validated Python scalar of a shape-[1] feature (JSON), made
        # into an array on first access
        self._scalars = scalars

    def __getitem__(self, name):
        try:
            return self._values[name]
        except KeyError:
            pass
        if self._scalars is not None and name in self._scalars:
            arr = np.array([self._scalars[name]], dtype=self._names[name].np_dtype)
        elif self._layout is not None and name in self._layout:
            dtype, count, offset, shape = self._layout[name]
            arr = np.frombuffer(self._buf, dtype, count, offset).reshape(shape)
        else:
            raise KeyError(name)
        arr.flags.writeable = False
        self._values[name] = arr
        return arr

    def __iter__(self):
        return iter(self._names)

    def __len__(self):
        return len(self._names)

    def __contains__(self, name):
        return name in self._names

    def spec(self, name):
        """The TensorSpec of feature ``name``."""
        return self._names[name]

    def __repr__(self):
        return (f"Observation(index={self.index}, context={self.context!r}, "
                f"features=[{', '.join(s.describe() for s in self.feature_specs)}], "
                f"advice={self.advice_spec.describe() if self.advice_spec else None})")
