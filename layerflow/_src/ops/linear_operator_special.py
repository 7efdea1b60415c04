"""LinearOperators with a special closed form: Tridiag (by its three diagonals), Permutation
(a row permutation) and Householder (a reflection I - 2 v v^H / v^H v)."""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.complex_ops import conj
from layerflow._src.ops.gather_ops import _gather
from layerflow._src.ops.linalg_lu_ops import (
    _compact,
    _transpose_tridiagonal,
    tridiagonal_matmul,
    tridiagonal_solve,
)
from layerflow._src.ops.linear_operator import LinearOperator, _adj
from layerflow._src.ops.math_ops import _as_tensor, matmul, multiply, reshape, subtract
from layerflow._src.ops.reduce_ops import reduce_sum


class LinearOperatorTridiag(LinearOperator):
    """A tridiagonal operator given by its diagonals ('compact' [..., 3, N], 'sequence' or
    'matrix', as `tf.linalg.tridiagonal_solve`): matmul and solve in O(N).

    >>> import layerflow as tf
    >>> op = tf.linalg.LinearOperatorTridiag([[2.0, 1.0, 0.0], [4.0, 4.0, 4.0], [0.0, 1.0, 2.0]])
    >>> op.to_dense().numpy()
    array([[4., 2., 0.],
           [1., 4., 1.],
           [0., 2., 4.]], dtype=float32)
    """

    def __init__(self, diagonals: Any, diagonals_format: str = "compact",
                 is_non_singular: Any = None, is_self_adjoint: Any = None,
                 is_positive_definite: Any = None, is_square: Any = None,
                 name: str = "LinearOperatorTridiag") -> None:  # fmt: skip
        self._diags = _compact(diagonals, diagonals_format, "LinearOperatorTridiag")
        self._format = diagonals_format
        params = {"diagonals": diagonals, "diagonals_format": diagonals_format}
        super().__init__(self._diags.dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name, params)  # fmt: skip

    @property
    def diagonals(self) -> Any:
        return self._diags

    @property
    def diagonals_format(self) -> str:
        return self._format

    def _shape(self) -> tuple:
        s = tuple(self._diags._data.shape)
        return (*s[:-2], s[-1], s[-1])

    def _adjoint_diags(self) -> Any:
        t = _transpose_tridiagonal(self._diags)
        return conj(t) if t._data.dtype.kind == "c" else t

    def _to_dense(self) -> Any:
        n = self._diags._data.shape[-1]
        xp = self._diags._device.xp
        eye = Tensor(xp.eye(n, dtype=self._diags._data.dtype), self._diags._device)
        batch = tuple(self._diags._data.shape[:-2])
        ones = np.ones((*batch, 1, 1), self._diags._data.dtype)
        return tridiagonal_matmul(self._diags, multiply(eye, ones))

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        d = self._adjoint_diags() if adjoint else self._diags
        return tridiagonal_matmul(d, _adj(x) if adjoint_arg else x)

    def _solve(self, rhs: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        d = self._adjoint_diags() if adjoint else self._diags
        return tridiagonal_solve(d, _adj(rhs) if adjoint_arg else rhs)


class LinearOperatorPermutation(LinearOperator):
    """The permutation matrix P with P[i, perm[i]] = 1, so (P @ x)[i] = x[perm[i]].

    >>> import layerflow as tf
    >>> op = tf.linalg.LinearOperatorPermutation([2, 0, 1])
    >>> op.matvec([10.0, 20.0, 30.0]).numpy()
    array([30., 10., 20.], dtype=float32)
    """

    def __init__(self, perm: Any, dtype: Any = "float32", is_non_singular: Any = None,
                 is_self_adjoint: Any = None, is_positive_definite: Any = None,
                 is_square: Any = None,
                 name: str = "LinearOperatorPermutation") -> None:  # fmt: skip
        p = _as_tensor(perm)
        host = p.numpy()
        if host.dtype.kind not in "iu" or host.ndim < 1:
            raise TypeError(f"{name}: perm must be an integer vector, got {p.dtype.name}.")
        n = host.shape[-1]
        if not (np.sort(host.reshape(-1, n), axis=-1) == np.arange(n)).all():
            raise errors.InvalidArgumentError(
                None, None, f"{name}: perm must be a permutation of 0..{n - 1}, got {host}."
            )
        if is_non_singular is False:
            raise ValueError(f"{name}: a permutation is always non-singular.")
        self._perm = host.astype(np.int64)
        dt = dtypes.as_dtype(dtype)
        super().__init__(dt, None, True, is_self_adjoint, is_positive_definite, True, name,
                         {"perm": perm, "dtype": dt})  # fmt: skip

    @property
    def perm(self) -> Any:
        return convert_to_tensor(self._perm)

    def _shape(self) -> tuple:
        n = self._perm.shape[-1]
        return (*self._perm.shape[:-1], n, n)

    def _to_dense(self) -> Any:
        n = self._perm.shape[-1]
        return convert_to_tensor((self._perm[..., :, None] == np.arange(n)).astype(self._dtype.np))

    def _apply(self, x: Any, inverse: bool) -> Any:
        perm = np.argsort(self._perm, axis=-1) if inverse else self._perm
        if perm.ndim == 1:
            idx = Tensor(x._device.xp.asarray(perm), x._device)
            return _gather(x, idx, x._data.ndim - 2)
        return matmul(convert_to_tensor((perm[..., :, None] == np.arange(perm.shape[-1]))
                                        .astype(self._dtype.np)), x)  # fmt: skip

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return self._apply(_adj(x) if adjoint_arg else x, inverse=adjoint)  # P^H = P^-1

    def _solve(self, rhs: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return self._apply(_adj(rhs) if adjoint_arg else rhs, inverse=not adjoint)

    def _sign(self) -> np.ndarray:
        flat = self._perm.reshape(-1, self._perm.shape[-1])
        signs = []
        for row in flat:  # the parity of the cycle decomposition
            seen, sign = np.zeros(row.size, bool), 1
            for i in range(row.size):
                if not seen[i]:
                    j, length = i, 0
                    while not seen[j]:
                        seen[j], j, length = True, row[j], length + 1
                    sign *= -1 if length % 2 == 0 else 1
            signs.append(sign)
        return np.asarray(signs, self._dtype.np).reshape(self._perm.shape[:-1])

    def _determinant(self) -> Any:
        return convert_to_tensor(self._sign())

    def _log_abs_determinant(self) -> Any:
        return convert_to_tensor(np.zeros(self._perm.shape[:-1], self._dtype.np))


class LinearOperatorHouseholder(LinearOperator):
    """The reflection H = I - 2 v v^H / (v^H v) about the hyperplane orthogonal to
    `reflection_axis` v: self-adjoint, its own inverse, determinant -1.

    >>> import layerflow as tf
    >>> tf.linalg.LinearOperatorHouseholder([1.0, 0.0]).matvec([3.0, 4.0]).numpy()
    array([-3.,  4.], dtype=float32)
    """

    def __init__(self, reflection_axis: Any, is_non_singular: Any = None,
                 is_self_adjoint: Any = None, is_positive_definite: Any = None,
                 is_square: Any = None,
                 name: str = "LinearOperatorHouseholder") -> None:  # fmt: skip
        v = _as_tensor(reflection_axis)
        if v._data.ndim < 1 or v._data.dtype.kind not in "fc":
            raise ValueError(
                f"{name}: reflection_axis must be a float vector [..., N], got {v.dtype.name}."
            )
        if is_self_adjoint is False or is_positive_definite:
            raise ValueError(f"{name}: a reflection is self-adjoint and not positive definite.")
        self._v = v
        super().__init__(v.dtype, None, is_non_singular, True, False, True, name,
                         {"reflection_axis": reflection_axis})  # fmt: skip

    @property
    def reflection_axis(self) -> Any:
        return self._v

    def _shape(self) -> tuple:
        s = tuple(self._v._data.shape)
        return (*s, s[-1])

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        x = _adj(x) if adjoint_arg else x
        v = self._v
        vh = conj(v) if v._data.dtype.kind == "c" else v
        norm2 = reduce_sum(multiply(vh, v), -1)
        proj = reduce_sum(multiply(vh[..., :, None], x), -2, keepdims=True)  # v^H x
        scale = reshape(2.0 / norm2, [*norm2._data.shape, 1, 1])
        return subtract(x, multiply(scale, multiply(v[..., :, None], proj)))

    def _to_dense(self) -> Any:
        n = self._v._data.shape[-1]
        xp = self._v._device.xp
        eye = Tensor(xp.eye(n, dtype=self._v._data.dtype), self._v._device)
        batch = tuple(self._v._data.shape[:-1])
        return self._matmul(multiply(eye, np.ones((*batch, 1, 1), self._v._data.dtype)),
                            False, False)  # fmt: skip

    def _solve(self, rhs: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return self._matmul(rhs, adjoint, adjoint_arg)  # H^-1 = H

    def _determinant(self) -> Any:
        return convert_to_tensor(-np.ones(self._v._data.shape[:-1], self._v._data.dtype))

    def _log_abs_determinant(self) -> Any:
        return convert_to_tensor(np.zeros(self._v._data.shape[:-1], self._v._data.dtype))


__all__ = ["LinearOperatorHouseholder", "LinearOperatorPermutation", "LinearOperatorTridiag"]
