"""Builds the TensorFlow SavedModels the TF-AOT runner is tested with.

Run by the build (src/tf/CMakeLists.txt) with the TensorFlow virtualenv:

    .venv-tf/bin/python tools/models/tf_saved_models.py --out build/tf_aot/models

Writes, for each model NAME, a SavedModel directory NAME/ (signature
"serving_default") and NAME.ref: a few random inputs and TensorFlow's own
outputs for them, which tests/cpp/tf compares the compiled model against.

Models (Keras layers, deterministic weights):
  policy          the project's own policy MLP with several inputs and
                  outputs of several dtypes:
                    observation float32[1,8], action_mask float32[1,4],
                    step int64[] (a scalar)
                  -> logits float32[1,4], action int64[1] (the best
                     unmasked action), value float32[1,1]
                  Weights from a fixed seed.
  mlp_300_64_15   the paper's latency MLP, x float32[1,300] -> scores
                  float32[1,15] (ReLU), with the weights of
                  models/mlp_300_64_15.npz (the same network as the ONNX
                  model next to it; bench/tf_latency.cpp compares them).
  rl_pass_agent,  the agents of examples/rl: obs float32[1,8] -> scores
  rl_factor_agent float32[1,6] / [1,3] (Tanh), weights from models/*.npz.

Models whose .npz is absent are skipped (only "policy" is always built).

Also written: bad_dynamic_shape/, a SavedModel whose input has an unknown
batch dimension, which the AOT build step must refuse with a clear message
(tests/e2e/test_tf_aot.py).
"""

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402


def dense(units, kernel, bias, activation=None):
    """A Keras Dense layer with given weights (PyTorch stores [out, in])."""
    layer = keras.layers.Dense(units, activation=activation)
    layer.build((None, kernel.shape[1]))
    layer.set_weights([kernel.T.astype(np.float32), bias.astype(np.float32)])
    return layer


class Policy:
    """The project's own policy network (see the module docstring)."""

    def __init__(self):
        keras.utils.set_random_seed(20240301)
        self.body = keras.Sequential([
            keras.Input((8,)),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(32, activation="tanh"),
        ])
        self.logits_head = keras.layers.Dense(4)
        self.value_head = keras.layers.Dense(1)
        self.logits_head.build((None, 32))
        self.value_head.build((None, 32))

        self.layers = [self.body, self.logits_head, self.value_head]
        self.signature = [
            tf.TensorSpec([1, 8], tf.float32, name="observation"),
            tf.TensorSpec([1, 4], tf.float32, name="action_mask"),
            tf.TensorSpec([], tf.int64, name="step"),
        ]

    def serve(self, observation, action_mask, step):
        h = self.body(observation)
        logits = self.logits_head(h)
        masked = tf.where(action_mask > 0.5, logits,
                          tf.fill(tf.shape(logits), -np.inf))
        action = tf.argmax(masked, axis=1, output_type=tf.int64)
        decay = tf.pow(tf.constant(0.99, tf.float32), tf.cast(step, tf.float32))
        return {"logits": logits, "action": action,
                "value": self.value_head(h) * decay}

    @staticmethod
    def random_inputs(rng):
        mask = (rng.random((1, 4)) < 0.7).astype(np.float32)
        mask[0, rng.integers(4)] = 1.0  # at least one legal action
        return {"observation": rng.standard_normal((1, 8)).astype(np.float32),
                "action_mask": mask,
                "step": np.int64(rng.integers(0, 50))}


class NpzMlp:
    """in -> hidden -> out from a PyTorch state_dict saved as .npz."""

    def __init__(self, npz, prefix1, prefix2, activation, in_name, out_name):
        with np.load(npz) as d:
            w1, b1 = d[prefix1 + ".weight"], d[prefix1 + ".bias"]
            w2, b2 = d[prefix2 + ".weight"], d[prefix2 + ".bias"]
        self.n_in = w1.shape[1]
        self.net = keras.Sequential([
            keras.Input((self.n_in,)),
            dense(w1.shape[0], w1, b1, activation),
            dense(w2.shape[0], w2, b2),
        ])
        self.in_name, self.out_name = in_name, out_name
        self.layers = [self.net]
        self.signature = [tf.TensorSpec([1, self.n_in], tf.float32,
                                        name=in_name)]

    def serve(self, x):
        return {self.out_name: self.net(x)}

    def random_inputs(self, rng):
        return {self.in_name:
                rng.standard_normal((1, self.n_in)).astype(np.float32)}


DTYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double",
          np.dtype(np.int32): "int32_t", np.dtype(np.int64): "int64_t",
          np.dtype(np.bool_): "bool"}


def tensor_line(kind, name, value):
    value = np.asarray(value)
    dims = ",".join(str(d) for d in value.shape) or "1"
    flat = value.reshape(-1)
    if value.dtype.kind == "f":
        text = " ".join(repr(float(v)) for v in flat)
    else:
        text = " ".join(str(int(v)) for v in flat)
    return f"{kind} {name} {DTYPES[value.dtype]} {dims} {text}\n"


def write_model(name, module, out_dir, cases, seed):
    path = os.path.join(out_dir, name)
    # Keras's own SavedModel export (a tf.Module holding Keras 3 layers
    # saves variables that the AOT compiler's freezing step cannot find).
    archive = keras.export.ExportArchive()
    for layer in module.layers:
        archive.track(layer)
    archive.add_endpoint(name="serving_default", fn=module.serve,
                         input_signature=module.signature)
    archive.write_out(path, verbose=False)
    # Reference outputs come from the saved signature itself: exactly the
    # graph the AOT compiler sees.
    fn = tf.saved_model.load(path).signatures["serving_default"]
    rng = np.random.default_rng(seed)
    with open(os.path.join(out_dir, name + ".ref"), "w") as f:
        f.write(f"# {name}: random inputs and TensorFlow {tf.__version__}'s "
                "outputs (tools/models/tf_saved_models.py)\n")
        for _ in range(cases):
            inputs = module.random_inputs(rng)
            outputs = fn(**{k: tf.constant(v) for k, v in inputs.items()})
            f.write("case\n")
            for k in sorted(inputs):
                f.write(tensor_line("input", k, inputs[k]))
            for k in sorted(outputs):
                f.write(tensor_line("output", k, outputs[k].numpy()))
            f.write("end\n")


class DynamicShape(tf.Module):
    """x float32[None, 4] -> y: not compilable ahead of time."""

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32,
                                                name="x")])
    def serve(self, x):
        return {"y": x * 2.0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--npz-dir",
                    default=os.path.join(os.path.dirname(__file__), "..", "..", "models"),
                    help="where the .npz weights are (default: models/)")
    ap.add_argument("--cases", type=int, default=8)
    ap.add_argument("--only", nargs="*", help="build only these models")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    builders = {"policy": Policy}
    for name, p1, p2, act, i, o in [
            ("mlp_300_64_15", "fc1", "fc2", "relu", "x", "scores"),
            ("rl_pass_agent", "body.0", "body.2", "tanh", "obs", "scores"),
            ("rl_factor_agent", "body.0", "body.2", "tanh", "obs", "scores")]:
        npz = os.path.join(args.npz_dir, name + ".npz")
        if os.path.exists(npz):
            builders[name] = (lambda npz=npz, p1=p1, p2=p2, act=act, i=i, o=o:
                              NpzMlp(npz, p1, p2, act, i, o))
    for seed, (name, make) in enumerate(sorted(builders.items())):
        if args.only and name not in args.only:
            continue
        write_model(name, make(), args.out, args.cases, seed)
    if not args.only or "bad_dynamic_shape" in args.only:
        bad = DynamicShape()
        tf.saved_model.save(bad, os.path.join(args.out, "bad_dynamic_shape"),
                            signatures={"serving_default": bad.serve})
    return 0


if __name__ == "__main__":
    sys.exit(main())
