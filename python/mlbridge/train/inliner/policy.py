"""The inlining-for-size policy: LLVM's default decision, overridden where a
small network is confident that the other decision makes smaller code.

The network sees LLVM's inliner features (all but ``callee_basic_block_count``,
which stock LLVM 17-20 overwrite with the default decision when asked to
include it, so a policy trained against stock ``clang-19`` cannot rely on it)
and ``inlining_default``. Each feature ``v`` enters as two channels,
``log(1 + max(v, 0))`` and ``log(1 + max(-v, 0))``: the counts span six
orders of magnitude and a few can be negative. Its single output is a
*deviation score* ``f``; the decision is the default unless ``f > 0``.

The same arithmetic exists three times, kept equal by the tests:
:meth:`InlinePolicy.scores` (numpy, used while training and when a Python
process serves a compiler), the ONNX graph of :meth:`InlinePolicy.to_onnx`
(ONNX Runtime in the plugin), and that graph compiled to C++ (the plugin's
built-in model).
"""

import json

import numpy as np

from ...llvm.advisors import INLINE_FEATURES

__all__ = ["MODEL_FEATURES", "InlinePolicy", "feature_matrix"]

#: The network's inputs, in order (the ONNX model's input names).
MODEL_FEATURES = tuple(n for n in INLINE_FEATURES if n != "callee_basic_block_count") + \
    ("inlining_default",)
_DEFAULT_COL = len(MODEL_FEATURES) - 1


def feature_matrix(obs_rows):
    """Rows of ``{feature name: number}`` (or Observations) → float64 matrix
    with the columns of :data:`MODEL_FEATURES`."""
    X = np.empty((len(obs_rows), len(MODEL_FEATURES)), dtype=np.float64)
    for i, row in enumerate(obs_rows):
        for j, name in enumerate(MODEL_FEATURES):
            v = row[name]
            X[i, j] = float(v[0]) if hasattr(v, "__len__") else float(v)
    return X


def _channels(X):
    X = np.asarray(X, dtype=np.float64)
    return np.concatenate([np.log1p(np.maximum(X, 0.0)), np.log1p(np.maximum(-X, 0.0))], axis=1)


class InlinePolicy:
    """``f(x) = w2 · relu(W1 · c(x) + b1) + b2``; deviate from the default
    decision where ``f(x) > 0``. ``c`` is the two-channel log transform;
    input standardization is folded into ``W1``/``b1``."""

    def __init__(self, W1, b1, w2, b2, meta=None):
        self.W1 = np.asarray(W1, dtype=np.float32)   # [hidden, 2 * inputs]
        self.b1 = np.asarray(b1, dtype=np.float32)   # [hidden]
        self.w2 = np.asarray(w2, dtype=np.float32)   # [hidden]
        self.b2 = np.float32(b2)
        self.meta = dict(meta or {})

    # -- evaluation ---------------------------------------------------------------------
    def scores(self, X):
        """Deviation scores of a feature matrix (columns: MODEL_FEATURES),
        computed in float32 like the deployed models."""
        C = _channels(X).astype(np.float32)
        H = np.maximum(C @ self.W1.T + self.b1, np.float32(0))
        return H @ self.w2 + self.b2

    def decide(self, X):
        """Decisions (0/1 int64) for a feature matrix."""
        X = np.asarray(X, dtype=np.float64)
        default = X[:, _DEFAULT_COL] != 0
        deviate = self.scores(X) > 0
        return (default ^ deviate).astype(np.int64)

    def __call__(self, obs):
        """A policy for :func:`mlbridge.llvm.run` (needs the default)."""
        return int(self.decide(feature_matrix([obs]))[0])

    needs_default = True  # tells mlbridge.llvm to ask LLVM for its default decision

    # -- training -----------------------------------------------------------------------
    @classmethod
    def fit(cls, X, y, weight, *, hidden=16, epochs=400, lr=0.01, l2=1e-3, seed=0):
        """Weighted logistic fit of ``y`` (1 = the non-default decision is
        better) on features ``X``; returns the policy with threshold 0
        (probability 0.5). Full-batch Adam; small data, seconds."""
        rng = np.random.default_rng(seed)
        C = _channels(X)
        mu = C.mean(axis=0)
        sd = C.std(axis=0)
        sd[sd < 1e-6] = 1.0
        Z = (C - mu) / sd
        n, d = Z.shape
        y = np.asarray(y, dtype=np.float64)
        w = np.asarray(weight, dtype=np.float64)
        w = w / w.sum()
        params = [rng.normal(0, 1 / np.sqrt(d), (hidden, d)), np.zeros(hidden),
                  rng.normal(0, 1 / np.sqrt(hidden), hidden), np.array(0.0)]
        m = [np.zeros_like(p) for p in params]
        v = [np.zeros_like(p) for p in params]
        for t in range(1, epochs + 1):
            W1, b1, w2, b2 = params
            A = Z @ W1.T + b1
            H = np.maximum(A, 0)
            f = H @ w2 + b2
            p = 1 / (1 + np.exp(-np.clip(f, -30, 30)))
            g = w * (p - y)                       # dL/df
            gw2 = H.T @ g + l2 * w2
            gb2 = g.sum()
            gA = np.outer(g, w2) * (A > 0)
            gW1 = gA.T @ Z + l2 * W1
            gb1 = gA.sum(axis=0)
            for i, gr in enumerate((gW1, gb1, gw2, gb2)):
                m[i] = 0.9 * m[i] + 0.1 * gr
                v[i] = 0.999 * v[i] + 0.001 * gr * gr
                mh = m[i] / (1 - 0.9 ** t)
                vh = v[i] / (1 - 0.999 ** t)
                params[i] = params[i] - lr * mh / (np.sqrt(vh) + 1e-8)
        W1, b1, w2, b2 = params
        # Fold the standardization into the first layer.
        W1f = W1 / sd
        b1f = b1 - W1f @ mu
        return cls(W1f, b1f, w2, float(b2), meta={"hidden": hidden})

    def shifted(self, threshold):
        """The same network deviating only where ``f(x) > threshold``."""
        p = InlinePolicy(self.W1, self.b1, self.w2, float(self.b2) - threshold, self.meta)
        p.meta["threshold"] = float(self.meta.get("threshold", 0.0)) + threshold
        return p

    @classmethod
    def never_deviate(cls):
        """LLVM's default decision everywhere (f = -1)."""
        d = 2 * len(MODEL_FEATURES)
        return cls(np.zeros((1, d)), np.zeros(1), np.zeros(1), -1.0, meta={"hidden": 1})

    # -- persistence --------------------------------------------------------------------
    def to_dict(self):
        return {"W1": self.W1.tolist(), "b1": self.b1.tolist(), "w2": self.w2.tolist(),
                "b2": float(self.b2), "meta": self.meta, "features": list(MODEL_FEATURES)}

    @classmethod
    def from_dict(cls, d):
        if list(d.get("features", MODEL_FEATURES)) != list(MODEL_FEATURES):
            raise ValueError("policy was trained on other features")
        return cls(d["W1"], d["b1"], d["w2"], d["b2"], d.get("meta"))

    def save(self, path):
        with open(path, "w") as f:
            json.dump(self.to_dict(), f)

    @classmethod
    def load(cls, path):
        with open(path) as f:
            return cls.from_dict(json.load(f))

    def to_onnx(self, path=None):
        """The policy as an ONNX model: one float32 ``[1, 1]`` input per name
        in :data:`MODEL_FEATURES`, output ``inlining_decision`` int64 ``[1]``
        (what ``MLBridgeInlineAdvisor.so`` binds by name). Returns the
        serialized model; writes it when ``path`` is given."""
        from ..export import float32, input_spec, node, onnx_model
        nodes = [
            node("Concat", MODEL_FEATURES, ["x"], axis=1),
            node("Relu", ["x"], ["x_pos"]),
            node("Mul", ["x", "minus_one"], ["x_neg_raw"]),
            node("Relu", ["x_neg_raw"], ["x_neg"]),
            node("Add", ["x_pos", "one"], ["x_pos1"]),
            node("Add", ["x_neg", "one"], ["x_neg1"]),
            node("Log", ["x_pos1"], ["c_pos"]),
            node("Log", ["x_neg1"], ["c_neg"]),
            node("Concat", ["c_pos", "c_neg"], ["c"], axis=1),
            node("Gemm", ["c", "W1", "b1"], ["a1"], transB=1),
            node("Relu", ["a1"], ["h1"]),
            node("Gemm", ["h1", "w2", "b2"], ["f"], transB=1),
            # inline score = (1 - 2 * default) * f: positive exactly when the
            # decision should be "inline" (default 0 and f > 0, or default 1
            # and f < 0); ArgMax over [0, score] picks it.
            node("Mul", ["inlining_default", "two"], ["d2"]),
            node("Sub", ["one", "d2"], ["sign"]),
            node("Mul", ["sign", "f"], ["inline_score"]),
            node("Concat", ["zero", "inline_score"], ["logits"], axis=1),
            node("ArgMax", ["logits"], ["inlining_decision"], axis=1, keepdims=0),
        ]
        constants = {"one": [[1.0]], "minus_one": [[-1.0]], "two": [[2.0]], "zero": [[0.0]],
                     "W1": self.W1, "b1": self.b1, "w2": self.w2.reshape(1, -1),
                     "b2": [self.b2]}
        return onnx_model("mlbridge_inline_for_size", nodes, input_spec(MODEL_FEATURES, [1, 1]),
                          [("inlining_decision", np.int64, [1])],
                          {k: float32(v) for k, v in constants.items()},
                          producer="mlbridge.train.inliner", path=path)
