"""tf.RaggedTensor: construction, inspection, indexing, to_tensor/to_list and repr as TF 2.21
prints them (the expected strings were copied from TF's output)."""

import pytest

import layerflow as tf


def test_from_row_splits_structure_and_repr():
    r = tf.RaggedTensor.from_row_splits([1, 2, 3], [0, 2, 3])
    assert repr(r) == "<tf.RaggedTensor [[1, 2], [3]]>"
    assert r.shape.as_list() == [2, None] and r.dtype == tf.int32 and r.ragged_rank == 1
    assert r.row_splits.numpy().tolist() == [0, 2, 3] and r.row_splits.dtype == tf.int64
    assert r.row_lengths().numpy().tolist() == [2, 1] and int(r.nrows()) == 2
    assert r.values.numpy().tolist() == [1, 2, 3]
    assert r.value_rowids().numpy().tolist() == [0, 0, 1]
    assert r.to_list() == [[1, 2], [3]]


def test_indexing_rows():
    r = tf.RaggedTensor.from_row_splits([1, 2, 3], [0, 2, 3])
    assert r[0].numpy().tolist() == [1, 2] and r[-1].numpy().tolist() == [3]
    assert repr(r[1:]) == "<tf.RaggedTensor [[3]]>"
    assert int(r[0, 1]) == 2
    with pytest.raises(IndexError, match="out of bounds"):
        r[5]


def test_to_tensor_default_and_shape():
    r = tf.RaggedTensor.from_row_splits([1, 2, 3], [0, 2, 3])
    assert r.to_tensor().numpy().tolist() == [[1, 2], [3, 0]]
    got = r.to_tensor(default_value=9, shape=[3, 3]).numpy().tolist()
    assert got == [[1, 2, 9], [3, 9, 9], [9, 9, 9]]
    assert r.to_tensor(shape=[2, 1]).numpy().tolist() == [[1], [3]]
    s = tf.RaggedTensor.from_row_splits(tf.constant(["a", "b"]), [0, 2, 2])
    assert repr(s) == "<tf.RaggedTensor [[b'a', b'b'], []]>"
    assert s.to_tensor().numpy().tolist() == [[b"a", b"b"], [b"", b""]]


def test_nested_and_uniform_inner_values():
    r = tf.RaggedTensor.from_row_splits([1, 2, 3], [0, 2, 3])
    r2 = tf.RaggedTensor.from_row_lengths(r, [1, 1])
    assert repr(r2) == "<tf.RaggedTensor [[[1, 2]],\n [[3]]]>"
    assert r2.shape.as_list() == [2, None, None] and r2.ragged_rank == 2
    assert r2.flat_values.numpy().tolist() == [1, 2, 3]
    r3 = tf.RaggedTensor.from_row_splits(tf.constant([[1, 2], [3, 4], [5, 6]]), [0, 2, 3])
    assert repr(r3) == "<tf.RaggedTensor [[[1, 2],\n  [3, 4]], [[5, 6]]]>"
    assert r3.shape.as_list() == [2, None, 2]
    assert r3.to_tensor().numpy().tolist() == [[[1, 2], [3, 4]], [[5, 6], [0, 0]]]


def test_from_value_rowids_and_constant():
    r = tf.RaggedTensor.from_value_rowids([1, 2, 3], [0, 0, 2], nrows=4)
    assert repr(r) == "<tf.RaggedTensor [[1, 2], [], [3], []]>"
    c = tf.ragged.constant([[[1], [2, 3]], [[4]]])
    assert c.ragged_rank == 2 and c.to_list() == [[[1], [2, 3]], [[4]]]
    assert tf.ragged.range([2, 0, 3]).to_list() == [[0, 1], [], [0, 1, 2]]
    doubled = tf.ragged.map_flat_values(tf.multiply, c, 2)
    assert doubled.to_list() == [[[2], [4, 6]], [[8]]]


@pytest.mark.parametrize(
    "splits, why",
    [([1, 2], "start with 0"), ([0, 2, 1], "ascending"), ([0, 1], "number of values")],
)
def test_invalid_partitions_raise(splits, why):
    with pytest.raises(tf.errors.InvalidArgumentError, match=why):
        tf.RaggedTensor.from_row_splits([1, 2], splits)


def test_constructor_is_private():
    with pytest.raises(ValueError, match="from_row_splits"):
        tf.RaggedTensor([1], [0, 1])
