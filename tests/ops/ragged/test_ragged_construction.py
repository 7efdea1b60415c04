"""RaggedTensor factories, conversions, indexing and tf.ragged functions; expected values are
what TF 2.21 gives for the same calls."""

import numpy as np
import pytest

import layerflow as tf


def test_factories_agree_and_uniform_row_length_is_in_shape():
    v = [1, 2, 3, 4, 5]
    want = [[1, 2], [], [3, 4, 5]]
    assert tf.RaggedTensor.from_row_lengths(v, [2, 0, 3]).to_list() == want
    assert tf.RaggedTensor.from_row_starts(v, [0, 2, 2]).to_list() == want
    assert tf.RaggedTensor.from_row_limits(v, [2, 2, 5]).to_list() == want
    assert tf.RaggedTensor.from_value_rowids(v, [0, 0, 2, 2, 2], nrows=3).to_list() == want
    u = tf.RaggedTensor.from_uniform_row_length([1, 2, 3, 4, 5, 6], 2)
    assert u.shape.as_list() == [3, 2] and int(u.uniform_row_length) == 2
    nested = tf.RaggedTensor.from_nested_value_rowids([1, 2, 3], [[0, 0, 1], [0, 1, 2]])
    assert nested.to_list() == [[[1], [2]], [[3]]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="must equal the number of values"):
        tf.RaggedTensor.from_row_splits([1, 2], [0, 1])


def test_constant_depths_inner_shape_and_empty():
    rt = tf.ragged.constant([[[1, 2], [3]], [], [[4, 5, 6]]])
    assert rt.shape.as_list() == [3, None, None] and rt.ragged_rank == 2
    assert tf.ragged.constant([[[1, 2], [3, 4]], [[5, 6]]], inner_shape=(2,)).shape.as_list() == [
        2, None, 2]  # fmt: skip
    assert tf.ragged.constant([[]]).shape.as_list() == [1, None]
    assert tf.ragged.constant([[1, 2], [3]], row_splits_dtype=tf.int32).row_splits.dtype == tf.int32
    with pytest.raises(ValueError, match="same nesting depth"):
        tf.ragged.constant([[1, [2]]])


def test_from_tensor_lengths_padding_and_ragged_rank_2():
    t = [[1, 0, 0], [2, 3, 0]]
    assert tf.RaggedTensor.from_tensor(t, padding=0).to_list() == [[1], [2, 3]]
    assert tf.RaggedTensor.from_tensor(t, lengths=[1, 3]).to_list() == [[1], [2, 3, 0]]
    assert tf.RaggedTensor.from_tensor(t).shape.as_list() == [2, 3]
    r2 = tf.RaggedTensor.from_tensor([[[1, 0], [0, 0]], [[2, 3], [4, 0]]], padding=0, ragged_rank=2)
    assert r2.shape.as_list() == [2, 2, None]
    assert r2.to_list() == [[[1], []], [[2, 3], [4]]]


def test_to_tensor_shape_default_and_sparse():
    x = tf.ragged.constant([[1, 2], [3]])
    np.testing.assert_array_equal(
        x.to_tensor(default_value=9, shape=[3, 4]).numpy(),
        [[1, 2, 9, 9], [3, 9, 9, 9], [9, 9, 9, 9]],
    )
    rt = tf.ragged.constant([[[1, 2], [3]], [], [[4, 5, 6]]])
    dense = rt.to_tensor()
    assert dense.shape == (3, 2, 3) and dense.numpy()[2, 0].tolist() == [4, 5, 6]
    st = rt.to_sparse()
    assert tf.sparse.to_dense(st).numpy().tolist() == dense.numpy().tolist()
    back = tf.RaggedTensor.from_sparse(tf.SparseTensor([[0, 0], [0, 1], [2, 0]], [1, 2, 3], [3, 4]))
    assert back.to_list() == [[1, 2], [], [3]]


def test_structure_queries():
    rt = tf.ragged.constant([[[1, 2], [3]], [], [[4, 5, 6]]])
    assert rt.bounding_shape().numpy().tolist() == [3, 2, 3]
    assert int(rt.bounding_shape(axis=1)) == 2
    assert rt.row_lengths(axis=2).to_list() == [[2, 1], [], [3]]
    assert [t.numpy().tolist() for t in rt.nested_row_lengths()] == [[2, 0, 1], [2, 1, 3]]
    assert rt.merge_dims(1, 2).to_list() == [[1, 2, 3], [], [4, 5, 6]]
    assert rt.merge_dims(0, -1).numpy().tolist() == [1, 2, 3, 4, 5, 6]
    assert rt.with_row_splits_dtype(tf.int32).nested_row_splits[1].dtype == tf.int32
    assert rt.with_flat_values(rt.flat_values * 10).to_list()[2] == [[40, 50, 60]]
    assert int(rt.nrows()) == 3 and rt.value_rowids().numpy().tolist() == [0, 0, 2]


def test_getitem_follows_tf_rules():
    rt = tf.ragged.constant([[[1, 2], [3]], [], [[4, 5, 6]]])
    x = tf.ragged.constant([[1, 2], [3]])
    assert rt[0, 1].numpy().tolist() == [3] and int(rt[2, 0, 1]) == 5
    assert rt[1:, 1:].to_list() == [[], []]
    assert x[::-1].to_list() == [[3], [1, 2]] and x[:, ::-1].to_list() == [[2, 1], [3]]
    assert x[:, 0:1].to_list() == [[1], [3]] and x[:, -2:].to_list() == [[1, 2], [3]]
    assert x[..., :1].to_list() == [[1], [3]]
    with pytest.raises(ValueError, match="Cannot index into an inner ragged dimension"):
        x[:, 1]
    u = tf.RaggedTensor.from_uniform_row_length([1, 2, 3, 4], 2)
    assert u[:, 1].numpy().tolist() == [2, 4]  # a uniform dimension can be indexed


def test_spec():
    s = tf.RaggedTensorSpec(shape=[None, None], dtype=tf.int32)
    assert repr(s) == "RaggedTensorSpec(TensorShape([None, None]), tf.int32, 1, tf.int64)"
    x = tf.ragged.constant([[1, 2], [3]])
    assert x._type_spec == tf.RaggedTensorSpec([2, None], tf.int32, 1, tf.int64)
    assert s.is_compatible_with(x) and not s.is_compatible_with(tf.ragged.constant([[1.0]]))
    rebuilt = s.from_tensors(iter(s.to_tensors(x)))
    assert rebuilt.to_list() == [[1, 2], [3]]


def test_ragged_module_functions():
    assert tf.ragged.boolean_mask(
        [[1, 2, 3], [4, 5, 6], [7, 8, 9]],
        [[True, False, True], [False, False, False], [True, False, False]],
    ).to_list() == [[1, 3], [], [7]]
    data = tf.ragged.constant([[1, 2, 3], [4], [5, 6]])
    mask = tf.ragged.constant([[False, False, True], [True], [True, False]])
    assert tf.ragged.boolean_mask(data, mask).to_list() == [[3], [4], [5]]
    assert tf.ragged.boolean_mask(data, [True, False, True]).to_list() == [[1, 2, 3], [5, 6]]
    parts = tf.ragged.stack_dynamic_partitions(["a", "b", "c", "d", "e"], [3, 0, 3, 2, 0], 4)
    assert parts.to_list() == [[b"b", b"e"], [], [b"d"], [b"a", b"c"]]
    assert tf.ragged.range([0, 2], [3, 5], 2).to_list() == [[0, 2], [2, 4]]
    crossed = tf.ragged.cross(
        [tf.ragged.constant([["a"], ["b", "c"]]), tf.constant([["d"], ["e"]])]
    )
    assert crossed.to_list() == [[b"a_X_d"], [b"b_X_e", b"c_X_e"]]
    hashed = tf.ragged.cross_hashed(
        [tf.ragged.constant([["a"], ["b", "c"]]), tf.constant([["d"], ["e"]])], num_buckets=100
    )
    assert hashed.to_list() == [[82], [61, 41]]  # TF 2.21's FingerprintCat64 buckets
    st = tf.ragged.stack([tf.ragged.constant([[1, 2], [3]]), tf.ragged.constant([[4]])])
    assert st.to_list() == [[[1, 2], [3]], [[4]]]
    assert tf.ragged.segment_ids_to_row_splits([0, 0, 2]).numpy().tolist() == [0, 2, 2, 3]
