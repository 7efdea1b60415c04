"""keras.Input(sparse=True) feeding Dense: a SparseTensor multiplied without densifying."""

import numpy as np

import layerflow as tf
from layerflow._src.ops import sparse_ops


def _batch(rng, rows=6, cols=5):
    dense = rng.standard_normal((rows, cols)).astype(np.float32)
    dense[rng.random((rows, cols)) < 0.6] = 0.0
    return tf.sparse.from_dense(dense), dense


def test_dense_layer_on_a_sparse_tensor_matches_the_dense_input(monkeypatch):
    rng = np.random.default_rng(3)
    st, dense = _batch(rng)
    layer = tf.keras.layers.Dense(4, activation="relu")
    expect = layer(dense).numpy()

    def no_densify(*args, **kwargs):
        raise AssertionError("the sparse input was densified")

    monkeypatch.setattr(sparse_ops, "to_dense", no_densify)
    np.testing.assert_allclose(layer(st), expect, rtol=1e-5, atol=1e-6)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(st) ** 2)
    g_sparse = tape.gradient(loss, layer.trainable_variables)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(dense) ** 2)
    g_dense = tape.gradient(loss, layer.trainable_variables)
    for a, b in zip(g_sparse, g_dense):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_functional_model_with_sparse_input_trains_and_keeps_its_config():
    rng = np.random.default_rng(4)
    x = tf.keras.Input(shape=(5,), sparse=True)
    y = tf.keras.layers.Dense(1)(x)
    model = tf.keras.Model(x, y)
    assert model.get_config()["layers"][0]["config"]["sparse"] is True
    clone = tf.keras.Model.from_config(model.get_config())
    assert clone.layers[0].sparse is True
    st, dense = _batch(rng, rows=32)
    target = dense @ np.arange(1.0, 6.0, dtype=np.float32)[:, None]
    opt = tf.keras.optimizers.SGD(0.1)
    first = None
    for _ in range(200):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(st) - target) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        first = float(loss) if first is None else first
    assert float(loss) < 0.01 * first


def test_ragged_input_is_accepted():
    # Ragged inputs are supported now (tests/keras/layers/test_ragged_inputs.py).
    x = tf.keras.Input(shape=(None,), ragged=True)
    assert x.node.layer.get_config()["ragged"] is True
