"""Synthetic advisor requests: test a policy without a compiler.

The observations are the bytes LLVM 19 would send (its headers are below),
decoded by mlbridge's own bitstream decoder, so a policy sees exactly what
it sees when served::

    from mlbridge.llvm import synthetic, builtin
    obs = synthetic.evict_observation(legal=[3, 7, 32])
    assert builtin("evict", "first")(obs) == 3
"""

import numpy as np

from ..messages import SessionState
from ..observation import Observation
from ..reader import BufferReader
from ..serdes import bitstream
from ..tensor_spec import TensorSpec
from .advisors import INLINE_FEATURES

__all__ = ["INLINE_FEATURES", "EVICT_FEATURES", "INLINE_ADVICE", "EVICT_ADVICE",
           "PRIORITY_ADVICE", "inline_specs", "evict_specs", "priority_specs",
           "observations", "observation", "mask_row", "evict_observation"]


INLINE_ADVICE = TensorSpec("inlining_decision", "int64_t", (1,))
EVICT_ADVICE = TensorSpec("index_to_evict", "int64_t", (1,))
PRIORITY_ADVICE = TensorSpec("priority", "float", (1,))


def inline_specs(include_default=False):
    names = INLINE_FEATURES + (("inlining_default",) if include_default else ())
    return tuple(TensorSpec(n, "int64_t", (1,)) for n in names)


#: LLVM 19's eviction features: (name, dtype); all are [1, 33] but progress.
EVICT_FEATURES = [
    ("mask", "int64_t"), ("is_free", "int64_t"), ("nr_urgent", "float"),
    ("nr_broken_hints", "float"), ("is_hint", "int64_t"), ("is_local", "int64_t"),
    ("nr_rematerializable", "float"), ("nr_defs_and_uses", "float"),
    ("weighed_reads_by_max", "float"), ("weighed_writes_by_max", "float"),
    ("weighed_read_writes_by_max", "float"), ("weighed_indvars_by_max", "float"),
    ("hint_weights_by_max", "float"), ("start_bb_freq_by_max", "float"),
    ("end_bb_freq_by_max", "float"), ("hottest_bb_freq_by_max", "float"),
    ("liverange_size", "float"), ("use_def_density", "float"),
    ("max_stage", "int64_t"), ("min_stage", "int64_t"), ("progress", "float"),
]


def evict_specs():
    """LLVM 19's eviction header (20 tensors [1,33] + progress [1])."""
    return tuple(TensorSpec(n, t, (1,) if n == "progress" else (1, 33))
                 for n, t in EVICT_FEATURES)


def priority_specs():
    return (TensorSpec("li_size", "int64_t", (1,)), TensorSpec("stage", "int64_t", (1,)),
            TensorSpec("weight", "float", (1,)))


def observations(specs, advice, rows, context="f"):
    """Decoded Observations (one header, one context) for ``rows``: a list
    of {feature name: value}; missing features are zeros."""
    specs = tuple(specs)
    parts = [bitstream.encode_header(specs, advice), bitstream.encode_context(context)]
    for i, row in enumerate(rows):
        feats = []
        for s in specs:
            v = row.get(s.name)
            if v is None:
                v = np.zeros(s.shape, dtype=s.np_dtype)
            feats.append((s, np.asarray(v, dtype=s.np_dtype).reshape(s.shape)))
        parts.append(bitstream.encode_observation(i, feats))
    reader = BufferReader(b"".join(parts))
    state = SessionState()
    out = []
    while not reader.at_end:
        msg = bitstream.decode_message(reader, state)
        if isinstance(msg, Observation):
            out.append(msg)
    return out


def observation(specs, advice, row, context="f"):
    """One Observation (see :func:`observations`)."""
    return observations(specs, advice, [row], context)[0]


def mask_row(legal, ncols=33):
    """A ``[1, ncols]`` int64 mask with ones at ``legal``."""
    m = np.zeros((1, ncols), dtype=np.int64)
    for i in legal:
        m[0, i] = 1
    return m


def evict_observation(legal, **features):
    """An eviction request whose legal columns are ``legal``."""
    row = {"mask": mask_row(legal)}
    row.update(features)
    return observation(evict_specs(), EVICT_ADVICE, row)
