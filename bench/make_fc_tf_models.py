"""Writes mlbridge-bench's layer as TensorFlow SavedModels for XLA AOT.

    python bench/make_fc_tf_models.py DIR N...   writes DIR/fc_<N>/ per size

Each model is y[1] = x[N] . W[:N] + 0.5 with W = linspace(-1, 1, 50000)
(float32), the numbers of bench_peer.py and make_fc_model.py, as a constant
of the graph (no variables: nothing for the AOT compiler to freeze).
Signature serving_default: input "x" float32[N], output "y" float32[1].
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

MAX_N = 50000


class Layer(tf.Module):
    def __init__(self, n):
        super().__init__()
        self.w = np.linspace(-1.0, 1.0, MAX_N, dtype=np.float32)[:n]
        self.serve = tf.function(self._serve, input_signature=[
            tf.TensorSpec([n], tf.float32, name="x")])

    def _serve(self, x):
        y = tf.tensordot(x, tf.constant(self.w), axes=1) + tf.constant(0.5, tf.float32)
        return {"y": tf.reshape(y, [1])}


def main():
    out_dir = sys.argv[1]
    for n in map(int, sys.argv[2:]):
        layer = Layer(n)
        tf.saved_model.save(layer, os.path.join(out_dir, f"fc_{n}"),
                            signatures={"serving_default": layer.serve})


if __name__ == "__main__":
    main()
