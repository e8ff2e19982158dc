"""The loop-distribution policy: a small gated graph network over the
loop's dependence graph, with the two heads the plugin asks for.

Per loop the plugin sends padded tensors (``MAX_NODES`` nodes): node
features ``[N, F]``, the adjacency ``[N, N]`` (``adjacency[i][j]`` = 1: node
``i`` must run before ``j``) and masks. The network

1. normalises the features (mean and spread of the training graphs, part
   of the model) and embeds them: ``h = tanh(x W_in + b_in)``; a network
   that reads the IR2Vec ``node_embeddings`` (``EMBEDDING_DIM`` per node)
   normalises them too, projects them to a few dimensions (``P_e``,
   learned) and appends those to ``x`` first;
2. propagates ``ROUNDS`` times along and against the edges with a gated
   update (``m = A h W_f + A^T h W_b``; ``z = sigmoid(h U_z + m V_z + b_z)``;
   ``h <- h + z * (tanh(h U_h + m V_h + b_h) - h)``), padding rows kept at 0;
3. **select**: one score per node from the node's state and the current
   loop's mean state; nodes that are not eligible get -1e4, so the argmax
   is an eligible node;
4. **merge**: two scores from the candidate node's state, the current loop's
   mean state and their product: ``[merge into the current loop, start a new
   loop]``; ``new_loop_bias`` is added to the second (chosen on validation:
   a negative bias keeps loops together unless the network is sure).

The same weights run in PyTorch (training, the Python policy over pipes)
and as ONNX (:meth:`GraphPolicy.to_onnx`: MatMul, Gemm, Add, Sub, Mul, Div,
Tanh, Sigmoid, Relu, Transpose, Concat, Reshape, Clip), which
the plugin runs through ONNX Runtime or compiles in.
"""

from __future__ import annotations

from typing import Dict

import numpy as np

from ...llvm.plugins.loop_distribution import EMBEDDING_DIM, MAX_NODES
from ..results import JsonFile

__all__ = ["MAX_NODES", "EMBEDDING_DIM", "ROUNDS", "GraphPolicy", "NEG", "fit"]

# MAX_NODES and EMBEDDING_DIM (IR2Vec's vector size, ``node_embeddings``
# [MAX_NODES, EMBEDDING_DIM]) come from the protocol the plugin includes.
ROUNDS = 2
#: Score of a node that may not be chosen.
NEG = -1.0e4
TINY = 1.0e-30


def _torch():
    import torch
    return torch


class GraphPolicy(JsonFile):
    """Weights (numpy float32) of the network; ``features``: F."""

    NAMES = ("mu", "sd", "W_in", "b_in", "W_f", "W_b", "U_z", "V_z", "b_z", "U_h", "V_h",
             "b_h", "w_sel", "w_ctx", "W_m1", "b_m1", "W_m2", "b_m2")
    #: The weights of a network that reads node_embeddings: their mean and
    #: spread over the training graphs and the projection [300, d].
    EMBEDDING_NAMES = ("mu_e", "sd_e", "P_e")

    def __init__(self, weights: Dict[str, np.ndarray], new_loop_bias: float = 0.0):
        names = self.NAMES + (self.EMBEDDING_NAMES if "P_e" in weights else ())
        self.w = {k: np.asarray(weights[k], dtype=np.float32) for k in names}
        self.new_loop_bias = float(new_loop_bias)

    @property
    def embedding_dim(self) -> int:
        """The projected size of node_embeddings (0: the network does not read them)."""
        return int(self.w["P_e"].shape[1]) if "P_e" in self.w else 0

    @property
    def features(self) -> int:
        return int(self.w["W_in"].shape[0]) - self.embedding_dim

    @property
    def hidden(self) -> int:
        return int(self.w["W_in"].shape[1])

    @classmethod
    def init(cls, features: int, hidden: int = 24, *, seed: int = 0, mu=None, sd=None,
             embedding_dim: int = 0, mu_e=None, sd_e=None):
        rng = np.random.default_rng(seed)

        def g(*shape):
            return rng.normal(0, 1 / np.sqrt(shape[0]), shape)
        h = hidden
        w = {"mu": np.zeros(features) if mu is None else mu,
             "sd": np.ones(features) if sd is None else sd,
             "W_in": g(features + embedding_dim, h), "b_in": np.zeros(h),
             "W_f": g(h, h), "W_b": g(h, h),
             "U_z": g(h, h), "V_z": g(h, h), "b_z": np.zeros(h), "U_h": g(h, h),
             "V_h": g(h, h), "b_h": np.zeros(h), "w_sel": g(h, 1), "w_ctx": g(h, 1),
             "W_m1": g(3 * h, h), "b_m1": np.zeros(h), "W_m2": g(h, 2), "b_m2": np.zeros(2)}
        if embedding_dim:
            w.update(mu_e=np.zeros(EMBEDDING_DIM) if mu_e is None else mu_e,
                     sd_e=np.ones(EMBEDDING_DIM) if sd_e is None else sd_e,
                     P_e=g(EMBEDDING_DIM, embedding_dim))
        return cls(w)

    # ---- the computation (torch; numpy arrays in, numpy out for one step) ----

    @staticmethod
    def forward(w, x, adj, eligible, current, candidate, torch, emb=None):
        """Batched: x [B,N,F], adj [B,N,N], eligible/current/candidate [B,N],
        emb [B,N,300] (read only by a network with ``P_e``) -> (select
        scores [B,N], merge scores [B,2]) without the bias."""
        # A padding row is all zeros (the same test as the ONNX graph's).
        valid = torch.clamp((x * x).sum(-1, keepdim=True), 0.0, TINY) / TINY
        xn = (x - w["mu"]) / w["sd"]
        if "P_e" in w:
            xn = torch.cat([xn, ((emb - w["mu_e"]) / w["sd_e"]) @ w["P_e"]], -1)
        h = torch.tanh(xn @ w["W_in"] + w["b_in"]) * valid
        adj_t = adj.transpose(-1, -2)
        for _ in range(ROUNDS):
            m = adj @ (h @ w["W_f"]) + adj_t @ (h @ w["W_b"])
            z = torch.sigmoid(h @ w["U_z"] + m @ w["V_z"] + w["b_z"])
            c = torch.tanh(h @ w["U_h"] + m @ w["V_h"] + w["b_h"])
            h = (h + z * (c - h)) * valid
        cur = current.unsqueeze(-2)                                     # [B,1,N]
        ctx = (cur @ h) / torch.clamp(cur.sum(-1, keepdim=True), min=1.0)  # [B,1,H]
        sel = (h @ w["w_sel"] + ctx @ w["w_ctx"]).squeeze(-1)          # [B,N]
        sel = sel + (eligible - 1.0) * -NEG
        node = candidate.unsqueeze(-2) @ h                                  # [B,1,H]
        u = torch.cat([node, ctx, node * ctx], -1)
        merge = (torch.relu(u @ w["W_m1"] + w["b_m1"]) @ w["W_m2"] + w["b_m2"]).squeeze(-2)
        return sel, merge

    @staticmethod
    def combined(sel, merge, candidate, torch):
        """The one ``scores`` [B, N] the plugin reads: select scores when
        ``candidate`` is all 0 (the select agent asks), else the merge
        scores in slots 0 and 1 (the merge agent asks)."""
        a = candidate.sum(-1, keepdim=True)
        pad = torch.cat([merge, torch.zeros_like(sel[..., 2:])], -1)
        return sel * (1.0 - a) + pad * a

    def tensors(self, requires_grad=False):
        torch = _torch()
        return {k: torch.tensor(v, requires_grad=requires_grad and k not in ("mu", "sd"))
                for k, v in self.w.items()}

    def scores(self, x, adj, eligible, current, candidate, emb=None):
        """Numpy, one graph: (select [N], merge [2] with the bias)."""
        torch = _torch()
        if emb is None:
            emb = np.zeros((MAX_NODES, EMBEDDING_DIM), np.float32)
        with torch.no_grad():
            t = [torch.tensor(np.asarray(a, dtype=np.float32))[None]
                 for a in (x, adj, eligible, current, candidate, emb)]
            sel, merge = self.forward(self.tensors(), *t[:5], torch, emb=t[5])
        merge = merge[0].numpy().copy()
        merge[1] += self.new_loop_bias
        return sel[0].numpy(), merge

    def __call__(self, obs):
        """The scores [N] for one observation of the plugin (a mapping with
        node_features, adjacency, eligible, current, candidate and, for a
        network that reads them, node_embeddings): the Python policy over
        pipes, equal to the ONNX model's."""
        shapes = [("node_features", (MAX_NODES, -1)), ("adjacency", (MAX_NODES, MAX_NODES)),
                  ("eligible", (MAX_NODES,)), ("current", (MAX_NODES,)),
                  ("candidate", (MAX_NODES,))]
        if self.embedding_dim:
            shapes.append(("node_embeddings", (MAX_NODES, EMBEDDING_DIM)))
        sel, merge = self.scores(*(np.asarray(obs[k], np.float32).reshape(shape)
                                   for k, shape in shapes))
        cand = np.asarray(obs["candidate"], np.float32).reshape(-1)
        a = np.float32(cand.sum())
        pad = np.zeros(MAX_NODES, np.float32)
        pad[:2] = merge
        return sel * (np.float32(1) - a) + pad * a

    def with_bias(self, bias):
        return GraphPolicy(self.w, bias)

    # ---- persistence and export --------------------------------------------

    def to_dict(self):
        return {"weights": {k: v.tolist() for k, v in self.w.items()},
                "new_loop_bias": self.new_loop_bias, "rounds": ROUNDS,
                "max_nodes": MAX_NODES}

    @classmethod
    def from_dict(cls, d):
        return cls(d["weights"], d.get("new_loop_bias", 0.0))

    def onnx_nodes(self, inputs, out):
        """The graph nodes; ``inputs``: names of (features [N,F], adjacency
        [N,N], eligible [N], current [N], candidate [N] and, for a network
        that reads them, node embeddings [N,300]); ``out``: the name of the
        scores [N]."""
        from ..export import node
        x, adj, elig, cur, cho = inputs[:5]
        N = MAX_NODES
        xin = "xn"
        emb_nodes = []
        if self.embedding_dim:
            xin = "xne"
            emb_nodes = [
                node("Reshape", [inputs[5], "shape_ne"], ["e2"]),
                node("Sub", ["e2", "mu_e"], ["ec"]),
                node("Div", ["ec", "sd_e"], ["en"]),
                node("MatMul", ["en", "P_e"], ["ep"]),
                node("Concat", ["xn", "ep"], ["xne"], axis=1),
            ]
        nodes = [
            node("Reshape", [x, "shape_nf"], ["x2"]),
            node("Mul", ["x2", "x2"], ["xsq"]),
            node("MatMul", ["xsq", "ones_f1"], ["rowsq"]),              # [N,1]
            node("Clip", ["rowsq", "zero", "tiny"], ["rowc"]),
            node("Div", ["rowc", "tiny"], ["valid"]),                   # 1 if any feature != 0
            node("Sub", ["x2", "mu"], ["xc"]),
            node("Div", ["xc", "sd"], ["xn"]),
            *emb_nodes,
            node("Gemm", [xin, "W_in", "b_in"], ["h0a"]),
            node("Tanh", ["h0a"], ["h0b"]),
            node("Mul", ["h0b", "valid"], ["h0"]),
            node("Reshape", [adj, "shape_nn"], ["A"]),
            node("Transpose", ["A"], ["At"], perm=[1, 0]),
        ]
        h = "h0"
        for r in range(ROUNDS):
            p = f"r{r}_"
            nodes += [
                node("MatMul", [h, "W_f"], [p + "hf"]),
                node("MatMul", ["A", p + "hf"], [p + "mf"]),
                node("MatMul", [h, "W_b"], [p + "hb"]),
                node("MatMul", ["At", p + "hb"], [p + "mb"]),
                node("Add", [p + "mf", p + "mb"], [p + "m"]),
                node("MatMul", [h, "U_z"], [p + "zh"]),
                node("Gemm", [p + "m", "V_z", "b_z"], [p + "zm"]),
                node("Add", [p + "zh", p + "zm"], [p + "zs"]),
                node("Sigmoid", [p + "zs"], [p + "z"]),
                node("MatMul", [h, "U_h"], [p + "ch"]),
                node("Gemm", [p + "m", "V_h", "b_h"], [p + "cm"]),
                node("Add", [p + "ch", p + "cm"], [p + "cs"]),
                node("Tanh", [p + "cs"], [p + "c"]),
                node("Sub", [p + "c", h], [p + "d"]),
                node("Mul", [p + "z", p + "d"], [p + "zd"]),
                node("Add", [h, p + "zd"], [p + "hn"]),
                node("Mul", [p + "hn", "valid"], [p + "h"]),
            ]
            h = p + "h"
        nodes += [
            node("Reshape", [cur, "shape_1n"], ["cur"]),
            node("MatMul", ["cur", h], ["cur_sum"]),                    # [1,H]
            node("MatMul", ["cur", "ones_n1"], ["cur_n"]),              # [1,1]
            node("Clip", ["cur_n", "one", "big"], ["cur_nc"]),
            node("Div", ["cur_sum", "cur_nc"], ["ctx"]),
            node("MatMul", [h, "w_sel"], ["s_node"]),                   # [N,1]
            node("MatMul", ["ctx", "w_ctx"], ["s_ctx"]),                # [1,1]
            node("Add", ["s_node", "s_ctx"], ["s_all"]),
            node("Reshape", ["s_all", "shape_n"], ["s_flat"]),
            node("Sub", [elig, "one_n"], ["elig_m1"]),
            node("Mul", ["elig_m1", "pos_big"], ["penalty"]),
            node("Add", ["s_flat", "penalty"], ["sel"]),
            node("Reshape", [cho, "shape_1n"], ["cho"]),
            node("MatMul", ["cho", h], ["nodev"]),                      # [1,H]
            node("Mul", ["nodev", "ctx"], ["prod"]),
            node("Concat", ["nodev", "ctx", "prod"], ["u"], axis=1),
            node("Gemm", ["u", "W_m1", "b_m1"], ["m1"]),
            node("Relu", ["m1"], ["m1r"]),
            node("Gemm", ["m1r", "W_m2", "b_m2b"], ["m2"]),
            node("Reshape", ["m2", "shape_2"], ["merge"]),
            # select scores when no candidate is given, else the merge pair
            node("MatMul", ["cho", "ones_n1"], ["a11"]),
            node("Reshape", ["a11", "shape_1"], ["a"]),
            node("Sub", ["one", "a"], ["not_a"]),
            node("Mul", ["sel", "not_a"], ["sel_part"]),
            node("Concat", ["merge", "zeros_rest"], ["merge_pad"], axis=0),
            node("Mul", ["merge_pad", "a"], ["merge_part"]),
            node("Add", ["sel_part", "merge_part"], [out]),
        ]
        w = self.w
        F = self.features
        b_m2 = w["b_m2"].copy()
        b_m2[1] += self.new_loop_bias
        consts = {k: v for k, v in w.items() if k != "b_m2"}
        if self.embedding_dim:
            consts.update(mu_e=w["mu_e"].reshape(1, EMBEDDING_DIM),
                          sd_e=w["sd_e"].reshape(1, EMBEDDING_DIM))
        consts.update(
            mu=w["mu"].reshape(1, F), sd=w["sd"].reshape(1, F), b_m2b=b_m2,
            ones_f1=np.ones((F, 1)), zero=np.zeros(()), tiny=np.full((), TINY),
            one=np.ones(()), big=np.full((), 1e9), ones_n1=np.ones((N, 1)),
            one_n=np.ones(N), pos_big=np.full(N, -NEG), zeros_rest=np.zeros(N - 2))
        shapes = {"shape_nf": [N, F], "shape_nn": [N, N], "shape_1n": [1, N],
                  "shape_n": [N], "shape_2": [2], "shape_1": [1]}
        if self.embedding_dim:
            shapes["shape_ne"] = [N, EMBEDDING_DIM]
        return nodes, consts, shapes

    def to_onnx(self, path=None):
        """The plugin's model (the contract of
        integrations/llvm/loop_distribution/Protocol.h): inputs
        node_features float32 [N, F], adjacency [N, N], eligible, current,
        candidate [N] (and node_embeddings [N, 300] when the network reads
        them); output scores float32 [N]. Returns the serialized bytes (and
        writes ``path`` if given)."""
        inputs = ("node_features", "adjacency", "eligible", "current", "candidate")
        if self.embedding_dim:
            inputs += ("node_embeddings",)
        from ..export import float32, onnx_model
        N, F = MAX_NODES, self.features
        nodes, consts, shapes = self.onnx_nodes(inputs, "scores")
        constants = {k: float32(v) for k, v in consts.items()}
        constants.update({k: np.asarray(v, dtype=np.int64) for k, v in shapes.items()})
        ins = [(inputs[0], np.float32, [N, F]), (inputs[1], np.float32, [N, N])] + \
            [(n, np.float32, [N]) for n in inputs[2:5]]
        if self.embedding_dim:
            ins.append((inputs[5], np.float32, [N, EMBEDDING_DIM]))
        outs = [("scores", np.float32, [N])]
        return onnx_model("mlbridge_loop_distribution", nodes, ins, outs, constants,
                          producer="mlbridge.train.loop_distribution", path=path)


def fit(graphs, steps, *, hidden=24, epochs=300, lr=0.01, l2=1e-4, seed=0, init=None,
        embedding_dim=0):
    """Imitation: full-batch Adam on the labelled steps of
    :func:`.episodes.imitation_steps` over ``graphs`` (select: the
    log-probability of choosing any node that keeps to the target
    partition; merge: cross-entropy). ``init``: a GraphPolicy to start from
    (its normalisation is kept); else ``embedding_dim`` > 0 makes a network
    that reads the graphs' IR2Vec node embeddings, projected to that many
    dimensions. Returns (GraphPolicy, final losses)."""
    torch = _torch()
    torch.manual_seed(seed)
    pads = [g.padded() for g in graphs]
    if init is None:
        feats = np.concatenate([g.features for g in graphs], 0)
        mu = feats.mean(0)
        sd = np.maximum(feats.std(0), 1e-3)
        mu_e = sd_e = None
        if embedding_dim:
            if any(g.embeddings is None for g in graphs):
                raise ValueError("a network over node_embeddings needs every graph's "
                                 "embeddings")
            embs = np.concatenate([g.embeddings for g in graphs], 0)
            mu_e, sd_e = embs.mean(0), np.maximum(embs.std(0), 1e-3)
        init = GraphPolicy.init(feats.shape[1], hidden, seed=seed, mu=mu, sd=sd,
                                embedding_dim=embedding_dim, mu_e=mu_e, sd_e=sd_e)
    w = init.tensors(requires_grad=True)
    params = [v for k, v in w.items() if v.requires_grad]
    opt = torch.optim.Adam(params, lr=lr, weight_decay=l2)

    def batch(kind):
        sel = [s for s in steps if (s.ok is not None) == (kind == "select")]
        if not sel:
            return None
        t = lambda arrs: torch.tensor(np.stack(arrs))   # noqa: E731
        return (t([pads[s.graph_index][0] for s in sel]), t([pads[s.graph_index][1] for s in sel]),
                t([s.eligible for s in sel]), t([s.current for s in sel]),
                t([s.candidate for s in sel]),
                t([s.ok for s in sel]) if kind == "select" else
                torch.tensor([s.merge for s in sel]),
                t([pads[s.graph_index][2] for s in sel]))

    bs, bm = batch("select"), batch("merge")
    losses = {}
    for _ in range(epochs):
        opt.zero_grad()
        loss = 0.0
        if bs is not None:
            sel, _ = GraphPolicy.forward(w, *bs[:5], torch, emb=bs[6])
            logp = torch.log_softmax(sel, -1)
            good = torch.logsumexp(logp + (bs[5] - 1.0) * -NEG, -1)
            ls = -good.mean()
            loss = loss + ls
            losses["select"] = float(ls)
        if bm is not None:
            _, merge = GraphPolicy.forward(w, *bm[:5], torch, emb=bm[6])
            lm = torch.nn.functional.cross_entropy(merge, bm[5])
            loss = loss + lm
            losses["merge"] = float(lm)
        loss.backward()
        opt.step()
    return GraphPolicy({k: v.detach().numpy() for k, v in w.items()}), losses
