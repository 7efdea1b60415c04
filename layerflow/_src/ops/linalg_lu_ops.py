"""LU factorization and banded/tridiagonal systems of `tf.linalg`: lu, lu_solve, lu_reconstruct,
lu_matrix_inverse, banded_triangular_solve, tridiagonal_solve, tridiagonal_matmul.

`lu` is one op without a gradient (TF registers none). The LU consumers are composed of
band_part, set_diag, a permutation matmul and triangular solves, so their gradients (with respect
to `lower_upper` and `rhs`) come from those ops, as in TF where they are Python compositions.
`tridiagonal_solve` is a primitive (batched Gaussian elimination with partial pivoting, LAPACK's
gtsv, vectorized over the batch) with TF's gradient; `tridiagonal_matmul` is composed.
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import input_needed, op
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.ops.array_ops import concat, stack, transpose
from layerflow._src.ops.complex_ops import conj
from layerflow._src.ops.linalg_ops import _diag, _diag_part, band_part
from layerflow._src.ops.linalg_solve_ops import _triangular_solve
from layerflow._src.ops.manip_ops import pad
from layerflow._src.ops.math_ops import _as_tensor, add, matmul, multiply
from layerflow._src.ops.matrix_structure_ops import set_diag
from layerflow._src.ops.reduce_ops import reduce_sum


def _mT(x: Any) -> Any:
    r = x._data.ndim
    return transpose(x, list(range(r - 2)) + [r - 1, r - 2])


def _like(value: Any, partner: Any) -> Any:
    """A tensor as it is; a Python or NumPy value takes its partner's dtype (TF's rule)."""
    if isinstance(value, TensorLike):
        return value
    return convert_to_tensor(value, dtype=partner.dtype)


def _not_invertible(opname: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(
        None, opname, f"{opname}: input is not invertible (a zero pivot)."
    )


# --- lu -------------------------------------------------------------------------------------------

Lu = collections.namedtuple("Lu", ["lu", "p"])


@op("lu", multi_out=True)
def _lu(xp: Any, a: Any, idx_dtype: Any) -> Any:
    n = a.shape[-1]
    batch = a.shape[:-2]
    lu = xp.array(a.reshape((-1, n, n)), copy=True)
    nb = lu.shape[0]
    perm = xp.tile(xp.arange(n), (nb, 1))
    rows = xp.arange(nb)
    for k in range(n):
        piv = k + xp.argmax(xp.abs(lu[:, k:, k]), axis=1)
        lu[rows, [k] * nb], lu[rows, piv] = lu[rows, piv], lu[rows, [k] * nb].copy()
        perm[rows, k], perm[rows, piv] = perm[rows, piv], perm[rows, k].copy()
        pivot = lu[:, k, k]
        if bool(xp.any(pivot == 0)):
            raise _not_invertible("lu")
        lu[:, k + 1 :, k] /= pivot[:, None]
        lu[:, k + 1 :, k + 1 :] -= lu[:, k + 1 :, k : k + 1] * lu[:, k : k + 1, k + 1 :]
    return lu.reshape(a.shape), perm.reshape((*batch, n)).astype(idx_dtype)


def lu(input: Any, output_idx_type: Any = "int32", name: str | None = None) -> Lu:  # noqa: A002
    """The LU factorization with partial pivoting, packed as TF packs it: `lu` holds L's strict
    lower triangle (L has a unit diagonal) and U's upper triangle; `p` is the row permutation,
    so that `input[..., p, :] = L @ U`. A singular matrix raises InvalidArgumentError, as in TF.
    Not differentiable (TF registers no gradient for Lu).

    >>> import layerflow as tf
    >>> lu, p = tf.linalg.lu([[1.0, 2.0], [3.0, 4.0]])
    >>> p.numpy()
    array([1, 0], dtype=int32)
    """
    x = _as_tensor(input)
    a = x._data
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or a.dtype.kind not in "fc":
        raise errors.InvalidArgumentError(
            None,
            "lu",
            f"lu: expected square float or complex matrices [..., M, M], got {x.dtype.name} "
            f"with shape {list(x.shape)}.",
        )
    idx = dtypes.as_dtype(output_idx_type)
    if idx.name not in ("int32", "int64"):
        raise TypeError(f"lu: output_idx_type must be tf.int32 or tf.int64, got {idx.name}.")
    out, p = _lu(x, idx.np)
    return Lu(out, p)


def _perm_matrix(perm: Any, like: Any) -> Tensor:
    """P with (P @ x)[i] = x[perm[i]]: one-hot rows, as a constant of `like`'s dtype."""
    t = _as_tensor(perm)
    p = backend.to_host(t._data).astype(np.int64)
    n = p.shape[-1]
    if p.size and (p.min() < 0 or p.max() >= n):
        raise errors.InvalidArgumentError(
            None, "lu", f"perm must hold indices in [0, {n}), got {p.tolist()}."
        )
    mat = (p[..., :, None] == np.arange(n)).astype(like._data.dtype)
    return Tensor(like._device.xp.asarray(mat), like._device)


def _unpack(lower_upper: Any) -> tuple[Any, Any]:
    lu_ = _as_tensor(lower_upper)
    ones = Tensor(lu_._device.xp.ones(lu_._data.shape[:-1], lu_._data.dtype), lu_._device)
    return set_diag(band_part(lu_, -1, 0), ones), band_part(lu_, 0, -1)


def lu_reconstruct(lower_upper: Any, perm: Any, validate_args: bool = False,
                   name: str | None = None) -> Any:  # fmt: skip
    """The matrix whose `lu` is (lower_upper, perm): P^T @ L @ U. Differentiable in
    `lower_upper`.

    >>> import layerflow as tf
    >>> tf.linalg.lu_reconstruct(*tf.linalg.lu([[1.0, 2.0], [3.0, 4.0]])).numpy()
    array([[1., 2.],
           [3., 4.]], dtype=float32)
    """
    low, up = _unpack(lower_upper)
    return matmul(_perm_matrix(perm, low), matmul(low, up), transpose_a=True)


def lu_solve(lower_upper: Any, perm: Any, rhs: Any, validate_args: bool = False,
             name: str | None = None) -> Any:  # fmt: skip
    """X with A @ X = rhs, for A given by its `lu` factorization (lower_upper, perm); batch
    dimensions broadcast. Differentiable in `lower_upper` and `rhs`.

    >>> import layerflow as tf
    >>> lu, p = tf.linalg.lu([[2.0, 0.0], [0.0, 4.0]])
    >>> tf.linalg.lu_solve(lu, p, [[2.0], [2.0]]).numpy()
    array([[1. ],
           [0.5]], dtype=float32)
    """
    low, up = _unpack(lower_upper)
    b = _like(rhs, low)
    if b._data.ndim < 2 or b._data.shape[-2] != low._data.shape[-1]:
        raise errors.InvalidArgumentError(
            None,
            "lu_solve",
            f"lu_solve: rhs must have shape [..., {low._data.shape[-1]}, K], got {list(b.shape)}.",
        )
    permuted = matmul(_perm_matrix(perm, low), b)
    batch = np.broadcast_shapes(tuple(low._data.shape[:-2]), tuple(permuted._data.shape[:-2]))
    if tuple(low._data.shape[:-2]) != batch:
        from layerflow._src.ops.math_ops import broadcast_to

        n = low._data.shape[-1]
        low = broadcast_to(low, [*batch, n, n])
        up = broadcast_to(up, [*batch, n, n])
    y = _triangular_solve(low, permuted, True, False)
    return _triangular_solve(up, y, False, False)


def lu_matrix_inverse(lower_upper: Any, perm: Any, validate_args: bool = False,
                      name: str | None = None) -> Any:  # fmt: skip
    """The inverse of A given by its `lu` factorization. Differentiable in `lower_upper`.

    >>> import layerflow as tf
    >>> tf.linalg.lu_matrix_inverse(*tf.linalg.lu([[2.0, 0.0], [0.0, 4.0]])).numpy()
    array([[0.5 , 0.  ],
           [0.  , 0.25]], dtype=float32)
    """
    lu_ = _as_tensor(lower_upper)
    n = lu_._data.shape[-1]
    xp = lu_._device.xp
    eye = xp.broadcast_to(xp.eye(n, dtype=lu_._data.dtype), lu_._data.shape)
    return lu_solve(lu_, perm, Tensor(xp.ascontiguousarray(eye), lu_._device))


# --- banded_triangular_solve ----------------------------------------------------------------------


def _banded_to_dense(bands: Any, lower: bool) -> Any:
    """The dense triangular matrix of `bands` ([..., K, M], TF's LEFT_RIGHT alignment), built of
    differentiable ops (diag + pad per band)."""
    k, m = bands._data.shape[-2:]
    r = bands._data.ndim
    pad_batch = [[0, 0]] * (r - 2)
    dense = None
    for j in range(k):
        if j >= m:
            break
        if lower:  # row j: the j-th subdiagonal, padded on the left
            vec = bands[..., j, j:]
            part = pad(_diag(vec), pad_batch + [[j, 0], [0, j]])
        else:  # row k-1-j: the j-th superdiagonal, padded on the right
            vec = bands[..., k - 1 - j, : m - j]
            part = pad(_diag(vec), pad_batch + [[0, j], [j, 0]])
        dense = part if dense is None else add(dense, part)
    return dense


def banded_triangular_solve(bands: Any, rhs: Any, lower: bool = True, adjoint: bool = False,
                            name: str | None = None) -> Any:  # fmt: skip
    """X with A @ X = rhs for a banded triangular A stored by its bands ([..., K, M]): when
    `lower`, row 0 is the diagonal and row j the j-th subdiagonal (padded on the left); else
    row K-1 is the diagonal and row K-1-j the j-th superdiagonal (padded on the right).
    Differentiable.

    >>> import layerflow as tf
    >>> bands = [[1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 2.0, 3.0]]
    >>> tf.linalg.banded_triangular_solve(bands, [[1.0], [2.0], [3.0], [4.0]])[:, 0].numpy()
    array([1.       , 0.5      , 0.6666667, 0.5      ], dtype=float32)
    """
    b = _as_tensor(bands)
    if b._data.ndim < 2 or b._data.dtype.kind not in "fc":
        raise errors.InvalidArgumentError(
            None,
            "banded_triangular_solve",
            f"banded_triangular_solve: bands must be float [..., K, M], got {b.dtype.name} "
            f"{list(b.shape)}.",
        )
    diag = b._data[..., 0, :] if lower else b._data[..., -1, :]
    if bool(b._device.xp.any(diag == 0)):
        raise errors.InvalidArgumentError(
            None, "banded_triangular_solve", "Input matrix is not invertible (a zero diagonal)."
        )
    dense = _banded_to_dense(b, bool(lower))
    return _triangular_solve(dense, _like(rhs, b), bool(lower), bool(adjoint))


# --- tridiagonal ----------------------------------------------------------------------------------


def _gtsv(xp: Any, du: Any, d: Any, dl: Any, b: Any, pivoting: bool) -> Any:
    """LAPACK's gtsv on a batch: du/d/dl [B, M] (du[-1] and dl[0] unused), b [B, M, K]."""
    du, d, b = du.copy(), d.copy(), b.copy()
    dl = dl[:, 1:].copy()  # dl[i] = A[i+1, i]
    n = d.shape[1]
    du2 = xp.zeros_like(d)
    for i in range(n - 1):
        swap = xp.abs(d[:, i]) < xp.abs(dl[:, i]) if pivoting else xp.zeros(d.shape[0], bool)
        # no swap: eliminate row i+1 with row i
        with np.errstate(divide="ignore", invalid="ignore"):
            f_ns = dl[:, i] / d[:, i]
            f_sw = d[:, i] / xp.where(swap, dl[:, i], 1)
        d_i1_ns = d[:, i + 1] - f_ns * du[:, i]
        b_i1_ns = b[:, i + 1] - f_ns[:, None] * b[:, i]
        # swap rows i and i+1, then eliminate
        d_i_sw = dl[:, i]
        d_i1_sw = du[:, i] - f_sw * d[:, i + 1]
        du_i_sw = d[:, i + 1].copy()
        b_i_sw = b[:, i + 1].copy()
        b_i1_sw = b[:, i] - f_sw[:, None] * b[:, i + 1]
        if i < n - 2:
            du2[:, i] = xp.where(swap, du[:, i + 1], 0)
            du[:, i + 1] = xp.where(swap, -f_sw * du[:, i + 1], du[:, i + 1])
        d[:, i] = xp.where(swap, d_i_sw, d[:, i])
        d[:, i + 1] = xp.where(swap, d_i1_sw, d_i1_ns)
        du[:, i] = xp.where(swap, du_i_sw, du[:, i])
        new_bi = xp.where(swap[:, None], b_i_sw, b[:, i])
        b[:, i + 1] = xp.where(swap[:, None], b_i1_sw, b_i1_ns)
        b[:, i] = new_bi
    if pivoting and bool(xp.any(d == 0)):
        raise errors.InvalidArgumentError(
            None, "tridiagonal_solve", "tridiagonal_solve: the matrix is not invertible."
        )
    x = xp.zeros_like(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(n - 1, -1, -1):
            acc = b[:, i]
            if i + 1 < n:
                acc = acc - du[:, i, None] * x[:, i + 1]
            if i + 2 < n:
                acc = acc - du2[:, i, None] * x[:, i + 2]
            x[:, i] = acc / d[:, i, None]
    return x


@op("tridiagonal_solve", 2)
def _tridiagonal_solve(xp: Any, diags: Any, rhs: Any, pivoting: bool) -> Any:
    m = diags.shape[-1]
    batch = np.broadcast_shapes(diags.shape[:-2], rhs.shape[:-2])
    dg = xp.broadcast_to(diags, (*batch, 3, m)).reshape((-1, 3, m))
    b = xp.broadcast_to(rhs, (*batch, *rhs.shape[-2:])).reshape((-1, *rhs.shape[-2:]))
    if m == 0:
        return xp.zeros((*batch, *rhs.shape[-2:]), rhs.dtype)
    x = _gtsv(xp, dg[:, 0], dg[:, 1], dg[:, 2], b, pivoting)
    return x.reshape((*batch, *rhs.shape[-2:]))


def _transpose_tridiagonal(diags: Any) -> Any:
    zeros = diags[..., 1, :1] * 0.0
    superdiag = concat([diags[..., 2, 1:], zeros], -1)
    subdiag = concat([zeros, diags[..., 0, :-1]], -1)
    return stack([superdiag, diags[..., 1, :], subdiag], -2)


def _matmul_three_diagonals(x: Any, y_tr: Any) -> Any:
    diag = reduce_sum(multiply(x, y_tr), -1)
    zeros = x[..., :1, :] * 0.0
    superdiag = reduce_sum(multiply(x, concat([y_tr[..., 1:, :], zeros], -2)), -1)
    subdiag = reduce_sum(multiply(x, concat([zeros, y_tr[..., :-1, :]], -2)), -1)
    return stack([superdiag, diag, subdiag], -2)


@_tridiagonal_solve.grad
def _(dy: Any, out: Any, diags: Any, rhs: Any, pivoting: bool) -> Any:
    # TF's _TridiagonalSolveGrad.
    grad_rhs = _tridiagonal_solve(_transpose_tridiagonal(diags), dy, pivoting)
    grad_diags = None
    if input_needed(0):
        grad_diags = -_matmul_three_diagonals(grad_rhs, out)
        grad_diags = _sum_to(grad_diags, diags)
    return grad_diags, _sum_to(grad_rhs, rhs)


def _sum_to(g: Any, like: Any) -> Any:
    """Sum a broadcast gradient back to `like`'s batch shape."""
    extra = g._data.ndim - like._data.ndim
    if extra:
        g = reduce_sum(g, list(range(extra)))
    axes = [i for i, (a, b) in enumerate(zip(g._data.shape, like._data.shape)) if a != b]
    return reduce_sum(g, axes, keepdims=True) if axes else g


def _compact(diagonals: Any, fmt: str, opname: str) -> Any:
    if fmt == "compact":
        d = _as_tensor(diagonals)
        if d._data.ndim < 2 or d._data.shape[-2] != 3:
            raise ValueError(
                f"{opname}: compact diagonals must have shape [..., 3, M], got {list(d.shape)}."
            )
        return d
    if fmt == "sequence":
        if not isinstance(diagonals, list | tuple) or len(diagonals) != 3:
            raise ValueError(
                f"{opname}: diagonals_format='sequence' expects (superdiag, maindiag, subdiag), "
                f"got {type(diagonals).__name__}."
            )
        return stack([_as_tensor(v) for v in diagonals], -2)
    if fmt == "matrix":
        a = _as_tensor(diagonals)
        if a._data.ndim < 2 or a._data.shape[-1] != a._data.shape[-2]:
            raise ValueError(f"{opname}: a matrix must be square [..., M, M], got {a.shape}.")
        zeros = _diag_part(a)[..., :1] * 0.0
        superdiag = concat([_diag_part(a[..., :-1, 1:]), zeros], -1)
        subdiag = concat([zeros, _diag_part(a[..., 1:, :-1])], -1)
        return stack([superdiag, _diag_part(a), subdiag], -2)
    raise ValueError(
        f"{opname}: diagonals_format must be 'compact', 'sequence' or 'matrix', got {fmt!r}."
    )


def tridiagonal_solve(diagonals: Any, rhs: Any, diagonals_format: str = "compact",
                      transpose_rhs: bool = False, conjugate_rhs: bool = False,
                      name: str | None = None, partial_pivoting: bool = True,
                      perturb_singular: bool = False) -> Any:  # fmt: skip
    """X with A @ X = rhs for tridiagonal A. `diagonals_format`: 'compact' ([..., 3, M]: the
    superdiagonal (last entry unused), the diagonal, the subdiagonal (first entry unused)),
    'sequence' (a tuple of those three [..., M] tensors) or 'matrix' ([..., M, M]). `rhs` is
    [..., M, K] or [..., M]; `transpose_rhs` takes it as [..., K, M]. Gaussian elimination with
    partial pivoting (off: no pivoting, NaN/inf on a zero pivot, as in TF). Differentiable
    (TF's gradient).

    >>> import layerflow as tf
    >>> diags = [[2.0, 1.0, 0.0], [4.0, 4.0, 4.0], [0.0, 1.0, 2.0]]
    >>> tf.linalg.tridiagonal_solve(diags, [6.0, 6.0, 6.0]).numpy().round(5)
    array([1., 1., 1.], dtype=float32)
    """
    if perturb_singular:
        raise NotImplementedError(
            "tridiagonal_solve: perturb_singular=True is not supported; use the default False."
        )
    d = _compact(diagonals, diagonals_format, "tridiagonal_solve")
    b = _like(rhs, d)
    vector = b._data.ndim == d._data.ndim - 1
    if vector:
        b = b[..., None]
    elif transpose_rhs:
        b = _mT(b)
    if conjugate_rhs:
        b = conj(b)
    m = d._data.shape[-1]
    if b._data.shape[-2] != m:
        raise ValueError(
            f"tridiagonal_solve: rhs must have {m} rows (the matrix size), got shape "
            f"{list(_as_tensor(rhs).shape)}."
        )
    out = _tridiagonal_solve(d, b, bool(partial_pivoting))
    return out[..., 0] if vector else out


def tridiagonal_matmul(diagonals: Any, rhs: Any, diagonals_format: str = "compact",
                       name: str | None = None) -> Any:  # fmt: skip
    """A @ rhs for tridiagonal A given by its diagonals (formats as in `tridiagonal_solve`),
    in O(M K). Differentiable.

    >>> import layerflow as tf
    >>> diags = [[2.0, 1.0, 0.0], [4.0, 4.0, 4.0], [0.0, 1.0, 2.0]]
    >>> tf.linalg.tridiagonal_matmul(diags, [[1.0], [1.0], [1.0]])[:, 0].numpy()
    array([6., 6., 6.], dtype=float32)
    """
    d = _compact(diagonals, diagonals_format, "tridiagonal_matmul")
    b = _like(rhs, d)
    if b._data.ndim < 2 or b._data.shape[-2] != d._data.shape[-1]:
        raise ValueError(
            f"tridiagonal_matmul: rhs must be [..., {d._data.shape[-1]}, K], got {b.shape}."
        )
    zeros = b[..., :1, :] * 0.0
    up = concat([b[..., 1:, :], zeros], -2)  # row i sees rhs[i + 1]
    down = concat([zeros, b[..., :-1, :]], -2)  # row i sees rhs[i - 1]
    out = multiply(d[..., 1, :, None], b)
    out = add(out, multiply(d[..., 0, :, None], up))
    return add(out, multiply(d[..., 2, :, None], down))


__all__ = [
    "Lu", "banded_triangular_solve", "lu", "lu_matrix_inverse", "lu_reconstruct", "lu_solve",
    "tridiagonal_matmul", "tridiagonal_solve",
]  # fmt: skip
