"""The phase-ordering policy: a regression network predicting, from the
observation (the plugin's 25 counts), the ``.text`` change of each action,
deployed with one STOP score (the threshold)."""

import numpy as np

from ...llvm.plugins import NUM_OBSERVATIONS, STOP_ACTION as STOP

__all__ = ["PhasePolicy", "NUM_PASS_ACTIONS", "STOP"]

NUM_PASS_ACTIONS = STOP   # the plugin's actions before STOP


class PhasePolicy:
    """``gain(x) = W2 tanh(W1 log(1 + x) + b1) + b2`` (percent of .text each
    action removes); the policy's scores are ``[gain, threshold]`` and the
    plugin takes their argmax, so it acts only where a predicted gain
    exceeds ``threshold`` (STOP otherwise)."""

    def __init__(self, W1, b1, W2, b2, threshold=float("inf")):
        self.W1, self.b1, self.W2, self.b2 = (np.asarray(a, dtype=np.float32)
                                              for a in (W1, b1, W2, b2))
        self.threshold = float(threshold)

    def gains(self, X):
        h = np.tanh(np.log1p(np.maximum(np.asarray(X, dtype=np.float32), 0)) @ self.W1.T
                    + self.b1)
        return h @ self.W2.T + self.b2

    def act(self, obs):
        g = self.gains(np.asarray(obs).reshape(1, -1))[0]
        a = int(np.argmax(g))
        return a if g[a] > self.threshold else STOP

    @classmethod
    def fit(cls, X, Y, *, hidden=32, epochs=600, lr=0.01, l2=1e-4, seed=0):
        """Least squares on the gains (``-Y``), full batch Adam (PyTorch)."""
        import torch
        torch.manual_seed(seed)
        x = torch.log1p(torch.as_tensor(np.maximum(X, 0), dtype=torch.float32))
        y = -torch.as_tensor(Y, dtype=torch.float32)
        lin1 = torch.nn.Linear(x.shape[1], hidden)
        lin2 = torch.nn.Linear(hidden, y.shape[1])
        params = list(lin1.parameters()) + list(lin2.parameters())
        opt = torch.optim.Adam(params, lr=lr, weight_decay=l2)
        for _ in range(epochs):
            opt.zero_grad()
            loss = torch.mean((lin2(torch.tanh(lin1(x))) - y) ** 2)
            loss.backward()
            opt.step()
        with torch.no_grad():
            return cls(lin1.weight.numpy(), lin1.bias.numpy(), lin2.weight.numpy(),
                       lin2.bias.numpy())

    def with_threshold(self, threshold):
        return PhasePolicy(self.W1, self.b1, self.W2, self.b2, threshold)

    def to_dict(self):
        return {"W1": self.W1.tolist(), "b1": self.b1.tolist(), "W2": self.W2.tolist(),
                "b2": self.b2.tolist(), "threshold": self.threshold}

    @classmethod
    def from_dict(cls, d):
        return cls(d["W1"], d["b1"], d["W2"], d["b2"], d["threshold"])

    def to_onnx(self, path=None):
        """The ONNX model the plugin runs: input ``observation`` float32
        [1, 25], output ``scores`` float32 [1, 18] (argmax = the action).
        Only Add, Log, Gemm, Tanh, Concat: the compiled-model generator
        supports them, so the same file is also built into the plugin.
        Returns the serialized bytes (and writes ``path`` if given)."""
        from ..export import float32, node, onnx_model
        thr = self.threshold if np.isfinite(self.threshold) else 3.0e38
        nodes = [
            node("Add", ["observation", "one"], ["x1"]),
            node("Log", ["x1"], ["lx"]),
            node("Gemm", ["lx", "W1", "b1"], ["h0"], transB=1),
            node("Tanh", ["h0"], ["h"]),
            node("Gemm", ["h", "W2", "b2"], ["gain"], transB=1),
            node("Concat", ["gain", "stop"], ["scores"], axis=1),
        ]
        constants = {"one": np.ones((1, NUM_OBSERVATIONS)), "W1": self.W1, "b1": self.b1,
                     "W2": self.W2, "b2": self.b2, "stop": [[thr]]}
        return onnx_model("mlbridge_phase_order", nodes,
                          [("observation", np.float32, [1, NUM_OBSERVATIONS])],
                          [("scores", np.float32, [1, NUM_PASS_ACTIONS + 1])],
                          {k: float32(v) for k, v in constants.items()},
                          producer="mlbridge.train.phase_order", path=path)
