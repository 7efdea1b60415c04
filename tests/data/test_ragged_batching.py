"""tf.data with ragged and sparse elements: from_tensor_slices of a RaggedTensor, batch of
ragged components, ragged_batch and sparse_batch (expected values are TF 2.21's)."""

import numpy as np
import pytest

import layerflow as tf


def test_from_tensor_slices_of_ragged_yields_rows_and_batch_rebuilds_ragged():
    rt = tf.ragged.constant([[1, 2], [3], [4, 5, 6]])
    ds = tf.data.Dataset.from_tensor_slices(rt)
    assert ds.element_spec == tf.RaggedTensorSpec([None], tf.int32, 0)
    assert [e.numpy().tolist() for e in ds] == [[1, 2], [3], [4, 5, 6]]
    batches = list(ds.batch(2))
    assert [b.to_list() for b in batches] == [[[1, 2], [3]], [[4, 5, 6]]]
    assert ds.batch(2).element_spec == tf.RaggedTensorSpec([None, None], tf.int32, 1)
    paired = tf.data.Dataset.from_tensor_slices((rt, [0, 1, 0])).batch(3)
    x, y = next(iter(paired))
    assert x.to_list() == [[1, 2], [3], [4, 5, 6]] and y.numpy().tolist() == [0, 1, 0]


def test_ragged_batch_makes_varying_components_ragged():
    ds = tf.data.Dataset.range(5).map(lambda n: tf.range(n))
    assert [b.to_list() for b in ds.ragged_batch(2)] == [[[], [0]], [[0, 1], [0, 1, 2]],
                                                          [[0, 1, 2, 3]]]  # fmt: skip
    assert [b.to_list() for b in ds.ragged_batch(2, drop_remainder=True)] == [
        [[], [0]], [[0, 1], [0, 1, 2]]]  # fmt: skip
    b = next(iter(ds.ragged_batch(2, row_splits_dtype=tf.int32)))
    assert b.row_splits.dtype == tf.int32
    assert ds.ragged_batch(2).element_spec.ragged_rank == 1
    dense = tf.data.Dataset.from_tensor_slices(tf.constant([[1, 2], [3, 4], [5, 6]]))
    first = next(iter(dense.ragged_batch(2)))
    assert not isinstance(first, tf.RaggedTensor) and first.shape == (2, 2)
    nested = tf.data.Dataset.from_tensor_slices(tf.ragged.constant([[1, 2], [3]])).ragged_batch(2)
    assert next(iter(nested)).to_list() == [[1, 2], [3]]
    with pytest.raises(ValueError, match="row_splits_dtype"):
        ds.ragged_batch(2, row_splits_dtype=tf.float32)


def test_sparse_batch():
    ds = tf.data.Dataset.range(4).map(lambda n: tf.fill([n], n)).sparse_batch(2, [5])
    assert ds.element_spec == tf.SparseTensorSpec([None, 5], tf.int64)
    first, second = list(ds)
    np.testing.assert_array_equal(first.indices.numpy(), [[1, 0]])
    np.testing.assert_array_equal(
        tf.sparse.to_dense(second).numpy(), [[2, 2, 0, 0, 0], [3, 3, 3, 0, 0]]
    )
    too_small = tf.data.Dataset.range(4).map(lambda n: tf.fill([n], n)).sparse_batch(2, [2])
    with pytest.raises(tf.errors.DataLossError, match="larger than the row shape"):
        list(too_small)


def test_keras_fit_on_dataset_of_ragged_rows():
    rt = tf.ragged.constant([[1, 2, 3], [4], [5, 6], [7, 8, 9, 1]], dtype=tf.int64)
    ds = tf.data.Dataset.from_tensor_slices((rt, [0.0, 1.0, 0.0, 1.0])).batch(2)
    model = tf.keras.Sequential([
        tf.keras.layers.Embedding(10, 4),
        tf.keras.layers.LSTM(3),
        tf.keras.layers.Dense(1),
    ])  # fmt: skip
    model.compile("sgd", "mse")
    history = model.fit(ds, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and np.isfinite(history.history["loss"]).all()
