"""`tf.linalg.LinearOperator`: matrices known by their structure, used through matmul/solve.

The base class gives every method in terms of `to_dense()` and layerflow ops (so all of it is
differentiable); each structured operator overrides what its structure makes cheap (a diagonal
solves by division, a triangle by substitution, a composition operator by operator). The
structured family continues in `linear_operator_structured.py`. The two modules form an import
cycle on purpose: the base class's `adjoint()`, `inverse()` and operator-valued `matmul`/`solve`
return LinearOperatorAdjoint, LinearOperatorInversion and LinearOperatorComposition, which
subclass it, so linear_operator imports linear_operator_structured inside those methods only.

>>> import layerflow as tf
>>> op = tf.linalg.LinearOperatorDiag([1.0, 2.0])
>>> op.solve([[2.0], [4.0]]).numpy()
array([[2.],
       [2.]], dtype=float32)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.ops.array_ops import expand_dims, transpose
from layerflow._src.ops.complex_ops import conj
from layerflow._src.ops.linalg_ops import _diag, _diag_part, band_part, det
from layerflow._src.ops.linalg_solve_ops import _triangular_solve, slogdet, solve
from layerflow._src.ops.math_ops import (
    _as_tensor,
    broadcast_to,
    divide,
    log,
    matmul,
    multiply,
)
from layerflow._src.ops.math_ops import (
    abs as abs_,
)
from layerflow._src.ops.reduce_ops import reduce_prod, reduce_sum


def _adj(x: Any) -> Any:
    """The conjugate transpose of the last two axes."""
    r = x._data.ndim
    t = transpose(x, list(range(r - 2)) + [r - 1, r - 2])
    return conj(t) if x._data.dtype.kind == "c" else t


def _tensor(x: Any) -> Any:
    return x if isinstance(x, LinearOperator) else _as_tensor(x)


class LinearOperator:
    """Base class of linear operators [B1, ..., Bb, M, N] (`tf.linalg.LinearOperator`).

    Subclasses set `_dtype` and implement `_shape()` and `_to_dense()`; everything else has a
    dense default that the structured operators override.
    """

    def __init__(self, dtype: Any = None, graph_parents: Any = None, is_non_singular: Any = None,
                 is_self_adjoint: Any = None, is_positive_definite: Any = None,
                 is_square: Any = None, name: str | None = None,
                 parameters: Any = None) -> None:  # fmt: skip
        if is_positive_definite and is_non_singular is False:
            raise ValueError("A positive definite matrix is always non-singular.")
        if is_positive_definite:
            is_non_singular = True
        if is_non_singular and is_square is False:
            raise ValueError("A non-singular matrix is always square.")
        if is_non_singular or is_self_adjoint:
            is_square = True if is_square is None else is_square
        self._dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        self._is_non_singular = is_non_singular
        self._is_self_adjoint = is_self_adjoint
        self._is_positive_definite = is_positive_definite
        self._is_square_set = is_square
        self._name = name or type(self).__name__
        self._parameters = dict(parameters or {})

    # --- structure ---------------------------------------------------------------------------

    @property
    def dtype(self) -> Any:
        return self._dtype

    @property
    def name(self) -> str:
        return self._name

    @property
    def parameters(self) -> dict:
        return dict(self._parameters)

    @property
    def is_non_singular(self) -> Any:
        return self._is_non_singular

    @property
    def is_self_adjoint(self) -> Any:
        return self._is_self_adjoint

    @property
    def is_positive_definite(self) -> Any:
        return self._is_positive_definite

    @property
    def is_square(self) -> bool | None:
        shape = self.shape
        if shape[-1] is not None and shape[-2] is not None:
            return shape[-1] == shape[-2]
        return self._is_square_set

    def _shape(self) -> tuple:
        raise NotImplementedError

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._shape())

    @property
    def batch_shape(self) -> TensorShape:
        return TensorShape(self._shape()[:-2])

    @property
    def tensor_rank(self) -> int:
        return len(self._shape())

    @property
    def domain_dimension(self) -> int:
        return self._shape()[-1]

    @property
    def range_dimension(self) -> int:
        return self._shape()[-2]

    def shape_tensor(self, name: str | None = None) -> Any:
        return convert_to_tensor(np.asarray(self._shape(), np.int32))

    def batch_shape_tensor(self, name: str | None = None) -> Any:
        return convert_to_tensor(np.asarray(self._shape()[:-2], np.int32))

    def tensor_rank_tensor(self, name: str | None = None) -> Any:
        return convert_to_tensor(np.asarray(self.tensor_rank, np.int32))

    def domain_dimension_tensor(self, name: str | None = None) -> Any:
        return convert_to_tensor(np.asarray(self.domain_dimension, np.int32))

    def range_dimension_tensor(self, name: str | None = None) -> Any:
        return convert_to_tensor(np.asarray(self.range_dimension, np.int32))

    # --- checks ------------------------------------------------------------------------------

    def _check_input(self, x: Any, adjoint: bool, adjoint_arg: bool, what: str) -> Any:
        x = _tensor(x)
        if isinstance(x, LinearOperator):
            return x
        if self._dtype is not None and x.dtype != self._dtype:
            raise TypeError(
                f"{self.name}.{what}: the argument has dtype {x.dtype.name} but the operator "
                f"has dtype {self._dtype.name}; cast it with tf.cast(x, tf.{self._dtype.name})."
            )
        if x._data.ndim < 2:
            raise ValueError(
                f"{self.name}.{what}: the argument must be a matrix [..., rows, cols], got "
                f"shape {list(x.shape)} (use {what.replace('matmul', 'matvec')}vec for vectors)."
            )
        need = self.range_dimension if adjoint else self.domain_dimension
        have = x._data.shape[-1] if adjoint_arg else x._data.shape[-2]
        if what == "solve":
            need = self.domain_dimension if adjoint else self.range_dimension
        if need is not None and have != need:
            raise ValueError(
                f"{self.name}.{what}: dimensions must be equal, but are {need} and {have} for "
                f"an operator of shape {list(self.shape)} and an argument of shape "
                f"{list(x.shape)} (adjoint={adjoint}, adjoint_arg={adjoint_arg})."
            )
        return x

    def _need_square(self, what: str) -> None:
        if self.is_square is False:
            raise NotImplementedError(
                f"{self.name}.{what} is defined for square operators only; shape "
                f"{list(self.shape)}."
            )

    def _need_non_singular(self, what: str) -> None:
        if self._is_non_singular is False:
            raise NotImplementedError(
                f"{self.name}.{what}: the operator is marked singular (is_non_singular=False)."
            )

    # --- dense defaults ----------------------------------------------------------------------

    def _to_dense(self) -> Any:
        raise NotImplementedError

    def to_dense(self, name: str | None = None) -> Any:
        """The operator as a dense tensor [..., M, N]."""
        return self._to_dense()

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        dense = self._to_dense()
        return matmul(_adj(dense) if adjoint else dense, _adj(x) if adjoint_arg else x)

    def matmul(self, x: Any, adjoint: bool = False, adjoint_arg: bool = False,
               name: str | None = None) -> Any:  # fmt: skip
        """self @ x (adjoint(self) @ x when `adjoint`; x's adjoint when `adjoint_arg`). A
        LinearOperator argument gives a LinearOperatorComposition."""
        if isinstance(x, LinearOperator):
            from layerflow._src.ops.linear_operator_structured import LinearOperatorComposition

            left = self.adjoint() if adjoint else self
            right = x.adjoint() if adjoint_arg else x
            return LinearOperatorComposition([left, right])
        x = self._check_input(x, adjoint, adjoint_arg, "matmul")
        return self._matmul(x, bool(adjoint), bool(adjoint_arg))

    def __matmul__(self, other: Any) -> Any:
        return self.matmul(other)

    def matvec(self, x: Any, adjoint: bool = False, name: str | None = None) -> Any:
        """self @ x for vectors x [..., N]."""
        x = _tensor(x)
        out = self.matmul(x[..., None], adjoint=adjoint)
        return out[..., 0]

    def _solve(self, rhs: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        rhs = _adj(rhs) if adjoint_arg else rhs
        dense = self._to_dense()
        return solve(_adj(dense) if adjoint else dense, rhs)

    def solve(self, rhs: Any, adjoint: bool = False, adjoint_arg: bool = False,
              name: str | None = None) -> Any:  # fmt: skip
        """X with self @ X = rhs (adjoint(self) @ X = rhs when `adjoint`)."""
        self._need_square("solve")
        self._need_non_singular("solve")
        if isinstance(rhs, LinearOperator):
            from layerflow._src.ops.linear_operator_structured import LinearOperatorComposition

            inv = self.inverse()
            return LinearOperatorComposition([inv.adjoint() if adjoint else inv,
                                              rhs.adjoint() if adjoint_arg else rhs])  # fmt: skip
        rhs = self._check_input(rhs, adjoint, adjoint_arg, "solve")
        return self._solve(rhs, bool(adjoint), bool(adjoint_arg))

    def solvevec(self, rhs: Any, adjoint: bool = False, name: str | None = None) -> Any:
        """x with self @ x = rhs for vectors rhs [..., M]."""
        return self.solve(_tensor(rhs)[..., None], adjoint=adjoint)[..., 0]

    def _determinant(self) -> Any:
        return det(self._to_dense())

    def determinant(self, name: str | None = None) -> Any:
        """det(self), one per batch member."""
        self._need_square("determinant")
        return self._determinant()

    def _log_abs_determinant(self) -> Any:
        return slogdet(self._to_dense())[1]

    def log_abs_determinant(self, name: str | None = None) -> Any:
        """log |det(self)|."""
        self._need_square("log_abs_determinant")
        return self._log_abs_determinant()

    def _diag_part(self) -> Any:
        return _diag_part(self._to_dense())

    def diag_part(self, name: str | None = None) -> Any:
        """The main diagonal [..., min(M, N)]."""
        return self._diag_part()

    def trace(self, name: str | None = None) -> Any:
        """The sum of the main diagonal."""
        return reduce_sum(self.diag_part(), -1)

    def add_to_tensor(self, x: Any, name: str | None = None) -> Any:
        """self.to_dense() + x."""
        return self.to_dense() + _tensor(x)

    def eigvals(self, name: str | None = None) -> Any:
        """The eigenvalues of a self-adjoint operator (ascending)."""
        if not self._is_self_adjoint:
            raise NotImplementedError(
                f"{self.name}.eigvals: only self-adjoint operators (is_self_adjoint=True)."
            )
        from layerflow._src.ops.linalg_decomp_ops import eigvalsh

        return eigvalsh(self.to_dense())

    def cond(self, name: str | None = None) -> Any:
        """The 2-norm condition number: largest over smallest singular value."""
        from layerflow._src.ops.linalg_decomp_ops import svd

        s = svd(self.to_dense(), compute_uv=False)
        return divide(s[..., 0], s[..., -1])

    def cholesky(self, name: str | None = None) -> Any:
        """The lower-triangular Cholesky factor, as a LinearOperatorLowerTriangular."""
        if not (self._is_self_adjoint and self._is_positive_definite):
            raise ValueError(
                f"{self.name}.cholesky needs is_self_adjoint=True and is_positive_definite=True."
            )
        from layerflow._src.ops.linalg_solve_ops import cholesky

        return LinearOperatorLowerTriangular(cholesky(self.to_dense()), is_non_singular=True)

    def adjoint(self, name: str | None = None) -> LinearOperator:
        """The adjoint (conjugate transpose) operator; self when self-adjoint."""
        if self._is_self_adjoint:
            return self
        from layerflow._src.ops.linear_operator_structured import LinearOperatorAdjoint

        return LinearOperatorAdjoint(self)

    H = property(adjoint)

    def inverse(self, name: str | None = None) -> LinearOperator:
        """The inverse operator (a LinearOperatorInversion)."""
        if self._is_non_singular is False:
            raise ValueError("Cannot take the Inverse: This operator represents a singular matrix.")
        if self.is_square is False:
            raise ValueError(
                "Cannot take the Inverse: This operator represents a non square matrix."
            )
        from layerflow._src.ops.linear_operator_structured import LinearOperatorInversion

        return LinearOperatorInversion(self)

    def __repr__(self) -> str:
        return (
            f'<tf.linalg.{type(self).__name__} "{self.name}" batch_shape={list(self.batch_shape)}'
            f" shape={list(self.shape)} dtype={getattr(self._dtype, 'name', None)}>"
        )


# --- FullMatrix -----------------------------------------------------------------------------------


class LinearOperatorFullMatrix(LinearOperator):
    """A LinearOperator of a dense matrix [..., M, N].

    >>> import layerflow as tf
    >>> op = tf.linalg.LinearOperatorFullMatrix([[1.0, 2.0], [3.0, 4.0]])
    >>> op.matvec([1.0, 1.0]).numpy()
    array([3., 7.], dtype=float32)
    """

    def __init__(self, matrix: Any, is_non_singular: Any = None, is_self_adjoint: Any = None,
                 is_positive_definite: Any = None, is_square: Any = None,
                 name: str = "LinearOperatorFullMatrix") -> None:  # fmt: skip
        m = _as_tensor(matrix)
        if m._data.ndim < 2 or m._data.dtype.kind not in "fc":
            raise ValueError(
                f"LinearOperatorFullMatrix: matrix must be a float or complex tensor of rank "
                f">= 2, got {m.dtype.name} {list(m.shape)}."
            )
        self._matrix = m
        super().__init__(m.dtype, None, is_non_singular, is_self_adjoint, is_positive_definite,
                         is_square, name, {"matrix": matrix})  # fmt: skip

    def _shape(self) -> tuple:
        return tuple(self._matrix._data.shape)

    def _to_dense(self) -> Any:
        return self._matrix

    def _solve(self, rhs: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        if self._is_self_adjoint and self._is_positive_definite:
            from layerflow._src.ops.linalg_solve_ops import cholesky, cholesky_solve

            rhs = _adj(rhs) if adjoint_arg else rhs
            return cholesky_solve(cholesky(self._matrix), rhs)
        return super()._solve(rhs, adjoint, adjoint_arg)


# --- Diag, Identity, ScaledIdentity ---------------------------------------------------------------


class LinearOperatorDiag(LinearOperator):
    """A diagonal operator given by its diagonal [..., N]: matmul and solve are elementwise.

    >>> import layerflow as tf
    >>> round(float(tf.linalg.LinearOperatorDiag([2.0, 4.0]).log_abs_determinant()), 4)
    2.0794
    """

    def __init__(self, diag: Any, is_non_singular: Any = None, is_self_adjoint: Any = None,
                 is_positive_definite: Any = None, is_square: Any = True,
                 name: str = "LinearOperatorDiag") -> None:  # fmt: skip
        d = _as_tensor(diag)
        if d._data.ndim < 1 or d._data.dtype.kind not in "fc":
            raise ValueError(
                f"LinearOperatorDiag: diag must be a float or complex tensor of rank >= 1, got "
                f"{d.dtype.name} {list(d.shape)}."
            )
        if is_square is False:
            raise ValueError("Only square diagonal operators currently supported.")
        if d._data.dtype.kind == "f" and is_self_adjoint is None:
            is_self_adjoint = True  # a real diagonal is self-adjoint, as TF infers
        self._diag = d
        super().__init__(d.dtype, None, is_non_singular, is_self_adjoint, is_positive_definite,
                         True, name, {"diag": diag})  # fmt: skip

    @property
    def diag(self) -> Any:
        return self._diag

    def _shape(self) -> tuple:
        s = tuple(self._diag._data.shape)
        return s + (s[-1],)

    def _to_dense(self) -> Any:
        return _diag(self._diag)

    def _d(self, adjoint: bool) -> Any:
        d = conj(self._diag) if adjoint and self._diag._data.dtype.kind == "c" else self._diag
        return d[..., None]

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return multiply(self._d(adjoint), _adj(x) if adjoint_arg else x)

    def _solve(self, rhs: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return divide(_adj(rhs) if adjoint_arg else rhs, self._d(adjoint))

    def _determinant(self) -> Any:
        return reduce_prod(self._diag, -1)

    def _log_abs_determinant(self) -> Any:
        return reduce_sum(log(abs_(self._diag)), -1)

    def _diag_part(self) -> Any:
        return self._diag


class LinearOperatorScaledIdentity(LinearOperator):
    """`multiplier` times the N x N identity (one multiplier per batch member).

    >>> import layerflow as tf
    >>> float(tf.linalg.LinearOperatorScaledIdentity(3, 2.0).determinant())
    8.0
    """

    def __init__(self, num_rows: Any, multiplier: Any, is_non_singular: Any = None,
                 is_self_adjoint: Any = None, is_positive_definite: Any = None,
                 is_square: Any = True, assert_proper_shapes: bool = False,
                 name: str = "LinearOperatorScaledIdentity") -> None:  # fmt: skip
        n = int(np.asarray(getattr(num_rows, "_data", num_rows)))
        if n < 0:
            raise ValueError(f"{name}: num_rows must be non-negative, got {n}.")
        m = _as_tensor(multiplier)
        if m._data.dtype.kind not in "fc":
            raise TypeError(f"{name}: multiplier must be float or complex, got {m.dtype.name}.")
        self._num_rows = n
        self._multiplier = m
        if is_self_adjoint is None and m._data.dtype.kind == "f":
            is_self_adjoint = True
        super().__init__(m.dtype, None, is_non_singular, is_self_adjoint, is_positive_definite,
                         True, name, {"num_rows": n, "multiplier": multiplier})  # fmt: skip

    @property
    def multiplier(self) -> Any:
        return self._multiplier

    def _shape(self) -> tuple:
        return tuple(self._multiplier._data.shape) + (self._num_rows, self._num_rows)

    def _m(self, adjoint: bool) -> Any:
        m = self._multiplier
        m = conj(m) if adjoint and m._data.dtype.kind == "c" else m
        return expand_dims(expand_dims(m, -1), -1)

    def _to_dense(self) -> Any:
        xp = self._multiplier._device.xp
        eye = Tensor(
            xp.eye(self._num_rows, dtype=self._multiplier._data.dtype), self._multiplier._device
        )
        return multiply(self._m(False), eye)

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return multiply(self._m(adjoint), _adj(x) if adjoint_arg else x)

    def _solve(self, rhs: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return divide(_adj(rhs) if adjoint_arg else rhs, self._m(adjoint))

    def _determinant(self) -> Any:
        return self._multiplier**self._num_rows

    def _log_abs_determinant(self) -> Any:
        return multiply(log(abs_(self._multiplier)), float(self._num_rows))

    def _diag_part(self) -> Any:
        xp = self._multiplier._device.xp
        ones = Tensor(
            xp.ones(self._num_rows, dtype=self._multiplier._data.dtype), self._multiplier._device
        )
        return multiply(expand_dims(self._multiplier, -1), ones)


class LinearOperatorIdentity(LinearOperatorScaledIdentity):
    """The N x N identity (optionally batched by `batch_shape`).

    >>> import layerflow as tf
    >>> tf.linalg.LinearOperatorIdentity(2).to_dense().numpy()
    array([[1., 0.],
           [0., 1.]], dtype=float32)
    """

    def __init__(self, num_rows: Any, num_columns: Any = None, batch_shape: Any = None,
                 dtype: Any = None, is_non_singular: Any = True, is_self_adjoint: Any = True,
                 is_positive_definite: Any = True, is_square: Any = True,
                 assert_proper_shapes: bool = False,
                 name: str = "LinearOperatorIdentity") -> None:  # fmt: skip
        if num_columns is not None and int(num_columns) != int(num_rows):
            raise ValueError(
                f"LinearOperatorIdentity: num_columns ({num_columns}) must equal num_rows "
                f"({num_rows}); use LinearOperatorZeros or a FullMatrix for other shapes."
            )
        if is_non_singular is False or is_positive_definite is False:
            raise ValueError("An identity operator is always non-singular and positive definite.")
        dt = dtypes.as_dtype(dtype or "float32")
        shape = tuple(int(b) for b in (batch_shape or ()))
        ones = convert_to_tensor(np.ones(shape, dt.np))
        super().__init__(num_rows, ones, True, True, True, True, assert_proper_shapes, name)
        self._parameters = {"num_rows": num_rows, "batch_shape": batch_shape, "dtype": dt}

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        x = _adj(x) if adjoint_arg else x
        batch = tuple(self.batch_shape)
        if not batch:
            return x
        shape = np.broadcast_shapes(batch, tuple(x._data.shape[:-2]))
        return broadcast_to(x, [*shape, *x._data.shape[-2:]])

    def _solve(self, rhs: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return self._matmul(rhs, adjoint, adjoint_arg)


# --- LowerTriangular ------------------------------------------------------------------------------


class LinearOperatorLowerTriangular(LinearOperator):
    """A lower-triangular operator; only the lower triangle of `tril` is read. Solves by
    substitution; the determinant is the product of the diagonal.

    >>> import layerflow as tf
    >>> op = tf.linalg.LinearOperatorLowerTriangular([[2.0, 9.0], [1.0, 4.0]])
    >>> float(op.determinant())
    8.0
    """

    def __init__(self, tril: Any, is_non_singular: Any = None, is_self_adjoint: Any = None,
                 is_positive_definite: Any = None, is_square: Any = None,
                 name: str = "LinearOperatorLowerTriangular") -> None:  # fmt: skip
        t = _as_tensor(tril)
        if t._data.ndim < 2 or t._data.shape[-1] != t._data.shape[-2]:
            raise ValueError(
                f"LinearOperatorLowerTriangular: tril must be square [..., N, N], got "
                f"{list(t.shape)}."
            )
        if is_square is False:
            raise ValueError("Only square lower triangular operators supported.")
        self._tril = band_part(t, -1, 0)
        super().__init__(t.dtype, None, is_non_singular, is_self_adjoint, is_positive_definite,
                         True, name, {"tril": tril})  # fmt: skip

    def _shape(self) -> tuple:
        return tuple(self._tril._data.shape)

    def _to_dense(self) -> Any:
        return self._tril

    def _solve(self, rhs: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        rhs = _adj(rhs) if adjoint_arg else rhs
        tril = self._tril
        if tuple(tril._data.shape[:-2]) != tuple(rhs._data.shape[:-2]):
            batch = np.broadcast_shapes(tuple(tril._data.shape[:-2]), tuple(rhs._data.shape[:-2]))
            tril = broadcast_to(tril, [*batch, *tril._data.shape[-2:]])
            rhs = broadcast_to(rhs, [*batch, *rhs._data.shape[-2:]])
        return _triangular_solve(tril, rhs, True, bool(adjoint))

    def _determinant(self) -> Any:
        return reduce_prod(_diag_part(self._tril), -1)

    def _log_abs_determinant(self) -> Any:
        return reduce_sum(log(abs_(_diag_part(self._tril))), -1)


__all__ = [
    "LinearOperator", "LinearOperatorDiag", "LinearOperatorFullMatrix", "LinearOperatorIdentity",
    "LinearOperatorLowerTriangular", "LinearOperatorScaledIdentity",
]  # fmt: skip
