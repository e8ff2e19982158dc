"""LLVM's three interactive-mode advisors: their flags, their advice rules
and the per-header views the host and the policies use.

* ``inline``   -- ``MLInlineAdvisor`` (opt, clang): 38 ``int64_t[1]``
  features (+ ``inlining_default`` with include-default), advice
  ``inlining_decision`` ``int64_t[1]``: 0 or 1.
* ``evict``    -- ``MLEvictAdvisor`` (llc, clang): ``[1,33]`` tensors per
  candidate column + ``progress``; advice ``index_to_evict`` ``int64_t[1]``:
  a column whose ``mask`` is 1 (the last column, 32, is the live range being
  allocated: "evict nothing").
* ``priority`` -- ``MLPriorityAdvisor`` (llc, clang): ``li_size``, ``stage``,
  ``weight``; advice ``priority`` ``float[1]``, which LLVM converts with
  ``static_cast<unsigned>``: it must be finite and in ``[0, 2**32)``.

Feature layouts are never assumed: each header is turned into a
:class:`Layout` (name -> byte offset, dtype, shape) when it arrives.
"""

import math
import operator
import struct

import numpy as np

from ..errors import MLBridgeError, ProtocolError
from ..observation import Observation

__all__ = ["Advisor", "ADVISORS", "INLINE", "EVICT", "PRIORITY", "InvalidAdvice",
           "Layout", "layout_of", "eviction_mask", "legal_columns", "INLINE_FEATURES"]

#: LLVM 19's ML inliner features, in the order LLVM sends them
#: (llvm/Analysis/InlineModelFeatureMaps.h): the inline-cost features, then
#: the call-site and module features. All int64_t [1]. With include-default
#: a 39th, ``inlining_default``, follows. The one table of these names: the
#: synthetic requests, the inline advisor plugin's Python side and the tests
#: use it.
INLINE_FEATURES = (
    "sroa_savings", "sroa_losses", "load_elimination", "call_penalty",
    "call_argument_setup", "load_relative_intrinsic", "lowered_call_arg_setup",
    "indirect_call_penalty", "jump_table_penalty", "case_cluster_penalty",
    "switch_default_dest_penalty", "switch_penalty",
    "unsimplified_common_instructions", "num_loops", "dead_blocks",
    "simplified_instructions", "constant_args", "constant_offset_ptr_args",
    "callsite_cost", "cold_cc_penalty", "last_call_to_static_bonus",
    "is_multiple_blocks", "nested_inlines", "nested_inline_cost_estimate",
    "threshold", "callee_basic_block_count", "callsite_height", "node_count",
    "nr_ctant_params", "cost_estimate", "edge_count", "caller_users",
    "caller_conditionally_executed_blocks", "caller_basic_block_count",
    "callee_conditionally_executed_blocks", "callee_users",
    "is_callee_avail_external", "is_caller_avail_external",
)


class InvalidAdvice(MLBridgeError, ValueError):
    """A policy's answer breaks the advisor's rules (e.g. an eviction index
    whose column is masked off). Raised before anything reaches the
    compiler."""


class Layout:
    """Where each feature of one header lives in an observation payload.

    ``offsets[name]`` is the byte offset, ``specs[name]`` the TensorSpec;
    ``entries`` is the lazy-view table :class:`mlbridge.Observation` uses.
    """

    __slots__ = ("feature_specs", "specs", "offsets", "entries", "names", "nbytes",
                 "advice_spec", "index")

    def __init__(self, feature_specs, advice_spec):
        self.feature_specs = feature_specs
        self.advice_spec = advice_spec
        self.specs = {}
        self.offsets = {}
        self.entries = {}
        self.index = {}
        off = 0
        for i, s in enumerate(feature_specs):
            self.specs[s.name] = s
            self.offsets[s.name] = off
            self.index[s.name] = i
            if not s.is_string:
                self.entries[s.name] = (s.np_dtype, s.element_count, off, s.shape)
            off += s.nbytes
        self.names = self.specs
        self.nbytes = off

    def observation_from(self, obs, raw):
        """A copy of ``obs`` whose payload is ``raw`` (same layout)."""
        mv = memoryview(raw).toreadonly()
        return Observation(obs.index, obs.context, self.feature_specs, obs.advice_spec,
                           raw=mv, layout=self.entries, buf=mv, names=self.names)


# One Layout per header, found by the identity of the header's spec tuple
# (every header the decoder reads makes a new tuple).
_LAYOUTS = {}


def layout_of(obs):
    """The :class:`Layout` of ``obs``'s header (cached per header)."""
    specs = obs.feature_specs
    hit = _LAYOUTS.get(id(specs))
    if hit is not None and hit.feature_specs is specs:
        return hit
    layout = Layout(specs, obs.advice_spec)
    if len(_LAYOUTS) > 64:
        _LAYOUTS.clear()
    _LAYOUTS[id(specs)] = layout
    return layout


def _mask_struct(layout):
    spec = layout.specs.get("mask")
    if spec is None or spec.dtype != "int64_t":
        raise ProtocolError("eviction header has no int64_t 'mask' feature")
    return struct.Struct("<%dq" % spec.element_count), layout.offsets["mask"]


_MASKS = {}


def eviction_mask(obs):
    """The eviction ``mask`` row of ``obs`` as a tuple of ints (1 = legal)."""
    specs = obs.feature_specs
    hit = _MASKS.get(id(specs))
    if hit is None or hit[0] is not specs:
        st, off = _mask_struct(layout_of(obs))
        if len(_MASKS) > 64:
            _MASKS.clear()
        hit = _MASKS[id(specs)] = (specs, st, off)
    return hit[1].unpack_from(obs.raw, hit[2])


def legal_columns(obs):
    """Indices an eviction policy may answer with (``mask`` == 1)."""
    return [i for i, m in enumerate(eviction_mask(obs)) if m]


# ---- advice conversion --------------------------------------------------------

def _as_int(advice, what, obs):
    try:
        return _to_int(advice, what)
    except InvalidAdvice as e:
        raise InvalidAdvice(f"{e} ({_where(obs)})") from None


def _as_float(advice, what, obs):
    try:
        return _to_float(advice, what)
    except InvalidAdvice as e:
        raise InvalidAdvice(f"{e} ({_where(obs)})") from None


def _to_int(advice, what):
    t = type(advice)
    if t is int:
        return advice
    if t is bool or isinstance(advice, np.bool_):
        return int(advice)
    if isinstance(advice, (float, np.floating)):
        raise InvalidAdvice(f"{what} must be an integer, got {advice!r}")
    try:
        return operator.index(advice)
    except TypeError:
        pass
    try:
        arr = np.asarray(advice)
    except Exception:  # noqa: BLE001 - anything that is not array-like
        arr = None
    if arr is None or arr.size != 1 or arr.dtype.kind not in "iub":
        raise InvalidAdvice(f"{what} must be one integer, got {_show(advice)}")
    return int(arr.reshape(-1)[0])


def _to_float(advice, what):
    t = type(advice)
    if t is float or t is int:
        return float(advice)
    if isinstance(advice, (bool, np.bool_)):
        raise InvalidAdvice(f"{what} must be a number, got {advice!r}")
    if isinstance(advice, (np.floating, np.integer)):
        return float(advice)
    try:
        arr = np.asarray(advice)
    except Exception:  # noqa: BLE001
        arr = None
    if arr is None or arr.size != 1 or arr.dtype.kind not in "iuf":
        raise InvalidAdvice(f"{what} must be one number, got {_show(advice)}")
    return float(arr.reshape(-1)[0])


def _show(value, limit=80):
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


_F32 = struct.Struct("<f")
_UINT_LIMIT = 4294967296.0


# ---- the advisors ----------------------------------------------------------------

class Advisor:
    """One of LLVM's interactive advisors (see the module docstring).

    ``name``: "inline", "evict" or "priority"; ``advice_name``/
    ``advice_dtype``: what LLVM's header must declare; ``tools``: which
    tools run it; ``flags(base, include_default)``: the LLVM options that
    put it in interactive mode on channel ``base`` (without ``-mllvm``):
    ``enable`` and ``channel_option=base``.
    """

    def __init__(self, name, advice_name, advice_dtype, tools, enable, channel_option):
        self.name = name
        self.advice_name = advice_name
        self.advice_dtype = advice_dtype
        self.tools = tools
        self._enable = enable
        self._channel_option = channel_option

    def flags(self, base, include_default=False):
        return [self._enable, f"{self._channel_option}={base}"]

    def check_header(self, layout):
        """Raise ProtocolError if the header is not this advisor's."""
        a = layout.advice_spec
        if a is None or a.name != self.advice_name or a.dtype != self.advice_dtype \
                or a.shape != (1,):
            got = a.describe() if a is not None else "none"
            raise ProtocolError(f"the {self.name} channel received a header whose advice is "
                                f"{got}, expected {self.advice_dtype}[1] "
                                f"{self.advice_name!r} (another LLVM version?)")

    def make_checker(self, layout):
        """A function ``(obs, advice) -> value`` that returns the advice as
        a Python int/float ready to send, or raises InvalidAdvice."""
        raise NotImplementedError

    def make_fallback(self, layout):
        """A function ``obs -> value``: a safe answer when a policy's is
        invalid (used with ``on_invalid="fallback"``)."""
        raise NotImplementedError

    def __repr__(self):
        return f"<LLVM advisor {self.name!r}>"


class _Inline(Advisor):
    #: The feature LLVM declares for the default decision (include-default).
    DEFAULT_FEATURE = "inlining_default"
    #: Where LLVM 17-20 write the default decision instead (the index
    #: ``InlineCostFeatureIndex::NumberOfFeatures``, i.e. 25 in LLVM 19:
    #: ``callee_basic_block_count``).
    BUGGY_DEFAULT_INDEX = 25
    BUGGY_VERSIONS = range(17, 21)

    def flags(self, base, include_default=False):
        f = super().flags(base)
        if include_default:
            f.append("-inliner-interactive-include-default")
        return f

    def make_checker(self, layout):
        def check(obs, advice):
            v = advice if type(advice) is int else _as_int(advice, "inlining_decision", obs)
            if v != 0 and v != 1:
                raise InvalidAdvice(f"inlining_decision must be 0 or 1, got {v}"
                                    f" ({_where(obs)})")
            return v
        return check

    def make_fallback(self, layout):
        if self.DEFAULT_FEATURE in layout.offsets:
            st = struct.Struct("<q")
            off = layout.offsets[self.DEFAULT_FEATURE]
            return lambda obs: 1 if st.unpack_from(obs.raw, off)[0] else 0
        return lambda obs: 0  # "do not inline" is always correct

    def default_patcher(self, layout):
        """For LLVM 17-20 with include-default: a function ``obs -> obs``
        that moves the default decision from index 25 to
        ``inlining_default`` and marks the overwritten feature (whose true
        value LLVM lost) as -1. None if the header has no such feature."""
        if self.DEFAULT_FEATURE not in layout.offsets or \
                len(layout.feature_specs) <= self.BUGGY_DEFAULT_INDEX:
            return None
        victim = layout.feature_specs[self.BUGGY_DEFAULT_INDEX]
        if victim.dtype != "int64_t" or victim.shape != (1,):
            return None
        src = layout.offsets[victim.name]
        dst = layout.offsets[self.DEFAULT_FEATURE]
        minus_one = struct.pack("<q", -1)

        def patch(obs):
            buf = bytearray(obs.raw)
            buf[dst:dst + 8] = buf[src:src + 8]
            buf[src:src + 8] = minus_one
            return layout.observation_from(obs, buf)
        patch.victim = victim.name
        return patch


class _Evict(Advisor):
    def check_header(self, layout):
        super().check_header(layout)
        _mask_struct(layout)

    def make_checker(self, layout):
        st, off = _mask_struct(layout)
        q = struct.Struct("<q")
        ncols = st.size // 8

        def check(obs, advice):
            v = advice if type(advice) is int else _as_int(advice, "index_to_evict", obs)
            if not 0 <= v < ncols:
                raise InvalidAdvice(f"index_to_evict {v} is out of range [0, {ncols - 1}]"
                                    f" ({_where(obs)})")
            if not q.unpack_from(obs.raw, off + 8 * v)[0]:
                legal = [i for i, m in enumerate(st.unpack_from(obs.raw, off)) if m]
                raise InvalidAdvice(f"index_to_evict {v} is not a legal column: its mask "
                                    f"is 0 (legal: {legal}; {_where(obs)})")
            return v
        return check

    def make_fallback(self, layout):
        st, off = _mask_struct(layout)
        last = st.size // 8 - 1

        def fallback(obs):
            mask = st.unpack_from(obs.raw, off)
            if mask[last]:
                return last
            return mask.index(1)
        return fallback


class _Priority(Advisor):
    def make_checker(self, layout):
        pack, unpack = _F32.pack, _F32.unpack

        def check(obs, advice):
            v = advice if type(advice) is float else _as_float(advice, "priority", obs)
            try:
                f = unpack(pack(v))[0]
            except (OverflowError, struct.error):
                f = math.inf
            if not (0.0 <= f < _UINT_LIMIT):  # also rejects NaN
                raise InvalidAdvice(f"priority {v!r} cannot be converted to an unsigned "
                                    f"32-bit priority: it must be finite and in "
                                    f"[0, 2**32) as a float32 ({_where(obs)})")
            return v
        return check

    def make_fallback(self, layout):
        if "li_size" in layout.offsets:
            off = layout.offsets["li_size"]
            q = struct.Struct("<q")
            return lambda obs: float(min(max(q.unpack_from(obs.raw, off)[0], 0), 1 << 24))
        return lambda obs: 0.0


def _where(obs):
    return f"context {obs.context!r}, observation {obs.index}"


INLINE = _Inline("inline", "inlining_decision", "int64_t", ("opt", "clang"),
                 "-enable-ml-inliner=release", "-inliner-interactive-channel-base")
EVICT = _Evict("evict", "index_to_evict", "int64_t", ("llc", "clang"),
               "-regalloc-enable-advisor=release", "-regalloc-evict-interactive-channel-base")
PRIORITY = _Priority("priority", "priority", "float", ("llc", "clang"),
                     "-regalloc-enable-priority-advisor=release",
                     "-regalloc-priority-interactive-channel-base")
#: name -> Advisor
ADVISORS = {a.name: a for a in (INLINE, EVICT, PRIORITY)}
