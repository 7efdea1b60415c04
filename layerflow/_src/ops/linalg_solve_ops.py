"""Linear solves and factorizations of `tf.linalg` with TF's gradients: solve,
triangular_solve, cholesky, cholesky_solve, slogdet, logdet, pinv, matrix_rank, lstsq, expm.

Primitives (solve, triangular_solve, cholesky, slogdet, pinv) carry their gradients written
with layerflow ops; the rest is composed from them, so gradients of any order compose.
"""

from __future__ import annotations

import collections
import math
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import input_needed, op
from layerflow._src.framework import errors
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.array_ops import eye, transpose
from layerflow._src.ops.linalg_ops import _diag, _diag_part, _inv, band_part
from layerflow._src.ops.math_ops import (
    _as_tensor,
    add,
    log,
    matmul,
    multiply,
    negative,
    reduce_sum,
    reshape,
    subtract,
)


def _mT(x: Any) -> Any:
    r = x._data.ndim
    return transpose(x, list(range(r - 2)) + [r - 1, r - 2])


def _square(a: Any, opname: str) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: expected square matrices [..., M, M], got shape "
            f"{list(a.shape)}.",
        )  # fmt: skip
    if a.dtype.kind not in "fc":
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: expected a float or complex matrix, got {a.dtype}."
        )


def _rhs(a: Any, b: Any, opname: str) -> None:
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2] or b.shape[-2] != a.shape[-1]:
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: rhs must have shape [..., {a.shape[-1]}, K] with the matrix's batch "
            f"shape {list(a.shape[:-2])}, got {list(b.shape)}.",
        )


def _not_invertible(opname: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, opname, f"{opname}: Input matrix is not invertible.")


# --- solve ----------------------------------------------------------------------------------------


@op("matrix_solve", 2)
def _solve(xp: Any, a: Any, b: Any, adjoint: bool = False) -> Any:
    _square(a, "solve")
    _rhs(a, b, "solve")
    if adjoint:
        a = xp.conj(xp.swapaxes(a, -1, -2))
    try:
        return xp.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        raise _not_invertible("solve") from None


@_solve.grad
def _(dy: Any, out: Any, a: Any, b: Any, adjoint: bool = False) -> Any:
    gb = _solve(a, dy, not adjoint)
    ga = None
    if input_needed(0):
        ga = negative(matmul(out, gb, transpose_b=True) if adjoint else matmul(gb, _mT(out)))
    return ga, gb


def solve(matrix: Any, rhs: Any, adjoint: bool = False, name: str | None = None) -> Any:
    """X with matrix @ X = rhs (adjoint(matrix) @ X = rhs with `adjoint`), batched.

    >>> import layerflow as tf
    >>> tf.linalg.solve([[2.0, 0.0], [0.0, 4.0]], [[1.0], [1.0]]).numpy()
    array([[0.5 ],
           [0.25]], dtype=float32)
    """
    return _solve(matrix, rhs, bool(adjoint))


@op("matrix_triangular_solve", 2)
def _triangular_solve(xp: Any, a: Any, b: Any, lower: bool = True, adjoint: bool = False) -> Any:
    _square(a, "triangular_solve")
    _rhs(a, b, "triangular_solve")
    tri = xp.tril(a) if lower else xp.triu(a)  # the other triangle is ignored, as in TF
    if adjoint:
        tri = xp.conj(xp.swapaxes(tri, -1, -2))
    try:
        return xp.linalg.solve(tri, b)
    except np.linalg.LinAlgError:
        raise _not_invertible("triangular_solve") from None


@_triangular_solve.grad
def _(dy: Any, out: Any, a: Any, b: Any, lower: bool = True, adjoint: bool = False) -> Any:
    gb = _triangular_solve(a, dy, lower, not adjoint)
    ga = None
    if input_needed(0):
        ga = negative(matmul(out, gb, transpose_b=True) if adjoint else matmul(gb, _mT(out)))
        ga = band_part(ga, -1, 0) if lower else band_part(ga, 0, -1)
    return ga, gb


def triangular_solve(matrix: Any, rhs: Any, lower: bool = True, adjoint: bool = False,
                     name: str | None = None) -> Any:  # fmt: skip
    """X with matrix @ X = rhs for lower (or upper) triangular matrices; the other triangle
    of `matrix` is ignored.

    >>> import layerflow as tf
    >>> tf.linalg.triangular_solve([[2.0, 0.0], [1.0, 4.0]], [[2.0], [9.0]]).numpy()
    array([[1.],
           [2.]], dtype=float32)
    """
    return _triangular_solve(matrix, rhs, bool(lower), bool(adjoint))


# --- cholesky -------------------------------------------------------------------------------------


@op("cholesky")
def _cholesky(xp: Any, a: Any) -> Any:
    _square(a, "cholesky")
    try:
        return xp.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        pass
    # Some matrix of the batch is not positive definite: TF returns NaN for it, not an error.
    flat = a.reshape((-1,) + a.shape[-2:])
    out = xp.empty_like(flat)
    for i in range(flat.shape[0]):
        try:
            out[i] = xp.linalg.cholesky(flat[i])
        except np.linalg.LinAlgError:
            out[i] = np.nan
    return out.reshape(a.shape)


@_cholesky.grad
def _(dy: Any, out: Any, a: Any) -> Any:
    # TF's CholeskyGrad (Murray 2016): with L = out,
    # phi(L^H dL) (lower triangle, half diagonal), then L^-H phi L^-1, symmetrized.
    n = out._data.shape[-1]
    ident = eye(n, batch_shape=list(out._data.shape[:-2]), dtype=out.dtype)
    l_inv = _triangular_solve(out, ident, True, False)
    middle = matmul(out, dy, adjoint_a=True)
    middle = subtract(band_part(middle, -1, 0), multiply(_diag(_diag_part(middle)), 0.5))
    grad = matmul(matmul(l_inv, middle, adjoint_a=True), l_inv)
    return multiply(add(grad, _mT(grad)), 0.5)


def cholesky(input: Any, name: str | None = None) -> Any:  # noqa: A002 - TF's name
    """The lower-triangular L with L @ L^H = input, for Hermitian positive-definite
    matrices (NaN where a matrix is not positive definite, as in TF).

    >>> import layerflow as tf
    >>> tf.linalg.cholesky([[4.0, 2.0], [2.0, 2.0]]).numpy()
    array([[2., 0.],
           [1., 1.]], dtype=float32)
    """
    return _cholesky(input)


def cholesky_solve(chol: Any, rhs: Any, name: str | None = None) -> Any:
    """X with A @ X = rhs, given A's Cholesky factor `chol`: two triangular solves.

    >>> import layerflow as tf
    >>> chol = tf.linalg.cholesky([[4.0, 2.0], [2.0, 2.0]])
    >>> tf.linalg.cholesky_solve(chol, [[6.0], [4.0]]).numpy()
    array([[1.],
           [1.]], dtype=float32)
    """
    y = _triangular_solve(chol, rhs, True, False)
    return _triangular_solve(chol, y, True, True)


# --- determinants ---------------------------------------------------------------------------------

LogMatrixDeterminant = collections.namedtuple(
    "LogMatrixDeterminant", ["sign", "log_abs_determinant"]
)


@op("log_matrix_determinant", multi_out=True)
def _slogdet(xp: Any, a: Any) -> Any:
    _square(a, "slogdet")
    sign, logabs = xp.linalg.slogdet(a)
    return xp.asarray(sign, dtype=a.dtype), xp.asarray(logabs, dtype=a.dtype)


@_slogdet.grad
def _(dys: Any, outs: Any, a: Any) -> Any:
    g = reshape(dys[1], list(dys[1]._data.shape) + [1, 1])
    return multiply(g, _mT(_inv(a)))


def slogdet(input: Any, name: str | None = None) -> LogMatrixDeterminant:  # noqa: A002
    """(sign, log|det|) of each square matrix: the determinant without overflow.

    >>> import layerflow as tf
    >>> s, logabs = tf.linalg.slogdet([[1.0, 2.0], [3.0, 4.0]])
    >>> float(s), round(float(logabs), 6)
    (-1.0, 0.693147)
    """
    sign, logabs = _slogdet(input)
    return LogMatrixDeterminant(sign, logabs)


def logdet(matrix: Any, name: str | None = None) -> Any:
    """log(det(matrix)) of Hermitian positive-definite matrices, through the Cholesky factor:
    2 * sum(log(diag(cholesky(matrix)))).

    >>> import layerflow as tf
    >>> round(float(tf.linalg.logdet([[2.0, 1.0], [1.0, 2.0]])), 6)
    1.098612
    """
    chol = cholesky(matrix)
    return multiply(reduce_sum(log(_diag_part(chol)), -1), 2.0)


# --- pseudo-inverse and rank ----------------------------------------------------------------------


def _default_rcond(a: Any) -> float:
    return 10.0 * max(a.shape[-2:]) * float(np.finfo(a.dtype).eps)


@op("pinv")
def _pinv(xp: Any, a: Any, rcond: float) -> Any:
    if a.ndim < 2 or a.dtype.kind != "f":
        raise errors.InvalidArgumentError(
            None, "pinv", f"pinv: expected float matrices [..., M, N], got {a.dtype} "
            f"{list(a.shape)}.",
        )  # fmt: skip
    return xp.linalg.pinv(a, rcond=rcond).astype(a.dtype, copy=False)


@_pinv.grad
def _(dy: Any, out: Any, a: Any, rcond: float) -> Any:
    # Golub and Pereyra's derivative of the pseudo-inverse (constant rank).
    m, n = a._data.shape[-2:]
    batch = list(a._data.shape[:-2])
    p, pt = out, _mT(out)
    left = subtract(eye(m, batch_shape=batch, dtype=a.dtype), matmul(a, p))  # I - A A+
    right = subtract(eye(n, batch_shape=batch, dtype=a.dtype), matmul(p, a))  # I - A+ A
    g = negative(matmul(matmul(pt, dy), pt))
    g = add(g, matmul(matmul(left, _mT(dy)), matmul(p, pt)))
    return add(g, matmul(matmul(pt, p), matmul(_mT(dy), right)))


def pinv(a: Any, rcond: Any = None, validate_args: bool = False, name: str | None = None) -> Any:
    """The Moore-Penrose pseudo-inverse; singular values below `rcond` times the largest are
    treated as 0 (default 10 * max(M, N) * eps).

    >>> import layerflow as tf
    >>> tf.linalg.pinv([[1.0, 2.0], [2.0, 4.0]]).numpy().round(4)
    array([[0.04, 0.08],
           [0.08, 0.16]], dtype=float32)
    """
    x = _as_tensor(a)
    r = _default_rcond(x._data) if rcond is None else float(rcond)
    return _pinv(x, r)


def matrix_rank(a: Any, tol: Any = None, validate_args: bool = False,
                name: str | None = None) -> Any:  # fmt: skip
    """The number of singular values above `tol` (default max(M, N) * eps * the largest), as
    int32, for each matrix.

    >>> import layerflow as tf
    >>> int(tf.linalg.matrix_rank([[1.0, 2.0], [2.0, 4.0]]))
    1
    """
    x = _as_tensor(a)
    arr = x._data
    xp = x._device.xp
    s = xp.linalg.svd(arr, compute_uv=False)
    if tol is None:
        limit = s.max(axis=-1, keepdims=True) * max(arr.shape[-2:]) * np.finfo(arr.dtype).eps
    else:
        limit = float(tol)
    return Tensor(xp.sum(s > limit, axis=-1).astype(np.int32), x._device)


def lstsq(matrix: Any, rhs: Any, l2_regularizer: Any = 0.0, fast: bool = True,
          name: str | None = None) -> Any:  # fmt: skip
    """The least-squares solution X of matrix @ X = rhs, minimizing
    ||matrix @ X - rhs||^2 + l2_regularizer * ||X||^2. `fast` solves the normal equations by
    Cholesky (as TF's default); otherwise, with no regularizer, the pseudo-inverse is used.

    >>> import layerflow as tf
    >>> x = tf.linalg.lstsq([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [[1.0], [2.0], [3.0]])
    >>> x.numpy().round(4)
    array([[1.],
           [2.]], dtype=float32)
    """
    a, b = _as_tensor(matrix), _as_tensor(rhs)
    lam = float(l2_regularizer)
    m, n = a._data.shape[-2:]
    if not fast and lam == 0.0:
        return matmul(pinv(a), b)
    batch = list(a._data.shape[:-2])
    if m >= n:
        gram = matmul(a, a, adjoint_a=True)
        if lam:
            gram = add(gram, multiply(eye(n, batch_shape=batch, dtype=a.dtype), lam))
        return cholesky_solve(cholesky(gram), matmul(a, b, adjoint_a=True))
    gram = matmul(a, a, adjoint_b=True)
    if lam:
        gram = add(gram, multiply(eye(m, batch_shape=batch, dtype=a.dtype), lam))
    return matmul(a, cholesky_solve(cholesky(gram), b), adjoint_a=True)


# --- matrix exponential ---------------------------------------------------------------------------

_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)  # fmt: skip
_THETA13 = 5.371920351148152


def expm(input: Any, name: str | None = None) -> Any:  # noqa: A002 - TF's name
    """The matrix exponential, by scaling and squaring with a degree-13 Pade approximant (the
    algorithm TF and SciPy use), composed from ops so it is differentiable.

    >>> import layerflow as tf
    >>> tf.linalg.expm([[0.0, 1.0], [0.0, 0.0]]).numpy()
    array([[1., 1.],
           [0., 1.]], dtype=float32)
    """
    a = _as_tensor(input)
    arr = a._data
    _square(arr, "expm")
    norm = float(np.abs(backend.to_host(arr)).sum(-2).max(initial=0.0))  # the largest l1 norm
    squarings = max(0, math.ceil(math.log2(norm / _THETA13))) if norm > _THETA13 else 0
    x = multiply(a, 1.0 / 2**squarings) if squarings else a
    b = _PADE13
    ident = eye(arr.shape[-1], batch_shape=list(arr.shape[:-2]), dtype=a.dtype)
    x2 = matmul(x, x)
    x4 = matmul(x2, x2)
    x6 = matmul(x4, x2)

    def comb(c6: float, c4: float, c2: float, c0: float | None) -> Any:
        s = add(add(multiply(x6, c6), multiply(x4, c4)), multiply(x2, c2))
        return s if c0 is None else add(s, multiply(ident, c0))

    u = matmul(x, add(matmul(x6, comb(b[13], b[11], b[9], None)), comb(b[7], b[5], b[3], b[1])))
    v = add(matmul(x6, comb(b[12], b[10], b[8], None)), comb(b[6], b[4], b[2], b[0]))
    result = _solve(subtract(v, u), add(v, u))
    for _ in range(squarings):
        result = matmul(result, result)
    return result


__all__ = [
    "LogMatrixDeterminant",
    "cholesky",
    "cholesky_solve",
    "expm",
    "logdet",
    "lstsq",
    "matrix_rank",
    "pinv",
    "slogdet",
    "solve",
    "triangular_solve",
]
