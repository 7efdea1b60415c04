"""Regenerate the Keras 3 fixture files in `fixtures/` with REAL Keras (not layerflow).

Run with the peers' Python, which has TensorFlow 2.21 and Keras 3:

    KERAS_BACKEND=tensorflow /work/peers/bin/python tests/saving/make_fixtures.py

Writes, for a fixed input `x.npy`:
- `keras_mlp.weights.h5` / `keras_mlp_y.npy`: a Sequential MLP (Dense 6 relu, Dense 3);
- `keras_sub.weights.h5` / `keras_sub_y.npy`: a subclassed model with a nested layer that
  holds a named Dense and a list of Dense layers (the `container` naming of Keras 3);
- `keras_mlp.keras` / `keras_mlp_keras_y.npy`: the compiled MLP saved whole (`model.save`).
"""

import os
import pathlib

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent / "fixtures"


class Block(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = keras.layers.Dense(5, activation="tanh")
        self.stack = [keras.layers.Dense(5, activation="relu"), keras.layers.Dense(4)]

    def call(self, x):
        x = self.hidden(x)
        for layer in self.stack:
            x = layer(x)
        return x


class Net(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.block = Block()
        self.head = keras.layers.Dense(2)

    def call(self, x):
        return self.head(self.block(x))


def keras_mlp():
    return keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(6, activation="relu"), keras.layers.Dense(3)]
    )


def main():
    HERE.mkdir(exist_ok=True)
    keras.utils.set_random_seed(1234)
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    np.save(HERE / "x.npy", x)

    mlp = keras_mlp()
    # Non-zero biases so a bias that fails to load shows in the outputs.
    for layer in mlp.layers:
        layer.bias.assign(np.linspace(-0.5, 0.5, layer.bias.shape[0]).astype(np.float32))
    mlp.save_weights(HERE / "keras_mlp.weights.h5")
    np.save(HERE / "keras_mlp_y.npy", np.asarray(mlp(x)))

    net = Net()
    net(x)
    for v in net.weights:
        if len(v.shape) == 1:
            v.assign(np.linspace(-0.3, 0.3, v.shape[0]).astype(np.float32))
    net.save_weights(HERE / "keras_sub.weights.h5")
    np.save(HERE / "keras_sub_y.npy", np.asarray(net(x)))

    mlp.compile(optimizer="adam", loss="mse", metrics=["mae"])
    mlp.save(HERE / "keras_mlp.keras")
    np.save(HERE / "keras_mlp_keras_y.npy", np.asarray(mlp(x)))
    print("wrote", sorted(p.name for p in HERE.iterdir()))


if __name__ == "__main__":
    main()
