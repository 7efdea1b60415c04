"""tf.nn: activations, softmax family, fused cross-entropies, dropout, moments, bias_add."""

import math

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op, check_second_derivative

rng = np.random.default_rng(7)
Z = rng.uniform(-3, 3, (4, 5))
Z[0, 0] = 0.3  # keep kinks (0, 6) away from the finite-difference step
LABELS = np.array([1, 0, 4, 2])


def _softmax(a, axis=-1):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


SELU_SCALE, SELU_ALPHA = 1.0507009873554805, 1.6732632423543772  # TF's documented constants

ACTIVATIONS = [
    (tf.nn.relu, lambda a: np.maximum(a, 0)),
    (tf.nn.relu6, lambda a: np.clip(a, 0, 6)),
    (tf.nn.leaky_relu, lambda a: np.where(a > 0, a, 0.2 * a)),
    (tf.nn.elu, lambda a: np.where(a > 0, a, np.expm1(a))),
    (tf.nn.selu, lambda a: SELU_SCALE * np.where(a > 0, a, SELU_ALPHA * np.expm1(a))),
    (tf.nn.gelu, lambda a: 0.5 * a * (1 + np.vectorize(math.erf)(a / math.sqrt(2)))),
    (lambda t: tf.nn.gelu(t, approximate=True),
     lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a**3)))),
    (tf.nn.silu, lambda a: a / (1 + np.exp(-a))),
    (tf.nn.softplus, lambda a: np.log1p(np.exp(a))),
    (tf.nn.softsign, lambda a: a / (1 + np.abs(a))),
    (tf.nn.softmax, _softmax),
    (lambda t: tf.nn.softmax(t, axis=0), lambda a: _softmax(a, 0)),
    (tf.nn.log_softmax, lambda a: np.log(_softmax(a))),
    (tf.nn.l2_loss, lambda a: np.sum(a * a) / 2),
]  # fmt: skip


@pytest.mark.parametrize("fn,ref", ACTIVATIONS)
def test_activations(fn, ref):
    check_op(fn, [Z], ref)


def test_softmax_is_stable_for_huge_logits():
    x = tf.constant([[1000.0, 0.0], [-1000.0, 0.0]])
    np.testing.assert_allclose(tf.nn.softmax(x).numpy(), [[1, 0], [0, 1]])
    assert np.isfinite(tf.nn.log_softmax(x).numpy()).all()


def test_sparse_softmax_cross_entropy():
    ref = -np.log(_softmax(Z))[np.arange(4), LABELS]
    check_op(lambda t: tf.nn.sparse_softmax_cross_entropy_with_logits(LABELS, t), [Z],
             lambda a: -np.log(_softmax(a))[np.arange(4), LABELS])  # fmt: skip
    big = tf.constant([[1e4, 0.0]])
    assert float(tf.nn.sparse_softmax_cross_entropy_with_logits([1], big)[0]) == pytest.approx(1e4)
    assert ref.shape == (4,)


def test_sparse_softmax_cross_entropy_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="label value of 5.*\\[0, 5\\)"):
        tf.nn.sparse_softmax_cross_entropy_with_logits([5, 0, 0, 0], Z)
    with pytest.raises(TypeError, match="labels must be int32 or int64"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(np.zeros(4), Z)


def test_softmax_cross_entropy_gradients_for_logits_and_labels():
    labels = _softmax(rng.standard_normal((4, 5)))
    check_op(lambda lab, t: tf.nn.softmax_cross_entropy_with_logits(lab, t), [labels, Z],
             lambda lab, a: -(lab * np.log(_softmax(a))).sum(-1))  # fmt: skip
    check_op(lambda lab, t: tf.nn.softmax_cross_entropy_with_logits(lab, t, axis=0),
             [labels, Z], lambda lab, a: -(lab * np.log(_softmax(a, 0))).sum(0))  # fmt: skip


def test_sigmoid_cross_entropy():
    labels = rng.uniform(0, 1, Z.shape)
    ref = lambda lab, a: np.maximum(a, 0) - a * lab + np.log1p(np.exp(-np.abs(a)))  # noqa: E731
    check_op(lambda lab, t: tf.nn.sigmoid_cross_entropy_with_logits(lab, t), [labels, Z], ref)
    # The derivative at logit 0 is sigmoid(0) - label, not a kink.
    x = tf.constant([0.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.nn.sigmoid_cross_entropy_with_logits(tf.constant([1.0]), x)
    assert float(tape.gradient(loss, x)[0]) == pytest.approx(-0.5)


def test_cross_entropy_second_derivative():
    check_second_derivative(lambda t: tf.nn.sparse_softmax_cross_entropy_with_logits(LABELS, t), Z)


def test_bias_add():
    b = rng.standard_normal(5)
    check_op(tf.nn.bias_add, [Z, b], lambda a, c: a + c)
    x4 = rng.standard_normal((2, 3, 2, 2))
    check_op(lambda a, c: tf.nn.bias_add(a, c, data_format="NCHW"), [x4, b[:3]],
             lambda a, c: a + c[None, :, None, None])  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="bias has 3 entries.*5 channels"):
        tf.nn.bias_add(Z, b[:3])


def test_moments():
    x = rng.standard_normal((3, 4, 5))
    m, v = tf.nn.moments(tf.constant(x), axes=[0, 1])
    np.testing.assert_allclose(m.numpy(), x.mean((0, 1)))
    np.testing.assert_allclose(v.numpy(), x.var((0, 1)))
    m, v = tf.nn.moments(tf.constant(x), axes=[2], keepdims=True)
    assert m.shape == (3, 4, 1) and v.shape == (3, 4, 1)
    check_op(lambda t: tf.nn.moments(t, [0])[1], [Z], lambda a: a.var(0))


def test_dropout_scaling_seed_and_noise_shape():
    x = tf.ones((200, 50))
    y = tf.nn.dropout(x, rate=0.25, seed=3)
    vals = np.unique(y.numpy())
    np.testing.assert_allclose(vals, [0.0, 1 / 0.75], rtol=1e-6)
    assert abs((y.numpy() == 0).mean() - 0.25) < 0.03
    tf.random.set_seed(5)
    a = tf.nn.dropout(x, 0.5, seed=1)
    tf.random.set_seed(5)
    b = tf.nn.dropout(x, 0.5, seed=1)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    z = tf.nn.dropout(x, 0.5, noise_shape=[200, 1])
    assert all(len(np.unique(row)) == 1 for row in z.numpy())
    with pytest.raises(ValueError, match="rate must be in \\[0, 1\\)"):
        tf.nn.dropout(x, rate=1.0)
    v = tf.Variable(tf.ones((4,)))
    with tf.GradientTape() as tape:
        out = tf.nn.dropout(v, 0.5, seed=2)
    np.testing.assert_array_equal(tape.gradient(out, v).numpy(), out.numpy())
