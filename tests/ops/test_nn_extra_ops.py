"""batch_norm_with_global_normalization, isotonic_regression and the experimental dropouts."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(29)


@pytest.mark.parametrize("scale", [True, False])
def test_batch_norm_with_global_normalization(scale):
    x, m, v = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.random(4) + 0.5
    b, g = rng.standard_normal(4), rng.standard_normal(4)

    def ref(x, m, v, b, g):
        return (x - m) / np.sqrt(v + 1e-3) * (g if scale else 1.0) + b

    check_op(lambda *a: tf.nn.batch_norm_with_global_normalization(*a, 1e-3, scale),
             [x, m, v, b, g], ref, grad=[0, 1, 2, 3] + ([4] if scale else []))  # fmt: skip


def isotonic_ref(row, decreasing):
    """The closed form of the least-squares monotone fit: for a non-decreasing fit,
    y_i = max_{j <= i} min_{k >= i} mean(x[j..k])."""
    x = -row if decreasing else row
    n = len(x)
    y = np.array([max(min(x[j : k + 1].mean() for k in range(i, n)) for j in range(i + 1))
                  for i in range(n)])  # fmt: skip
    return -y if decreasing else y


@pytest.mark.parametrize("decreasing", [True, False])
def test_isotonic_regression_forward_segments_and_gradient(decreasing):
    x = rng.standard_normal((3, 7))
    out, seg = tf.nn.isotonic_regression(x, decreasing=decreasing)
    want = np.stack([isotonic_ref(r, decreasing) for r in x])
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    assert seg.dtype == tf.int32
    s = seg.numpy()
    assert (s[:, 0] == 0).all() and set(np.diff(s, axis=1).ravel()) <= {0, 1}
    # Equal fitted values in a run form one segment.
    np.testing.assert_array_equal(np.diff(s, axis=1) == 0,
                                  np.isclose(np.diff(want, axis=1), 0))  # fmt: skip
    check_op(lambda a: tf.nn.isotonic_regression(a, decreasing=decreasing)[0], [x],
             lambda a: np.stack([isotonic_ref(r, decreasing) for r in a]))  # fmt: skip


def test_isotonic_regression_axis_ints_and_tf_values():
    out, seg = tf.nn.isotonic_regression(tf.constant([[1, 3, 2, 4], [5, 1, 2, 0]]))
    assert out.dtype == tf.float64  # int32 inputs give float64, as in TF
    np.testing.assert_allclose(out.numpy(), [[2.5, 2.5, 2.5, 2.5], [5.0, 1.5, 1.5, 0.0]])
    np.testing.assert_array_equal(seg.numpy(), [[0, 0, 0, 0], [0, 1, 1, 2]])
    x = rng.standard_normal((5, 3))
    out, _ = tf.nn.isotonic_regression(x, axis=0)
    np.testing.assert_allclose(out.numpy(), np.stack([isotonic_ref(c, True) for c in x.T], 1))
    with pytest.raises(ValueError, match="axis"):
        tf.nn.isotonic_regression(x, axis=2)


def test_stateless_dropout_depends_only_on_the_seed():
    x = rng.standard_normal((20, 30)).astype("float32")
    a = tf.nn.experimental.stateless_dropout(x, 0.3, seed=[4, 2]).numpy()
    b = tf.nn.experimental.stateless_dropout(x, 0.3, seed=[4, 2]).numpy()
    c = tf.nn.experimental.stateless_dropout(x, 0.3, seed=[4, 3]).numpy()
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()
    kept = a != 0
    np.testing.assert_allclose(a[kept], x[kept] / 0.7, rtol=1e-6)
    assert 0.6 < kept.mean() < 0.8
    cols = tf.nn.experimental.stateless_dropout(x, 0.5, seed=[1, 1], noise_shape=[1, 30]).numpy()
    dropped = cols == 0
    assert (dropped.all(0) | (~dropped).all(0)).all()  # whole columns kept or dropped
    check_op(lambda t: tf.nn.experimental.stateless_dropout(t, 0.4, seed=[3, 3]), [x], None)
    np.testing.assert_array_equal(tf.nn.experimental.stateless_dropout(x, 0.0, [1, 1]).numpy(), x)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        tf.nn.experimental.stateless_dropout(x, 1.0, seed=[1, 2])


def test_general_dropout_uses_the_sampler():
    x = tf.ones((2, 3))

    def sampler(shape, dtype):
        assert list(shape) == [2, 3] and dtype == tf.float32
        return tf.constant([[0.1, 0.5, 0.9], [0.49, 0.51, 0.0]])

    y = tf.nn.experimental.general_dropout(x, 0.5, sampler).numpy()
    np.testing.assert_array_equal(y, [[0, 2, 2], [0, 2, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="uniform_sampler returned shape"):
        tf.nn.experimental.general_dropout(x, 0.5, lambda shape, dtype: tf.zeros((3,)))
