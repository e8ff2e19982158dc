"""Policies: what answers each request of an LLVM advisor.

A policy is any callable ``policy(obs) -> advice``. ``obs`` is an
:class:`mlbridge.Observation` (feature name -> read-only numpy array, in
header order, plus ``.context``, ``.index``, ``.raw``); the advice is a
number (or a one-element array). The host validates it before sending.

Built-ins (by name, per advisor):

==========  =========================================================
inline      ``default`` (LLVM's own decision; the host adds
            ``-inliner-interactive-include-default``), ``always``,
            ``never``
evict       ``noevict`` (column 32 -- evict nothing -- when legal,
            else the first legal column), ``first`` / ``last`` (the
            first / last legal interfering column, else 32),
            ``random`` (a uniformly random legal column; seed 0)
priority    ``size`` (``li_size``), ``weight``, ``stage``: the
            heuristic's inputs passed through as the priority
            (clamped to ``[0, MAX_PRIORITY]``: ``weight`` is infinite
            for unspillable live ranges)
==========  =========================================================

:func:`resolve` also accepts ``"module:function"`` / ``"file.py:function"``
(a Python callable), a path to a TorchScript file (``.pt``/``.pth``/
``.ts``), and ``torch.nn.Module`` objects (wrapped in
:class:`TorchPolicy`). PyTorch is imported only when a torch policy is used.
"""

import importlib
import importlib.util
import os
import random as _random
import struct
import sys

import numpy as np

from ..kit.actions import masked_argmax
from .advisors import ADVISORS, eviction_mask, layout_of

__all__ = ["resolve", "builtin", "builtin_names", "Policy", "TorchPolicy",
           "RandomEviction", "MAX_PRIORITY"]


class Policy:
    """Base of the built-in policies.

    ``advisor``: the advisor it answers ("inline", "evict", "priority");
    ``needs_default``: the host must ask LLVM for its default decision
    (``-inliner-interactive-include-default``)."""

    advisor = None
    name = None
    needs_default = False

    def __call__(self, obs):
        raise NotImplementedError

    def __repr__(self):
        return f"<{self.advisor} policy {self.name!r}>"


class _Const(Policy):
    def __init__(self, advisor, name, value):
        self.advisor, self.name, self.value = advisor, name, value

    def __call__(self, obs):
        return self.value


class _InlineDefault(Policy):
    advisor = "inline"
    name = "default"
    needs_default = True
    _q = struct.Struct("<q")

    def __call__(self, obs):
        if obs.raw is None:  # a decoded observation (JSON, gRPC): by name
            if "inlining_default" not in obs:
                raise LookupError("the 'default' inlining policy needs the "
                                  "inlining_default feature: run with include_default=True")
            return 1 if int(np.asarray(obs["inlining_default"]).reshape(-1)[0]) else 0
        lay = layout_of(obs)
        off = lay.offsets.get("inlining_default")
        if off is None:
            raise LookupError("the 'default' inlining policy needs the inlining_default "
                              "feature: run with include_default=True")
        return 1 if self._q.unpack_from(obs.raw, off)[0] else 0


class _NoEvict(Policy):
    advisor = "evict"
    name = "noevict"

    def __call__(self, obs):
        mask = eviction_mask(obs)
        if mask[-1]:
            return len(mask) - 1
        return mask.index(1)


class _FirstLegal(Policy):
    advisor = "evict"
    name = "first"

    def __call__(self, obs):
        mask = eviction_mask(obs)
        try:
            i = mask.index(1)
        except ValueError:
            return len(mask) - 1
        return i


class _LastLegal(Policy):
    advisor = "evict"
    name = "last"

    def __call__(self, obs):
        mask = eviction_mask(obs)
        for i in range(len(mask) - 2, -1, -1):
            if mask[i]:
                return i
        return len(mask) - 1


class RandomEviction(Policy):
    """A uniformly random legal column (including "evict nothing" when
    legal), from ``random.Random(seed)``: reproducible for a given seed."""

    advisor = "evict"
    name = "random"

    def __init__(self, seed=0):
        self._rng = _random.Random(seed)

    def __call__(self, obs):
        legal = [i for i, m in enumerate(eviction_mask(obs)) if m]
        return legal[self._rng.randrange(len(legal))]


#: The largest float32 below 2**32: the highest priority LLVM can take.
MAX_PRIORITY = 4294967040.0


class _Feature(Policy):
    """Passes one scalar feature through as the priority, clamped to what
    LLVM's ``static_cast<unsigned>`` accepts (``weight`` is infinite for
    unspillable live ranges: they get the highest priority)."""

    advisor = "priority"

    def __init__(self, name, feature):
        self.name, self.feature = name, feature

    def __call__(self, obs):
        v = float(obs[self.feature][0])
        if v >= MAX_PRIORITY:
            return MAX_PRIORITY
        return v if v > 0.0 else 0.0  # also NaN -> 0


_BUILTINS = {
    "inline": {
        "default": _InlineDefault,
        "always": lambda: _Const("inline", "always", 1),
        "never": lambda: _Const("inline", "never", 0),
    },
    "evict": {
        "noevict": _NoEvict,
        "first": _FirstLegal,
        "last": _LastLegal,
        "random": RandomEviction,
    },
    "priority": {
        "size": lambda: _Feature("size", "li_size"),
        "weight": lambda: _Feature("weight", "weight"),
        "stage": lambda: _Feature("stage", "stage"),
    },
}


def builtin_names(advisor=None):
    """{advisor: [names]} of the built-in policies (or one advisor's list)."""
    if advisor is not None:
        return list(_BUILTINS[_advisor_name(advisor)])
    return {a: list(p) for a, p in _BUILTINS.items()}


def builtin(advisor, name):
    """A new instance of built-in policy ``name`` for ``advisor``."""
    table = _BUILTINS[_advisor_name(advisor)]
    try:
        return table[name]()
    except KeyError:
        raise ValueError(f"unknown {_advisor_name(advisor)} policy {name!r}; built-ins: "
                         f"{', '.join(table)}") from None


def _advisor_name(advisor):
    name = getattr(advisor, "name", advisor)
    if name not in ADVISORS:
        raise ValueError(f"unknown advisor {advisor!r}; expected one of {', '.join(ADVISORS)}")
    return name


_TORCH_SUFFIXES = (".pt", ".pth", ".ts", ".torchscript")


def resolve(spec, advisor):
    """Turn a policy specification into a callable for ``advisor``.

    ``spec``: a built-in name, ``"module:attr"``, ``"path/file.py:attr"``, a
    TorchScript file path, a ``torch.nn.Module``, or any callable. A
    callable or module found by import path is used as is, except that a
    class is instantiated and a torch module is wrapped.
    """
    name = _advisor_name(advisor)
    if isinstance(spec, (str, os.PathLike)):
        text = os.fspath(spec)
        if text in _BUILTINS[name]:
            return builtin(name, text)
        if text.endswith(_TORCH_SUFFIXES) and ":" not in os.path.basename(text):
            return TorchPolicy(_load_torchscript(text), name)
        if ":" in text:
            obj = _import_attr(text)
            if isinstance(obj, type):
                obj = obj()
            return resolve(obj, name)
        raise ValueError(f"unknown {name} policy {text!r}: expected one of "
                         f"{', '.join(_BUILTINS[name])}, 'module:function', "
                         f"'file.py:function' or a TorchScript file "
                         f"({', '.join(_TORCH_SUFFIXES)})")
    if _is_torch_module(spec):
        return TorchPolicy(spec, name)
    if isinstance(spec, Policy) and spec.advisor not in (None, name):
        raise ValueError(f"{spec!r} answers the {spec.advisor} advisor, not {name}")
    if not callable(spec):
        raise TypeError(f"a {name} policy must be callable, a name or a path; got "
                        f"{type(spec).__name__}")
    return spec


def _import_attr(text):
    mod_name, _, attr = text.rpartition(":")
    if not mod_name or not attr:
        raise ValueError(f"bad policy reference {text!r}: expected 'module:attr'")
    if mod_name.endswith(".py") or os.sep in mod_name:
        path = os.path.abspath(mod_name)
        if not os.path.isfile(path):
            raise ValueError(f"policy file {path} does not exist")
        mod_id = "_mlbridge_policy_" + str(abs(hash(path)))
        spec = importlib.util.spec_from_file_location(mod_id, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_id] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(mod_name)
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"{mod_name} has no attribute {attr!r}") from None
    return obj


# ---- PyTorch ---------------------------------------------------------------------

def _import_torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError(
            f"PyTorch is needed for a torch policy but cannot be imported ({e}); on "
            f"Debian install python3-torch and use a virtualenv made with "
            f"--system-site-packages (see docs/llvm.md)") from None
    return torch


def _is_torch_module(obj):
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    return isinstance(obj, torch.nn.Module)


def _load_torchscript(path):
    torch = _import_torch()
    if not os.path.isfile(path):
        raise ValueError(f"TorchScript file {path} does not exist")
    module = torch.jit.load(path, map_location="cpu")
    module.eval()
    return module


class TorchPolicy(Policy):
    """A ``torch.nn.Module`` (or TorchScript module) as a policy.

    Input (``input="flat"``, the default): one float32 tensor ``[1, F]``,
    every feature flattened and concatenated in header order (``features``
    selects and orders a subset by name). ``input="dict"``: the module is
    called with one dict ``{name: float32 tensor shaped as the feature}``.

    Output, by advisor:

    * inline: one value -> inline when > 0 (a logit); two values -> argmax.
    * evict: one value per column (33) -> the best *legal* column (masked
      argmax, so always valid); one value -> that column index.
    * priority: one value -> the priority.

    Inference runs under ``torch.no_grad()`` with the module in eval mode.
    """

    def __init__(self, module, advisor, *, input="flat", features=None):
        self.torch = _import_torch()
        self.module = module
        self.advisor = _advisor_name(advisor)
        self.name = f"torch:{type(module).__name__}"
        if input not in ("flat", "dict"):
            raise ValueError(f"input must be 'flat' or 'dict', got {input!r}")
        self.input = input
        self.features = None if features is None else list(features)
        if hasattr(module, "eval"):
            module.eval()
        self._cache = (None, None)

    def _names(self, obs):
        specs = obs.feature_specs
        if self._cache[0] is not specs:
            names = [s.name for s in specs if not s.is_string]
            if self.features is not None:
                missing = [n for n in self.features if n not in obs]
                if missing:
                    raise KeyError(f"features {missing} are not in the header")
                names = self.features
            self._cache = (specs, names)
        return self._cache[1]

    def inputs(self, obs):
        """The module's input for ``obs`` (a tensor, or a dict of tensors)."""
        torch = self.torch
        names = self._names(obs)
        if self.input == "dict":
            return {n: torch.from_numpy(np.array(obs[n], dtype=np.float32)) for n in names}
        flat = np.concatenate([np.asarray(obs[n], dtype=np.float32).reshape(-1)
                               for n in names])
        return torch.from_numpy(flat).reshape(1, -1)

    def __call__(self, obs):
        torch = self.torch
        with torch.no_grad():
            out = self.module(self.inputs(obs))
        if isinstance(out, (tuple, list)):
            out = out[0]
        values = np.asarray(out.detach().cpu().numpy() if hasattr(out, "detach") else out,
                            dtype=np.float64).reshape(-1)
        if values.size == 0:
            raise ValueError(f"{self.name} returned an empty tensor")
        if self.advisor == "inline":
            if values.size == 1:
                return int(values[0] > 0)
            if values.size == 2:
                return int(values[1] > values[0])
            raise ValueError(f"{self.name}: an inlining module must return 1 or 2 values, "
                             f"got {values.size}")
        if self.advisor == "evict":
            mask = eviction_mask(obs)
            if values.size == len(mask):
                return masked_argmax(values, mask)
            if values.size == 1:
                return int(round(float(values[0])))
            raise ValueError(f"{self.name}: an eviction module must return {len(mask)} "
                             f"scores or one index, got {values.size} values")
        if values.size != 1:
            raise ValueError(f"{self.name}: a priority module must return one value, "
                             f"got {values.size}")
        return float(values[0])
