"""Non-symmetric matrix functions of `tf.linalg`: eig, eigvals, matrix_square_root (sqrtm), logm.

The forwards run on the host through NumPy (eig) and SciPy's `scipy.linalg` (sqrtm, logm and
the Sylvester solver): SciPy is the optional `special` extra, imported on first use. Results go
back to the input's device.

Gradients: eig/eigvals follow TF's _EigGrad (first order: the gradient is one host op, as the
complex matrix algebra of TF's formula has no layerflow ops yet). matrix_square_root's gradient
is a Sylvester solve, `sylvester(A, B, C)` = the Y with A Y + Y B = C, which is itself a
differentiable op (its gradient is a Sylvester solve too), so higher orders work.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import op
from layerflow._src.framework import errors
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.array_ops import transpose
from layerflow._src.ops.math_ops import _as_tensor, matmul, negative


def _scipy_linalg() -> Any:
    try:
        import scipy.linalg as sl
    except ImportError as err:  # pragma: no cover - scipy is installed in the test env
        raise ImportError(
            "This op needs scipy.linalg, which is not installed. Install it with "
            "`pip install scipy` (or `pip install layerflow[special]`)."
        ) from err
    return sl


def _mT(x: Any) -> Any:
    r = x._data.ndim
    return transpose(x, list(range(r - 2)) + [r - 1, r - 2])


def _square_input(x: Any, opname: str, kinds: str = "fc") -> Any:
    t = _as_tensor(x)
    a = t._data
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or a.dtype.kind not in kinds:
        what = "float or complex" if kinds == "fc" else "complex" if kinds == "c" else "float"
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: expected square {what} matrices [..., M, M], got {t.dtype.name} with "
            f"shape {list(t.shape)}.",
        )
    return t


def _per_matrix(xp: Any, fn: Any, a: Any, *more: Any, dtype: Any = None) -> Any:
    """Apply a host function to every matrix of a batch and bring the result back to `xp`."""
    host = [backend.to_host(v) for v in (a, *more)]
    batch = host[0].shape[:-2]
    flat = [h.reshape((-1, *h.shape[-2:])) for h in host]
    outs = [fn(*(f[i] for f in flat)) for i in range(flat[0].shape[0])]
    n = host[0].shape[-2:]
    out = np.stack(outs) if outs else np.zeros((0, *n), dtype or host[0].dtype)
    return xp.asarray(out.reshape(batch + out.shape[1:]).astype(dtype or host[0].dtype))


def _complex_of(dtype: Any) -> Any:
    return np.complex64 if dtype in (np.float32, np.complex64) else np.complex128


# --- eig / eigvals --------------------------------------------------------------------------------


@op("eig", multi_out=True)
def _eig(xp: Any, a: Any) -> Any:
    host = backend.to_host(a)
    e, v = np.linalg.eig(host)  # real LAPACK for real input: TF's eigenvector signs
    ct = _complex_of(host.dtype)
    return xp.asarray(e.astype(ct)), xp.asarray(v.astype(ct))


@_eig.grad
def _(dys: Any, outs: Any, a: Any) -> Any:
    return _eig_grad(dys[0], dys[1], outs[0], outs[1], a)


@op("eig_grad", 5, same_dtype=False)
def _eig_grad(xp: Any, grad_e: Any, grad_v: Any, e: Any, v: Any, a: Any) -> Any:
    # TF's _EigGrad, on the host in complex arithmetic.
    ge, gv, ee, vv = (backend.to_host(t) for t in (grad_e, grad_v, e, v))
    vt = np.conj(np.swapaxes(vv, -1, -2))
    diff = ee[..., None, :] - ee[..., :, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        f = diff / (diff * diff + 1e-20)  # TF's _SafeReciprocal
    f = np.conj(np.where(np.eye(ee.shape[-1], dtype=bool), 0, f))
    vgv = vt @ gv
    diag = np.real(np.diagonal(vgv, axis1=-2, axis2=-1))
    mid = ge[..., None] * np.eye(ee.shape[-1])
    mid = mid + f * (vgv - (vt @ vv) @ (diag[..., None] * np.eye(ee.shape[-1])))
    grad = np.linalg.solve(vt, mid @ vt)
    out = np.real(grad) if a.dtype.kind == "f" else grad
    return xp.asarray(out.astype(a.dtype))


def eig(tensor: Any, name: str | None = None) -> tuple[Any, Any]:
    """Eigenvalues and eigenvectors (as columns, unit norm) of general square matrices: both
    complex (complex64 for float32 input, complex128 for float64). Differentiable (TF's rule;
    first order).

    >>> import layerflow as tf
    >>> e, v = tf.linalg.eig([[2.0, 0.0], [0.0, 3.0]])
    >>> e.numpy()
    array([2.+0.j, 3.+0.j], dtype=complex64)
    """
    e, v = _eig(_square_input(tensor, "eig"))
    return e, v


def eigvals(tensor: Any, name: str | None = None) -> Any:
    """The (complex) eigenvalues of general square matrices. Differentiable (first order).

    >>> import layerflow as tf
    >>> tf.linalg.eigvals([[0.0, -1.0], [1.0, 0.0]]).numpy()
    array([0.+1.j, 0.-1.j], dtype=complex64)
    """
    return eig(tensor)[0]


# --- Sylvester equations --------------------------------------------------------------------------


@op("sylvester", 3)
def _sylvester(xp: Any, a: Any, b: Any, c: Any) -> Any:
    sl = _scipy_linalg()
    return _per_matrix(xp, sl.solve_sylvester, a, b, c)


@_sylvester.grad
def _(dy: Any, out: Any, a: Any, b: Any, c: Any) -> Any:
    # Y = S(A, B, C): A Y + Y B = C.  With Z = S(A^T, B^T, dY): dC = Z, dA = -Z Y^T, dB = -Y^T Z.
    z = _sylvester(_mT(a), _mT(b), dy)
    return negative(matmul(z, _mT(out))), negative(matmul(_mT(out), z)), z


# --- matrix_square_root / logm --------------------------------------------------------------------


def _real_sqrtm(m: np.ndarray) -> np.ndarray:
    sl = _scipy_linalg()
    r = sl.sqrtm(m)
    if np.iscomplexobj(r) and m.dtype.kind == "f":
        # A real matrix with a negative real eigenvalue has no real square root: TF gives NaN.
        scale = max(1.0, float(np.abs(r).max()))
        if np.abs(r.imag).max() > 1e-6 * scale:
            return np.full(m.shape, np.nan)
        r = r.real
    return r


@op("matrix_square_root")
def _sqrtm(xp: Any, a: Any) -> Any:
    return _per_matrix(xp, _real_sqrtm, a)


@_sqrtm.grad
def _(dy: Any, out: Any, a: Any) -> Any:
    # R R = A, so dA = R dR + dR R: the adjoint solves R^T G + G R^T = dy.
    rt = _mT(out)
    return _sylvester(rt, rt, dy)


def matrix_square_root(input: Any, name: str | None = None) -> Any:  # noqa: A002
    """The principal square root R of square matrices (R @ R = input), by SciPy's Schur method.
    A real matrix with a negative real eigenvalue has no real root: the result is NaN, as in TF.
    Differentiable (a Sylvester solve).

    >>> import layerflow as tf
    >>> tf.linalg.sqrtm([[4.0, 0.0], [0.0, 9.0]]).numpy()
    array([[2., 0.],
           [0., 3.]], dtype=float32)
    """
    return _sqrtm(_square_input(input, "matrix_square_root"))


sqrtm = matrix_square_root


@op("matrix_logarithm")
def _logm(xp: Any, a: Any) -> Any:
    sl = _scipy_linalg()
    return _per_matrix(xp, sl.logm, a)


def logm(input: Any, name: str | None = None) -> Any:  # noqa: A002
    """The principal matrix logarithm of complex square matrices (complex64/complex128 only, as
    in TF), by SciPy's inverse scaling and squaring. Not differentiable (TF has no gradient).

    >>> import layerflow as tf
    >>> m = tf.linalg.logm(tf.constant([[1.0, 0.0], [0.0, 1.0]], tf.complex64))
    >>> m.numpy().real.round(6).tolist()
    [[0.0, 0.0], [0.0, 0.0]]
    """
    return _logm(_square_input(input, "logm", kinds="c"))


# --- eigh_tridiagonal -----------------------------------------------------------------------------


def eigh_tridiagonal(alpha: Any, beta: Any, eigvals_only: bool = True, select: str = "a",
                     select_range: Any = None, tol: Any = None,
                     name: str | None = None) -> Any:  # fmt: skip
    """Eigenvalues (ascending), and eigenvectors as columns unless `eigvals_only`, of the
    self-adjoint tridiagonal matrix with diagonal `alpha` [n] and off-diagonal `beta` [n-1].
    `select`: 'a' all, 'i' the eigenvalues with indices in [lo, hi], 'v' those in (lo, hi].
    Real input runs SciPy's LAPACK stebz/stein path, complex input a dense Hermitian eigh. Not
    differentiable here.

    >>> import layerflow as tf
    >>> tf.linalg.eigh_tridiagonal([1.0, 2.0, 3.0], [0.5, 0.5]).numpy().round(4)
    array([0.7753, 2.    , 3.2247], dtype=float32)
    """
    a, b = _as_tensor(alpha), _as_tensor(beta)
    ha, hb = backend.to_host(a._data), backend.to_host(b._data)
    if ha.ndim != 1 or hb.shape != (max(ha.shape[0] - 1, 0),):
        raise ValueError(
            f"eigh_tridiagonal: alpha must be [n] and beta [n - 1], got {list(ha.shape)} and "
            f"{list(hb.shape)}."
        )
    if select not in ("a", "i", "v"):
        raise ValueError(f"eigh_tridiagonal: select must be 'a', 'i' or 'v', got {select!r}.")
    rng = None
    if select != "a":
        if select_range is None:
            raise ValueError(f"eigh_tridiagonal: select={select!r} needs select_range=(lo, hi).")
        rng = tuple(np.asarray(select_range).reshape(-1).tolist())
        if select == "i":
            rng = (int(rng[0]), int(rng[1]))
    if ha.dtype.kind == "c" or hb.dtype.kind == "c":
        m = np.diag(ha.astype(complex)) + np.diag(hb, -1) + np.diag(np.conj(hb), 1)
        w, v = np.linalg.eigh(m)
        keep = np.arange(w.size)
        if select == "i":
            keep = keep[rng[0] : rng[1] + 1]
        elif select == "v":
            keep = keep[(w > rng[0]) & (w <= rng[1])]
        w, v = w[keep], v[:, keep]
    else:
        sl = _scipy_linalg()
        w, v = sl.eigh_tridiagonal(ha, hb, select=select, select_range=rng)
    xp = a._device.xp
    w_t = Tensor(xp.asarray(w.astype(ha.dtype.type(0).real.dtype)), a._device)
    if eigvals_only:
        return w_t
    return w_t, Tensor(xp.asarray(v.astype(np.result_type(ha, hb))), a._device)


__all__ = ["eig", "eigh_tridiagonal", "eigvals", "logm", "matrix_square_root", "sqrtm"]
