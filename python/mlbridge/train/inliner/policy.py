"""The inlining-for-size policy: a small network that makes every inlining
decision itself (LLVM's decision is not an input).

Inputs: LLVM's ML inliner features (all but ``callee_basic_block_count``,
which stock LLVM 17-20 overwrite with the default decision when asked to
include it, so training rollouts against stock ``clang-19`` never see it)
plus one derived input, the margin ``threshold - cost_estimate`` (LLVM's
own decision is close to "the margin is positive", which a network fed
logarithms of each count separately learns poorly), and, optionally, the
IR2Vec vectors of the caller and the callee (``caller_embedding``,
``callee_embedding``: float32 ``[1, D]``, sent by
``MLBridgeInlineAdvisor.so``; docs/ir2vec.md). Every value ``v`` enters as
two channels, ``log(1 + max(v, 0))`` and ``log(1 + max(-v, 0))`` (counts
and vector components span orders of magnitude, some are negative), then
standardized. The two embeddings go through one learned projection ``P``
(``2D -> k``, shared by caller and callee), so the 300-dimensional vectors
reach the hidden layer as ``k`` numbers each:

    z = [std(c(x)), P std(c(e_caller)), P std(c(e_callee))]
    f = w2 . relu(W1 z + b1) + b2        inline iff f > 0

A policy with a *deferral margin* ``m > 0`` (chosen on validation, see
:mod:`.trainer`) lets LLVM's decision ``d`` stand where the network is not
confident: it inlines iff ``f + m (2d - 1) > 0``, i.e. it overrules LLVM
only where ``|f| > m`` says otherwise. Such a policy reads LLVM's decision
(the input ``inlining_default``, which costs the plugin one more inline-cost
analysis per call site).

The same arithmetic exists three times, kept equal by the tests:
:meth:`InlinePolicy.logits` (numpy: training, and serving a compiler from
Python), the ONNX graph of :meth:`InlinePolicy.to_onnx` (ONNX Runtime in
the plugin), and that graph compiled to C++ (the plugin's built-in model).
"""

import numpy as np

from ...llvm.advisors import INLINE_FEATURES
from ..results import JsonFile

__all__ = ["MODEL_FEATURES", "EMBEDDINGS", "EMBEDDING_DIM", "NUM_CHANNELS", "InlinePolicy", "feature_matrix",
           "embedding_matrix"]

#: The network's scalar inputs, in order (the ONNX model's input names).
MODEL_FEATURES = tuple(n for n in INLINE_FEATURES if n != "callee_basic_block_count")
#: The vector inputs of a policy with embeddings, in order.
EMBEDDINGS = ("caller_embedding", "callee_embedding")
#: Their length: IR2Vec's vocabulary dimension.
EMBEDDING_DIM = 300
_THRESHOLD = MODEL_FEATURES.index("threshold")
_COST = MODEL_FEATURES.index("cost_estimate")
#: Feature channels of the network: two per feature and for the margin.
NUM_CHANNELS = 2 * (len(MODEL_FEATURES) + 1)


def feature_matrix(obs_rows):
    """Rows of ``{feature name: number}`` (or Observations) → float64 matrix
    with the columns of :data:`MODEL_FEATURES`."""
    X = np.empty((len(obs_rows), len(MODEL_FEATURES)), dtype=np.float64)
    for i, row in enumerate(obs_rows):
        for j, name in enumerate(MODEL_FEATURES):
            v = row[name]
            X[i, j] = float(v[0]) if hasattr(v, "__len__") else float(v)
    return X


def embedding_matrix(obs_rows, dim):
    """Rows of observations → float64 ``[n, 2, dim]`` (caller, callee);
    zeros where an observation has no embeddings."""
    E = np.zeros((len(obs_rows), 2, dim), dtype=np.float64)
    for i, row in enumerate(obs_rows):
        for j, name in enumerate(EMBEDDINGS):
            if name in row:
                E[i, j] = np.asarray(row[name], dtype=np.float64).reshape(-1)[:dim]
    return E


def _channels(X):
    X = np.asarray(X, dtype=np.float64)
    return np.concatenate([np.log1p(np.maximum(X, 0.0)), np.log1p(np.maximum(-X, 0.0))],
                          axis=-1)


def _with_margin(X):
    X = np.asarray(X, dtype=np.float64)
    return np.concatenate([X, (X[:, _THRESHOLD] - X[:, _COST])[:, None]], axis=1)


def _standardizer(C):
    mu = C.mean(axis=0)
    sd = C.std(axis=0)
    sd[sd < 1e-6] = 1.0
    return mu, sd


class InlinePolicy(JsonFile):
    """The network above. ``mu``/``sd`` standardize the feature channels,
    ``emu``/``esd`` the embedding channels (fixed after behavioural
    cloning); the trainable parameters (:meth:`params`) are ``W1, b1, w2,
    b2`` and, with embeddings, ``P`` (``[k, 2D]``)."""

    def __init__(self, W1, b1, w2, b2, mu, sd, *, P=None, emu=None, esd=None, meta=None,
                 margin=0.0):
        f32 = lambda a: None if a is None else np.asarray(a, dtype=np.float32)  # noqa: E731
        self.W1, self.b1, self.w2 = f32(W1), f32(b1), f32(w2)
        self.b2 = np.float32(b2)
        self.mu, self.sd = f32(mu), f32(sd)
        self.P, self.emu, self.esd = f32(P), f32(emu), f32(esd)
        self.meta = dict(meta or {})
        if not margin >= 0:
            raise ValueError(f"deferral margin {margin} < 0")
        self.margin = np.float32(margin)

    @property
    def needs_default(self):
        """Whether the policy reads LLVM's own decision (a deferral margin)."""
        return bool(self.margin > 0)

    def with_margin(self, margin):
        """A copy that lets LLVM's decision stand where ``|f| <= margin``."""
        return InlinePolicy(self.W1, self.b1, self.w2, self.b2, self.mu, self.sd, P=self.P,
                            emu=self.emu, esd=self.esd, meta=self.meta, margin=margin)

    @property
    def embedding_dim(self):
        """D of the embeddings the policy reads (0: none)."""
        return 0 if self.P is None else self.P.shape[1] // 2

    # -- evaluation ---------------------------------------------------------------------
    def _folded(self):
        """(W1 with the feature standardization folded in, b1, P and its
        bias with the embedding standardization folded in): what the ONNX
        graph computes with, so that Python and the plugin agree."""
        nf2 = NUM_CHANNELS
        W1 = self.W1.astype(np.float64)
        Wx = W1[:, :nf2] / self.sd
        b1 = self.b1 - Wx @ self.mu
        if self.P is None:
            return Wx.astype(np.float32), b1.astype(np.float32), None, None
        Pf = self.P.astype(np.float64) / self.esd
        pb = -Pf @ self.emu
        return (np.concatenate([Wx, W1[:, nf2:]], axis=1).astype(np.float32),
                b1.astype(np.float32), Pf.astype(np.float32), pb.astype(np.float32))

    def logits(self, X, E=None):
        """Inline scores of a feature matrix (columns :data:`MODEL_FEATURES`)
        and, for a policy with embeddings, ``E`` ``[n, 2, D]``; float32 like
        the deployed models. Inline where positive."""
        W1, b1, P, pb = self._folded()
        Z = _channels(_with_margin(X)).astype(np.float32)
        if P is not None:
            if E is None:
                E = np.zeros((len(Z), 2, self.embedding_dim))
            proj = _channels(E).astype(np.float32) @ P.T + pb          # [n, 2, k]
            Z = np.concatenate([Z, proj.reshape(len(Z), -1)], axis=1)
        H = np.maximum(Z @ W1.T + b1, np.float32(0))
        return H @ self.w2 + self.b2

    def decide(self, X, E=None, defaults=None):
        """Decisions (0/1 int64); ``defaults``: LLVM's decisions at the same
        requests (needed with a deferral margin)."""
        f = self.logits(X, E)
        if self.needs_default:
            if defaults is None:
                raise ValueError("a policy with a deferral margin needs LLVM's decisions")
            # The ONNX graph's arithmetic: f + (d * 2m + (-m)), in float32.
            d = np.asarray(defaults, dtype=np.float32).reshape(f.shape)
            f = f + (d * np.float32(2 * self.margin) + np.float32(-self.margin))
        return (f > 0).astype(np.int64)

    def __call__(self, obs):
        """A policy for :func:`mlbridge.llvm.run` / :func:`mlbridge.toolchain.compile`
        (which sends ``inlining_default`` when :attr:`needs_default`)."""
        E = embedding_matrix([obs], self.embedding_dim) if self.P is not None else None
        d = [int(np.asarray(obs["inlining_default"]).reshape(-1)[0])] if self.needs_default \
            else None
        return int(self.decide(feature_matrix([obs]), E, d)[0])

    # -- parameters (evolution strategies) --------------------------------------------
    def params(self):
        """The trainable parameters as one float64 vector."""
        parts = [self.W1, self.b1, self.w2, np.atleast_1d(self.b2)]
        if self.P is not None:
            parts.append(self.P)
        return np.concatenate([np.asarray(p, np.float64).ravel() for p in parts])

    def with_params(self, theta):
        """A copy with the trainable parameters ``theta`` (see :meth:`params`)."""
        theta = np.asarray(theta, dtype=np.float64)
        shapes = [self.W1.shape, self.b1.shape, self.w2.shape, (1,)]
        if self.P is not None:
            shapes.append(self.P.shape)
        vals, i = [], 0
        for s in shapes:
            n = int(np.prod(s))
            vals.append(theta[i:i + n].reshape(s))
            i += n
        if i != len(theta):
            raise ValueError(f"{len(theta)} parameters for a policy of {i}")
        return InlinePolicy(vals[0], vals[1], vals[2], float(vals[3][0]), self.mu, self.sd,
                            P=vals[4] if self.P is not None else None, emu=self.emu,
                            esd=self.esd, meta=self.meta, margin=self.margin)

    # -- behavioural cloning -----------------------------------------------------------
    @classmethod
    def clone(cls, X, y, E=None, *, hidden=32, project=8, epochs=300, lr=0.01, l2=1e-4,
              seed=0, balance=True):
        """Imitates decisions ``y`` (0/1: LLVM's own) from features ``X``
        (and embeddings ``E`` ``[n, 2, D]``, projected to ``project``
        numbers each): logistic regression of a one-hidden-layer network,
        full-batch Adam. ``balance`` weighs both decisions equally."""
        rng = np.random.default_rng(seed)
        C = _channels(_with_margin(X))
        mu, sd = _standardizer(C)
        Z = (C - mu) / sd
        n = len(Z)
        P = emu = esd = None
        if E is not None:
            CE = _channels(E)                       # [n, 2, 2D]
            emu, esd = _standardizer(CE.reshape(-1, CE.shape[-1]))
            ZE = (CE - emu) / esd
            P = rng.normal(0, 1 / np.sqrt(CE.shape[-1]), (project, CE.shape[-1]))
        y = np.asarray(y, dtype=np.float64)
        w = np.ones(n)
        if balance and 0 < y.sum() < n:
            w = np.where(y > 0, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
        w = w / w.sum()
        d = Z.shape[1] + (2 * project if P is not None else 0)
        params = [rng.normal(0, 1 / np.sqrt(d), (hidden, d)), np.zeros(hidden),
                  rng.normal(0, 1 / np.sqrt(hidden), hidden), np.array(0.0)]
        if P is not None:
            params.append(P)
        m = [np.zeros_like(p) for p in params]
        v = [np.zeros_like(p) for p in params]
        for t in range(1, epochs + 1):
            W1, b1, w2, b2 = params[:4]
            if P is not None:
                proj = ZE @ params[4].T                               # [n, 2, k]
                In = np.concatenate([Z, proj.reshape(n, -1)], axis=1)
            else:
                In = Z
            A = In @ W1.T + b1
            H = np.maximum(A, 0)
            f = H @ w2 + b2
            p = 1 / (1 + np.exp(-np.clip(f, -30, 30)))
            g = w * (p - y)
            gA = np.outer(g, w2) * (A > 0)
            grads = [gA.T @ In + l2 * W1, gA.sum(axis=0), H.T @ g + l2 * w2, g.sum()]
            if P is not None:
                gIn = gA @ W1                                         # [n, d]
                gproj = gIn[:, Z.shape[1]:].reshape(n, 2, -1)         # [n, 2, k]
                grads.append(np.einsum("nik,nij->kj", gproj, ZE) + l2 * params[4])
            for i, gr in enumerate(grads):
                m[i] = 0.9 * m[i] + 0.1 * gr
                v[i] = 0.999 * v[i] + 0.001 * gr * gr
                mh = m[i] / (1 - 0.9 ** t)
                vh = v[i] / (1 - 0.999 ** t)
                params[i] = params[i] - lr * mh / (np.sqrt(vh) + 1e-8)
        return cls(params[0], params[1], params[2], float(params[3]), mu, sd,
                   P=params[4] if P is not None else None, emu=emu, esd=esd,
                   meta={"hidden": hidden, "project": project if P is not None else 0})

    # -- persistence --------------------------------------------------------------------
    def to_dict(self):
        d = {"W1": self.W1.tolist(), "b1": self.b1.tolist(), "w2": self.w2.tolist(),
             "b2": float(self.b2), "mu": self.mu.tolist(), "sd": self.sd.tolist(),
             "meta": self.meta, "features": list(MODEL_FEATURES)}
        if self.P is not None:
            d.update({"P": self.P.tolist(), "emu": self.emu.tolist(), "esd": self.esd.tolist(),
                      "embeddings": list(EMBEDDINGS)})
        if self.needs_default:
            d["margin"] = float(self.margin)
        return d

    @classmethod
    def from_dict(cls, d):
        if list(d.get("features", ())) != list(MODEL_FEATURES) or "mu" not in d:
            raise ValueError("policy was trained on other features (not a whole-decision "
                             "inlining policy of this version)")
        return cls(d["W1"], d["b1"], d["w2"], d["b2"], d["mu"], d["sd"], P=d.get("P"),
                   emu=d.get("emu"), esd=d.get("esd"), meta=d.get("meta"),
                   margin=d.get("margin", 0.0))

    def to_onnx(self, path=None):
        """The policy as an ONNX model: one float32 ``[1, 1]`` input per name
        in :data:`MODEL_FEATURES` (and ``caller_embedding``,
        ``callee_embedding`` float32 ``[1, D]`` with embeddings, and
        ``inlining_default`` float32 ``[1, 1]`` with a deferral margin), output
        ``inlining_decision`` int64 ``[1]`` (what ``MLBridgeInlineAdvisor.so``
        binds by name). The standardization is folded into the first
        layer and the projection. Returns the serialized model; writes it
        when ``path`` is given."""
        from ..export import float32, input_spec, node, onnx_model

        def log_channels(x, out):
            return [node("Relu", [x], [f"{out}_p"]),
                    node("Mul", [x, "minus_one"], [f"{out}_nr"]),
                    node("Relu", [f"{out}_nr"], [f"{out}_n"]),
                    node("Add", [f"{out}_p", "one"], [f"{out}_p1"]),
                    node("Add", [f"{out}_n", "one"], [f"{out}_n1"]),
                    node("Log", [f"{out}_p1"], [f"{out}_lp"]),
                    node("Log", [f"{out}_n1"], [f"{out}_ln"]),
                    node("Concat", [f"{out}_lp", f"{out}_ln"], [out], axis=1)]

        W1f, b1, Pf, pb = self._folded()
        nodes = [node("Sub", ["threshold", "cost_estimate"], ["margin"]),
                 node("Concat", MODEL_FEATURES + ("margin",), ["x"], axis=1)]
        nodes += log_channels("x", "c")
        constants = {"one": [[1.0]], "minus_one": [[-1.0]], "zero": [[0.0]]}
        inputs = input_spec(MODEL_FEATURES, [1, 1])
        hidden_in = ["c"]
        if Pf is not None:
            for name, short in zip(EMBEDDINGS, ("er", "ee")):
                nodes += log_channels(name, f"{short}_c")
                nodes.append(node("Gemm", [f"{short}_c", "P", "Pb"], [f"{short}_p"], transB=1))
                hidden_in.append(f"{short}_p")
            inputs += input_spec(EMBEDDINGS, [1, self.embedding_dim])
            constants.update({"P": Pf, "Pb": pb})
            nodes.append(node("Concat", hidden_in, ["z"], axis=1))
        else:
            nodes.append(node("Identity", ["c"], ["z"]))
        nodes += [
            node("Gemm", ["z", "W1", "b1"], ["a1"], transB=1),
            node("Relu", ["a1"], ["h1"]),
            node("Gemm", ["h1", "w2", "b2"], ["f"], transB=1),
        ]
        score = "f"
        if self.needs_default:
            # f + (d * 2m + (-m)): LLVM's decision d stands where |f| <= m.
            inputs += input_spec(("inlining_default",), [1, 1])
            constants.update({"two_margin": [[2 * self.margin]], "minus_margin": [[-self.margin]]})
            nodes += [node("Mul", ["inlining_default", "two_margin"], ["dm"]),
                      node("Add", ["dm", "minus_margin"], ["shift"]),
                      node("Add", ["f", "shift"], ["g"])]
            score = "g"
        nodes += [
            # ArgMax over [0, score]: 1 (inline) exactly when score > 0.
            node("Concat", ["zero", score], ["logits"], axis=1),
            node("ArgMax", ["logits"], ["inlining_decision"], axis=1, keepdims=0),
        ]
        constants.update({"W1": W1f, "b1": b1, "w2": self.w2.reshape(1, -1), "b2": [self.b2]})
        return onnx_model("mlbridge_inline_for_size", nodes, inputs,
                          [("inlining_decision", np.int64, [1])],
                          {k: float32(v) for k, v in constants.items()},
                          producer="mlbridge.train.inliner", path=path)
