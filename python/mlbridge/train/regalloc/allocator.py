"""The policy of ``-regalloc=mlbridge`` (``MLBridgeRegAlloc.so``): one small
network answering its three agents (docs/register-allocation.md,
"Protocol").

Inputs (the plugin's features, padded to static shapes; ``agent`` is an
int64 the plugin converts to the model's float input):

* ``agent`` [1]: 0 select, 1 action, 2 register;
* ``node_features`` [1, N, F] and ``adjacency`` [1, N, N] of the window's
  live ranges, ``node_mask`` and ``selected`` [1, N];
* ``action_mask`` [1, 3], ``register_features`` [1, R, G],
  ``register_mask`` [1, R].

Scores (output ``scores`` [1, N]; the plugin takes the legal argmax over
the agent's choices):

* select: ``node_features @ w_select + w_degree * degree / N -
  w_position * i / N`` per range ``i`` (``degree``: interfering ranges in
  the window; the window comes in priority order, so ``i`` is the rank);
* action: ``x @ W_action + b_action + free * w_free`` for the selected
  range's features ``x`` and ``free``, the fraction of its candidate
  registers that are legal;
* register: ``register_features @ w_register`` per candidate.

The agent's head is picked by ``agent``'s one-hot, written with products of
``agent - k`` (the compiled-model generator has no Cast or Equal), and the
heads are padded to N. :meth:`AllocatorPolicy.scores` is the same function
in numpy: Python over pipes and the in-process model decide alike.
"""

from __future__ import annotations

import numpy as np

from ...kit.actions import masked_argmax
from .evict import JsonFile

__all__ = ["MAX_NODES", "MAX_REGS", "NODE_FEATURES", "REG_FEATURES", "NUM_ACTIONS",
           "AllocatorPolicy", "INPUTS", "HEADS", "design", "HeuristicRule", "Recorder",
           "legal_choices"]

MAX_NODES = 64
MAX_REGS = 32
NODE_FEATURES = 12
REG_FEATURES = 6
NUM_ACTIONS = 3

#: (name, shape) of the model's inputs, in the plugin's order.
INPUTS = (("agent", (1,)), ("node_features", (1, MAX_NODES, NODE_FEATURES)),
          ("adjacency", (1, MAX_NODES, MAX_NODES)), ("node_mask", (1, MAX_NODES)),
          ("selected", (1, MAX_NODES)), ("action_mask", (1, NUM_ACTIONS)),
          ("register_features", (1, MAX_REGS, REG_FEATURES)),
          ("register_mask", (1, MAX_REGS)))

# theta layout: name -> shape, in order
_PARTS = (("w_select", (NODE_FEATURES,)), ("w_degree", (1,)), ("w_position", (1,)),
          ("W_action", (NODE_FEATURES, NUM_ACTIONS)), ("b_action", (NUM_ACTIONS,)),
          ("w_free", (NUM_ACTIONS,)), ("w_register", (REG_FEATURES,)))


#: The parameters of each agent's head (the heads share none).
HEADS = (("w_select", "w_degree", "w_position"), ("W_action", "b_action", "w_free"), ("w_register",))
_MASKS = ("node_mask", "action_mask", "register_mask")
_RANK = -np.arange(MAX_NODES, dtype=np.float64) / MAX_NODES


def _agent(f):
    return int(round(float(np.asarray(f["agent"]).reshape(-1)[0])))


def legal_choices(f):
    """(agent, bool vector of its legal choices) of a request."""
    a = _agent(f)
    return a, np.asarray(f[_MASKS[a]], dtype=np.float32).reshape(-1) > 0.5


def design(f):
    """(agent, D): the agent's head scores are ``D @ theta_head`` (its
    parameters of :data:`HEADS`, flattened in order); float64."""
    a = _agent(f)
    if a == 0:
        nodes = np.asarray(f["node_features"], dtype=np.float64).reshape(MAX_NODES,
                                                                          NODE_FEATURES)
        adj = np.asarray(f["adjacency"], dtype=np.float64).reshape(MAX_NODES, MAX_NODES)
        return a, np.concatenate([nodes, adj.sum(axis=1, keepdims=True) / MAX_NODES,
                                  _RANK.reshape(-1, 1)], axis=1)
    if a == 1:
        nodes = np.asarray(f["node_features"], dtype=np.float64).reshape(MAX_NODES,
                                                                          NODE_FEATURES)
        x = np.asarray(f["selected"], dtype=np.float64).reshape(MAX_NODES) @ nodes
        free = np.asarray(f["register_mask"], dtype=np.float64).sum() / MAX_REGS
        D = np.zeros((NUM_ACTIONS, NODE_FEATURES * NUM_ACTIONS + 2 * NUM_ACTIONS))
        for k in range(NUM_ACTIONS):
            D[k, k:NODE_FEATURES * NUM_ACTIONS:NUM_ACTIONS] = x       # W_action[:, k]
            D[k, NODE_FEATURES * NUM_ACTIONS + k] = 1.0              # b_action[k]
            D[k, NODE_FEATURES * NUM_ACTIONS + NUM_ACTIONS + k] = free  # w_free[k]
        return a, D
    return a, np.asarray(f["register_features"], dtype=np.float64).reshape(MAX_REGS,
                                                                          REG_FEATURES)


class HeuristicRule:
    """The plugin's built-in heuristic (docs/register-allocation.md) from the
    features, as a Python policy: select the window's first range; assign
    when a register is legal (free or evictable), else split, else spill;
    register: a free hint, else a free one costing no new callee-saved
    save, else any free one, else the lightest interference."""

    def __call__(self, f):
        a, legal = legal_choices(f)
        if a == 0:
            return int(np.flatnonzero(legal)[0])
        if a == 1:
            regs = np.asarray(f["register_mask"]).reshape(-1) > 0.5
            for act, ok in ((0, regs.any()), (1, True), (2, True)):
                if ok and legal[act]:
                    return act
            return int(np.flatnonzero(legal)[0])
        r = np.asarray(f["register_features"], dtype=np.float32).reshape(MAX_REGS, REG_FEATURES)
        free = legal & (r[:, 0] > 0.5)
        for pick in (free & (r[:, 2] > 0.5), free & (r[:, 5] < 0.5), free):
            if pick.any():
                return int(np.flatnonzero(pick)[0])
        return int(np.argmin(np.where(legal, r[:, 3], np.inf)))


class Recorder:
    """Wraps a policy ``f -> index``; keeps each request's agent, design
    (:func:`design`), legal choices and answer (imitation data), and counts
    the requests."""

    def __init__(self, policy, keep=True):
        self.policy, self.keep = policy, keep
        self.requests = 0
        self.rows = ([], [], []), ([], [], []), ([], [], [])   # per agent: D, legal, answer

    def __call__(self, f):
        self.requests += 1
        answer = int(self.policy(f))
        if self.keep:
            a, D = design(f)
            _, legal = legal_choices(f)
            for lst, v in zip(self.rows[a], (D.astype(np.float32), legal, answer)):
                lst.append(v)
        return answer

    def arrays(self):
        """Per agent (D [n, C, P], legal [n, C], answers [n])."""
        out = []
        for D, legal, ans in self.rows:
            out.append((np.asarray(D, np.float32), np.asarray(legal, bool),
                        np.asarray(ans, np.int64)))
        return out


class AllocatorPolicy(JsonFile):
    """The network of the module docstring, its weights one flat vector
    ``theta`` (:attr:`size` numbers; ES perturbs it)."""

    size = int(sum(np.prod(s) for _, s in _PARTS))

    def __init__(self, theta=None):
        theta = np.zeros(self.size) if theta is None else np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.size,):
            raise ValueError(f"theta must have {self.size} numbers, got {theta.shape}")
        self.theta = theta
        self.parts, i = {}, 0
        self.head_slices = {}
        for name, shape in _PARTS:
            n = int(np.prod(shape))
            self.parts[name] = theta[i:i + n].reshape(shape)
            self.head_slices[name] = slice(i, i + n)
            i += n

    @classmethod
    def from_heads(cls, heads):
        """The policy whose head k has the flat weights ``heads[k]`` (the
        parameters of ``HEADS[k]`` in order, as :func:`design` uses)."""
        theta = np.zeros(cls.size)
        probe = cls()
        for names, w in zip(HEADS, heads):
            i = 0
            for name in names:
                sl = probe.head_slices[name]
                n = sl.stop - sl.start
                theta[sl] = np.asarray(w)[i:i + n]
                i += n
        return cls(theta)

    def __call__(self, f):
        """The legal argmax of the agent's scores (a Python policy over pipes)."""
        _, legal = legal_choices(f)
        return self.decide(f, legal)

    # ---- the function, in numpy -----------------------------------------------------
    def heads(self, f):
        """(select [N], action [3], register [R]) scores of features ``f``
        (a mapping name -> array shaped as in :data:`INPUTS`)."""
        p = self.parts
        nodes = np.asarray(f["node_features"], dtype=np.float32).reshape(MAX_NODES,
                                                                          NODE_FEATURES)
        adj = np.asarray(f["adjacency"], dtype=np.float32).reshape(MAX_NODES, MAX_NODES)
        sel = np.asarray(f["selected"], dtype=np.float32).reshape(1, MAX_NODES)
        rmask = np.asarray(f["register_mask"], dtype=np.float32).reshape(MAX_REGS)
        regs = np.asarray(f["register_features"], dtype=np.float32).reshape(MAX_REGS,
                                                                            REG_FEATURES)
        degree = adj.sum(axis=1) / MAX_NODES
        s_select = nodes @ p["w_select"].astype(np.float32) + \
            degree * np.float32(p["w_degree"][0]) + \
            _RANK.astype(np.float32) * np.float32(p["w_position"][0])
        x = (sel @ nodes)[0]
        free = rmask.sum() / MAX_REGS
        s_action = x @ p["W_action"].astype(np.float32) + p["b_action"].astype(np.float32) + \
            free * p["w_free"].astype(np.float32)
        s_register = regs @ p["w_register"].astype(np.float32)
        return s_select, s_action, s_register

    def scores(self, f):
        """The model's output ``scores`` [N] for features ``f``."""
        a = float(np.asarray(f["agent"]).reshape(-1)[0])
        s_select, s_action, s_register = self.heads(f)
        out = np.zeros(MAX_NODES, dtype=np.float32)
        head = (s_select, s_action, s_register)[int(a)]
        out[:len(head)] = head
        return out

    def decide(self, f, legal):
        """The legal argmax of :meth:`scores` over ``legal`` (bool per
        choice of the agent)."""
        s = self.scores(f)[:len(legal)]
        return masked_argmax(s, legal)

    # ---- persistence and export -----------------------------------------------------
    def to_dict(self):
        return {"format": "mlbridge.regalloc.allocator/1", "theta": self.theta.tolist()}

    @classmethod
    def from_dict(cls, d):
        return cls(d["theta"])

    def to_onnx(self, path=None):
        """The ONNX model the plugin runs (static shapes of :data:`INPUTS`,
        output ``scores`` float32 [1, N]); only MatMul, Gemm, Add, Sub, Mul,
        Reshape, Concat: the compiled-model generator builds the same file
        into the plugin. Returns the serialized bytes."""
        from ..export import float32, node, onnx_model
        p = self.parts
        N, R = MAX_NODES, MAX_REGS
        nodes = [
            node("Reshape", ["node_features", "shape_nodes"], ["nodes"]),        # [N, F]
            node("Reshape", ["adjacency", "shape_adj"], ["adj"]),                # [N, N]
            node("MatMul", ["adj", "ones_n"], ["deg0"]),                         # [N, 1]
            node("Mul", ["deg0", "w_degree_n"], ["deg"]),                        # w_deg / N
            node("MatMul", ["nodes", "w_select"], ["sel0"]),                     # [N, 1]
            node("Add", ["sel0", "deg"], ["sel1a"]),
            node("Add", ["sel1a", "rank"], ["sel1"]),
            node("Reshape", ["sel1", "shape_row_n"], ["s_select"]),              # [1, N]
            node("MatMul", ["selected", "nodes"], ["x"]),                        # [1, F]
            node("MatMul", ["register_mask", "ones_r"], ["nfree"]),              # [1, 1]
            node("Mul", ["nfree", "w_free_r"], ["free_term"]),                   # [1, 3]
            node("Gemm", ["x", "W_action", "b_action"], ["act0"]),               # [1, 3]
            node("Add", ["act0", "free_term"], ["act1"]),
            node("Concat", ["act1", "pad_action"], ["s_action"], axis=1),        # [1, N]
            node("Reshape", ["register_features", "shape_regs"], ["regs"]),      # [R, G]
            node("MatMul", ["regs", "w_register"], ["reg0"]),                    # [R, 1]
            node("Reshape", ["reg0", "shape_row_r"], ["reg1"]),                  # [1, R]
            node("Concat", ["reg1", "pad_register"], ["s_register"], axis=1),    # [1, N]
            # one-hot of agent a in {0, 1, 2}: (a-1)(a-2)/2, a(2-a), a(a-1)/2
            node("Sub", ["agent", "one"], ["a1"]),
            node("Sub", ["agent", "two"], ["a2"]),
            node("Sub", ["two", "agent"], ["two_a"]),
            node("Mul", ["a1", "a2"], ["g0x2"]),
            node("Mul", ["g0x2", "half"], ["g0"]),
            node("Mul", ["agent", "two_a"], ["g1"]),
            node("Mul", ["agent", "a1"], ["g2x2"]),
            node("Mul", ["g2x2", "half"], ["g2"]),
            node("Mul", ["s_select", "g0"], ["o0"]),
            node("Mul", ["s_action", "g1"], ["o1"]),
            node("Mul", ["s_register", "g2"], ["o2"]),
            node("Add", ["o0", "o1"], ["o01"]),
            node("Add", ["o01", "o2"], ["scores"]),
        ]
        i64 = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
        constants = {
            "shape_nodes": i64([N, NODE_FEATURES]), "shape_adj": i64([N, N]),
            "shape_row_n": i64([1, N]), "shape_regs": i64([R, REG_FEATURES]),
            "shape_row_r": i64([1, R]),
            "ones_n": float32(np.ones((N, 1))), "ones_r": float32(np.ones((R, 1))),
            "w_degree_n": float32([[p["w_degree"][0] / N]]),
            "rank": float32((_RANK * p["w_position"][0]).reshape(N, 1)),
            "w_select": float32(p["w_select"].reshape(-1, 1)),
            "W_action": float32(p["W_action"]), "b_action": float32(p["b_action"]),
            "w_free_r": float32(p["w_free"].reshape(1, -1) / R),
            "pad_action": float32(np.zeros((1, N - NUM_ACTIONS))),
            "w_register": float32(p["w_register"].reshape(-1, 1)),
            "pad_register": float32(np.zeros((1, N - R))),
            "one": float32([1.0]), "two": float32([2.0]), "half": float32([0.5]),
        }
        inputs = [(name, np.float32, shape) for name, shape in INPUTS]
        return onnx_model("mlbridge_regalloc_policy", nodes, inputs,
                          [("scores", np.float32, [1, N])], constants,
                          producer="mlbridge.train.regalloc", path=path)
