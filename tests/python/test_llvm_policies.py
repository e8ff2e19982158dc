"""mlbridge.llvm: built-in policies, advice validation, fallbacks, the LLVM
17-20 include-default fix and policy resolution (no compiler involved)."""

import math
import struct
import textwrap

import numpy as np
import pytest

from mlbridge import ProtocolError, TensorSpec
from mlbridge.llvm.synthetic import (EVICT_ADVICE, INLINE_ADVICE, INLINE_FEATURES,
                                     PRIORITY_ADVICE, evict_specs, inline_specs,
                                     priority_specs)
from mlbridge.llvm.synthetic import evict_observation as evict_obs
from mlbridge.llvm.synthetic import observation as one
from mlbridge.llvm import (EVICT, INLINE, PRIORITY, InvalidAdvice, Layout, builtin,
                           builtin_names, eviction_mask, layout_of, legal_columns,
                           policies, resolve)


def _layout(obs):
    return Layout(obs.feature_specs, obs.advice_spec)


# ---- eviction ---------------------------------------------------------------------


def test_eviction_mask_and_legal_columns():
    obs = evict_obs([0, 10, 11, 32])
    assert eviction_mask(obs) == tuple(1 if i in (0, 10, 11, 32) else 0 for i in range(33))
    assert legal_columns(obs) == [0, 10, 11, 32]


@pytest.mark.parametrize("advice", [0, 10, 32, np.int64(11), np.array([10]), [32]])
def test_eviction_checker_accepts_legal_columns(advice):
    obs = evict_obs([0, 10, 11, 32])
    value = EVICT.make_checker(_layout(obs))(obs, advice)
    assert type(value) is int and value == int(np.asarray(advice).reshape(-1)[0])


@pytest.mark.parametrize("advice,message", [
    (5, "index_to_evict 5 is not a legal column: its mask is 0 (legal: [0, 10, 11];"),
    (32, "index_to_evict 32 is not a legal column"),
    (33, "out of range [0, 32]"),
    (-1, "out of range [0, 32]"),
    (3.0, "must be an integer"),
    ("1", "must be one integer"),
    (np.array([1, 2]), "must be one integer"),
])
def test_eviction_checker_refuses_illegal_advice(advice, message):
    # Column 32 (evict nothing) is masked: LLVM's MustFindEviction case.
    obs = evict_obs([0, 10, 11])
    with pytest.raises(InvalidAdvice) as info:
        EVICT.make_checker(_layout(obs))(obs, advice)
    assert message in str(info.value)
    assert "observation 0" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_eviction_builtins_answer_legal_columns():
    can_skip = evict_obs([3, 7, 32])
    must_evict = evict_obs([3, 7, 20])
    check = EVICT.make_checker(_layout(can_skip))
    expected = {"noevict": (32, 3), "first": (3, 3), "last": (7, 20)}
    for name, (a, b) in expected.items():
        p = builtin("evict", name)
        assert p(can_skip) == a and p(must_evict) == b, name
        assert check(can_skip, p(can_skip)) == a
    fallback = EVICT.make_fallback(_layout(can_skip))
    assert fallback(can_skip) == 32 and fallback(must_evict) == 3


def test_random_eviction_is_legal_and_reproducible():
    obs = evict_obs([1, 4, 9, 32])
    a = [policies.RandomEviction(seed=7)(obs) for _ in range(1)]
    p1, p2 = policies.RandomEviction(seed=7), policies.RandomEviction(seed=7)
    seq1 = [p1(obs) for _ in range(50)]
    seq2 = [p2(obs) for _ in range(50)]
    assert seq1 == seq2 and seq1[0] == a[0]
    assert set(seq1) == {1, 4, 9, 32}


def test_eviction_header_without_mask_is_refused():
    specs = (TensorSpec("is_free", "int64_t", (1, 33)),)
    obs = one(specs, EVICT_ADVICE, {})
    assert len(evict_specs()) == 21
    with pytest.raises(ProtocolError, match="no int64_t 'mask'"):
        EVICT.check_header(_layout(obs))


def test_header_of_another_advisor_is_refused():
    obs = evict_obs([32])
    with pytest.raises(ProtocolError, match="expected int64_t.1. 'inlining_decision'"):
        INLINE.check_header(_layout(obs))
    with pytest.raises(ProtocolError, match="expected float.1. 'priority'"):
        PRIORITY.check_header(_layout(obs))
    EVICT.check_header(_layout(obs))


# ---- inlining ---------------------------------------------------------------------


def test_inline_checker():
    obs = one(inline_specs(), INLINE_ADVICE, {})
    check = INLINE.make_checker(_layout(obs))
    assert check(obs, 1) == 1 and check(obs, 0) == 0
    assert check(obs, True) == 1 and check(obs, np.int64(0)) == 0
    for bad in (2, -1):
        with pytest.raises(InvalidAdvice, match="must be 0 or 1"):
            check(obs, bad)
    with pytest.raises(InvalidAdvice, match="must be an integer"):
        check(obs, 0.5)


def test_inline_builtins():
    obs = one(inline_specs(include_default=True), INLINE_ADVICE, {"inlining_default": 1})
    assert builtin("inline", "always")(obs) == 1
    assert builtin("inline", "never")(obs) == 0
    assert builtin("inline", "default")(obs) == 1
    assert builtin("inline", "default").needs_default
    plain = one(inline_specs(), INLINE_ADVICE, {})
    with pytest.raises(LookupError, match="include_default=True"):
        builtin("inline", "default")(plain)
    # Without the default, the safe fallback is "do not inline".
    assert INLINE.make_fallback(_layout(plain))(plain) == 0
    assert INLINE.make_fallback(_layout(obs))(obs) == 1


def test_llvm17_20_default_decision_is_moved_back():
    """LLVM 17-20 write the default into index 25 (callee_basic_block_count)
    and leave inlining_default at 0: the patch swaps it into place and marks
    the lost feature -1, without touching the original observation."""
    assert INLINE_FEATURES[25] == "callee_basic_block_count"
    specs = inline_specs(include_default=True)
    for default in (0, 1):
        obs = one(specs, INLINE_ADVICE, {"callee_basic_block_count": default,
                                         "callee_users": 3, "inlining_default": 0})
        patch = INLINE.default_patcher(_layout(obs))
        fixed = patch(obs)
        assert patch.victim == "callee_basic_block_count"
        assert int(fixed["inlining_default"][0]) == default
        assert int(fixed["callee_basic_block_count"][0]) == -1
        assert int(fixed["callee_users"][0]) == 3
        assert int(obs["callee_basic_block_count"][0]) == default  # original intact
        assert fixed.index == obs.index and fixed.context == obs.context
        assert builtin("inline", "default")(fixed) == default
    # No include-default feature: nothing to patch.
    assert INLINE.default_patcher(_layout(one(inline_specs(), INLINE_ADVICE, {}))) is None


# ---- priority ---------------------------------------------------------------------


def test_priority_checker():
    obs = one(priority_specs(), PRIORITY_ADVICE, {"li_size": 96, "stage": 1, "weight": 0.25})
    check = PRIORITY.make_checker(_layout(obs))
    assert check(obs, 3.5) == 3.5
    assert check(obs, 7) == 7.0 and check(obs, np.float32(2.0)) == 2.0
    assert check(obs, 4294967040.0) == 4294967040.0  # largest float32 below 2**32
    for bad in (-1.0, math.nan, math.inf, 2.0 ** 32, 1e39):
        with pytest.raises(InvalidAdvice, match="unsigned 32-bit priority"):
            check(obs, bad)
    with pytest.raises(InvalidAdvice, match="must be a number"):
        check(obs, True)


def test_priority_builtins_pass_the_heuristics_inputs_through():
    obs = one(priority_specs(), PRIORITY_ADVICE, {"li_size": 96, "stage": 2, "weight": 0.25})
    assert builtin("priority", "size")(obs) == 96.0
    assert builtin("priority", "stage")(obs) == 2.0
    assert builtin("priority", "weight")(obs) == 0.25
    assert PRIORITY.make_fallback(_layout(obs))(obs) == 96.0
    # Unspillable live ranges have an infinite weight: highest valid priority.
    inf = one(priority_specs(), PRIORITY_ADVICE, {"li_size": 8, "weight": np.inf})
    check = PRIORITY.make_checker(_layout(inf))
    assert check(inf, builtin("priority", "weight")(inf)) == policies.MAX_PRIORITY
    nan = one(priority_specs(), PRIORITY_ADVICE, {"weight": np.nan})
    assert builtin("priority", "weight")(nan) == 0.0


# ---- names and resolution ---------------------------------------------------------


def test_builtin_names():
    assert builtin_names() == {"inline": ["default", "always", "never"],
                               "evict": ["noevict", "first", "last", "random"],
                               "priority": ["size", "weight", "stage"]}
    with pytest.raises(ValueError, match="unknown evict policy 'nope'"):
        builtin("evict", "nope")
    with pytest.raises(ValueError, match="unknown advisor"):
        builtin("regalloc", "first")


def test_resolve(tmp_path):
    assert resolve("first", "evict").name == "first"
    f = lambda obs: 1  # noqa: E731
    assert resolve(f, "inline") is f
    # A class found by import path is instantiated.
    p = resolve("mlbridge.llvm.policies:RandomEviction", "evict")
    assert isinstance(p, policies.RandomEviction)
    # A function in a file.
    src = tmp_path / "my_policy.py"
    src.write_text(textwrap.dedent("""
        def decide(obs):
            return int(obs["callee_users"][0] == 1)
    """))
    fn = resolve(f"{src}:decide", "inline")
    assert fn(one(inline_specs(), INLINE_ADVICE, {"callee_users": 1})) == 1
    with pytest.raises(ValueError, match="unknown inline policy 'noevict'"):
        resolve("noevict", "inline")
    with pytest.raises(ValueError, match="answers the evict advisor, not inline"):
        resolve(builtin("evict", "first"), "inline")
    with pytest.raises(TypeError, match="must be callable"):
        resolve(42, "priority")
    with pytest.raises(ValueError, match="has no attribute"):
        resolve("mlbridge.llvm.policies:nothing_here", "evict")


def test_layout_cache_follows_headers():
    a = evict_obs([32])
    b = evict_obs([32])  # a second header: a new spec tuple
    la, lb = layout_of(a), layout_of(b)
    assert la is layout_of(a) and lb is not la
    assert la.offsets["mask"] == 0 and la.offsets["is_free"] == 264
    assert la.offsets["nr_urgent"] == 528 and la.offsets["progress"] == 6 * 264 + 14 * 132
    assert la.nbytes == 6 * 264 + 14 * 132 + 4


# ---- PyTorch ----------------------------------------------------------------------


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def test_torch_policy_or_clear_import_error(tmp_path):
    """With PyTorch: modules answer each advisor (eviction by masked argmax,
    so always legal); TorchScript files load by path. Without it: a clear
    error that says what to install."""
    torch = _torch()
    if torch is None:
        with pytest.raises(ImportError, match="python3-torch"):
            policies.TorchPolicy(object(), "evict")
        return
    torch.manual_seed(0)
    obs = evict_obs([2, 5, 32], weighed_reads_by_max=np.linspace(0, 1, 33).reshape(1, 33))

    class Scorer(torch.nn.Module):
        def forward(self, x):  # prefers the highest column number
            return torch.arange(33, dtype=torch.float32).reshape(1, 33) * (x.sum() * 0 + 1)

    p = resolve(Scorer(), "evict")
    assert isinstance(p, policies.TorchPolicy)
    assert p.inputs(obs).shape == (1, 20 * 33 + 1)
    assert p(obs) == 32
    mask_off = Scorer()
    mask_off.forward = lambda x: -torch.arange(33, dtype=torch.float32)  # prefers 0: masked
    assert resolve(mask_off, "evict")(obs) == 2

    lin = torch.nn.Linear(len(INLINE_FEATURES), 2)
    with torch.no_grad():
        lin.weight.zero_()
        lin.bias.copy_(torch.tensor([0.0, 1.0]))
    inl = one(inline_specs(), INLINE_ADVICE, {"callee_users": 4})
    assert resolve(lin, "inline")(inl) == 1

    prio = torch.nn.Linear(3, 1)
    with torch.no_grad():
        prio.weight.copy_(torch.tensor([[1.0, 0.0, 0.0]]))
        prio.bias.zero_()
    pobs = one(priority_specs(), PRIORITY_ADVICE, {"li_size": 96, "stage": 1, "weight": 0.5})
    assert resolve(prio, "priority")(pobs) == pytest.approx(96.0)
    path = tmp_path / "prio.pt"
    torch.jit.script(prio).save(str(path))
    assert resolve(str(path), "priority")(pobs) == pytest.approx(96.0)

    dict_policy = policies.TorchPolicy(_DictModule(torch), "priority", input="dict")
    assert dict_policy(pobs) == pytest.approx(96.0 * 2)


def _DictModule(torch):
    class M(torch.nn.Module):
        def forward(self, feats):
            return feats["li_size"] * 2
    return M()


def test_synthetic_eviction_header_is_llvm19s():
    specs = evict_specs()
    assert [s.name for s in specs][:2] == ["mask", "is_free"]
    assert sum(s.nbytes for s in specs) == 6 * 264 + 14 * 132 + 4
    assert struct.calcsize("<33q") == 264
