"""cumulative_logsumexp, approx top-k, depth_to_space/space_to_depth and sobol_sample."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(9)
X = rng.standard_normal((3, 4))


def logsumexp_ref(a, axis, exclusive, reverse):
    if reverse:
        a = np.flip(a, axis)
    out = np.log(np.cumsum(np.exp(a), axis))
    if exclusive:
        out = np.roll(out, 1, axis)
        first = [slice(None)] * a.ndim
        first[axis] = 0
        out[tuple(first)] = -np.inf
    return np.flip(out, axis) if reverse else out


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_logsumexp(axis, exclusive, reverse):
    def fn(a):  # an exclusive sum's empty entry (-inf) is zeroed so differences stay finite
        out = tf.math.cumulative_logsumexp(a, axis, exclusive, reverse)
        return tf.where(tf.math.is_inf(out), tf.zeros_like(out), out)

    def ref(a):
        out = logsumexp_ref(a, axis, exclusive, reverse)
        return np.where(np.isinf(out), 0.0, out)

    check_op(fn, [X], ref)
    got = tf.math.cumulative_logsumexp(X, axis, exclusive, reverse).numpy()
    # exclusive: one empty (-inf) entry per line along the axis; otherwise none
    assert np.isneginf(got).sum() == (X.size // X.shape[axis] if exclusive else 0)


def test_cumulative_logsumexp_large_values_and_dtypes():
    got = tf.math.cumulative_logsumexp(tf.constant([1000.0, 1000.0])).numpy()
    np.testing.assert_allclose(got, [1000.0, 1000.0 + np.log(2.0)])  # no overflow
    x = tf.constant([1000.0, 999.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.math.cumulative_logsumexp(x)
    assert np.isfinite(tape.gradient(y, x).numpy()).all()
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
        tf.math.cumulative_logsumexp(tf.constant([1, 2]))


def test_approx_top_k_is_exact_along_any_axis():
    x = rng.standard_normal((5, 7))
    v, i = tf.math.approx_max_k(x, 3)
    np.testing.assert_allclose(v.numpy(), -np.sort(-x, 1)[:, :3].astype(np.float32))
    np.testing.assert_array_equal(i.numpy(), np.argsort(-x, 1, kind="stable")[:, :3])
    assert i.dtype == tf.int32
    v0, i0 = tf.math.approx_min_k(x, 2, reduction_dimension=0)
    np.testing.assert_allclose(v0.numpy(), np.sort(x, 0)[:2].astype(np.float32))
    np.testing.assert_array_equal(i0.numpy(), np.argsort(x, 0, kind="stable")[:2])
    assert tf.nn.approx_max_k is tf.math.approx_max_k
    top = tf.approx_top_k(x, 2, is_max_k=False)
    np.testing.assert_allclose(top.values.numpy(), np.sort(x, 1)[:, :2].astype(np.float32))
    with pytest.raises(ValueError, match="recall_target"):
        tf.math.approx_max_k(x, 2, recall_target=1.5)
    # the gradient flows to the chosen entries
    check_op(lambda a: tf.math.approx_min_k(a, 2, reduction_dimension=0).values, [x], None)


def test_depth_to_space_and_space_to_depth_match_tf_layout():
    x = tf.reshape(tf.range(16.0), [1, 4, 4, 1])
    got = tf.nn.space_to_depth(x, 2).numpy()[0]
    np.testing.assert_array_equal(got[0, 0], [0.0, 1.0, 4.0, 5.0])  # TF's block order
    np.testing.assert_array_equal(got[1, 1], [10.0, 11.0, 14.0, 15.0])
    d = tf.nn.depth_to_space(tf.reshape(tf.range(8.0), [1, 1, 2, 4]), 2).numpy()[0, :, :, 0]
    np.testing.assert_array_equal(d, [[0.0, 1.0, 4.0, 5.0], [2.0, 3.0, 6.0, 7.0]])
    y = rng.standard_normal((2, 4, 6, 3))
    back = tf.nn.depth_to_space(tf.nn.space_to_depth(y, 2), 2).numpy()
    np.testing.assert_array_equal(back, y)
    nchw = np.transpose(y, (0, 3, 1, 2))
    s2d = tf.nn.space_to_depth(nchw, 2, data_format="NCHW").numpy()
    np.testing.assert_array_equal(s2d, np.transpose(tf.nn.space_to_depth(y, 2).numpy(),
                                                    (0, 3, 1, 2)))  # fmt: skip
    check_op(lambda a: tf.nn.space_to_depth(a, 2), [y[:1]], None)
    with pytest.raises(tf.errors.InvalidArgumentError, match="divisible"):
        tf.nn.space_to_depth(tf.ones([1, 3, 4, 1]), 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="divisible"):
        tf.nn.depth_to_space(tf.ones([1, 2, 2, 3]), 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least 2"):
        tf.nn.depth_to_space(tf.ones([1, 2, 2, 4]), 1)


def test_sobol_sample_matches_tf_sequence():
    pytest.importorskip("scipy")
    got = tf.math.sobol_sample(2, 4).numpy()
    # TF 2.21's output: the unscrambled Sobol sequence from its second point.
    np.testing.assert_array_equal(got, [[0.5, 0.5], [0.75, 0.25], [0.25, 0.75], [0.375, 0.375]])
    skipped = tf.math.sobol_sample(3, 3, skip=2, dtype=tf.float64)
    assert skipped.dtype == tf.float64
    np.testing.assert_array_equal(skipped.numpy()[0], [0.25, 0.75, 0.75])
    # a van der Corput sequence in the first dimension
    first = tf.math.sobol_sample(5, 7).numpy()[:, 0]
    np.testing.assert_array_equal(first, [0.5, 0.75, 0.25, 0.375, 0.875, 0.625, 0.125])
    with pytest.raises(tf.errors.InvalidArgumentError, match="dim"):
        tf.math.sobol_sample(0, 3)
