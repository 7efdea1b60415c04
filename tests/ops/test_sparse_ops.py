"""tf.sparse ops that move or merge entries, against NumPy on the densified tensors."""

import numpy as np
import pytest
from sparse_helpers import random_sparse

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(21)
SHAPES = [(6,), (4, 5), (3, 2, 4)]


def dense(st):
    """The densified value, whatever the order (to_dense after reorder)."""
    return tf.sparse.to_dense(tf.sparse.reorder(st)).numpy()


def rand_st(shape, nnz=6, **kw):
    idx, vals, d = random_sparse(rng, shape, nnz, **kw)
    return tf.SparseTensor(idx, vals, shape), d


@pytest.mark.parametrize("shape", SHAPES)
def test_add_sparse_sparse_and_sparse_dense(shape):
    a, da = rand_st(shape)
    b, db = rand_st(shape)
    s = tf.sparse.add(a, b)
    np.testing.assert_allclose(dense(s), da + db)
    assert [tuple(r) for r in s.indices.numpy()] == sorted(tuple(r) for r in s.indices.numpy())
    d = rng.standard_normal(shape)
    np.testing.assert_allclose(tf.sparse.add(a, d), da + d)
    np.testing.assert_allclose(tf.sparse.add(d, a), da + d)


def test_add_threshold_and_duplicates_and_errors():
    a = tf.SparseTensor([[0, 1], [1, 2]], [1.0, -2.0], [2, 3])
    b = tf.SparseTensor([[0, 1]], [-0.5], [2, 3])
    s = tf.sparse.add(a, b, threshold=0.6)
    assert s.indices.numpy().tolist() == [[1, 2]] and s.values.numpy().tolist() == [-2.0]
    dup = tf.SparseTensor([[1, 0], [1, 0]], [1.0, 2.0], [2, 3])
    np.testing.assert_allclose(dense(tf.sparse.add(dup, a)), [[0, 1, 0], [3, 0, -2]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="got 2 and 3 for dimension 1"):
        tf.sparse.add(tf.SparseTensor([[1, 0]], [1.0], [2, 2]), a)
    with pytest.raises(TypeError, match="dtype"):
        tf.sparse.add(a, tf.SparseTensor([[0, 0]], [1], [2, 3]))


def test_add_gradient_reaches_both_values():
    ia = np.array([[0, 1], [1, 2], [0, 0]])
    ib = np.array([[1, 2], [1, 0]])

    def fn(va, vb):
        return tf.sparse.add(
            tf.SparseTensor(ia, va, [2, 3]), tf.SparseTensor(ib, vb, [2, 3])
        ).values

    def ref(va, vb):
        d = np.zeros((2, 3), va.dtype)
        np.add.at(d, tuple(ia.T), va)
        np.add.at(d, tuple(ib.T), vb)
        keys = sorted({tuple(r) for r in np.concatenate([ia, ib])})
        return np.array([d[k] for k in keys])

    check_op(fn, [rng.standard_normal(3), rng.standard_normal(2)], ref)


@pytest.mark.parametrize("shape,new", [((4, 6), [-1]), ((4, 6), [3, -1, 2]), ((2, 3, 4), [6, 4])])
def test_reshape(shape, new):
    st, d = rand_st(shape, 9)
    out = tf.sparse.reshape(st, new)
    np.testing.assert_allclose(dense(out), d.reshape(new))


def test_reshape_errors():
    st, _ = rand_st((4, 6))
    with pytest.raises(tf.errors.InvalidArgumentError, match="multiple of 5"):
        tf.sparse.reshape(st, [5, -1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="has 25"):
        tf.sparse.reshape(st, [5, 5])


BOXES = [((4, 5), [1, 2], [2, 10]), ((3, 2, 4), [0, 1, 1], [3, 1, 2]), ((6,), [2], [3])]


@pytest.mark.parametrize("shape,start,size", BOXES)
def test_slice_and_split(shape, start, size):
    st, d = rand_st(shape, 10)
    out = tf.sparse.slice(st, start, size)
    box = tuple(slice(s, s + z) for s, z in zip(start, size))
    np.testing.assert_allclose(dense(out), d[box])
    parts = tf.sparse.split(sp_input=st, num_split=2, axis=0)
    first = (shape[0] + 1) // 2
    np.testing.assert_allclose(dense(parts[0]), d[:first])
    np.testing.assert_allclose(dense(parts[1]), d[first:])


def test_split_sizes_as_tf():
    st = tf.SparseTensor([[0, 1], [1, 2], [1, 4]], [1.0, 2.0, 3.0], [2, 5])
    a, b = tf.sparse.split(sp_input=st, num_split=2, axis=1)
    assert a.shape == [2, 3] and b.shape == [2, 2]
    assert b.indices.numpy().tolist() == [[1, 1]]


def test_retain_and_gradient():
    idx = np.array([[0, 0], [1, 1], [2, 0]])
    keep = np.array([True, False, True])
    st = tf.SparseTensor(idx, [1.0, 2.0, 3.0], [3, 2])
    out = tf.sparse.retain(st, keep)
    assert out.indices.numpy().tolist() == [[0, 0], [2, 0]]
    check_op(lambda v: tf.sparse.retain(tf.SparseTensor(idx, v, [3, 2]), keep).values,
             [rng.standard_normal(3)], lambda v: v[keep])  # fmt: skip
    with pytest.raises(ValueError, match="bool vector of length 3"):
        tf.sparse.retain(st, [True, False])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis):
    a, da = rand_st((3, 4))
    b, db = rand_st((3, 4))
    out = tf.sparse.concat(axis, [a, b])
    np.testing.assert_allclose(dense(out), np.concatenate([da, db], axis=axis))


def test_concat_expand_nonconcat_dims_and_error():
    a = tf.SparseTensor([[0, 1]], [1.0], [2, 3])
    b = tf.SparseTensor([[1, 0]], [2.0], [3, 2])
    out = tf.sparse.concat(1, [a, b], expand_nonconcat_dims=True)
    assert out.shape == [3, 5] and out.indices.numpy().tolist() == [[0, 1], [1, 3]]
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="expected 2 for dimension 0 but got 3"
    ):
        tf.sparse.concat(1, [a, b])


@pytest.mark.parametrize("perm", [None, [1, 0, 2], [2, 0, 1]])
def test_transpose(perm):
    st, d = rand_st((2, 3, 4), 8)
    out = tf.sparse.transpose(st, perm)
    np.testing.assert_allclose(tf.sparse.to_dense(out), np.transpose(d, perm))  # canonical


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_expand_dims(axis):
    st, d = rand_st((3, 4))
    out = tf.sparse.expand_dims(st, axis)
    np.testing.assert_allclose(dense(out), np.expand_dims(d, 0 if axis is None else axis))
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        tf.sparse.expand_dims(st, 3)


def test_eye_reset_shape_map_values():
    np.testing.assert_array_equal(tf.sparse.to_dense(tf.sparse.eye(2, 3)), np.eye(2, 3))
    assert tf.sparse.eye(3, dtype=tf.int32).dtype == tf.int32
    st = tf.SparseTensor([[0, 1], [1, 2], [1, 4]], [1.0, 2.0, 3.0], [4, 7])
    assert tf.sparse.reset_shape(st).shape == [2, 5]
    assert tf.sparse.reset_shape(st, [5, 8]).shape == [5, 8]
    with pytest.raises(ValueError, match="dimension sizes >= sp_input.shape"):
        tf.sparse.reset_shape(st, [1, 8])
    sq = tf.sparse.map_values(tf.square, st)
    np.testing.assert_allclose(sq.values, [1.0, 4.0, 9.0])
    both = tf.sparse.map_values(tf.add, st, st)
    np.testing.assert_allclose(both.values, [2.0, 4.0, 6.0])
    other = tf.SparseTensor([[0, 0], [1, 2], [1, 4]], [1.0, 2.0, 3.0], [4, 7])
    with pytest.raises(tf.errors.InvalidArgumentError, match="same indices"):
        tf.sparse.map_values(tf.add, st, other)
