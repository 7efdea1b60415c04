"""tf.sparse.sparse_dense_matmul against NumPy on the densified matrix, with finite-difference
gradients to the sparse values and to the dense operand."""

import numpy as np
import pytest
from sparse_helpers import random_sparse

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(7)


def _op(a, adj):
    return a.conj().T if adj else a


@pytest.mark.parametrize("adjoint_a", [False, True])
@pytest.mark.parametrize("adjoint_b", [False, True])
@pytest.mark.parametrize("duplicates", [False, True])
def test_matches_numpy_with_gradients(adjoint_a, adjoint_b, duplicates):
    m, k, n = 5, 4, 3
    shape = (k, m) if adjoint_a else (m, k)
    idx, vals, _ = random_sparse(rng, shape, 8, duplicates=duplicates)
    b = rng.standard_normal((n, k) if adjoint_b else (k, n))

    def dense_of(v):
        a = np.zeros(shape, v.dtype)
        np.add.at(a, tuple(idx.T), v)
        return a

    def fn(v, bt):
        sp = tf.SparseTensor(idx, v, shape)
        return tf.sparse.sparse_dense_matmul(sp, bt, adjoint_a=adjoint_a, adjoint_b=adjoint_b)

    def ref(v, bt):
        return _op(dense_of(v), adjoint_a) @ _op(bt, adjoint_b)

    check_op(fn, [vals, b], ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("adjoint_a", [False, True])
@pytest.mark.parametrize("adjoint_b", [False, True])
def test_dense_times_sparse(adjoint_a, adjoint_b):
    sp_shape = (3, 6) if adjoint_b else (6, 3)
    idx, vals, dense_sp = random_sparse(rng, sp_shape, 7)
    a = rng.standard_normal((6, 4) if adjoint_a else (4, 6))

    def fn(at, v):
        sp = tf.SparseTensor(idx, v, sp_shape)
        return tf.sparse.sparse_dense_matmul(at, sp, adjoint_a=adjoint_a, adjoint_b=adjoint_b)

    def ref(at, v):
        s = np.zeros(sp_shape, v.dtype)
        np.add.at(s, tuple(idx.T), v)
        return _op(at, adjoint_a) @ _op(s, adjoint_b)

    check_op(fn, [a, vals], ref, rtol=1e-5, atol=1e-5)


def test_complex_adjoint():
    idx = np.array([[0, 1], [2, 0], [1, 1]])
    vals = np.array([1 + 2j, -1j, 3 - 1j], np.complex64)
    b = (rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))).astype(np.complex64)
    a = np.zeros((3, 2), np.complex64)
    a[tuple(idx.T)] = vals
    got = tf.sparse.sparse_dense_matmul(tf.SparseTensor(idx, vals, [3, 2]), b, adjoint_a=True)
    np.testing.assert_allclose(got, a.conj().T @ b, rtol=1e-5)


def test_second_order_gradient_through_the_dense_operand():
    idx = np.array([[0, 0], [1, 1], [1, 0]])
    vals = tf.constant([2.0, 3.0, -1.0], tf.float64)
    b = tf.Variable(rng.standard_normal((2, 2)))
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            out = tf.sparse.sparse_dense_matmul(tf.SparseTensor(idx, vals, [2, 2]), b)
            loss = tf.reduce_sum(out**2)
        g = inner.gradient(loss, b)
        gsum = tf.reduce_sum(g)
    hess = outer.gradient(gsum, b)
    a = np.array([[2.0, 0.0], [-1.0, 3.0]])
    # d/dB sum(2 A^T A B) = 2 A^T A 1
    np.testing.assert_allclose(hess, 2 * a.T @ a @ np.ones((2, 2)), rtol=1e-10)


def test_errors_as_tf():
    sp = tf.SparseTensor([[0, 3]], [1.0], [2, 3])
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"k \(3\) from index\[0,1\] out of bounds"
    ):
        tf.sparse.sparse_dense_matmul(sp, tf.ones([3, 2]))
    ok = tf.SparseTensor([[0, 1], [1, 2]], [1.0, 2.0], [2, 5])
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="inner dimension does not match: 5 vs. 4"
    ):
        tf.sparse.sparse_dense_matmul(ok, tf.ones([4, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="float32 but b has dtype float64"):
        tf.sparse.sparse_dense_matmul(ok, tf.ones([5, 2], tf.float64))
    with pytest.raises(ValueError, match="must be matrices"):
        tf.sparse.sparse_dense_matmul(ok, tf.ones([5]))
    with pytest.raises(TypeError, match="must be a SparseTensor"):
        tf.sparse.sparse_dense_matmul(tf.ones([2, 5]), tf.ones([5, 2]))


def test_large_matrix_is_not_densified():
    # 10^5 x 10^5 dense would be 40 GB; the CSR product is instantaneous.
    n = 100_000
    local = np.random.default_rng(0)
    idx = np.stack([local.integers(0, n, 1000), local.integers(0, n, 1000)], axis=1)
    vals = local.standard_normal(1000).astype(np.float32)
    b = local.standard_normal((n, 2)).astype(np.float32)
    out = tf.sparse.sparse_dense_matmul(tf.SparseTensor(idx, vals, [n, n]), b).numpy()
    expect = np.zeros((n, 2), np.float32)
    np.add.at(expect, idx[:, 0], vals[:, None] * b[idx[:, 1]])
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-5)
