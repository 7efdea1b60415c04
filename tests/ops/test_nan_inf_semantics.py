"""NaN, inf and empty inputs in argmax/argmin, top_k, softmax and reduce_max/min: TF's results.

Every expected value below was read from TensorFlow 2.21 (CPU) on the same input.
"""

import numpy as np
import pytest

import layerflow as tf

nan, inf = np.nan, np.inf


@pytest.mark.parametrize(
    ("values", "want"),
    [
        ([1.0, nan, 3.0], 2),
        ([nan, 1.0, 3.0], 2),
        ([nan, nan], 0),
        ([-inf, nan], 0),
        ([nan, -inf], 0),
        ([nan, -inf, 2.0], 2),
        ([-inf, -inf], 0),
        ([1.0, inf, nan], 1),
    ],
)
def test_argmax_never_picks_nan_as_tf(values, want):
    assert int(tf.argmax(tf.constant(values))) == want
    assert int(tf.argmax(tf.constant(values, tf.float64))) == want


@pytest.mark.parametrize(
    ("values", "want"),
    [([1.0, nan, 0.0], 2), ([nan, inf], 0), ([inf, nan], 0), ([nan, nan, 3.0], 2)],
)
def test_argmin_never_picks_nan_as_tf(values, want):
    assert int(tf.argmin(tf.constant(values))) == want


def test_argmax_with_nan_along_each_axis():
    x = tf.constant([[nan, 1.0, 5.0], [2.0, nan, 4.0], [1.0, 2.0, nan]])
    np.testing.assert_array_equal(tf.argmax(x, axis=0).numpy(), [1, 2, 0])
    np.testing.assert_array_equal(tf.argmax(x, axis=1).numpy(), [2, 2, 1])


def test_argmax_of_an_empty_axis():
    assert tf.argmax(tf.zeros([2, 0]), axis=0).shape == (0,)
    with pytest.raises(tf.errors.InvalidArgumentError, match="empty"):
        tf.argmax(tf.zeros([0]))


@pytest.mark.parametrize(
    ("values", "value", "index"),
    [
        ([1.0, nan, 3.0, 2.0], 3.0, 2),
        ([nan, 1.0, 3.0, 2.0], 3.0, 2),
        ([5.0, 1.0, 3.0, nan], 5.0, 0),
    ],
)
def test_top_1_skips_nan_as_tf(values, value, index):
    out = tf.math.top_k(tf.constant(values), k=1)
    assert float(out.values[0]) == value and int(out.indices[0]) == index


def test_top_k_orders_infinities():
    out = tf.math.top_k(tf.constant([1.0, -inf, inf, 2.0]), k=4)
    np.testing.assert_array_equal(out.values.numpy(), [inf, 2.0, 1.0, -inf])
    np.testing.assert_array_equal(out.indices.numpy(), [2, 3, 0, 1])


def test_top_k_of_the_integer_minimum_ranks_it_last():
    # Negating int32's minimum overflows back to itself; TF ranks it last.
    out = tf.math.top_k(tf.constant([-(2**31), 0, 5, -(2**31) + 1]), k=4)
    np.testing.assert_array_equal(out.values.numpy(), [5, 0, -(2**31) + 1, -(2**31)])
    np.testing.assert_array_equal(out.indices.numpy(), [2, 1, 3, 0])


def test_descending_sort_of_int64_extremes():
    x = tf.constant([-(2**63), 2**63 - 1, 0], tf.int64)
    np.testing.assert_array_equal(
        tf.sort(x, direction="DESCENDING").numpy(), [2**63 - 1, 0, -(2**63)]
    )


@pytest.mark.parametrize(
    ("values", "want"),
    [
        ([-inf, 1.0], [0.0, 1.0]),
        ([-inf, -inf, 1.0], [0.0, 0.0, 1.0]),
        ([1.0, inf], [nan, nan]),
        ([inf, inf], [nan, nan]),
        ([1.0, nan], [nan, nan]),
        ([-inf, -inf], [nan, nan]),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_with_infinities_follows_tf_kernel(values, want, dtype):
    # TF's Eigen kernel (and its float64 path) makes a row with +inf or NaN all NaN.
    with np.errstate(invalid="ignore"):
        got = tf.nn.softmax(tf.constant(values, dtype)).numpy()
    np.testing.assert_array_equal(got, np.array(want, dtype))


def test_log_softmax_with_minus_infinity():
    with np.errstate(invalid="ignore", divide="ignore"):
        np.testing.assert_array_equal(
            tf.nn.log_softmax(tf.constant([-inf, 1.0])).numpy(), [-inf, 0.0]
        )
        assert np.isnan(tf.nn.log_softmax(tf.constant([1.0, inf])).numpy()).all()


@pytest.mark.parametrize(
    ("dtype", "big", "small"),
    [
        ("float32", -inf, inf),
        ("float16", -inf, inf),
        ("float64", -inf, inf),
        ("int32", -(2**31), 2**31 - 1),
        ("int64", -(2**63), 2**63 - 1),
        ("uint8", 0, 255),
    ],
)
def test_max_and_min_of_nothing_are_the_identities(dtype, big, small):
    x = tf.zeros([0], dtype)
    mx, mn = tf.reduce_max(x), tf.reduce_min(x)
    assert mx.dtype == x.dtype and mn.dtype == x.dtype
    assert mx.numpy() == big and mn.numpy() == small


def test_max_over_an_empty_axis_keeps_the_other_axes():
    x = tf.zeros([2, 0])
    np.testing.assert_array_equal(tf.reduce_max(x, axis=1).numpy(), [-inf, -inf])
    assert tf.reduce_max(x, axis=0).shape == (0,)
    assert tf.reduce_min(x, axis=1, keepdims=True).shape == (2, 1)


def test_max_propagates_nan():
    assert np.isnan(tf.reduce_max(tf.constant([1.0, nan, 3.0])).numpy())
    assert np.isnan(tf.reduce_min(tf.constant([1.0, nan, 3.0])).numpy())


def test_logsumexp_of_nothing_is_minus_infinity():
    with np.errstate(divide="ignore"):
        assert tf.reduce_logsumexp(tf.zeros([0])).numpy() == -inf
