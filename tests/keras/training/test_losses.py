"""Losses against NumPy references, Keras' reductions, and gradients."""

import numpy as np
import pytest

import layerflow as tf

RNG = np.random.default_rng(0)


def _log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_sparse_ce_from_logits_matches_numpy():
    logits = RNG.standard_normal((6, 5)).astype(np.float32)
    labels = RNG.integers(0, 5, 6)
    ref = -_log_softmax(logits.astype(np.float64))[np.arange(6), labels]
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    np.testing.assert_allclose(float(loss(labels, logits)), ref.mean(), rtol=1e-5)
    per = tf.keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    np.testing.assert_allclose(per.numpy(), ref, rtol=1e-5)


def test_sparse_ce_is_stable_for_huge_logits():
    logits = np.array([[1000.0, -1000.0, 0.0]], np.float32)
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    assert float(loss([0], logits)) == pytest.approx(0.0, abs=1e-6)
    assert float(loss([1], logits)) == pytest.approx(2000.0, rel=1e-6)


def test_sparse_ce_probabilities_and_column_labels():
    probs = np.array([[0.1, 0.7, 0.2], [0.5, 0.25, 0.25]], np.float32)
    loss = tf.keras.losses.SparseCategoricalCrossentropy()
    ref = -(np.log(0.7) + np.log(0.5)) / 2
    np.testing.assert_allclose(float(loss(np.array([[1], [0]]), probs)), ref, rtol=1e-5)


def test_sparse_ce_label_shape_mismatch_is_a_clear_error():
    with pytest.raises(ValueError, match="labels of shape"):
        tf.keras.losses.sparse_categorical_crossentropy([0, 1, 2], np.zeros((2, 3), np.float32))


def test_categorical_ce_and_label_smoothing():
    logits = RNG.standard_normal((4, 3)).astype(np.float32)
    onehot = np.eye(3, dtype=np.float32)[[0, 2, 1, 1]]
    ref = -(onehot * _log_softmax(logits.astype(np.float64))).sum(-1).mean()
    cce = tf.keras.losses.CategoricalCrossentropy(from_logits=True)
    np.testing.assert_allclose(float(cce(onehot, logits)), ref, rtol=1e-5)
    smooth = onehot * 0.9 + 0.1 / 3
    ref_s = -(smooth * _log_softmax(logits.astype(np.float64))).sum(-1).mean()
    cce_s = tf.keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)
    np.testing.assert_allclose(float(cce_s(onehot, logits)), ref_s, rtol=1e-5)
    probs = np.exp(_log_softmax(logits))
    np.testing.assert_allclose(
        float(tf.keras.losses.CategoricalCrossentropy()(onehot, probs)), ref, rtol=1e-4
    )


def test_binary_ce_logits_and_probabilities():
    logits = RNG.standard_normal((5, 2)).astype(np.float32)
    y = RNG.integers(0, 2, (5, 2)).astype(np.float32)
    p = 1 / (1 + np.exp(-logits.astype(np.float64)))
    ref = -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean()
    bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
    np.testing.assert_allclose(float(bce(y, logits)), ref, rtol=1e-5)
    np.testing.assert_allclose(
        float(tf.keras.losses.BinaryCrossentropy()(y, p.astype(np.float32))), ref, rtol=1e-4
    )


def test_regression_losses():
    t = RNG.standard_normal((4, 3)).astype(np.float32)
    p = RNG.standard_normal((4, 3)).astype(np.float32)
    d = p - t
    np.testing.assert_allclose(
        float(tf.keras.losses.MeanSquaredError()(t, p)), (d**2).mean(), rtol=1e-5
    )
    np.testing.assert_allclose(
        float(tf.keras.losses.MeanAbsoluteError()(t, p)), np.abs(d).mean(), rtol=1e-5
    )
    a = np.abs(d)
    hub = np.where(a <= 0.5, 0.5 * a**2, 0.5 * (a - 0.25)).mean()
    np.testing.assert_allclose(float(tf.keras.losses.Huber(delta=0.5)(t, p)), hub, rtol=1e-5)
    pt = np.array([[0.2, 0.8]], np.float32)
    pp = np.array([[0.5, 0.5]], np.float32)
    kl = (pt * np.log(pt / pp)).sum()
    np.testing.assert_allclose(float(tf.keras.losses.KLDivergence()(pt, pp)), kl, rtol=1e-5)


def test_reductions_and_sample_weight():
    t = np.array([[0.0], [1.0], [2.0]], np.float32)
    p = np.array([[1.0], [1.0], [4.0]], np.float32)  # squared errors 1, 0, 4
    R = tf.keras.losses.Reduction
    assert tf.keras.losses.MeanSquaredError(reduction=R.NONE)(t, p).numpy().tolist() == [1, 0, 4]
    assert float(tf.keras.losses.MeanSquaredError(reduction=R.SUM)(t, p)) == 5.0
    mse = tf.keras.losses.MeanSquaredError()
    assert float(mse(t, p)) == pytest.approx(5 / 3)
    # Keras: weighted sum over the number of elements (not over the weights' sum).
    assert float(mse(t, p, sample_weight=[1.0, 1.0, 0.5])) == pytest.approx(3 / 3)
    with pytest.raises(ValueError, match="Invalid Reduction"):
        tf.keras.losses.MeanSquaredError(reduction="mean")


def test_sparse_ce_gradient_is_softmax_minus_onehot():
    logits = tf.Variable(RNG.standard_normal((3, 4)).astype(np.float32))
    labels = np.array([0, 3, 1])
    with tf.GradientTape() as tape:
        loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)(labels, logits)
    g = tape.gradient(loss, logits).numpy()
    sm = np.exp(_log_softmax(logits.numpy()))
    np.testing.assert_allclose(g, (sm - np.eye(4)[labels]) / 3, atol=1e-6)


def test_get_and_custom_loss_subclass():
    assert tf.keras.losses.get("mse") is tf.keras.losses.mean_squared_error
    assert isinstance(tf.keras.losses.get("Huber"), tf.keras.losses.Huber)
    with pytest.raises(ValueError, match="Unknown loss"):
        tf.keras.losses.get("nope")

    class Double(tf.keras.losses.Loss):
        def call(self, y_true, y_pred):
            return 2.0 * tf.reduce_mean(y_pred - y_true, axis=-1)

    assert float(Double()([[1.0, 1.0]], [[2.0, 3.0]])) == 3.0
    assert tf.losses.SparseCategoricalCrossentropy is tf.keras.losses.SparseCategoricalCrossentropy
