"""The PyTorch modules behind the committed models in models/.

Used by export.py (which writes the .onnx files and the weights as .npz)
and by the Python side of tests and examples (which rebuild the same
modules from the .npz weights), so both sides of a comparison run the same
network.
"""

import numpy as np
import torch
from torch import nn

__all__ = ["MLP", "MultiIO", "PolicyNet", "OBS_SIZE", "PASS_ACTIONS",
           "FACTOR_ACTIONS", "TwoDims", "load_module"]

# The toy phase-ordering environment of examples/rl (toy_phase_ordering.h).
OBS_SIZE = 8
PASS_ACTIONS = 6    # dce, constprop, inline, licm, unroll, stop
FACTOR_ACTIONS = 3  # unroll by 2, 4, 8


class MLP(nn.Module):
    """in -> hidden -> out with ReLU: the paper's latency model (300->64->15)."""

    def __init__(self, n_in=300, hidden=64, n_out=15):
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden)
        self.fc2 = nn.Linear(hidden, n_out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class MultiIO(nn.Module):
    """Several inputs and outputs of every supported kind.

    inputs:  features float[batch,4], weights double[3], counts int64[2],
             offset int32[1], mask bool[4], seq float[len]
    outputs: scores float[batch,4], total double[1], best int64[batch],
             doubled int32[1], any_masked bool[1], seq_stats float[2]
    """

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, features, weights, counts, offset, mask, seq):
        masked = features * mask.to(torch.float32)
        scores = self.proj(masked) + offset.to(torch.float32)
        total = (weights * weights).sum(0, keepdim=True) * counts.sum().to(torch.float64)
        best = torch.argmax(scores, dim=1)
        doubled = offset * 2
        any_masked = ((~mask).to(torch.int64).sum() > 0).reshape(1)
        seq_stats = torch.stack([seq.mean(), seq.max()])
        return scores, total, best, doubled, any_masked, seq_stats


class TwoDims(nn.Module):
    """x float[batch,len] -> y = 2x + 1: an input with two variable dims."""

    def forward(self, x):
        return x * 2.0 + 1.0


class PolicyNet(nn.Module):
    """An RL agent: observation -> one score per action."""

    def __init__(self, n_obs=OBS_SIZE, hidden=32, n_actions=PASS_ACTIONS):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_obs, hidden), nn.Tanh(),
                                  nn.Linear(hidden, n_actions))

    def forward(self, obs):
        return self.body(obs)


def load_module(module, npz_path):
    """Loads weights saved by export.py (state_dict as .npz) into module."""
    with np.load(npz_path) as data:
        state = {k: torch.from_numpy(np.array(data[k])) for k in data.files}
    module.load_state_dict(state)
    module.eval()
    return module
