"""activations.mish, regularizers.OrthogonalRegularizer, constraints.RadialConstraint: tf_keras's
values (computed with tf_keras 2.21 and pasted here), NumPy formulas, configs and names."""

from __future__ import annotations

import numpy as np
import pytest

import layerflow as tf

X = np.array(
    [
        [0.1257302165031433, -0.13210485875606537, 0.6404226422309875],
        [0.10490011423826218, -0.5356693863868713, 0.3615950644016266],
        [1.3040000200271606, 0.9470809698104858, -0.7037352323532104],
        [-1.2654215097427368, -0.6232744455337524, 0.04132597893476486],
    ],
    np.float32,
)


def test_mish_values_gradient_and_names():
    x = np.array([-3.0, -1.0, 0.0, 0.5, 2.0, 10.0], np.float32)
    tf_keras = [-0.14564746618, -0.30340149999, 0.0, 0.37524524331, 1.94395899773, 10.0]
    out = tf.keras.activations.mish(tf.constant(x))
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), tf_keras, rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), x * np.tanh(np.log1p(np.exp(x))), rtol=1e-6)
    # far below zero softplus underflows gracefully instead of producing nan
    assert np.isfinite(tf.keras.activations.mish(tf.constant([-200.0, 200.0])).numpy()).all()
    v = tf.Variable(np.float64(0.7))
    with tf.GradientTape() as tape:
        y = tf.keras.activations.mish(v)
    sp = np.log1p(np.exp(0.7))
    expected = np.tanh(sp) + 0.7 * (1 - np.tanh(sp) ** 2) / (1 + np.exp(-0.7))
    assert float(tape.gradient(y, v)) == pytest.approx(expected, rel=1e-9)
    assert tf.keras.activations.get("mish") is tf.keras.activations.mish
    assert tf.keras.activations.serialize(tf.keras.activations.mish) == "mish"
    layer = tf.keras.layers.Dense(2, activation="mish")
    assert layer.get_config()["activation"] == "mish"


def _np_orth(x, factor, mode):
    if mode == "columns":
        x = x.T
    x = x / np.sqrt(np.maximum((x * x).sum(1, keepdims=True), 1e-12))
    p = x @ x.T
    n = len(x)
    return factor * 0.5 * np.abs(p * (1 - np.eye(n))).sum() / (n * (n - 1) / 2)


def test_orthogonal_regularizer_values():
    cols = tf.keras.regularizers.OrthogonalRegularizer(0.1, "columns")
    rows = tf.keras.regularizers.OrthogonalRegularizer()
    assert float(cols(tf.constant(X))) == pytest.approx(0.06872635334730148, rel=1e-5)
    assert float(rows(tf.constant(X))) == pytest.approx(0.004700120072811842, rel=1e-5)
    assert float(rows(X)) == pytest.approx(_np_orth(X.astype(np.float64), 0.01, "rows"), rel=1e-5)
    assert float(cols(X)) == pytest.approx(_np_orth(X.astype(np.float64), 0.1, "columns"), rel=1e-5)
    assert (
        tf.keras.regularizers.orthogonal_regularizer is tf.keras.regularizers.OrthogonalRegularizer
    )


def test_orthogonal_regularizer_errors_config_and_use_in_a_layer():
    with pytest.raises(ValueError, match="mode"):
        tf.keras.regularizers.OrthogonalRegularizer(mode="diagonal")
    with pytest.raises(ValueError, match="rank 2"):
        tf.keras.regularizers.OrthogonalRegularizer()(tf.zeros((2, 2, 2)))
    reg = tf.keras.regularizers.OrthogonalRegularizer(0.5, "columns")
    assert reg.get_config() == {"factor": 0.5, "mode": "columns"}
    back = tf.keras.regularizers.deserialize(tf.keras.regularizers.serialize(reg))
    assert isinstance(back, tf.keras.regularizers.OrthogonalRegularizer)
    assert back.get_config() == reg.get_config()
    assert isinstance(
        tf.keras.regularizers.get("orthogonal_regularizer"),
        tf.keras.regularizers.OrthogonalRegularizer,
    )
    layer = tf.keras.layers.Dense(3, kernel_regularizer=reg)
    layer(tf.ones((1, 4)))
    assert float(layer.losses[0]) == pytest.approx(
        _np_orth(layer.kernel.numpy(), 0.5, "columns"), rel=1e-5
    )
    with tf.GradientTape() as tape:
        loss = reg(layer.kernel)
    grad = tape.gradient(loss, layer.kernel)
    assert grad is not None and np.isfinite(grad.numpy()).all()


# tf_keras 2.21's RadialConstraint()(arange(s*s*6).reshape(s, s, 2, 3))[:, :, 1, 2]
TF_KERAS_RADIAL = {
    2: [[5.0, 5.0], [5.0, 5.0]],
    3: [[29.0, 29.0, 29.0], [29.0, 5.0, 29.0], [29.0, 29.0, 29.0]],
    4: [[95.0] * 4, [95.0, 35.0, 35.0, 95.0], [95.0, 35.0, 35.0, 95.0], [95.0] * 4],
    5: [
        [113.0] * 5,
        [113.0, 77.0, 77.0, 77.0, 113.0],
        [113.0, 77.0, 41.0, 77.0, 113.0],
        [113.0, 77.0, 77.0, 77.0, 113.0],
        [113.0] * 5,
    ],
}


@pytest.mark.parametrize("size", sorted(TF_KERAS_RADIAL))
def test_radial_constraint_matches_tf_keras(size):
    w = np.arange(size * size * 6, dtype=np.float32).reshape(size, size, 2, 3)
    out = tf.keras.constraints.RadialConstraint()(tf.constant(w))
    assert out.shape == w.shape and out.dtype == tf.float32
    np.testing.assert_array_equal(out.numpy()[:, :, 1, 2], TF_KERAS_RADIAL[size])
    # every (channel, filter) slice is treated alike
    for c in range(2):
        for k in range(3):
            ref = np.asarray(TF_KERAS_RADIAL[size]) - w[:, :, 1, 2].min() + w[:, :, c, k].min()
            np.testing.assert_array_equal(out.numpy()[:, :, c, k], ref)


def test_radial_constraint_errors_config_and_conv_use():
    c = tf.keras.constraints.RadialConstraint()
    with pytest.raises(ValueError, match="rank 4"):
        c(tf.zeros((3, 3)))
    with pytest.raises(ValueError, match="square"):
        c(tf.zeros((3, 2, 1, 1)))
    assert c.get_config() == {}
    back = tf.keras.constraints.deserialize(tf.keras.constraints.serialize(c))
    assert isinstance(back, tf.keras.constraints.RadialConstraint)
    assert tf.keras.constraints.radial_constraint is tf.keras.constraints.RadialConstraint
    assert isinstance(
        tf.keras.constraints.get("radial_constraint"), tf.keras.constraints.RadialConstraint
    )
    conv = tf.keras.layers.Conv2D(2, 3, kernel_constraint="radial_constraint")
    model = tf.keras.Sequential([tf.keras.Input((5, 5, 1)), conv])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
    x = np.random.default_rng(0).normal(size=(4, 5, 5, 1)).astype(np.float32)
    model.fit(x, np.ones((4, 3, 3, 2), np.float32), epochs=1, verbose=0)
    k = conv.kernel.numpy()[:, :, 0, 0]
    ring = k[0, 0]
    assert np.all(k[[0, 0, 0, 1, 1, 2, 2, 2], [0, 1, 2, 0, 2, 0, 1, 2]] == ring)
