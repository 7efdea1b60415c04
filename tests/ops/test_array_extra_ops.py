"""TF's top-level array ops: slice, strided_slice (every mask), shape_n, broadcast shapes,
dynamic_partition/stitch, reverse_sequence, unique_with_counts, unravel_index, histograms,
tensor_scatter_nd_max/min, parallel_stack, bitcast. NumPy oracles; results checked against
TF 2.21's own outputs; gradients by float64 central differences."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

X = np.arange(24).reshape(2, 3, 4)
F = np.random.default_rng(3).standard_normal((2, 3, 4))


def test_slice_forward_gradient_and_errors():
    check_op(lambda x: tf.slice(x, [1, 0, 1], [1, -1, 2]), [F], lambda x: x[1:2, :, 1:3])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"size\[0\] in \[0, 2\], but got 3"):
        tf.slice(X, [0, 0, 0], [3, 1, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="one entry per dimension"):
        tf.slice(X, [0], [1])


@pytest.mark.parametrize(
    "args, expected",
    [
        (dict(begin=[0, 1], end=[2, 3], strides=[1, 1], shrink_axis_mask=1), X[0, 1:3]),
        (dict(begin=[0, 0, 0], end=[1, 2, 3], ellipsis_mask=2), X[0:1, ..., 0:3]),
        # ellipsis wins over new_axis on the same bit (TF)
        (dict(begin=[0, 0, 0], end=[1, 2, 3], ellipsis_mask=1, new_axis_mask=1), X[..., 0:2, 0:3]),
        # new_axis wins over shrink_axis on the same bit (TF)
        (dict(begin=[0, 0, 0], end=[1, 2, 3], new_axis_mask=2, shrink_axis_mask=2),
         X[0:1, None, 0:3]),
        (dict(begin=[-1], end=[-5], strides=[-1]), X[-1:-5:-1]),
        (dict(begin=[0, -1], end=[0, 0], strides=[1, -1], begin_mask=1, end_mask=3), X[:, ::-1]),
        (dict(begin=[1, 0, 3], end=[2, 3, 0], strides=[1, 2, -2], end_mask=4),
         X[1:2, 0:3:2, 3::-2]),
    ],
)  # fmt: skip
def test_strided_slice_masks_match_numpy(args, expected):
    got = tf.strided_slice(X, **args)
    np.testing.assert_array_equal(got.numpy(), expected)


def test_strided_slice_gradient_and_errors():
    check_op(lambda x: tf.strided_slice(x, [0, 2], [2, 0], [1, -1], shrink_axis_mask=1),
             [F], lambda x: x[0, 2:0:-1])  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
        tf.strided_slice(X, [5], [6], [1], shrink_axis_mask=1)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"strides\[0\] must be non-zero"):
        tf.strided_slice(X, [0], [2], [0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="multiple ellipses"):
        tf.strided_slice(X, [0, 0], [2, 1], [1, 1], ellipsis_mask=3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="same length"):
        tf.strided_slice(X, [0, 0], [2], [1, 1])


def test_shape_n_and_broadcast_shapes():
    a, b = tf.shape_n([tf.zeros([2, 3, 4]), tf.zeros([2])], out_type=tf.int64)
    assert a.dtype == tf.int64 and a.numpy().tolist() == [2, 3, 4] and b.numpy().tolist() == [2]
    out = tf.broadcast_dynamic_shape([2, 1, 3], [4, 1])
    assert out.dtype == tf.int32 and out.numpy().tolist() == [2, 4, 3]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Incompatible shapes: \[2, 3\]"):
        tf.broadcast_dynamic_shape([2, 3], [4])
    s = tf.broadcast_static_shape(tf.TensorShape([None, 1, 3]), tf.TensorShape([4, 1]))
    assert s.as_list() == [None, 4, 3]
    assert tf.broadcast_static_shape(tf.TensorShape([None]), tf.TensorShape([1])).as_list() == [
        None
    ]
    with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
        tf.broadcast_static_shape(tf.TensorShape([2, 3]), tf.TensorShape([4]))


def test_dynamic_partition_and_stitch():
    a, b = tf.dynamic_partition([10, 20, 30, 40, 50], [0, 0, 1, 1, 0], 2)
    assert a.numpy().tolist() == [10, 20, 50] and b.numpy().tolist() == [30, 40]
    parts = tf.dynamic_partition(F, [[1, 0, 1], [2, 2, 0]], 3)
    np.testing.assert_array_equal(parts[2].numpy(), F[1, :2])
    assert parts[0].shape == (2, 4)
    check_op(lambda x: tf.dynamic_partition(x, [[1, 0, 1], [0, 0, 1]], 2)[1], [F],
             lambda x: x[np.array([[1, 0, 1], [0, 0, 1]]) == 1])  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"in \[0, 2\)"):
        tf.dynamic_partition([1, 2], [0, 2], 2)
    merged = tf.dynamic_stitch([[0, 1], [1, 2]], [[1.0, 2.0], [3.0, 4.0]])
    assert merged.numpy().tolist() == [1.0, 3.0, 4.0]  # the later value wins at index 1
    # the true gradient: x[0] lands once; its value at index 1 is overwritten (no gradient)
    check_op(lambda x: tf.dynamic_stitch([[0, 1], [1, 2]], [x[:2], x[1:] * 10.0]),
             [np.array([1.0, 2.0, 3.0])], None)  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="index 1 is missing"):
        tf.dynamic_stitch([[0, 2]], [[1.0, 2.0]])


def test_reverse_sequence_both_axis_orders():
    x = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
    got = tf.reverse_sequence(x, [2, 3], seq_axis=1, batch_axis=0).numpy()
    np.testing.assert_array_equal(got, [[2, 1, 3, 4], [7, 6, 5, 8]])
    got = tf.reverse_sequence(x.T, [2, 3], seq_axis=0, batch_axis=1).numpy()
    np.testing.assert_array_equal(got, np.array([[2, 1, 3, 4], [7, 6, 5, 8]]).T)
    check_op(lambda t: tf.reverse_sequence(t, [3, 0], seq_axis=1), [F], None)
    with pytest.raises(tf.errors.InvalidArgumentError, match="seq_lengths must be in"):
        tf.reverse_sequence(x, [5, 1], seq_axis=1)


def test_unique_with_counts_and_unravel_index():
    y, idx, count = tf.unique_with_counts([1, 1, 2, 4, 4, 4, 7, 8, 8], out_idx=tf.int64)
    assert y.numpy().tolist() == [1, 2, 4, 7, 8] and count.dtype == tf.int64
    assert idx.numpy().tolist() == [0, 0, 1, 2, 2, 2, 3, 4, 4]
    assert count.numpy().tolist() == [2, 1, 3, 1, 2]
    np.testing.assert_array_equal(tf.unravel_index([1, 5, 7], [3, 3]).numpy(),
                                  np.stack(np.unravel_index([1, 5, 7], (3, 3))))  # fmt: skip
    assert tf.unravel_index(5, [3, 3]).numpy().tolist() == [1, 2]
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of bound"):
        tf.unravel_index([9], [3, 3])


def test_histograms_clip_to_the_end_bins():
    v = [-1.0, 0.0, 1.5, 2.0, 5.0, 15]
    assert tf.histogram_fixed_width(v, [0.0, 5.0], nbins=5).numpy().tolist() == [2, 1, 1, 0, 2]
    bins = tf.histogram_fixed_width_bins(v, [0.0, 5.0], nbins=5)
    assert bins.numpy().tolist() == [0, 0, 1, 2, 4, 4]
    h = tf.histogram_fixed_width([1, 2, 3], [0, 4], nbins=2, dtype=tf.int64)
    assert h.dtype == tf.int64 and h.numpy().tolist() == [1, 2]
    with pytest.raises(tf.errors.InvalidArgumentError, match="nbins should be a positive"):
        tf.histogram_fixed_width(v, [0.0, 5.0], nbins=0)


def test_tensor_scatter_nd_max_min_and_gradient():
    assert tf.tensor_scatter_nd_max([1, 5, 3], [[0], [1]], [4, 2]).numpy().tolist() == [4, 5, 3]
    got = tf.tensor_scatter_nd_min([1, 5, 3], [[0], [1], [1]], [4, 2, 7])
    assert got.numpy().tolist() == [1, 2, 3]
    t, u = np.array([1.0, 5.0, 3.0, -2.0]), np.array([4.0, 2.0, 0.5])
    idx = np.array([[0], [1], [3]])
    check_op(lambda a, b: tf.tensor_scatter_nd_max(a, idx, b), [t, u], None)
    check_op(lambda a, b: tf.tensor_scatter_nd_min(a, idx, b), [t, u], None)
    # a tie splits the gradient between the tensor and the update (TF's rule)
    a, b = tf.constant([2.0, 1.0]), tf.constant([2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([a, b])
        y = tf.tensor_scatter_nd_max(a, [[0]], b)
    assert tape.gradient(y, a).numpy().tolist() == [0.5, 1.0]
    assert tape.gradient(y, b).numpy().tolist() == [0.5]


def test_parallel_stack_and_bitcast():
    assert tf.parallel_stack([[1, 4], [2, 5], [3, 6]]).numpy().tolist() == [[1, 4], [2, 5], [3, 6]]
    with pytest.raises(ValueError, match="same shape"):
        tf.parallel_stack([[1, 2], [3]])
    b = tf.bitcast(tf.constant([1.0, 2.0]), tf.uint8)
    assert b.shape == (2, 4)
    np.testing.assert_array_equal(b.numpy(), np.array([1.0, 2.0], np.float32).view(np.uint8)
                                  .reshape(2, 4))  # fmt: skip
    back = tf.bitcast(b, tf.float32)
    assert back.numpy().tolist() == [1.0, 2.0]
    assert tf.bitcast(tf.constant([-1], tf.int32), tf.uint32).numpy().tolist() == [2**32 - 1]
    with pytest.raises(tf.errors.InvalidArgumentError, match="last dimension must be 4"):
        tf.bitcast(tf.constant([1, 2, 3], tf.uint8), tf.float32)
