"""LinearOperatorCirculant (1-D, 2-D, 3-D) and LinearOperatorBlockLowerTriangular against dense
NumPy matrices, TF's hint and dtype rules, and gradients by central differences."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import numeric_gradient

rng = np.random.default_rng(5)
LO = tf.linalg


def circulant(kernel):
    """Dense (nested block) circulant matrix from its kernel [*block]: A[i, j] = h[(i - j)]."""
    shape = kernel.shape
    idx = np.array(list(np.ndindex(*shape)))
    n = len(idx)
    out = np.empty((n, n), kernel.dtype)
    for i in range(n):
        for j in range(n):
            out[i, j] = kernel[tuple((idx[i] - idx[j]) % np.array(shape))]
    return out


def dense_of(spectrum, depth):
    batch = spectrum.shape[:-depth]
    flat = spectrum.reshape(-1, *spectrum.shape[-depth:])
    axes = tuple(range(1, depth + 1))
    mats = [circulant(np.fft.ifftn(s, axes=tuple(a - 1 for a in axes))) for s in flat]
    n = mats[0].shape[0]
    return np.array(mats).reshape(*batch, n, n)


CASES = [
    (LO.LinearOperatorCirculant, (2, 5)),
    (LO.LinearOperatorCirculant2D, (2, 3)),
    (LO.LinearOperatorCirculant3D, (2, 2, 3, 2)),
]


@pytest.mark.parametrize("cls,shape", CASES)
def test_circulant_matches_dense_numpy(cls, shape):
    depth = {"LinearOperatorCirculant": 1, "LinearOperatorCirculant2D": 2}.get(cls.__name__, 3)
    spectrum = rng.standard_normal(shape) + 1j * rng.standard_normal(shape) + 3.0
    op = cls(tf.constant(spectrum), input_output_dtype=tf.complex128)
    dense = dense_of(spectrum, depth)
    n = dense.shape[-1]
    batch = shape[:-depth]
    assert op.shape == (*batch, n, n) and op.block_depth == depth
    assert op.block_shape == shape[-depth:] and op.dtype == tf.complex128
    assert op.is_self_adjoint is None and op.is_square
    np.testing.assert_allclose(op.to_dense().numpy(), dense, atol=1e-12)
    x = rng.standard_normal((*batch, n, 2)) + 1j * rng.standard_normal((*batch, n, 2))
    adj = np.conj(np.swapaxes(dense, -1, -2))
    np.testing.assert_allclose(op.matmul(x).numpy(), dense @ x, atol=1e-12)
    np.testing.assert_allclose(op.matmul(x, adjoint=True).numpy(), adj @ x, atol=1e-12)
    xh = np.conj(np.swapaxes(x, -1, -2))
    np.testing.assert_allclose(op.matmul(xh, adjoint_arg=True).numpy(), dense @ x, atol=1e-12)
    np.testing.assert_allclose(op.solve(x).numpy(), np.linalg.solve(dense, x), atol=1e-10)
    np.testing.assert_allclose(
        op.solve(x, adjoint=True).numpy(), np.linalg.solve(adj, x), atol=1e-10
    )
    np.testing.assert_allclose(op.matvec(x[..., 0]).numpy(), (dense @ x)[..., 0], atol=1e-12)
    np.testing.assert_allclose(op.determinant().numpy(), np.linalg.det(dense), rtol=1e-9)
    np.testing.assert_allclose(
        op.log_abs_determinant().numpy(), np.linalg.slogdet(dense)[1], rtol=1e-9
    )
    np.testing.assert_allclose(op.trace().numpy(), np.trace(dense, axis1=-2, axis2=-1))
    np.testing.assert_allclose(op.diag_part().numpy(), np.diagonal(dense, 0, -2, -1))
    kernel = np.fft.ifftn(spectrum, axes=tuple(range(-depth, 0)))
    np.testing.assert_allclose(op.convolution_kernel().numpy(), kernel, atol=1e-12)
    sv = np.linalg.svd(dense, compute_uv=False)
    np.testing.assert_allclose(op.cond().numpy(), sv[..., 0] / sv[..., -1], rtol=1e-9)


def test_real_spectrum_is_self_adjoint_with_real_io_dtype():
    spectrum = np.array([6.0, -3.0, 1.5, -3.0])  # Hermitian (even): a real symmetric matrix
    op = LO.LinearOperatorCirculant(spectrum, input_output_dtype=tf.float32)
    assert op.is_self_adjoint is True and op.dtype == tf.float32
    dense = dense_of(spectrum, 1).real
    np.testing.assert_allclose(op.to_dense().numpy(), dense, atol=1e-5)
    assert op.to_dense().dtype == tf.float32
    np.testing.assert_allclose(op.eigvals().numpy(), spectrum)
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(dense)), np.sort(spectrum), atol=1e-6)
    assert op.adjoint() is op
    op.assert_hermitian_spectrum()
    with pytest.raises(ValueError, match="real spectrum always corresponds"):
        LO.LinearOperatorCirculant(spectrum, is_self_adjoint=False)
    with pytest.raises(ValueError, match="always square"):
        LO.LinearOperatorCirculant(spectrum, is_square=False)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        LO.LinearOperatorCirculant2D([1.0, 2.0])
    with pytest.raises(TypeError, match="int32"):
        LO.LinearOperatorCirculant([1, 2])
    with pytest.raises(TypeError, match="float64"):
        op.matmul(tf.ones([4, 1], tf.float64))


def test_default_io_dtype_is_complex64_and_non_hermitian_spectrum_is_reported():
    op = LO.LinearOperatorCirculant(tf.constant([1 + 1j, 2.0, 3 - 1j], tf.complex64))
    assert op.dtype == tf.complex64 and op.is_self_adjoint is None
    with pytest.raises(NotImplementedError, match="self-adjoint"):
        op.eigvals()
    with pytest.raises(tf.errors.InvalidArgumentError, match="not Hermitian"):
        op.assert_hermitian_spectrum()
    assert LO.LinearOperatorCirculant([1.0, 2.0]).dtype == tf.complex64


def test_circulant_algebra_stays_circulant():
    s1 = rng.standard_normal(4) + 1j * rng.standard_normal(4) + 2
    s2 = rng.standard_normal(4) + 1j * rng.standard_normal(4) + 2
    a = LO.LinearOperatorCirculant(tf.constant(s1), input_output_dtype=tf.complex128)
    b = LO.LinearOperatorCirculant(tf.constant(s2), input_output_dtype=tf.complex128)
    da, db = dense_of(s1, 1), dense_of(s2, 1)
    for got, want in [
        (a.matmul(b), da @ db),
        (a.solve(b), np.linalg.solve(da, db)),
        (a.adjoint(), np.conj(da.T)),
        (a.inverse(), np.linalg.inv(da)),
    ]:
        assert type(got) is LO.LinearOperatorCirculant
        np.testing.assert_allclose(got.to_dense().numpy(), want, atol=1e-10)
    pd = LO.LinearOperatorCirculant([2.0, 3.0], is_positive_definite=True)
    assert pd.matmul(pd).is_positive_definite is True and pd.matmul(pd).is_self_adjoint is True


def test_circulant_gradient_wrt_spectrum():
    spectrum = rng.standard_normal((3, 2)) + 3.0
    x = rng.standard_normal((6, 2))
    w = rng.standard_normal((6, 2))

    def loss_np(s):
        # A real, non-Hermitian spectrum: a complex matrix whose results are cast to float64
        # (their real part), as TF does.
        d = dense_of(s, 2)
        return float(np.sum((d @ x).real * w) + np.sum(np.linalg.solve(d, x).real * w))

    s = tf.constant(spectrum)
    with tf.GradientTape() as tape:
        tape.watch(s)
        op = LO.LinearOperatorCirculant2D(s, input_output_dtype=tf.float64)
        loss = tf.reduce_sum(op.matmul(x) * w) + tf.reduce_sum(op.solve(x) * w)
    np.testing.assert_allclose(tape.gradient(loss, s).numpy(), numeric_gradient(loss_np, spectrum),
                               rtol=1e-5, atol=1e-7)  # fmt: skip
    with tf.GradientTape() as tape:
        tape.watch(s)
        lad = LO.LinearOperatorCirculant2D(s, input_output_dtype=tf.float64).log_abs_determinant()
    want = numeric_gradient(lambda v: float(np.linalg.slogdet(dense_of(v, 2))[1]), spectrum)
    np.testing.assert_allclose(tape.gradient(lad, s).numpy(), want, rtol=1e-5, atol=1e-7)


# --- LinearOperatorBlockLowerTriangular -------------------------------------------------------


def _blocks():
    a = rng.standard_normal((2, 2)) + 3 * np.eye(2)
    b = rng.standard_normal((3, 2))
    c = np.tril(rng.standard_normal((3, 3))) + 3 * np.eye(3)
    d, e, f = rng.standard_normal((1, 2)), rng.standard_normal((1, 3)), np.array([[2.0]])
    ops = [[LO.LinearOperatorFullMatrix(a)],
           [LO.LinearOperatorFullMatrix(b), LO.LinearOperatorLowerTriangular(c)],
           [LO.LinearOperatorFullMatrix(d), LO.LinearOperatorFullMatrix(e),
            LO.LinearOperatorDiag(tf.constant([2.0], tf.float64))]]  # fmt: skip
    dense = np.zeros((6, 6))
    dense[:2, :2], dense[2:5, :2], dense[2:5, 2:5] = a, b, c
    dense[5:, :2], dense[5:, 2:5], dense[5:, 5:] = d, e, f
    return ops, dense


def test_block_lower_triangular_matches_dense():
    ops, dense = _blocks()
    op = LO.LinearOperatorBlockLowerTriangular(ops)
    assert op.shape == (6, 6) and op.is_square and op.is_non_singular is None
    np.testing.assert_allclose(op.to_dense().numpy(), dense)
    x = rng.standard_normal((6, 2))
    np.testing.assert_allclose(op.matmul(x).numpy(), dense @ x, rtol=1e-12)
    np.testing.assert_allclose(op.matmul(x, adjoint=True).numpy(), dense.T @ x, rtol=1e-12)
    np.testing.assert_allclose(op.matmul(x.T, adjoint_arg=True).numpy(), dense @ x, rtol=1e-12)
    np.testing.assert_allclose(op.solve(x).numpy(), np.linalg.solve(dense, x), rtol=1e-10)
    np.testing.assert_allclose(
        op.solve(x, adjoint=True).numpy(), np.linalg.solve(dense.T, x), rtol=1e-10
    )
    np.testing.assert_allclose(op.determinant().numpy(), np.linalg.det(dense), rtol=1e-10)
    np.testing.assert_allclose(op.log_abs_determinant().numpy(), np.linalg.slogdet(dense)[1])
    np.testing.assert_allclose(op.trace().numpy(), np.trace(dense))
    np.testing.assert_allclose(op.diag_part().numpy(), np.diag(dense))
    inv = op.inverse()
    assert type(inv) is LO.LinearOperatorBlockLowerTriangular
    np.testing.assert_allclose(inv.to_dense().numpy(), np.linalg.inv(dense), atol=1e-10)
    # Blockwise arguments come back blockwise.
    parts = op.matmul([tf.constant(x[:2]), tf.constant(x[2:5]), tf.constant(x[5:])])
    assert isinstance(parts, list) and [p.shape for p in parts] == [(2, 2), (3, 2), (1, 2)]
    np.testing.assert_allclose(np.concatenate([p.numpy() for p in parts]), dense @ x)
    sol = op.solvevec([tf.constant(x[:2, 0]), tf.constant(x[2:5, 0]), tf.constant(x[5:, 0])])
    np.testing.assert_allclose(np.concatenate([p.numpy() for p in sol]),
                               np.linalg.solve(dense, x[:, 0]), rtol=1e-10)  # fmt: skip


def test_block_lower_triangular_rules():
    ops, _ = _blocks()
    with pytest.raises(ValueError, match=r"operators\[1\]` must contain 2 blocks"):
        LO.LinearOperatorBlockLowerTriangular([ops[0], ops[1][:1]])
    with pytest.raises(ValueError, match="range_dimension"):
        LO.LinearOperatorBlockLowerTriangular([ops[0], [ops[2][0], ops[1][1]]])
    with pytest.raises(ValueError, match="must be square"):
        LO.LinearOperatorBlockLowerTriangular(ops, is_square=False)
    ns = LO.LinearOperatorDiag([1.0], is_non_singular=True)
    assert LO.LinearOperatorBlockLowerTriangular([[ns]]).is_non_singular is True
    with pytest.raises(ValueError, match="always non-singular"):
        LO.LinearOperatorBlockLowerTriangular([[ns]], is_non_singular=False)
    with pytest.raises(TypeError, match="LinearOperatorFullMatrix"):
        LO.LinearOperatorBlockLowerTriangular([[np.eye(2)]])


def test_block_lower_triangular_gradient():
    a = rng.standard_normal((2, 2)) + 3 * np.eye(2)
    b = rng.standard_normal((1, 2))
    x = rng.standard_normal((3, 1))

    def loss_np(v):
        m = np.zeros((3, 3))
        m[:2, :2], m[2:, :2], m[2, 2] = a, v.reshape(1, 2), 2.0
        return float(np.sum(np.linalg.solve(m, x) ** 2) + np.linalg.slogdet(m)[1])

    bt = tf.constant(b)
    with tf.GradientTape() as tape:
        tape.watch(bt)
        two = LO.LinearOperatorDiag(tf.constant([2.0], tf.float64))
        op = LO.LinearOperatorBlockLowerTriangular(
            [[LO.LinearOperatorFullMatrix(a)], [LO.LinearOperatorFullMatrix(bt), two]]
        )
        loss = tf.reduce_sum(op.solve(x) ** 2) + op.log_abs_determinant()
    np.testing.assert_allclose(tape.gradient(loss, bt).numpy().ravel(),
                               numeric_gradient(loss_np, b.ravel()), rtol=1e-6)  # fmt: skip
