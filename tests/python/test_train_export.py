"""The one ONNX exporter of small networks (mlbridge.train.export) writes,
from the shipped weights, exactly the graphs of the shipped models (the
models are not retrained: their behaviour must not change), all with one
opset and IR version and as serialized bytes."""

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper

from mlbridge.llvm.plugins import NUM_OBSERVATIONS, PolicyNet
from mlbridge.train import export
from mlbridge.train.inliner import InlinePolicy
from mlbridge.train.mlir_unroll.trainer import export_onnx as export_unroll
from mlbridge.train.phase_order import PhasePolicy

MODELS = Path(__file__).resolve().parents[2] / "models"


def _same_graph(shipped_path, data):
    assert isinstance(data, bytes)
    new = onnx.load_from_string(data)
    assert new.ir_version == export.IR_VERSION
    assert [(o.domain, o.version) for o in new.opset_import] == [("", export.OPSET)]
    assert new.graph == onnx.load(str(shipped_path)).graph


def test_the_inliner_policy_exports_the_shipped_graph():
    policy = InlinePolicy.load(MODELS / "plugins" / "inliner_policy.json")
    _same_graph(MODELS / "plugins" / "inliner_policy.onnx", policy.to_onnx())


def test_the_phase_order_policy_exports_the_shipped_graph():
    d = json.loads((MODELS / "plugins" / "phase_order_policy.json").read_text())
    _same_graph(MODELS / "plugins" / "phase_order_policy.onnx", PhasePolicy.from_dict(d).to_onnx())


def test_the_unroll_policy_exports_the_shipped_graph(tmp_path):
    shipped = MODELS / "mlir" / "unroll_policy.onnx"
    w = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(shipped)).graph.initializer}
    data = export_unroll((w["w1"], w["b1"], w["w2"], w["b2"]), tmp_path / "u.onnx")
    _same_graph(shipped, data)
    assert (tmp_path / "u.onnx").read_bytes() == data


def test_the_phase_order_agent_export_computes_what_the_network_computes():
    torch.manual_seed(0)
    net = PolicyNet(hidden=8)
    sess = ort.InferenceSession(net.export_onnx(), providers=["CPUExecutionProvider"])
    x = np.abs(np.random.default_rng(0).normal(0, 100, (1, NUM_OBSERVATIONS))).astype(np.float32)
    got = sess.run(None, {"observation": x})[0]
    np.testing.assert_allclose(got, net(torch.from_numpy(x)).detach().numpy(), atol=1e-5)


def test_a_phase_order_margin_lowers_one_actions_predicted_gain_in_the_exported_model():
    """with_margin (the IR outliner's price) changes that action's score in
    the ONNX model the plugin runs by exactly the margin, no other."""
    rng = np.random.default_rng(1)
    n = PhasePolicy.from_dict(json.loads((MODELS / "plugins" / "phase_order_policy.json")
                                         .read_text())).W2.shape[0]
    policy = PhasePolicy(rng.normal(size=(4, NUM_OBSERVATIONS)), rng.normal(size=4),
                         rng.normal(size=(n, 4)), rng.normal(size=n), threshold=0.25)
    x = np.abs(rng.normal(0, 100, (1, NUM_OBSERVATIONS))).astype(np.float32)

    def scores(p):
        sess = ort.InferenceSession(p.to_onnx(), providers=["CPUExecutionProvider"])
        return sess.run(None, {"observation": x})[0][0]
    before, after = scores(policy), scores(policy.with_margin(3, 0.7))
    np.testing.assert_allclose(before[3] - after[3], 0.7, atol=1e-5)
    np.testing.assert_allclose(np.delete(before, 3), np.delete(after, 3), atol=1e-6)
