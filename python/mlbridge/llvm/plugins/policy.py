"""A PyTorch policy network for the phase-ordering environment, for RL
algorithms written against it (docs/llvm-plugins.md has a REINFORCE loop).

The same network is the Python agent while training (over pipes or gRPC,
through :class:`~mlbridge.llvm.plugins.PhaseOrderEnv`) and, exported to ONNX
(:meth:`PolicyNet.export_onnx`), the in-process agent of the plugin
(``MLBRIDGE_PO_MODEL=policy.onnx``). The shipped policy is a different,
regression-trained model: :class:`mlbridge.train.phase_order.PhasePolicy`.

Only operators the compiled-model generator supports are used (Div, Gemm,
Tanh), so one export serves both deployments. The network scales the raw
counts of the observation by fixed constants (:data:`OBSERVATION_SCALE`),
then an MLP gives one score per action; the agent takes the argmax (the
plugin's rl::Agent does the same with ActionRule::Auto).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ._plugins import NUM_ACTIONS, NUM_OBSERVATIONS, OBSERVATION_NAMES

#: Typical magnitude of each observation entry for small C programs, used
#: to bring the inputs near 1 (order as OBSERVATION_NAMES).
OBSERVATION_SCALE = {
    "functions": 10, "basic_blocks": 100, "instructions": 1000, "loads": 200,
    "stores": 200, "allocas": 50, "phis": 50, "geps": 100, "casts": 100,
    "int_arith": 100, "fp_arith": 50, "compares": 100, "selects": 20,
    "calls": 50, "intrinsics": 50, "cond_branches": 50, "uncond_branches": 100,
    "switches": 10, "returns": 10, "cfg_edges": 200, "loops": 10,
    "max_loop_depth": 3, "global_variables": 20, "tti_code_size": 1000,
    "machine_outliner": 1, "nooutline_functions": 10, "step": 10,
}
assert tuple(OBSERVATION_SCALE) == OBSERVATION_NAMES


class PolicyNet(nn.Module):
    """observation float32 [1, 27] (the counts) -> scores float32 [1, 22]."""

    def __init__(self, hidden: int = 32):
        super().__init__()
        scale = torch.tensor([float(OBSERVATION_SCALE[n]) for n in OBSERVATION_NAMES],
                             dtype=torch.float32).reshape(1, NUM_OBSERVATIONS)
        self.register_buffer("scale", scale)
        self.hidden = nn.Linear(NUM_OBSERVATIONS, hidden)
        self.out = nn.Linear(hidden, NUM_ACTIONS)

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        x = observation / self.scale
        return self.out(torch.tanh(self.hidden(x)))

    @torch.no_grad()
    def act(self, observation) -> int:
        """The greedy action for one observation (numpy or tensor; the
        environment's, whose embedding this network does not use, or the
        counts alone)."""
        counts = np.asarray(observation, dtype=np.float32).reshape(-1)[:NUM_OBSERVATIONS]
        x = torch.as_tensor(counts).reshape(1, NUM_OBSERVATIONS)
        return int(torch.argmax(self.forward(x), dim=1)[0])

    def export_onnx(self, path=None) -> bytes:
        """The ONNX model the plugin loads: input ``observation`` float32
        [1, 27], output ``scores`` float32 [1, 22], written from the weights
        by the project's one small-network exporter
        (:mod:`mlbridge.train.export`). Returns the serialized model and
        writes ``path`` when given."""
        from ...train.export import float32, node, onnx_model
        nodes = [node("Div", ["observation", "scale"], ["x"]),
                 node("Gemm", ["x", "W1", "b1"], ["h0"], transB=1),
                 node("Tanh", ["h0"], ["h"]),
                 node("Gemm", ["h", "W2", "b2"], ["scores"], transB=1)]
        with torch.no_grad():
            constants = {"scale": self.scale, "W1": self.hidden.weight, "b1": self.hidden.bias,
                         "W2": self.out.weight, "b2": self.out.bias}
            constants = {k: float32(v.numpy()) for k, v in constants.items()}
        return onnx_model("mlbridge_phase_order_agent", nodes,
                          [("observation", np.float32, [1, NUM_OBSERVATIONS])],
                          [("scores", np.float32, [1, NUM_ACTIONS])], constants,
                          producer="mlbridge.llvm.plugins.PolicyNet", path=path)
