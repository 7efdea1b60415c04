"""Make the tf_keras whole-model HDF5 fixture that test_h5_model.py loads (run with the peers'
Python: `$LAYERFLOW_PEERS tests/keras/saving/make_h5_fixture.py`). Not part of the test run."""

import pathlib

import numpy as np
import tensorflow as tf
import tf_keras as keras

HERE = pathlib.Path(__file__).parent / "fixtures"
rng = np.random.default_rng(7)
L = keras.layers

tokens = keras.Input((5,), dtype="int32", name="tokens")
extra = keras.Input((3,), name="extra")
h = L.Embedding(12, 4, mask_zero=True, name="emb")(tokens)
h = L.LSTM(6, name="lstm")(h)
head = keras.Sequential(
    [L.Dense(4, activation="relu", input_shape=(9,)), L.BatchNormalization()], name="head"
)
joined = L.Concatenate(name="join")([h, tf.nn.relu(extra * 2.0)])
out = L.Dense(2, activation="softmax", name="out")(head(joined))
model = keras.Model([tokens, extra], out, name="tfk_model")
model.compile(
    optimizer=keras.optimizers.Adam(0.01),
    loss="sparse_categorical_crossentropy",
    metrics=["accuracy"],
)
x_tokens = rng.integers(0, 12, (6, 5)).astype("int32")
x_tokens[:, 3:] = 0
x_extra = rng.normal(size=(6, 3)).astype("float32")
model.fit([x_tokens, x_extra], rng.integers(0, 2, 6), epochs=2, verbose=0)
model.save(HERE / "tf_keras_model.h5")
np.savez(
    HERE / "tf_keras_model_io.npz",
    tokens=x_tokens,
    extra=x_extra,
    expected=model.predict([x_tokens, x_extra], verbose=0),
)
