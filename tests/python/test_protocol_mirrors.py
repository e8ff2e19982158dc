"""The Python side of every in-tree problem speaks the protocol its plugin
includes (the ``.def`` files, read by mlbridge.llvm.plugins): every input
of the models the trainers export is a feature the plugin sends, with the
plugin's shape, and the output is the plugin's advice."""

import numpy as np
import onnx
import pytest


def _io(model_bytes):
    m = onnx.load_from_string(model_bytes)
    dims = lambda v: tuple(d.dim_value if d.HasField("dim_value") else -1   # noqa: E731
                           for d in v.type.tensor_type.shape.dim)
    return ({v.name: dims(v) for v in m.graph.input},
            {v.name: dims(v) for v in m.graph.output})


def test_loop_distribution_models_take_the_plugins_tensors():
    from mlbridge.llvm.plugins import loop_distribution as plugin
    from mlbridge.train.loop_distribution.policy import EMBEDDING_DIM, MAX_NODES, GraphPolicy
    assert (MAX_NODES, EMBEDDING_DIM) == (plugin.MAX_NODES, plugin.EMBEDDING_DIM)
    sent = {k: shape for k, (_, shape) in plugin.FEATURES.items()}
    for dims in (0, 8):
        policy = GraphPolicy.init(len(plugin.NODE_FEATURES), seed=1, embedding_dim=dims)
        inputs, outputs = _io(policy.to_onnx())
        assert inputs and set(inputs) <= set(sent), set(inputs) - set(sent)
        assert ("node_embeddings" in inputs) == bool(dims)
        for name, shape in inputs.items():
            assert shape == tuple(sent[name]), name
        assert outputs == {plugin.ADVICE[0]: tuple(plugin.ADVICE[2])}


def test_register_allocation_models_take_the_plugins_tensors():
    from mlbridge.llvm.plugins import regalloc as plugin
    from mlbridge.train.regalloc import allocator
    assert dict(allocator.INPUTS) == {k: tuple(v) for k, v in plugin.FEATURES.items()}
    assert list(dict(allocator.INPUTS)) == list(plugin.FEATURES)   # the plugin's order
    assert (allocator.NODE_FEATURES, allocator.REG_FEATURES, allocator.NUM_ACTIONS) == \
        (len(plugin.NODE_FEATURES), len(plugin.REGISTER_FEATURES), len(plugin.ACTIONS))
    inputs, outputs = _io(allocator.AllocatorPolicy(
        np.random.default_rng(0).standard_normal(allocator.AllocatorPolicy.size)).to_onnx())
    assert inputs == dict(allocator.INPUTS)
    # in-process models give float scores, one per choice at least, of which
    # the plugin takes the legal argmax (RegAllocProtocol.h)
    (name, shape), = outputs.items()
    longest = max(plugin.MAX_NODES, plugin.MAX_REGS, len(plugin.ACTIONS))
    assert shape[0] == 1 and shape[-1] >= longest, (name, shape)


@pytest.mark.parametrize("module,protocol", [
    ("mlbridge.train.inliner.policy", "mlbridge.llvm.plugins.inliner"),
])
def test_size_models_read_only_features_the_plugin_sends(module, protocol):
    """The inliner's network takes each feature it reads as float32 [1, 1]
    (the plugin's binding converts its int64 [1]); its names must be sent."""
    import importlib
    proto = importlib.import_module(protocol).PROTOCOL
    sent = {s.name for s in proto.features + proto.optional_features}
    from mlbridge.train.inliner.policy import MODEL_FEATURES
    assert set(MODEL_FEATURES) <= sent, set(MODEL_FEATURES) - sent
