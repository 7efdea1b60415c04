"""tf.SparseTensor, tf.SparseTensorSpec, to_dense / from_dense / reorder and TF's order checks."""

import pickle

import numpy as np
import pytest
from sparse_helpers import random_sparse

import layerflow as tf

rng = np.random.default_rng(13)


def test_components_shape_dtype_and_repr_as_tf():
    st = tf.SparseTensor([[0, 1], [1, 2]], [1.0, -2.0], [2, 3])
    assert st.indices.dtype == tf.int64 and st.dense_shape.dtype == tf.int64
    assert st.dtype == tf.float32 and st.shape == tf.TensorShape([2, 3])
    assert st.get_shape() == st.shape
    assert tf.sparse.SparseTensor is tf.SparseTensor
    text = repr(st)
    assert text.startswith(
        "SparseTensor(indices=tf.Tensor(\n[[0 1]\n [1 2]], shape=(2, 2), dtype=int64)"
    )
    assert "values=tf.Tensor([ 1. -2.], shape=(2,), dtype=float32)" in text
    assert text.endswith("dense_shape=tf.Tensor([2 3], shape=(2,), dtype=int64))")
    back = pickle.loads(pickle.dumps(st))
    np.testing.assert_array_equal(tf.sparse.to_dense(back), tf.sparse.to_dense(st))


def test_constructor_errors_as_tf():
    with pytest.raises(ValueError, match="indices has 1 rows but values has 2"):
        tf.SparseTensor([[0, 1]], [1.0, 2.0], [2, 3])
    with pytest.raises(ValueError, match="3 columns but dense_shape has rank 2"):
        tf.SparseTensor([[0, 1, 2]], [1.0], [2, 3])
    with pytest.raises(ValueError, match="indices must have rank 2"):
        tf.SparseTensor([0, 1], [1.0], [2, 3])
    with pytest.raises(ValueError, match="values must have rank 1"):
        tf.SparseTensor([[0, 1]], [[1.0]], [2, 3])
    with pytest.raises(TypeError, match="int64"):
        tf.SparseTensor([[0.5, 1]], [1.0], [2, 3])
    with pytest.raises(ValueError, match="must be an int64 tensor, got dtype int32"):
        tf.SparseTensor(tf.constant([[0, 1]]), [1.0], [2, 3])
    with pytest.raises(TypeError, match="ambiguous"):
        bool(tf.SparseTensor([[0]], [1.0], [2]))


def test_with_values_and_spec():
    st = tf.SparseTensor([[0, 1], [1, 2]], [1.0, 2.0], [2, 3])
    doubled = st.with_values(st.values * 2)
    assert doubled.indices is st.indices
    np.testing.assert_array_equal(doubled.values, [2.0, 4.0])
    with pytest.raises(ValueError, match="new_values must have shape"):
        st.with_values([1.0])
    spec = st._type_spec
    assert repr(spec) == "SparseTensorSpec(TensorShape([2, 3]), tf.float32)"
    assert spec == tf.SparseTensorSpec([2, 3], tf.float32)
    assert tf.SparseTensorSpec([None, 3]).is_compatible_with(st)
    assert not tf.SparseTensorSpec([None, 4]).is_compatible_with(st)
    assert not tf.SparseTensorSpec([2, 3], tf.int32).is_compatible_with(st)
    assert spec.value_type is tf.SparseTensor


@pytest.mark.parametrize("shape", [(5,), (4, 6), (3, 4, 5)])
def test_to_dense_and_from_dense_round_trip(shape):
    idx, vals, dense = random_sparse(rng, shape, 7, ordered=True)
    st = tf.SparseTensor(idx, vals, shape)
    np.testing.assert_allclose(tf.sparse.to_dense(st), dense)
    filled = tf.sparse.to_dense(st, default_value=-3.0)
    expect = np.full(shape, -3.0)
    expect[tuple(idx.T)] = vals
    np.testing.assert_allclose(filled, expect)
    back = tf.sparse.from_dense(dense)
    np.testing.assert_allclose(tf.sparse.to_dense(back), dense)
    assert back.values.shape[0] == np.count_nonzero(dense)


def test_to_dense_checks_order_repeats_and_bounds_like_tf():
    u = tf.SparseTensor([[1, 0], [0, 1]], [1.0, 2.0], [2, 2])
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"indices\[1\] = \[0,1\] is out of order"
    ):
        tf.sparse.to_dense(u)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = \[1,0\] is repeated"):
        tf.sparse.to_dense(tf.SparseTensor([[1, 0], [1, 0]], [1.0, 2.0], [2, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
        tf.sparse.to_dense(tf.SparseTensor([[3, 0]], [1.0], [2, 2]))
    np.testing.assert_array_equal(tf.sparse.to_dense(u, validate_indices=False), [[0, 2], [1, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
        tf.sparse.to_dense(tf.SparseTensor([[3, 0]], [1.0], [2, 2]), validate_indices=False)


@pytest.mark.parametrize("shape", [(9,), (4, 5), (2, 3, 4)])
def test_reorder_gives_row_major_order_and_moves_values(shape):
    idx, vals, dense = random_sparse(rng, shape, 8, ordered=False)
    st = tf.sparse.reorder(tf.SparseTensor(idx, vals, shape))
    got = st.indices.numpy()
    assert [tuple(r) for r in got] == sorted(tuple(r) for r in idx)
    np.testing.assert_allclose(tf.sparse.to_dense(st), dense)  # canonical now: validates


def test_to_dense_gradient_reaches_values_and_default():
    idx = np.array([[0, 1], [2, 0], [1, 1]])
    order = np.lexsort(idx.T[::-1])
    idx = idx[order]
    vals = tf.Variable([1.0, 2.0, 3.0])
    default = tf.Variable(0.5)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    with tf.GradientTape() as tape:
        out = tf.sparse.to_dense(tf.SparseTensor(idx, vals, [3, 2]), default_value=default)
        loss = tf.reduce_sum(out * w)
    gv, gd = tape.gradient(loss, [vals, default])
    np.testing.assert_allclose(gv, w[tuple(idx.T)], rtol=1e-6)
    mask = np.ones((3, 2), bool)
    mask[tuple(idx.T)] = False
    np.testing.assert_allclose(gd, w[mask].sum(), rtol=1e-5)


def test_sparse_times_dense_and_divide():
    st = tf.SparseTensor([[0, 1], [1, 2]], [2.0, 4.0], [2, 3])
    d = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose((st * d).values, [4.0, 24.0])
    np.testing.assert_allclose((st / d).values, [1.0, 4.0 / 6.0])
    np.testing.assert_allclose((st * 3).values, [6.0, 12.0])
    with pytest.raises(TypeError, match="SparseTensor \\* SparseTensor"):
        st * st
