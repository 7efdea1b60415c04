"""tf.linalg solves, factorizations and decompositions: NumPy oracles, TF's gradients checked
by float64 central differences, TF's errors."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op, check_second_derivative

rng = np.random.default_rng(21)
A = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)  # a batch of well-conditioned matrices
B = rng.standard_normal((2, 3, 2))
SPD = A @ np.swapaxes(A, -1, -2)
R = rng.standard_normal((4, 3))


def mT(a):
    return np.swapaxes(a, -1, -2)


def from_lower(fn):
    """fn of the symmetric matrix built from a's lower triangle (what TF's cholesky and eigh
    read), so that finite differences see what the op sees."""

    def wrapped(a):
        low = tf.linalg.band_part(a, -1, 0)
        return fn(low + tf.linalg.matrix_transpose(low) - tf.linalg.diag(tf.linalg.diag_part(a)))

    return wrapped


def sym_np(a):
    return np.tril(a) + mT(np.tril(a, -1))


def test_solve_and_its_adjoint_form():
    check_op(tf.linalg.solve, [A, B], np.linalg.solve, rtol=1e-4)
    check_op(lambda a, b: tf.linalg.solve(a, b, adjoint=True), [A, B],
             lambda a, b: np.linalg.solve(mT(a), b), rtol=1e-4)  # fmt: skip
    check_second_derivative(lambda a: tf.linalg.solve(a, tf.constant(B[0])), A[0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="not invertible"):
        tf.linalg.solve([[1.0, 2.0], [2.0, 4.0]], [[1.0], [1.0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="rhs"):
        tf.linalg.solve(A, B[0])


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_triangular_solve_reads_one_triangle(lower, adjoint):
    def ref(a, b):
        t = np.tril(a) if lower else np.triu(a)
        return np.linalg.solve(mT(t) if adjoint else t, b)

    check_op(lambda a, b: tf.linalg.triangular_solve(a, b, lower=lower, adjoint=adjoint),
             [A, B], ref, rtol=1e-4)  # fmt: skip


def test_cholesky_cholesky_solve_and_logdet():
    check_op(from_lower(tf.linalg.cholesky), [SPD], lambda a: np.linalg.cholesky(sym_np(a)),
             rtol=1e-4)  # fmt: skip
    check_second_derivative(from_lower(tf.linalg.cholesky), SPD[0], rtol=1e-3)
    chol = tf.linalg.cholesky(SPD)
    np.testing.assert_allclose(tf.linalg.cholesky_solve(chol, B).numpy(),
                               np.linalg.solve(SPD, B), rtol=1e-8)  # fmt: skip
    check_op(from_lower(tf.linalg.logdet), [SPD],
             lambda a: np.linalg.slogdet(sym_np(a))[1], rtol=1e-4)  # fmt: skip
    bad = tf.linalg.cholesky([[[4.0, 2.0], [2.0, 2.0]], [[1.0, 2.0], [2.0, 1.0]]]).numpy()
    np.testing.assert_allclose(bad[0], [[2.0, 0.0], [1.0, 1.0]])
    assert np.isnan(bad[1]).all()  # not positive definite: NaN, as TF returns


def test_slogdet():
    sign, logabs = tf.linalg.slogdet([[1.0, 2.0], [3.0, 4.0]])
    assert float(sign) == -1.0
    np.testing.assert_allclose(float(logabs), np.log(2.0), rtol=1e-6)
    check_op(lambda a: tf.linalg.slogdet(a).log_abs_determinant, [A],
             lambda a: np.linalg.slogdet(a)[1], rtol=1e-4)  # fmt: skip
    check_second_derivative(lambda a: tf.linalg.slogdet(a)[1], A[0])


def test_pinv_matrix_rank_and_lstsq():
    check_op(tf.linalg.pinv, [R], np.linalg.pinv, rtol=1e-4)
    check_op(tf.linalg.pinv, [np.ascontiguousarray(R.T)], np.linalg.pinv, rtol=1e-4)
    check_second_derivative(tf.linalg.pinv, R)
    assert tf.linalg.matrix_rank([[1.0, 2.0], [2.0, 4.0]]).numpy() == 1
    ranks = tf.linalg.matrix_rank(np.stack([np.eye(3), np.diag([1.0, 1.0, 0.0])])).numpy()
    np.testing.assert_array_equal(ranks, [3, 2])
    assert ranks.dtype == np.int32
    rhs = rng.standard_normal((4, 2))
    ref = lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0]  # noqa: E731
    check_op(tf.linalg.lstsq, [R, rhs], ref, rtol=1e-3)
    check_op(lambda a, b: tf.linalg.lstsq(a, b, fast=False), [R, rhs], ref, rtol=1e-3)
    wide = np.ascontiguousarray(R.T)
    check_op(tf.linalg.lstsq, [wide, rhs[:3]], ref, rtol=1e-3)  # minimum-norm solution
    ridge = tf.linalg.lstsq(R, rhs, l2_regularizer=0.5).numpy()
    np.testing.assert_allclose(ridge, np.linalg.solve(R.T @ R + 0.5 * np.eye(3), R.T @ rhs),
                               rtol=1e-5)  # fmt: skip


def test_expm():
    def ref(a):
        w, v = np.linalg.eig(a)
        return (v @ np.diag(np.exp(w)) @ np.linalg.inv(v)).real

    for scale in (0.1, 1.0, 4.0):  # with and without scaling and squaring
        check_op(tf.linalg.expm, [R[:3] * scale], ref, rtol=1e-4)
    np.testing.assert_allclose(tf.linalg.expm([[0.0, 1.0], [0.0, 0.0]]).numpy(),
                               [[1.0, 1.0], [0.0, 1.0]])  # fmt: skip
    np.testing.assert_allclose(tf.linalg.expm(tf.zeros([2, 3, 3])).numpy(),
                               np.broadcast_to(np.eye(3), (2, 3, 3)))  # fmt: skip


def test_eigh_values_vectors_and_gradients():
    e, v = tf.linalg.eigh(SPD)
    ref_e, ref_v = np.linalg.eigh(SPD)
    np.testing.assert_allclose(e.numpy(), ref_e, rtol=1e-10)
    np.testing.assert_allclose(np.abs(v.numpy()), np.abs(ref_v), rtol=1e-8, atol=1e-10)
    check_op(from_lower(tf.linalg.eigvalsh), [SPD], lambda a: np.linalg.eigvalsh(sym_np(a)),
             rtol=1e-4)  # fmt: skip
    # the squared vectors do not depend on their signs
    check_op(from_lower(lambda a: tf.linalg.eigh(a)[1] ** 2), [SPD[0]],
             lambda a: np.linalg.eigh(sym_np(a))[1] ** 2, rtol=1e-4)  # fmt: skip


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5)])
def test_qr_and_gradients(shape):
    x = rng.standard_normal(shape)
    q, r = tf.linalg.qr(x)
    np.testing.assert_allclose((q @ r).numpy(), x, atol=1e-6)
    check_op(lambda a: tf.linalg.qr(a).q, [x], lambda a: np.linalg.qr(a)[0], rtol=1e-4)
    check_op(lambda a: tf.linalg.qr(a).r, [x], lambda a: np.linalg.qr(a)[1], rtol=1e-4)
    full_q, full_r = tf.linalg.qr(x, full_matrices=True)
    assert full_q.shape == (shape[0], shape[0]) and full_r.shape == shape


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5), (2, 4, 3)])
def test_svd_and_gradients(shape):
    x = rng.standard_normal(shape)
    s, u, v = tf.linalg.svd(x)
    np.testing.assert_allclose((u * s[..., None, :]) @ tf.linalg.adjoint(v), x, atol=1e-6)
    ref = np.linalg.svd(x, full_matrices=False)
    check_op(lambda a: tf.linalg.svd(a, compute_uv=False), [x], lambda a: np.linalg.svd(
        a, compute_uv=False), rtol=1e-4)  # fmt: skip
    check_op(
        lambda a: tf.linalg.svd(a)[1] ** 2,
        [x],
        lambda a: np.linalg.svd(a, full_matrices=False)[0] ** 2,
        rtol=1e-4,
        grad_rtol=1e-4,
    )
    check_op(lambda a: tf.linalg.svd(a)[2] ** 2, [x],
             lambda a: mT(np.linalg.svd(a, full_matrices=False)[2]) ** 2, rtol=1e-4,
             grad_rtol=1e-4)  # fmt: skip
    np.testing.assert_allclose(s.numpy(), ref[1], rtol=1e-10)


def test_structure_ops():
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    check_op(tf.linalg.cross, [a, b], np.cross)
    with pytest.raises(tf.errors.InvalidArgumentError, match="3"):
        tf.linalg.cross([1.0, 2.0], [3.0, 4.0])
    m, d = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3))

    def set_diag_ref(x, v):
        out = x.copy()
        idx = np.arange(3)
        out[..., idx, idx] = v
        return out

    check_op(tf.linalg.set_diag, [m, d], set_diag_ref)
    with pytest.raises(tf.errors.InvalidArgumentError, match="diagonal must have shape"):
        tf.linalg.set_diag(m, d[:, :2])
    t = rng.standard_normal((2, 3))
    full = tf.linalg.tensor_diag(t).numpy()
    assert full.shape == (2, 3, 2, 3) and full[1, 2, 1, 2] == t[1, 2]
    np.testing.assert_allclose(full.sum(), t.sum())
    np.testing.assert_array_equal(tf.linalg.tensor_diag_part(full).numpy(), t)
    check_op(tf.linalg.tensor_diag_part, [np.diag(t.ravel()).reshape(2, 3, 2, 3)], lambda x: t)
    with pytest.raises(tf.errors.InvalidArgumentError, match="D \\+ D"):
        tf.linalg.tensor_diag_part(tf.zeros([2, 3]))
    z = tf.constant([[1 + 1j, 2j], [3.0, 4.0]])
    np.testing.assert_array_equal(tf.linalg.adjoint(z).numpy(), np.conj(z.numpy().T))


# --- eig, eigvals, matrix_square_root, logm (ops/linalg_eig_ops.py) -----------------------------


def test_eig_matches_numpy_and_tf_dtypes():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    e, v = tf.linalg.eig(tf.constant(a, tf.float32))
    assert e.dtype == tf.complex64 and v.dtype == tf.complex64
    np.testing.assert_allclose(e.numpy(), np.linalg.eigvals(a), rtol=1e-5)
    # TF's eigenvectors (real LAPACK): [[-0.8246, -0.4160], [0.5658, -0.9094]]
    np.testing.assert_allclose(v.numpy().real, [[-0.8245648, -0.41597357],
                                                [0.56576747, -0.90937674]], rtol=1e-5)  # fmt: skip
    rot = tf.eigvals(tf.constant([[0.0, -1.0], [1.0, 0.0]], tf.float64))
    assert rot.dtype == tf.complex128
    np.testing.assert_allclose(sorted(rot.numpy().imag), [-1.0, 1.0])


def test_eigvals_gradient_by_finite_differences():
    w = tf.constant([1.0, -2.0, 0.5], tf.float64)

    def loss(a):
        e = tf.eigvals(a)
        return tf.reduce_sum(tf.math.real(e) * w) + tf.reduce_sum(tf.math.imag(e) ** 2)

    check_op(loss, [A[0]], None, dtypes=("float64",), grad_rtol=1e-4, grad_atol=1e-6)


def test_matrix_square_root_forward_nan_and_gradient():
    spd = SPD[0]
    r = tf.linalg.sqrtm(tf.constant(spd))
    np.testing.assert_allclose(r.numpy() @ r.numpy(), spd, rtol=1e-8)
    got = tf.matrix_square_root(tf.constant([[4.0, 1.0], [0.0, 9.0]]))
    np.testing.assert_allclose(got.numpy(), [[2.0, 0.2], [0.0, 3.0]], rtol=1e-6)
    assert np.isnan(tf.linalg.sqrtm(tf.constant([[-4.0, 0.0], [0.0, 9.0]])).numpy()).all()
    check_op(tf.linalg.sqrtm, [SPD], None, dtypes=("float64",), grad_rtol=1e-4)
    check_second_derivative(tf.linalg.sqrtm, SPD[0], rtol=1e-3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="square"):
        tf.linalg.sqrtm(tf.zeros([2, 3]))


def test_logm_complex_only():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    m = (SPD[0] / 10).astype(np.complex128)
    np.testing.assert_allclose(tf.linalg.logm(m).numpy(), scipy_linalg.logm(m), rtol=1e-10)
    with pytest.raises(tf.errors.InvalidArgumentError, match="complex"):
        tf.linalg.logm(tf.eye(2))
