"""The phase-ordering policy: a regression network predicting, from the
plugin's observation (27 counts and, optionally, IR2Vec's module vector per
instruction), the ``.text`` change of each action, deployed with one STOP
score (the threshold)."""

import numpy as np

from ...llvm.plugins import EMBEDDING_DIM, NUM_OBSERVATIONS, STOP_ACTION as STOP

__all__ = ["PhasePolicy", "NUM_PASS_ACTIONS", "STOP"]

NUM_PASS_ACTIONS = STOP   # the plugin's actions before STOP


class PhasePolicy:
    """``gain(c, e) = W2 tanh(W1 log(1 + c) + We e + b1) + b2`` (percent of
    .text each action removes; ``c`` the counts, ``e`` the embedding). The
    policy's scores are ``[gain, threshold]`` and the plugin takes their
    argmax, so it acts only where a predicted gain exceeds ``threshold``
    (STOP otherwise). ``We`` None: a counts-only policy (its ONNX model has
    no ``embedding`` input and the plugin computes none)."""

    def __init__(self, W1, b1, W2, b2, threshold=float("inf"), We=None):
        self.W1, self.b1, self.W2, self.b2 = (np.asarray(a, dtype=np.float32)
                                              for a in (W1, b1, W2, b2))
        self.We = None if We is None else np.asarray(We, dtype=np.float32)
        self.threshold = float(threshold)

    @property
    def uses_embedding(self):
        return self.We is not None

    def gains(self, X):
        """X: rows of the environment's observation (counts, then the
        embedding; counts alone for a counts-only policy)."""
        X = np.asarray(X, dtype=np.float32).reshape(len(X), -1)
        pre = np.log1p(np.maximum(X[:, :NUM_OBSERVATIONS], 0)) @ self.W1.T + self.b1
        if self.We is not None:
            pre = pre + X[:, NUM_OBSERVATIONS:NUM_OBSERVATIONS + EMBEDDING_DIM] @ self.We.T
        return np.tanh(pre) @ self.W2.T + self.b2

    def act(self, obs):
        g = self.gains(np.asarray(obs).reshape(1, -1))[0]
        a = int(np.argmax(g))
        return a if g[a] > self.threshold else STOP

    @classmethod
    def fit(cls, X, Y, *, hidden=32, epochs=600, lr=0.01, l2=1e-4, seed=0,
            embedding=True):
        """Least squares on the gains (``-Y``), full batch Adam (PyTorch).
        The embedding is standardized on X (folded into ``We``, ``b1``)."""
        import torch
        torch.manual_seed(seed)
        X = np.asarray(X, dtype=np.float32)
        x = torch.log1p(torch.as_tensor(np.maximum(X[:, :NUM_OBSERVATIONS], 0)))
        y = -torch.as_tensor(Y, dtype=torch.float32)
        lin1 = torch.nn.Linear(x.shape[1], hidden)
        lin2 = torch.nn.Linear(hidden, y.shape[1])
        params = list(lin1.parameters()) + list(lin2.parameters())
        if embedding:
            E = X[:, NUM_OBSERVATIONS:NUM_OBSERVATIONS + EMBEDDING_DIM]
            mu, sd = E.mean(axis=0), E.std(axis=0) + 1e-6
            e = torch.as_tensor((E - mu) / sd)
            line = torch.nn.Linear(EMBEDDING_DIM, hidden, bias=False)
            params += list(line.parameters())
        opt = torch.optim.Adam(params, lr=lr, weight_decay=l2)
        for _ in range(epochs):
            opt.zero_grad()
            pre = lin1(x) + (line(e) if embedding else 0)
            loss = torch.mean((lin2(torch.tanh(pre)) - y) ** 2)
            loss.backward()
            opt.step()
        with torch.no_grad():
            W1, b1 = lin1.weight.numpy(), lin1.bias.numpy()
            We = None
            if embedding:
                We = line.weight.numpy() / sd          # (e - mu)/sd folded in
                b1 = b1 - We @ mu
            return cls(W1, b1, lin2.weight.numpy(), lin2.bias.numpy(), We=We)

    @classmethod
    def scripted(cls, actions):
        """A policy that takes ``actions`` (distinct) in this order, one per
        step, then STOP: a fixed sequence as a model the plugin runs (for
        tests and fixed-sequence baselines). Hidden unit j switches on from
        step j + 1 (it reads the ``step`` count)."""
        from ...llvm.plugins import OBSERVATION_NAMES
        n = len(actions)
        W1 = np.zeros((n, NUM_OBSERVATIONS))
        W1[:, OBSERVATION_NAMES.index("step")] = 20.0
        b1 = -20.0 * np.log1p(np.arange(n) + 0.5)
        W2 = np.zeros((NUM_PASS_ACTIONS, n))
        b2 = np.full(NUM_PASS_ACTIONS, -5.0)
        for k, a in enumerate(actions):   # score 1 at step k, -1 elsewhere
            W2[a, k] = -1.0
            if k:
                W2[a, k - 1] = 1.0
            b2[a] = -1.0 if k else 0.0
        return cls(W1, b1, W2, b2, threshold=0.0)

    def with_threshold(self, threshold):
        return PhasePolicy(self.W1, self.b1, self.W2, self.b2, threshold, We=self.We)

    def with_margin(self, action, pct):
        """The same policy, taking ``action`` only where its predicted gain
        exceeds the threshold by ``pct`` more (percent of .text): the price
        of an action that costs compile time (the IR outliner), folded into
        its bias so the plugin's model is unchanged in form."""
        b2 = self.b2.copy()
        b2[action] -= pct
        return PhasePolicy(self.W1, self.b1, self.W2, b2, self.threshold, We=self.We)

    def to_dict(self):
        d = {"W1": self.W1.tolist(), "b1": self.b1.tolist(), "W2": self.W2.tolist(),
             "b2": self.b2.tolist(), "threshold": self.threshold}
        if self.We is not None:
            d["We"] = self.We.tolist()
        return d

    @classmethod
    def from_dict(cls, d):
        return cls(d["W1"], d["b1"], d["W2"], d["b2"], d["threshold"], We=d.get("We"))

    def to_onnx(self, path=None):
        """The ONNX model the plugin runs: inputs ``observation`` float32
        [1, 27] (and ``embedding`` float32 [1, 300] when the policy uses
        it), output ``scores`` float32 [1, 22] (argmax = the action). Only
        Add, Log, Gemm, MatMul, Tanh, Concat: the compiled-model generator
        supports them, so the same file is also built into the plugin.
        Returns the serialized bytes (and writes ``path`` if given)."""
        from ..export import float32, node, onnx_model
        thr = self.threshold if np.isfinite(self.threshold) else 3.0e38
        nodes = [
            node("Add", ["observation", "one"], ["x1"]),
            node("Log", ["x1"], ["lx"]),
            node("Gemm", ["lx", "W1", "b1"], ["h0" if self.We is not None else "pre"],
                 transB=1),
        ]
        inputs = [("observation", np.float32, [1, NUM_OBSERVATIONS])]
        constants = {"one": np.ones((1, NUM_OBSERVATIONS)), "W1": self.W1, "b1": self.b1,
                     "W2": self.W2, "b2": self.b2, "stop": [[thr]]}
        if self.We is not None:
            inputs.append(("embedding", np.float32, [1, EMBEDDING_DIM]))
            constants["WeT"] = self.We.T
            nodes += [node("MatMul", ["embedding", "WeT"], ["he"]),
                      node("Add", ["h0", "he"], ["pre"])]
        nodes += [
            node("Tanh", ["pre"], ["h"]),
            node("Gemm", ["h", "W2", "b2"], ["gain"], transB=1),
            node("Concat", ["gain", "stop"], ["scores"], axis=1),
        ]
        return onnx_model("mlbridge_phase_order", nodes, inputs,
                          [("scores", np.float32, [1, NUM_PASS_ACTIONS + 1])],
                          {k: float32(v) for k, v in constants.items()},
                          producer="mlbridge.train.phase_order", path=path)
