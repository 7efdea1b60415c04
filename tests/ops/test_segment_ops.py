"""segment sums, bincount, searchsorted and in_top_k against NumPy, with numerical gradients."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(5)
D = rng.standard_normal((5, 3))


def _unsorted_ref(data, ids, n):
    out = np.zeros((n,) + data.shape[ids.ndim :], data.dtype)
    for i, s in np.ndenumerate(ids):
        if s >= 0:
            out[s] += data[i]
    return out


def test_unsorted_segment_sum_drops_negative_ids_and_has_a_gradient():
    ids = np.array([2, 0, -1, 2, 0])
    check_op(lambda d: tf.math.unsorted_segment_sum(d, ids, 4), [D],
             lambda d: _unsorted_ref(d, ids, 4))  # fmt: skip
    ids2 = np.array([[1, 0, 1], [0, -1, 2], [2, 2, 0], [1, 1, 1], [0, 0, 0]])
    check_op(lambda d: tf.math.unsorted_segment_sum(d, ids2, 3), [D],
             lambda d: _unsorted_ref(d, ids2, 3))  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="segment id 4 is out of range"):
        tf.math.unsorted_segment_sum(D, [0, 4, 0, 0, 0], 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="prefix of the data shape"):
        tf.math.unsorted_segment_sum(D, [0, 1], 3)
    with pytest.raises(TypeError, match="int32 or int64"):
        tf.math.unsorted_segment_sum(D, [0.0] * 5, 3)


def test_segment_sum_needs_sorted_ids():
    ids = np.array([0, 0, 1, 3, 3])
    check_op(lambda d: tf.math.segment_sum(d, ids), [D], lambda d: _unsorted_ref(d, ids, 4))
    with pytest.raises(tf.errors.InvalidArgumentError, match="sorted"):
        tf.math.segment_sum(D, [0, 2, 1, 3, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="one id per row"):
        tf.math.segment_sum(D, [0, 1])


def test_bincount_lengths_weights_axis_and_binary_output():
    values = np.array([1, 1, 2, 3, 2, 4, 4, 5])
    np.testing.assert_array_equal(tf.math.bincount(values).numpy(), np.bincount(values))
    assert tf.math.bincount(values).dtype == tf.int32
    assert tf.math.bincount(values, minlength=9).shape == [9]
    np.testing.assert_array_equal(tf.math.bincount(values, maxlength=3).numpy(), [0, 2, 2])
    assert tf.math.bincount(np.zeros(0, np.int32)).shape == [0]
    w = rng.standard_normal(8)
    check_op(lambda t: tf.math.bincount(values, weights=t), [w],
             lambda a: np.bincount(values, weights=a))  # fmt: skip
    data = np.array([[1, 2, 3, 0], [0, 0, 1, 2]], np.int32)
    np.testing.assert_array_equal(tf.math.bincount(data, axis=-1).numpy(),
                                  [[1, 1, 1, 1], [2, 1, 1, 0]])  # fmt: skip
    np.testing.assert_array_equal(
        tf.math.bincount(data, axis=-1, binary_output=True).numpy(), [[1, 1, 1, 1], [1, 1, 1, 0]]
    )
    assert tf.math.bincount(values, dtype=tf.float32).dtype == tf.float32
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-negative"):
        tf.math.bincount([1, -1])
    with pytest.raises(ValueError, match="mutually exclusive"):
        tf.math.bincount(values, weights=w, binary_output=True)


def test_searchsorted_left_right_and_batched():
    seq = np.sort(rng.standard_normal(10)).astype(np.float32)
    vals = np.concatenate([rng.standard_normal(6), seq[[2, 5]]]).astype(np.float32)
    for side in ("left", "right"):
        got = tf.searchsorted(seq, vals, side=side)
        assert got.dtype == tf.int32
        np.testing.assert_array_equal(got.numpy(), np.searchsorted(seq, vals, side=side))
    batch = np.sort(rng.standard_normal((3, 7)), axis=1)
    v = rng.standard_normal((3, 4))
    got = tf.searchsorted(batch, v, out_type=tf.int64)
    assert got.dtype == tf.int64
    np.testing.assert_array_equal(got.numpy(), [np.searchsorted(b, x) for b, x in zip(batch, v)])
    with pytest.raises(ValueError, match="side must be"):
        tf.searchsorted(seq, vals, side="middle")
    with pytest.raises(tf.errors.InvalidArgumentError, match="leading dimensions"):
        tf.searchsorted(batch, v[:2])


def test_in_top_k_counts_ties_as_in_and_rejects_non_finite():
    pred = np.array([[1.2, -0.3, 2.8, 5.2], [0.1, 0.0, 0.0, 0.0], [0.0, 0.5, 0.3, 0.3]], "f")
    np.testing.assert_array_equal(tf.math.in_top_k([0, 1, 3], pred, 2).numpy(), [0, 1, 1])
    assert tf.nn.in_top_k is tf.math.in_top_k
    pred2 = np.array([[np.nan, 1.0], [0.0, np.inf]], "f")
    np.testing.assert_array_equal(tf.math.in_top_k([0, 1], pred2, 1).numpy(), [False, False])
    np.testing.assert_array_equal(tf.math.in_top_k([5, -1], pred2, 2).numpy(), [False, False])
    # A reference: the target is in when fewer than k classes beat it.
    p = rng.standard_normal((20, 6)).round(1)
    t = rng.integers(0, 6, 20)
    ref = (p > p[np.arange(20), t][:, None]).sum(1) < 3
    np.testing.assert_array_equal(tf.math.in_top_k(t, p, 3).numpy(), ref)
