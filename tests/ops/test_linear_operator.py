"""tf.linalg.LinearOperator and its structured family: every operator against its dense matrix
(matmul, matvec, solve, adjoint forms, determinants, diag_part, trace), TF's shape and hint
rules, gradients through the structure, and conjugate_gradient."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

rng = np.random.default_rng(11)
FULL = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
X = rng.standard_normal((2, 3, 2))
LO = tf.linalg


def operators():
    """(operator, its dense float64 matrix) pairs, one of each kind."""
    d = rng.uniform(1.0, 2.0, (2, 3))
    tril = np.tril(FULL)
    u = rng.standard_normal((3, 1))
    spd = FULL @ np.swapaxes(FULL, -1, -2)
    return [
        (LO.LinearOperatorFullMatrix(FULL), FULL),
        (LO.LinearOperatorDiag(d), np.vectorize(np.diag, signature="(n)->(n,n)")(d)),
        (LO.LinearOperatorIdentity(3, dtype=tf.float64), np.eye(3)),
        (LO.LinearOperatorScaledIdentity(3, tf.constant([2.0, -3.0], tf.float64)),
         np.array([2.0, -3.0])[:, None, None] * np.eye(3)),
        (LO.LinearOperatorLowerTriangular(FULL), tril),
        (LO.LinearOperatorComposition([LO.LinearOperatorFullMatrix(FULL),
                                       LO.LinearOperatorLowerTriangular(FULL)]), FULL @ tril),
        (LO.LinearOperatorInversion(LO.LinearOperatorFullMatrix(FULL)), np.linalg.inv(FULL)),
        (LO.LinearOperatorAdjoint(LO.LinearOperatorFullMatrix(FULL)), np.swapaxes(FULL, -1, -2)),
        (LO.LinearOperatorFullMatrix(spd, is_self_adjoint=True, is_positive_definite=True), spd),
        (LO.LinearOperatorLowRankUpdate(LO.LinearOperatorFullMatrix(FULL[0]), u,
                                        diag_update=tf.constant([2.0], tf.float64)),
         FULL[0] + 2.0 * u @ u.T),
        (LO.LinearOperatorTridiag(TRI), TRI_DENSE),
        (LO.LinearOperatorPermutation([2, 0, 1], dtype=tf.float64), np.eye(3)[[2, 0, 1]]),
        (LO.LinearOperatorHouseholder(V), np.eye(3) - 2 * np.outer(V, V) / V.dot(V)),
    ]  # fmt: skip


TRI = rng.standard_normal((2, 3, 3)) + np.array([0.0, 4.0, 0.0])[:, None]
TRI_DENSE = np.stack([np.diag(t[1]) + np.diag(t[0, :-1], 1) + np.diag(t[2, 1:], -1) for t in TRI])
V = np.array([1.0, -2.0, 0.5])


@pytest.mark.parametrize("index", range(13))
def test_operator_matches_its_dense_matrix(index):
    op, dense = operators()[index]
    assert op.shape == dense.shape and op.batch_shape == dense.shape[:-2]
    assert op.domain_dimension == dense.shape[-1] and op.tensor_rank == dense.ndim
    np.testing.assert_allclose(op.to_dense().numpy(), dense, rtol=1e-10, atol=1e-12)
    x = X if dense.ndim == 3 else X[0]
    adj = np.swapaxes(dense, -1, -2)
    np.testing.assert_allclose(op.matmul(x).numpy(), dense @ x, rtol=1e-10)
    np.testing.assert_allclose(op.matmul(x, adjoint=True).numpy(), adj @ x, rtol=1e-10)
    xt = np.swapaxes(x, -1, -2)
    np.testing.assert_allclose(op.matmul(xt, adjoint_arg=True).numpy(), dense @ x, rtol=1e-10)
    np.testing.assert_allclose(op.matvec(x[..., 0]).numpy(), (dense @ x)[..., 0], rtol=1e-10)
    np.testing.assert_allclose(op.solve(x).numpy(), np.linalg.solve(dense, x), rtol=1e-8)
    np.testing.assert_allclose(op.solve(x, adjoint=True).numpy(), np.linalg.solve(adj, x),
                               rtol=1e-8)  # fmt: skip
    np.testing.assert_allclose(op.solvevec(x[..., 0]).numpy(),
                               np.linalg.solve(dense, x)[..., 0], rtol=1e-8)  # fmt: skip
    np.testing.assert_allclose(op.determinant().numpy(), np.linalg.det(dense), rtol=1e-8)
    np.testing.assert_allclose(op.log_abs_determinant().numpy(),
                               np.linalg.slogdet(dense)[1], rtol=1e-8, atol=1e-12)  # fmt: skip
    np.testing.assert_allclose(op.diag_part().numpy(), np.diagonal(dense, 0, -2, -1), rtol=1e-10)
    np.testing.assert_allclose(op.trace().numpy(), np.trace(dense, 0, -2, -1), rtol=1e-10)
    np.testing.assert_allclose(op.adjoint().to_dense().numpy(), adj, rtol=1e-10)
    np.testing.assert_allclose(op.inverse().to_dense().numpy(), np.linalg.inv(dense), rtol=1e-8)
    np.testing.assert_allclose((op @ x).numpy(), dense @ x, rtol=1e-10)


def test_structured_operators_beyond_square():
    a, b = rng.standard_normal((2, 2)), rng.standard_normal((3, 3))
    kron = LO.LinearOperatorKronecker([LO.LinearOperatorFullMatrix(a),
                                       LO.LinearOperatorFullMatrix(b)])  # fmt: skip
    np.testing.assert_allclose(kron.to_dense().numpy(), np.kron(a, b), rtol=1e-12)
    np.testing.assert_allclose(kron.determinant().numpy(), np.linalg.det(np.kron(a, b)),
                               rtol=1e-9)  # fmt: skip
    np.testing.assert_allclose(kron.log_abs_determinant().numpy(),
                               np.linalg.slogdet(np.kron(a, b))[1], rtol=1e-9)  # fmt: skip
    blocks = LO.LinearOperatorBlockDiag([LO.LinearOperatorFullMatrix(a),
                                         LO.LinearOperatorFullMatrix(b)])  # fmt: skip
    dense = np.zeros((5, 5))
    dense[:2, :2], dense[2:, 2:] = a, b
    np.testing.assert_allclose(blocks.to_dense().numpy(), dense)
    v = rng.standard_normal((5, 2))
    np.testing.assert_allclose(blocks.matmul(v).numpy(), dense @ v, rtol=1e-12)
    np.testing.assert_allclose(blocks.solve(v).numpy(), np.linalg.solve(dense, v), rtol=1e-9)
    np.testing.assert_allclose(blocks.determinant().numpy(), np.linalg.det(dense), rtol=1e-9)
    zeros = LO.LinearOperatorZeros(2, 3)
    assert zeros.shape == (2, 3) and zeros.is_square is False
    assert zeros.matvec([1.0, 2.0, 3.0]).numpy().tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="singular"):
        zeros.inverse()
    odd = LO.LinearOperatorPermutation([1, 0, 2])
    assert float(odd.determinant()) == -1.0 and odd.dtype == tf.float32  # TF's defaults
    with pytest.raises(tf.errors.InvalidArgumentError, match="permutation of 0..2"):
        LO.LinearOperatorPermutation([0, 0, 1])
    toep = LO.LinearOperatorToeplitz([1.0, 2.0, 3.0], [1.0, 4.0, 5.0])
    np.testing.assert_allclose(toep.to_dense().numpy(), [[1, 4, 5], [2, 1, 4], [3, 2, 1]])


def test_hints_errors_and_repr():
    d = LO.LinearOperatorDiag([1.0, 2.0])
    assert d.is_self_adjoint and d.is_square and d.dtype == tf.float32
    assert d.adjoint() is d  # self-adjoint: its own adjoint
    with pytest.raises(ValueError, match="positive definite matrix is always non-singular"):
        LO.LinearOperatorFullMatrix(np.eye(2), is_positive_definite=True, is_non_singular=False)
    with pytest.raises(ValueError, match="dimensions must be equal"):
        d.matmul(tf.ones([3, 1]))
    with pytest.raises(TypeError, match="dtype float64"):
        d.matmul(tf.ones([2, 1], tf.float64))
    with pytest.raises(ValueError, match="cannot multiply"):
        LO.LinearOperatorComposition([LO.LinearOperatorZeros(2, 3), LO.LinearOperatorZeros(2)])
    comp = d.matmul(LO.LinearOperatorIdentity(2))
    assert isinstance(comp, LO.LinearOperatorComposition)
    assert "LinearOperatorDiag" in repr(d) and "shape=[2, 2]" in repr(d)
    chol = LO.LinearOperatorFullMatrix([[4.0, 2.0], [2.0, 3.0]], is_self_adjoint=True,
                                       is_positive_definite=True).cholesky()  # fmt: skip
    np.testing.assert_allclose(chol.to_dense().numpy(), np.linalg.cholesky([[4, 2], [2, 3]]),
                               rtol=1e-6)  # fmt: skip


def test_gradients_flow_through_structure():
    check_op(lambda m, x: LO.LinearOperatorFullMatrix(m).solve(x), [FULL, X], None,
             dtypes=("float64",), grad_rtol=1e-4)  # fmt: skip
    check_op(lambda d, x: LO.LinearOperatorDiag(d).solve(x), [FULL[..., 0] + 5.0, X], None,
             dtypes=("float64",))  # fmt: skip
    check_op(lambda m: LO.LinearOperatorLowerTriangular(m).log_abs_determinant(), [FULL], None,
             dtypes=("float64",))  # fmt: skip
    u = rng.standard_normal((3, 2))
    check_op(lambda u_: LO.LinearOperatorLowRankUpdate(LO.LinearOperatorFullMatrix(FULL[0]), u_)
             .solve(X[0]), [u], None, dtypes=("float64",), grad_rtol=1e-4)  # fmt: skip


def test_conjugate_gradient_solves_spd_systems():
    spd = FULL @ np.swapaxes(FULL, -1, -2)
    op = LO.LinearOperatorFullMatrix(spd, is_self_adjoint=True, is_positive_definite=True)
    b = rng.standard_normal((2, 3))
    state = LO.experimental.conjugate_gradient(op, b, tol=1e-10, max_iter=50)
    np.testing.assert_allclose(state.x.numpy(), np.linalg.solve(spd, b[..., None])[..., 0],
                               rtol=1e-6)  # fmt: skip
    assert 0 < int(state.i) <= 3 + 1  # exact arithmetic needs at most n steps
    pre = LO.LinearOperatorDiag(1.0 / np.diagonal(spd, 0, -2, -1), is_positive_definite=True)
    state = LO.experimental.conjugate_gradient(op, b, preconditioner=pre, tol=1e-10)
    np.testing.assert_allclose(state.x.numpy(), np.linalg.solve(spd, b[..., None])[..., 0],
                               rtol=1e-6)  # fmt: skip
    one = LO.experimental.conjugate_gradient(op, b, max_iter=1)
    assert int(one.i) == 1
    with pytest.raises(ValueError, match="self-adjoint and positive definite"):
        LO.experimental.conjugate_gradient(LO.LinearOperatorFullMatrix(FULL), b)
