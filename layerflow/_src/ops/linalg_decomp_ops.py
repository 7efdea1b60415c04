"""Decompositions of `tf.linalg` with TF's gradients: eigh, eigvalsh, qr and svd.

The gradients follow TF's linalg_grad.py and are written with layerflow ops. As in TF, eigh's
and svd's gradients are infinite (NaN) for repeated eigen/singular values, whose vectors are
defined only up to a rotation; and a loss should not depend on the vectors' signs, which no
decomposition fixes.
"""

from __future__ import annotations

import collections
from typing import Any

from layerflow._src.autodiff.op import op
from layerflow._src.framework import errors
from layerflow._src.ops.array_ops import concat, expand_dims, transpose
from layerflow._src.ops.linalg_ops import _diag, _diag_part, band_part
from layerflow._src.ops.linalg_solve_ops import _triangular_solve
from layerflow._src.ops.math_ops import (
    _as_tensor,
    _real_div,
    add,
    matmul,
    multiply,
    square,
    subtract,
)


def _mT(x: Any) -> Any:
    r = x._data.ndim
    return transpose(x, list(range(r - 2)) + [r - 1, r - 2])


def _safe_reciprocal(x: Any, epsilon: float = 1e-20) -> Any:
    """x / (x**2 + eps): 1/x away from 0, and 0 at 0 (TF's _SafeReciprocal)."""
    return _real_div(x, add(square(x), epsilon))


def _matrix_input(x: Any, opname: str) -> Any:
    t = _as_tensor(x)
    a = t._data
    if a.ndim < 2 or a.dtype.kind != "f":
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: expected float matrices [..., M, N], got {t.dtype.name} with shape "
            f"{list(t.shape)}.",
        )
    return t


# --- eigh -----------------------------------------------------------------------------------------


@op("self_adjoint_eig", multi_out=True)
def _eigh(xp: Any, a: Any) -> Any:
    if a.shape[-1] != a.shape[-2]:
        raise errors.InvalidArgumentError(
            None, "eigh", f"eigh: expected square matrices, got shape {list(a.shape)}."
        )
    return xp.linalg.eigh(a, UPLO="L")  # only the lower triangle is read, as in TF


@_eigh.grad
def _(dys: Any, outs: Any, a: Any) -> Any:
    grad_e, grad_v = dys
    e, v = outs
    f = _safe_reciprocal(subtract(expand_dims(e, -2), expand_dims(e, -1)))
    inner = add(_diag(grad_e), multiply(f, matmul(v, grad_v, adjoint_a=True)))
    grad = matmul(v, matmul(inner, v, adjoint_b=True))
    # The forward reads the lower triangle only: symmetrize, keep it, halve the diagonal.
    grad = band_part(add(grad, _mT(grad)), -1, 0)
    return subtract(grad, multiply(_diag(_diag_part(grad)), 0.5))


def eigh(tensor: Any, name: str | None = None) -> tuple[Any, Any]:
    """(eigenvalues ascending, eigenvectors as columns) of self-adjoint matrices; only the
    lower triangle is read.

    >>> import layerflow as tf
    >>> e, v = tf.linalg.eigh([[2.0, 1.0], [1.0, 2.0]])
    >>> e.numpy()
    array([1., 3.], dtype=float32)
    """
    e, v = _eigh(_matrix_input(tensor, "eigh"))
    return e, v


def eigvalsh(tensor: Any, name: str | None = None) -> Any:
    """The eigenvalues (ascending) of self-adjoint matrices.

    >>> import layerflow as tf
    >>> tf.linalg.eigvalsh([[2.0, 1.0], [1.0, 2.0]]).numpy()
    array([1., 3.], dtype=float32)
    """
    return eigh(tensor)[0]


# --- qr -------------------------------------------------------------------------------------------

Qr = collections.namedtuple("Qr", ["q", "r"])


@op("qr", multi_out=True)
def _qr(xp: Any, a: Any, full_matrices: bool) -> Any:
    q, r = xp.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return q, r


def _tri_solve_right(x: Any, r: Any) -> Any:
    """x @ inv(r)^H for upper-triangular r (TF's _TriangularSolve in QrGrad)."""
    return _mT(_triangular_solve(r, _mT(x), False, False))


def _qr_grad_deep(q: Any, r: Any, dq: Any, dr: Any) -> Any:
    qdq = matmul(q, dq, adjoint_a=True)
    qdq_ = subtract(qdq, _mT(qdq))
    rdr = matmul(r, dr, adjoint_b=True)
    rdr_ = subtract(rdr, _mT(rdr))
    tril = band_part(add(qdq_, rdr_), -1, 0)
    grad_a = matmul(q, add(dr, _tri_solve_right(tril, r)))
    grad_b = _tri_solve_right(subtract(dq, matmul(q, qdq)), r)
    return add(grad_a, grad_b)


@_qr.grad
def _(dys: Any, outs: Any, a: Any, full_matrices: bool) -> Any:
    (dq, dr), (q, r) = dys, outs
    m, n = a._data.shape[-2:]
    if full_matrices and m > n:
        raise NotImplementedError(
            "The gradient of qr with full_matrices=True is defined only for M <= N (as in TF); "
            "use full_matrices=False."
        )
    if m >= n:
        return _qr_grad_deep(q, r, dq, dr)
    # A wide matrix [X | Y] = Q [U | V]: X's part as a square QR, Y's through Q.
    y = a[..., :, m:]
    u, dv, du = r[..., :, :m], dr[..., :, m:], dr[..., :, :m]
    dy = matmul(q, dv)
    dx = _qr_grad_deep(q, u, add(dq, matmul(y, dv, adjoint_b=True)), du)
    return concat([dx, dy], axis=-1)


def qr(input: Any, full_matrices: bool = False, name: str | None = None) -> Qr:  # noqa: A002
    """The QR decomposition input = q @ r: q with orthonormal columns, r upper triangular
    (reduced unless `full_matrices`).

    >>> import layerflow as tf
    >>> q, r = tf.linalg.qr([[3.0, 1.0], [4.0, 2.0]])
    >>> abs(float(r[0, 0]))
    5.0
    """
    q, r = _qr(_matrix_input(input, "qr"), bool(full_matrices))
    return Qr(q, r)


# --- svd ------------------------------------------------------------------------------------------


@op("svd", multi_out=True)
def _svd(xp: Any, a: Any, full_matrices: bool) -> Any:
    u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return s, u, xp.conj(xp.swapaxes(vh, -1, -2))


@_svd.grad
def _(dys: Any, outs: Any, a: Any, full_matrices: bool) -> Any:
    # TF's SvdGrad (Townsend 2016; compact and full forms).
    grad_s, grad_u, grad_v = dys
    s, u, v = outs
    m, n = a._data.shape[-2:]
    adjoint = m > n
    if adjoint:  # differentiate A^H = V S U^H instead, and transpose at the end
        m, n = n, m
        u, v = v, u
        grad_u, grad_v = grad_v, grad_u
    if full_matrices and abs(m - n) > 1:
        raise NotImplementedError(
            "The gradient of svd with full_matrices=True is defined only for |M - N| <= 1 "
            "(as in TF); use full_matrices=False."
        )
    s_mat = _diag(s)
    s2 = square(s)
    f = _safe_reciprocal(subtract(expand_dims(s2, -2), expand_dims(s2, -1)))
    v1, grad_v1 = v[..., :, :m], grad_v[..., :, :m]
    f_u = multiply(f, matmul(u, grad_u, adjoint_a=True))
    f_v = multiply(f, matmul(v1, grad_v1, adjoint_a=True))
    term1 = add(
        add(_diag(grad_s), matmul(add(f_u, _mT(f_u)), s_mat)),
        matmul(s_mat, add(f_v, _mT(f_v))),
    )
    grad = matmul(u, matmul(term1, v1, adjoint_b=True))
    if m != n:
        gv1t = _mT(grad_v1)
        term2 = subtract(gv1t, matmul(matmul(gv1t, v1), v1, adjoint_b=True))
        if full_matrices:
            v2, grad_v2 = v[..., :, m:n], grad_v[..., :, m:n]
            term2 = subtract(term2, matmul(matmul(v1, grad_v2, adjoint_a=True), v2,
                                           adjoint_b=True))  # fmt: skip
        u_s_inv = matmul(u, _diag(_safe_reciprocal(s)))
        grad = add(grad, matmul(u_s_inv, term2))
    return _mT(grad) if adjoint else grad


def svd(tensor: Any, full_matrices: bool = False, compute_uv: bool = True,
        name: str | None = None) -> Any:  # fmt: skip
    """The singular value decomposition tensor = u @ diag(s) @ adjoint(v): returns
    (s, u, v), singular values descending; only `s` when `compute_uv` is False.

    >>> import layerflow as tf
    >>> tf.linalg.svd([[3.0, 0.0], [0.0, -2.0]], compute_uv=False).numpy()
    array([3., 2.], dtype=float32)
    """
    s, u, v = _svd(_matrix_input(tensor, "svd"), bool(full_matrices))
    return (s, u, v) if compute_uv else s


__all__ = ["Qr", "eigh", "eigvalsh", "qr", "svd"]
