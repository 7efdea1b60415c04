"""Segment max/min/prod/mean/sqrt_n (sorted and unsorted) and confusion_matrix: NumPy loops as
the oracle, TF's empty-segment values, tie-sharing and zero-aware gradients, TF's errors."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op, check_second_derivative

rng = np.random.default_rng(11)
DATA = rng.standard_normal((6, 3))
IDS = np.array([2, 0, 2, 1, 0, 2])
SORTED = np.array([0, 0, 1, 3, 3, 3])  # segment 2 is empty


def reference(data, ids, n, reduce, empty):
    out = np.full((n,) + data.shape[1:], empty, dtype=np.float64)
    for s in range(n):
        rows = data[ids == s]
        if len(rows):
            out[s] = reduce(rows)
    return out


UNSORTED = [
    (tf.math.unsorted_segment_max, lambda r: r.max(0), None),
    (tf.math.unsorted_segment_min, lambda r: r.min(0), None),
    (tf.math.unsorted_segment_prod, lambda r: r.prod(0), 1.0),
    (tf.math.unsorted_segment_mean, lambda r: r.mean(0), 0.0),
    (tf.math.unsorted_segment_sqrt_n, lambda r: r.sum(0) / np.sqrt(len(r)), 0.0),
]


@pytest.mark.parametrize("fn,reduce,empty", UNSORTED, ids=[u[0].__name__ for u in UNSORTED])
def test_unsorted_forward_and_gradient(fn, reduce, empty):
    ids = np.array([2, 0, 2, 1, 0, -1])  # a negative id drops its row
    check_op(lambda d: fn(d, ids, 3), [DATA], lambda d: reference(d, ids, 3, reduce, 0))
    if empty is not None:  # a fourth, empty segment
        got = fn(DATA, ids, 4).numpy()[3]
        np.testing.assert_array_equal(got, np.full(3, empty, np.float32))


def test_empty_unsorted_max_min_hold_the_dtype_extremes():
    got = tf.math.unsorted_segment_max(tf.constant([1.0, 2.0]), [0, 2], 4).numpy()
    np.testing.assert_array_equal(got, [1.0, np.finfo(np.float32).min, 2.0,
                                        np.finfo(np.float32).min])  # fmt: skip
    gi = tf.math.unsorted_segment_min(tf.constant([1, 2]), [0, 2], 3).numpy()
    np.testing.assert_array_equal(gi, [1, np.iinfo(np.int32).max, 2])


SORTED_OPS = [
    (tf.math.segment_max, lambda r: r.max(0), 0.0),
    (tf.math.segment_min, lambda r: r.min(0), 0.0),
    (tf.math.segment_prod, lambda r: r.prod(0), 1.0),
    (tf.math.segment_mean, lambda r: r.mean(0), 0.0),
]


@pytest.mark.parametrize("fn,reduce,empty", SORTED_OPS, ids=[s[0].__name__ for s in SORTED_OPS])
def test_sorted_forward_empty_segments_and_gradient(fn, reduce, empty):
    check_op(lambda d: fn(d, SORTED), [DATA], lambda d: reference(d, SORTED, 4, reduce, empty))
    with pytest.raises(tf.errors.InvalidArgumentError, match="sorted"):
        fn(DATA, IDS)
    with pytest.raises(tf.errors.InvalidArgumentError, match="one id per row"):
        fn(DATA, [0, 1])


def test_max_gradient_is_shared_among_ties():
    x = tf.constant([1.0, 3.0, 3.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.math.segment_max(x, [0, 0, 0, 2])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0.0, 0.5, 0.5, 1.0])


def test_prod_gradient_with_zeros():
    data = DATA.copy()
    data[1, 0] = 0.0  # one zero in segment 0, column 0: the others' product is its derivative
    data[0, 1] = data[2, 1] = 0.0  # two zeros in segment 2, column 1: every derivative is 0
    check_op(lambda d: tf.math.unsorted_segment_prod(d, IDS, 3), [data],
             lambda d: reference(d, IDS, 3, lambda r: r.prod(0), 1.0))  # fmt: skip
    one_zero = DATA.copy()
    one_zero[1, 0] = 0.0
    check_second_derivative(lambda d: tf.math.unsorted_segment_prod(d, IDS, 3), one_zero)


def test_integer_data_rules():
    d = tf.constant([1, 2, 4])
    mean = tf.math.unsorted_segment_mean(d, [0, 0, 2], 4)
    assert mean.dtype == tf.float64  # TF divides the integer sums by the counts
    np.testing.assert_array_equal(mean.numpy(), [1.5, 0.0, 4.0, 0.0])
    np.testing.assert_array_equal(tf.math.segment_mean(d, [0, 0, 2]).numpy(), [1, 0, 4])
    with pytest.raises(tf.errors.InvalidArgumentError, match="float"):
        tf.math.unsorted_segment_sqrt_n(d, [0, 0, 1], 2)
    np.testing.assert_array_equal(tf.math.unsorted_segment_prod(d, [1, 1, 0], 2).numpy(), [4, 2])


def test_unsorted_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        tf.math.unsorted_segment_max(DATA, IDS, 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="prefix"):
        tf.math.unsorted_segment_min(DATA, [0, 1], 2)
    with pytest.raises(TypeError, match="int32 or int64"):
        tf.math.unsorted_segment_prod(DATA, IDS.astype(np.float32), 3)


def test_confusion_matrix_counts_weights_and_errors():
    got = tf.math.confusion_matrix([1, 2, 4], [2, 2, 4])
    expected = np.zeros((5, 5), np.int32)
    expected[1, 2] = expected[2, 2] = expected[4, 4] = 1
    np.testing.assert_array_equal(got.numpy(), expected)
    assert got.dtype == tf.int32
    w = tf.math.confusion_matrix([1, 2, 4], [2, 2, 4], num_classes=6, weights=[1.0, 2.0, 3.0],
                                 dtype=tf.float32)  # fmt: skip
    assert w.shape == (6, 6) and w.numpy()[2, 2] == 2.0 and w.numpy()[4, 4] == 3.0
    labels, preds = rng.integers(0, 4, 50), rng.integers(0, 4, 50)
    ref = np.zeros((4, 4), np.int64)
    np.add.at(ref, (labels, preds), 1)
    np.testing.assert_array_equal(tf.math.confusion_matrix(labels, preds, 4).numpy(), ref)
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative"):
        tf.math.confusion_matrix([-1, 2], [2, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of bound"):
        tf.math.confusion_matrix([1, 2, 4], [2, 2, 4], num_classes=3)
    weights = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(weights)
        cm = tf.math.confusion_matrix([0, 1, 1], [1, 1, 1], 2, weights=weights, dtype=tf.float32)
        loss = tf.reduce_sum(cm * tf.constant([[1.0, 10.0], [100.0, 1000.0]]))
    np.testing.assert_array_equal(tape.gradient(loss, weights).numpy(), [10.0, 1000.0, 1000.0])
