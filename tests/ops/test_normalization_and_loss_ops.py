"""tf.nn / tf.linalg normalizations and losses, composed from ops: NumPy oracles and gradients."""

import math

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op, check_second_derivative

rng = np.random.default_rng(5)
X = rng.standard_normal((3, 4))


@pytest.mark.parametrize("fn", [tf.math.l2_normalize, tf.nn.l2_normalize, tf.linalg.l2_normalize])
def test_l2_normalize(fn):
    check_op(lambda a: fn(a, axis=1), [X], lambda a: a / np.sqrt((a**2).sum(1, keepdims=True)))
    check_op(fn, [X], lambda a: a / np.sqrt((a**2).sum()))
    check_second_derivative(lambda a: fn(a, axis=0), X)
    np.testing.assert_array_equal(fn(tf.zeros([2])).numpy(), [0.0, 0.0])  # epsilon guards 0
    np.testing.assert_allclose(fn([3.0, 4.0], dim=0).numpy(), [0.6, 0.8])
    with pytest.raises(TypeError, match="float"):
        fn(tf.constant([3, 4]))


def test_linalg_normalize_returns_the_norm_too():
    unit, norm = tf.linalg.normalize(X, axis=1)
    np.testing.assert_allclose(norm.numpy(), np.linalg.norm(X, axis=1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(unit.numpy(), X / norm.numpy(), rtol=1e-6)
    _, n1 = tf.linalg.normalize(X, ord=1)
    np.testing.assert_allclose(n1.numpy().ravel(), [np.abs(X).sum()], rtol=1e-6)


def test_batch_normalization():
    mean, var = X.mean(0), X.var(0)
    offset, scale = rng.standard_normal(4), rng.uniform(0.5, 2.0, 4)

    def ref(x, m, v, o, s):
        return (x - m) / np.sqrt(v + 1e-3) * s + o

    check_op(lambda x, m, v, o, s: tf.nn.batch_normalization(x, m, v, o, s, 1e-3),
             [X, mean, var, offset, scale], ref)  # fmt: skip
    got = tf.nn.batch_normalization(tf.constant(X), mean, var, None, None, 0.0).numpy()
    np.testing.assert_allclose(got, (X - mean) / np.sqrt(var), rtol=1e-5, atol=1e-6)


def test_moments_helpers_round_trip():
    counts, m_ss, v_ss, shift = tf.nn.sufficient_statistics(tf.constant(X), axes=[0], shift=0.5)
    assert float(counts) == 3.0 and float(shift) == 0.5
    np.testing.assert_allclose(m_ss.numpy(), (X - 0.5).sum(0), rtol=1e-5)
    np.testing.assert_allclose(v_ss.numpy(), ((X - 0.5) ** 2).sum(0), rtol=1e-5)
    mean, variance = tf.nn.normalize_moments(counts, m_ss, v_ss, shift)
    np.testing.assert_allclose(mean.numpy(), X.mean(0), rtol=1e-5)
    np.testing.assert_allclose(variance.numpy(), X.var(0), rtol=1e-4, atol=1e-6)
    kept = tf.nn.sufficient_statistics(tf.constant(X), axes=[1], keepdims=True)
    assert kept[1].shape == (3, 1) and kept[3] is None
    check_op(lambda x: tf.nn.normalize_moments(*tf.nn.sufficient_statistics(x, [0])[:3], None)[1],
             [X], lambda x: x.var(0))  # fmt: skip


def test_weighted_moments():
    w = rng.uniform(0.0, 2.0, (3, 4))
    m, v = tf.nn.weighted_moments(tf.constant(X), axes=[0], frequency_weights=tf.constant(w))
    ref_m = (w * X).sum(0) / w.sum(0)
    np.testing.assert_allclose(m.numpy(), ref_m, rtol=1e-5)
    np.testing.assert_allclose(v.numpy(), (w * (X - ref_m) ** 2).sum(0) / w.sum(0), rtol=1e-5)
    m1, v1 = tf.nn.weighted_moments([1.0, 2.0, 4.0], [0], [1.0, 1.0, 2.0], keepdims=True)
    assert m1.shape == (1,) and float(m1[0]) == 2.75 and float(v1[0]) == 1.6875
    zero_m, zero_v = tf.nn.weighted_moments([1.0, 2.0], [0], [0.0, 0.0])
    assert float(zero_m) == 0.0 and float(zero_v) == 0.0  # no NaN when the weights sum to 0
    check_op(lambda x: tf.nn.weighted_moments(x, [1], w)[0], [X],
             lambda x: (w * x).sum(1) / w.sum(1))  # fmt: skip


def test_local_response_normalization():
    x = rng.standard_normal((2, 3, 3, 6))

    def ref(a, r=2, bias=1.0, alpha=0.5, beta=0.75):
        sq = np.pad(a**2, [(0, 0)] * 3 + [(r, r)])
        window = sum(sq[..., k : k + a.shape[-1]] for k in range(2 * r + 1))
        return a / (bias + alpha * window) ** beta

    check_op(lambda a: tf.nn.local_response_normalization(a, 2, 1.0, 0.5, 0.75), [x], ref)
    assert tf.nn.lrn is tf.nn.local_response_normalization
    with pytest.raises(tf.errors.InvalidArgumentError, match="4-dimensional"):
        tf.nn.lrn(tf.ones([2, 3]))


def test_weighted_cross_entropy_with_logits():
    z = X * 4
    y = rng.uniform(0, 1, X.shape)

    def ref(y, z, q=3.0):
        sig = 1 / (1 + np.exp(-z))
        return -(q * y * np.log(sig) + (1 - y) * np.log(1 - sig))

    check_op(lambda y, z: tf.nn.weighted_cross_entropy_with_logits(y, z, 3.0), [y, z], ref)
    big = tf.nn.weighted_cross_entropy_with_logits([1.0, 0.0], [200.0, 200.0], 2.0).numpy()
    np.testing.assert_allclose(big, [0.0, 200.0])  # no overflow
    with pytest.raises(ValueError, match="same shape"):
        tf.nn.weighted_cross_entropy_with_logits([1.0], [1.0, 2.0], 2.0)


def test_log_poisson_loss():
    t = np.array([0.0, 1.0, 3.0, 7.0])
    c = np.array([0.5, 0.1, 1.0, 2.0])
    check_op(lambda t, c: tf.nn.log_poisson_loss(t, c), [t, c], lambda t, c: np.exp(c) - c * t)

    def full(t, c):
        stirling = np.array([v * math.log(v) - v + 0.5 * math.log(2 * math.pi * v) if v > 1
                             else 0.0 for v in t])  # fmt: skip
        return np.exp(c) - c * t + stirling

    check_op(lambda t, c: tf.nn.log_poisson_loss(t, c, compute_full_loss=True), [t, c], full,
             grad=[1])  # fmt: skip
