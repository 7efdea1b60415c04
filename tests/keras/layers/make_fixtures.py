"""Regenerate `fixtures/` with REAL tf_keras and Keras 3 (not layerflow). Run with the peers'
Python, which has TensorFlow 2.21, tf_keras and Keras 3:

    /work/peers/bin/python tests/keras/layers/make_fixtures.py

Writes `keras2_layers.npz` (for every case of `keras_cases.py`: the weights tf_keras created and
its output, keys `<id>/w<i>`, `<id>/y`), and `keras3_mha.weights.h5` / `keras3_mha_y.npy`: a
Keras 3 functional model (MultiHeadAttention self-attention, then LayerNormalization) saved with
`save_weights`, and its output on `keras3_mha_x.npy`.
"""

import os
import pathlib
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import keras  # noqa: E402
import keras_cases  # noqa: E402
import tf_keras  # noqa: E402


def keras2_layers() -> None:
    arrays = {}
    for cid, name, kwargs, inputs, call_kwargs in keras_cases.cases():
        layer = getattr(tf_keras.layers, name)(**kwargs)
        args, positional = keras_cases.call_args(name, inputs)
        y = layer(*args, **call_kwargs) if positional else layer(args[0], **call_kwargs)
        for i, w in enumerate(layer.get_weights()):
            arrays[f"{cid}/w{i}"] = w
        arrays[f"{cid}/y"] = np.asarray(y)
    np.savez(HERE / "fixtures" / "keras2_layers.npz", **arrays)


def keras3_mha() -> None:
    keras.utils.set_random_seed(3)
    x = np.random.default_rng(2).standard_normal((2, 5, 8)).astype("float32")
    inp = keras.Input((5, 8))
    h = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)(inp, inp)
    out = keras.layers.LayerNormalization()(h)
    model = keras.Model(inp, out)
    model.save_weights(HERE / "fixtures" / "keras3_mha.weights.h5")
    np.save(HERE / "fixtures" / "keras3_mha_x.npy", x)
    np.save(HERE / "fixtures" / "keras3_mha_y.npy", np.asarray(model(x)))


if __name__ == "__main__":
    keras2_layers()
    keras3_mha()
