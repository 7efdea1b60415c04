"""tf.linalg's LU family, banded and tridiagonal systems, eigh_tridiagonal: NumPy/SciPy oracles,
TF 2.21's outputs where the convention matters, gradients by float64 central differences."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(5)
A = rng.standard_normal((2, 4, 4))
RHS = rng.standard_normal((2, 4, 3))
M3 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]])


def np_tridiag(diags):
    sup, main, sub = diags[..., 0, :], diags[..., 1, :], diags[..., 2, :]
    return (np.vectorize(np.diag, signature="(n)->(n,n)")(main)
            + np.vectorize(lambda v: np.diag(v[:-1], 1), signature="(n)->(n,n)")(sup)
            + np.vectorize(lambda v: np.diag(v[1:], -1), signature="(n)->(n,n)")(sub))  # fmt: skip


def test_lu_packs_like_tf():
    lu, p = tf.linalg.lu(tf.constant(M3, tf.float32))
    # TF 2.21: lu = [[7, 8, 10], [0.142857, 0.857143, 1.571429], [0.571429, 0.5, -0.5]]
    np.testing.assert_allclose(lu.numpy(), [[7.0, 8.0, 10.0], [1 / 7, 6 / 7, 11 / 7],
                                            [4 / 7, 0.5, -0.5]], rtol=1e-5)  # fmt: skip
    assert p.dtype == tf.int32 and p.numpy().tolist() == [2, 0, 1]
    low = np.tril(lu.numpy(), -1) + np.eye(3)
    np.testing.assert_allclose(M3[p.numpy()], low @ np.triu(lu.numpy()), rtol=1e-5)
    lu, p = tf.linalg.lu(A, output_idx_type=tf.int64)
    assert p.dtype == tf.int64 and lu.shape == (2, 4, 4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="not invertible"):
        tf.linalg.lu([[1.0, 2.0], [2.0, 4.0]])
    # no gradient through lu itself (TF registers none)
    x = tf.constant(M3)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.linalg.lu(x).lu
    assert tape.gradient(y, x) is None


def test_lu_solve_inverse_reconstruct_and_gradients():
    lu, p = tf.linalg.lu(A)
    np.testing.assert_allclose(tf.linalg.lu_solve(lu, p, RHS).numpy(), np.linalg.solve(A, RHS),
                               rtol=1e-9)  # fmt: skip
    np.testing.assert_allclose(tf.linalg.lu_matrix_inverse(lu, p).numpy(), np.linalg.inv(A),
                               rtol=1e-9)  # fmt: skip
    np.testing.assert_allclose(tf.linalg.lu_reconstruct(lu, p).numpy(), A, rtol=1e-12)
    # broadcasting: one factorization, a batch of right-hand sides
    lu0, p0 = tf.linalg.lu(A[0])
    got = tf.linalg.lu_solve(lu0, p0, RHS)
    np.testing.assert_allclose(got.numpy(), np.linalg.solve(A[0], RHS), rtol=1e-9)
    lu_np, perm = lu.numpy(), p.numpy()
    check_op(lambda f, b: tf.linalg.lu_solve(f, perm, b), [lu_np, RHS], None, dtypes=("float64",))
    check_op(lambda f: tf.linalg.lu_reconstruct(f, perm), [lu_np], None, dtypes=("float64",))
    check_op(lambda f: tf.linalg.lu_matrix_inverse(f, perm), [lu_np], None, dtypes=("float64",),
             grad_rtol=1e-4)  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="rhs must have shape"):
        tf.linalg.lu_solve(lu, p, RHS[:, :2])


DIAGS = np.array([[2.0, 1.0, 4.0, 0.0], [5.0, 6.0, 7.0, 8.0], [0.0, 3.0, 2.0, 1.0]])
B4 = np.array([1.0, 2.0, 3.0, 4.0])


def test_tridiagonal_solve_formats_match_tf():
    expected = [0.0890411, 0.27739725, 0.06849316, 0.49143836]  # TF 2.21
    np.testing.assert_allclose(tf.linalg.tridiagonal_solve(DIAGS, B4).numpy(), expected, rtol=1e-6)
    seq = tf.linalg.tridiagonal_solve(tuple(DIAGS), B4[:, None], diagonals_format="sequence")
    np.testing.assert_allclose(seq.numpy()[:, 0], expected, rtol=1e-6)
    full = np_tridiag(DIAGS)
    mat = tf.linalg.tridiagonal_solve(full, B4[None], diagonals_format="matrix", transpose_rhs=True)
    np.testing.assert_allclose(mat.numpy()[:, 0], expected, rtol=1e-6)
    nopiv = tf.linalg.tridiagonal_solve(DIAGS, B4, partial_pivoting=False)
    np.testing.assert_allclose(nopiv.numpy(), expected, rtol=1e-6)
    # a zero leading pivot: pivoting solves it, no pivoting gives NaN (both as TF)
    swap = np.array([[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]])
    np.testing.assert_allclose(tf.linalg.tridiagonal_solve(swap, [[1.0], [1.0]]).numpy(),
                               [[1.0], [1.0]])  # fmt: skip
    bad = tf.linalg.tridiagonal_solve(np.array([[1.0, 1.0], [0.0, 1.0], [1.0, 1.0]]),
                                      [[1.0], [1.0]], partial_pivoting=False)  # fmt: skip
    assert np.isnan(bad.numpy()).all()
    zb = tf.complex(B4[:, None], 0.0 * B4[:, None])
    c = tf.linalg.tridiagonal_solve(tf.complex(DIAGS, DIAGS), zb, conjugate_rhs=True)
    np.testing.assert_allclose(c.numpy()[:, 0], np.asarray(expected) * (0.5 - 0.5j), rtol=1e-6)
    with pytest.raises(ValueError, match="diagonals_format"):
        tf.linalg.tridiagonal_solve(DIAGS, B4, diagonals_format="banded")


def test_tridiagonal_solve_random_batches_and_gradients():
    diags = rng.standard_normal((3, 3, 5))
    diags[:, 1] += 4.0
    rhs = rng.standard_normal((3, 5, 2))
    got = tf.linalg.tridiagonal_solve(diags, rhs)
    np.testing.assert_allclose(got.numpy(), np.linalg.solve(np_tridiag(diags), rhs), rtol=1e-10)
    check_op(tf.linalg.tridiagonal_solve, [diags, rhs], None, dtypes=("float64",))
    # pivoting really happens on this one (small diagonal), and the gradient still holds
    piv = diags.copy()
    piv[:, 1] = 0.1
    np.testing.assert_allclose(tf.linalg.tridiagonal_solve(piv, rhs).numpy(),
                               np.linalg.solve(np_tridiag(piv), rhs), rtol=1e-9)  # fmt: skip
    check_op(tf.linalg.tridiagonal_solve, [piv, rhs], None, dtypes=("float64",), grad_rtol=1e-4)
    check_op(lambda a: tf.linalg.tridiagonal_solve(a, rhs[0], diagonals_format="matrix"),
             [np_tridiag(diags[0])], None, dtypes=("float64",))  # fmt: skip


def test_tridiagonal_matmul_and_gradient():
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    got = tf.linalg.tridiagonal_matmul(DIAGS, x)
    np.testing.assert_allclose(got.numpy(), [[11, 18], [26, 36], [69, 82], [61, 70]])  # TF
    check_op(tf.linalg.tridiagonal_matmul, [DIAGS, x], lambda d, b: np_tridiag(d) @ b)
    seq = tf.linalg.tridiagonal_matmul(tuple(DIAGS), x, diagonals_format="sequence")
    np.testing.assert_allclose(seq.numpy(), got.numpy())


def test_banded_triangular_solve_layouts_match_tf():
    rhs = np.array([[1.0], [2.0], [3.0], [4.0]])
    lower = np.array([[1.0, 2.0, 3.0, 4.0], [9.0, 1.0, 2.0, 3.0]])  # 9: padding, unread
    np.testing.assert_allclose(tf.linalg.banded_triangular_solve(lower, rhs).numpy()[:, 0],
                               [1.0, 0.5, 2 / 3, 0.5], rtol=1e-6)  # fmt: skip
    upper = np.array([[1.0, 2.0, 3.0, 9.0], [1.0, 2.0, 3.0, 4.0]])
    got = tf.linalg.banded_triangular_solve(upper, rhs, lower=False)
    np.testing.assert_allclose(got.numpy()[:, 0], [0.0, 1.0, 0.0, 1.0], atol=1e-6)
    adj = tf.linalg.banded_triangular_solve(lower, rhs, adjoint=True)
    np.testing.assert_allclose(adj.numpy()[:, 0], [0.0, 1.0, 0.0, 1.0], atol=1e-6)
    check_op(lambda b, r: tf.linalg.banded_triangular_solve(b, r), [lower + 1.0, rhs], None,
             dtypes=("float64",))  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="not invertible"):
        tf.linalg.banded_triangular_solve([[0.0, 1.0], [1.0, 1.0]], [[1.0], [1.0]])


def test_eigh_tridiagonal_selects_like_tf():
    pytest.importorskip("scipy.linalg")
    alpha, beta = [1.0, 2.0, 3.0], [0.5, 0.5]
    dense = np.diag(alpha) + np.diag(beta, 1) + np.diag(beta, -1)
    w = tf.linalg.eigh_tridiagonal(alpha, beta)
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(dense), rtol=1e-6)
    w, v = tf.linalg.eigh_tridiagonal(alpha, beta, eigvals_only=False)
    np.testing.assert_allclose(dense @ v.numpy(), v.numpy() * w.numpy(), atol=1e-5)
    sel = tf.linalg.eigh_tridiagonal(alpha, beta, select="i", select_range=[1, 2])
    np.testing.assert_allclose(sel.numpy(), [2.0, 3.2247448], rtol=1e-6)
    sel = tf.linalg.eigh_tridiagonal(alpha, beta, select="v", select_range=[1.5, 5.0])
    np.testing.assert_allclose(sel.numpy(), [2.0, 3.2247448], rtol=1e-6)
    with pytest.raises(ValueError, match="beta"):
        tf.linalg.eigh_tridiagonal(alpha, [0.5])
