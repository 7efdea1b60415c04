"""Dataset.ragged_batch and Dataset.sparse_batch (TF 2.21's results and errors), and tf.range's
dtype inference from its bounds."""

import numpy as np
import pytest

import layerflow as tf

D = tf.data.Dataset


def _ranges(n=5):
    return D.range(n).map(lambda x: tf.range(x))


def test_range_infers_the_widest_bound_dtype():
    assert tf.range(tf.constant(3, tf.int64)).dtype == tf.int64
    assert tf.range(0, tf.constant(3, tf.int64)).dtype == tf.int64
    assert tf.range(3).dtype == tf.int32 and tf.range(0, 3, 0.5).dtype == tf.float32
    assert tf.range(tf.constant(2.0, tf.float64)).dtype == tf.float64
    assert tf.range(3, dtype=tf.float32).dtype == tf.float32


def test_ragged_batch_values_and_row_splits():
    batches = list(_ranges().ragged_batch(2))
    assert [b.to_list() for b in batches] == [[[], [0]], [[0, 1], [0, 1, 2]], [[0, 1, 2, 3]]]
    assert all(isinstance(b, tf.RaggedTensor) for b in batches)  # the last one too
    assert batches[0].dtype == tf.int64 and batches[0].row_splits.dtype == tf.int64
    dropped = list(_ranges().ragged_batch(2, drop_remainder=True, row_splits_dtype=tf.int32))
    assert len(dropped) == 2 and dropped[0].row_splits.dtype == tf.int32
    assert int(_ranges().ragged_batch(2).cardinality()) == 3
    spec = _ranges().ragged_batch(2).element_spec  # TF 2.21 prints the same
    assert repr(spec) == "RaggedTensorSpec(TensorShape([None, None]), tf.int64, 1, tf.int64)"
    fixed = D.range(1, 4).map(lambda n: tf.fill([n, 2], n)).ragged_batch(2, drop_remainder=True)
    assert fixed.element_spec.shape.as_list() == [2, None, 2]
    with pytest.raises(ValueError, match="row_splits_dtype"):
        _ranges().ragged_batch(2, row_splits_dtype=tf.float32)


def test_ragged_batch_keeps_uniform_components_dense():
    dense = list(D.from_tensor_slices([[1, 2], [3, 4], [5, 6]]).ragged_batch(2))
    assert not isinstance(dense[0], tf.RaggedTensor)
    np.testing.assert_array_equal(dense[0].numpy(), [[1, 2], [3, 4]])
    mixed = D.from_tensor_slices(([1, 2, 3], [[1.0], [2.0], [3.0]]))
    mixed = mixed.map(lambda a, b: (tf.range(a), b)).ragged_batch(2)
    first = next(iter(mixed))
    assert first[0].to_list() == [[0], [0, 1]] and first[1].shape == (2, 1)
    assert mixed.element_spec[1] == tf.TensorSpec([None, 1], tf.float32)


def test_ragged_batch_of_matrices():
    ds = D.range(1, 4).map(lambda n: tf.fill([n, 2], n)).ragged_batch(3)
    b = next(iter(ds))
    assert b.to_list() == [[[1, 1]], [[2, 2], [2, 2]], [[3, 3], [3, 3], [3, 3]]]
    ds = D.from_generator(lambda: iter([np.zeros((1, 2)), np.ones((2, 3))]),
                          output_signature=tf.TensorSpec([None, None], tf.float64))  # fmt: skip
    b = next(iter(ds.ragged_batch(2)))
    assert b.to_list() == [[[0.0, 0.0]], [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]


def test_sparse_batch():
    batches = list(_ranges().sparse_batch(2, [4]))
    first, second = batches[0], batches[1]
    np.testing.assert_array_equal(first.indices.numpy(), [[1, 0]])
    np.testing.assert_array_equal(first.dense_shape.numpy(), [2, 4])
    np.testing.assert_array_equal(second.indices.numpy(), [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]])
    np.testing.assert_array_equal(second.values.numpy(), [0, 1, 0, 1, 2])
    np.testing.assert_array_equal(batches[2].dense_shape.numpy(), [1, 4])
    spec = _ranges().sparse_batch(2, [4]).element_spec
    assert spec == tf.SparseTensorSpec([None, 4], tf.int64)
    mats = D.range(3).map(lambda x: tf.fill([x, 2], x))
    shapes = [b.dense_shape.numpy().tolist() for b in mats.sparse_batch(2, [None, 2])]
    assert shapes == [[2, 1, 2], [1, 2, 2]]
    dense = tf.sparse.to_dense(next(iter(mats.sparse_batch(2, [3, 2])))).numpy()
    np.testing.assert_array_equal(dense[1], [[1, 1], [0, 0], [0, 0]])
    scalars = next(iter(D.range(3).sparse_batch(2, [])))
    np.testing.assert_array_equal(scalars.indices.numpy(), [[0], [1]])


def test_sparse_batch_errors_as_tf():
    with pytest.raises(tf.errors.DataLossError, match="larger than the row shape"):
        list(_ranges().sparse_batch(2, [2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="incompatible with the row shape"):
        list(D.range(3).map(lambda x: tf.fill([x, 2], x)).sparse_batch(2, [3]))
    with pytest.raises(ValueError, match="Dimension -1 must be >= 0"):
        D.range(3).sparse_batch(2, [-1])
