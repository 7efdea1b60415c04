"""The seed's "read and write" part as written: save_weights('mlp.params'), an unbuilt clone."""

import numpy as np
import pytest

import layerflow as tf


class MLP(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.flatten = tf.keras.layers.Flatten()
        self.hidden = tf.keras.layers.Dense(units=256, activation=tf.nn.relu)
        self.out = tf.keras.layers.Dense(units=10)

    def call(self, inputs):
        x = self.flatten(inputs)
        x = self.hidden(x)
        return self.out(x)


def test_seed_mlp_params_round_trip_into_unbuilt_clone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    net = MLP()
    X = tf.random.uniform((2, 20))
    Y = net(X)
    net.save_weights("mlp.params")
    clone = MLP()
    status = clone.load_weights("mlp.params")
    Y_clone = clone(X)
    result = Y_clone == Y
    assert result.shape == (2, 10) and bool(np.all(result.numpy()))
    status.assert_consumed()
    from safetensors.numpy import load_file

    assert sorted(load_file("mlp.params")) == [
        "hidden/bias", "hidden/kernel", "out/bias", "out/kernel",
    ]  # fmt: skip


def test_sequential_keys_and_built_mismatch_message(tmp_path):
    net = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(8),
                               tf.keras.layers.Dense(3)])  # fmt: skip
    X = tf.random.uniform((4, 6))
    Y = net(X)
    path = str(tmp_path / "seq.params")
    net.save_weights(path)
    clone = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(8),
                                 tf.keras.layers.Dense(3)])  # fmt: skip
    clone.load_weights(path)
    np.testing.assert_array_equal(clone(X).numpy(), Y.numpy())
    other = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(5),
                                 tf.keras.layers.Dense(3)])  # fmt: skip
    other(X)
    before = other.get_weights()
    with pytest.raises(ValueError, match=r"layers/1/kernel.*\(6, 5\).*\(6, 8\)"):
        other.load_weights(path)
    for a, b in zip(before, other.get_weights()):
        np.testing.assert_array_equal(a, b)
