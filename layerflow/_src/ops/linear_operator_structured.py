"""The structured LinearOperators built from others: Composition, Inversion, Adjoint, BlockDiag,
Kronecker, and Zeros, LowRankUpdate, Toeplitz.

Each one is exact on its structure where that is cheap (a composition solves operator by
operator, a block diagonal block by block, a Kronecker determinant from its factors', a low-rank
update by Woodbury's identity and the matrix determinant lemma) and dense otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.array_ops import concat, split
from layerflow._src.ops.complex_ops import conj
from layerflow._src.ops.gather_ops import _gather
from layerflow._src.ops.linalg_ops import _diag, det, inv
from layerflow._src.ops.linalg_solve_ops import slogdet, solve
from layerflow._src.ops.linear_operator import (
    LinearOperator,
    LinearOperatorDiag,
    _adj,
)
from layerflow._src.ops.manip_ops import pad, reverse
from layerflow._src.ops.math_ops import (
    _as_tensor,
    add,
    broadcast_to,
    divide,
    matmul,
    multiply,
    negative,
    reshape,
    subtract,
)


def _batch(*shapes: tuple) -> tuple:
    return tuple(np.broadcast_shapes(*shapes))


# --- Composition, Inversion, Adjoint --------------------------------------------------------------


class LinearOperatorComposition(LinearOperator):
    """The product A1 @ A2 @ ... @ An of operators, applied right to left.

    >>> import layerflow as tf
    >>> a = tf.linalg.LinearOperatorDiag([1.0, 2.0])
    >>> b = tf.linalg.LinearOperatorFullMatrix([[1.0, 1.0], [0.0, 1.0]])
    >>> tf.linalg.LinearOperatorComposition([a, b]).to_dense().numpy()
    array([[1., 1.],
           [0., 2.]], dtype=float32)
    """

    def __init__(self, operators: Any, is_non_singular: Any = None, is_self_adjoint: Any = None,
                 is_positive_definite: Any = None, is_square: Any = None,
                 name: str | None = None) -> None:  # fmt: skip
        ops = list(operators)
        if not ops:
            raise ValueError("LinearOperatorComposition: expected a non-empty list of operators.")
        dts = {o.dtype for o in ops}
        if len(dts) > 1:
            raise TypeError(
                f"LinearOperatorComposition: every operator must have the same dtype, got "
                f"{sorted(d.name for d in dts)}."
            )
        for left, right in zip(ops, ops[1:]):
            if left.domain_dimension != right.range_dimension:
                raise ValueError(
                    f"LinearOperatorComposition: {left.name} (shape {list(left.shape)}) cannot "
                    f"multiply {right.name} (shape {list(right.shape)}): dimensions "
                    f"{left.domain_dimension} and {right.range_dimension} differ."
                )
        if all(o.is_non_singular for o in ops) and is_non_singular is None:
            is_non_singular = True
        self._operators = ops
        super().__init__(ops[0].dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square,
                         name or "_o_".join(o.name for o in ops),
                         {"operators": ops})  # fmt: skip

    @property
    def operators(self) -> list:
        return list(self._operators)

    def _shape(self) -> tuple:
        batch = _batch(*(tuple(o.batch_shape) for o in self._operators))
        return (*batch, self._operators[0].range_dimension, self._operators[-1].domain_dimension)

    def _to_dense(self) -> Any:
        out = self._operators[-1].to_dense()
        for o in reversed(self._operators[:-1]):
            out = o.matmul(out)
        return out

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        if adjoint:  # (A1 ... An)^H x = An^H ... A1^H x
            out = self._operators[0].matmul(x, adjoint=True, adjoint_arg=adjoint_arg)
            for o in self._operators[1:]:
                out = o.matmul(out, adjoint=True)
            return out
        out = self._operators[-1].matmul(x, adjoint_arg=adjoint_arg)
        for o in reversed(self._operators[:-1]):
            out = o.matmul(out)
        return out

    def _solve(self, rhs: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        if adjoint:  # (A1 ... An)^-H = A1^-H ... An^-H applied right to left
            out = self._operators[-1].solve(rhs, adjoint=True, adjoint_arg=adjoint_arg)
            for o in reversed(self._operators[:-1]):
                out = o.solve(out, adjoint=True)
            return out
        out = self._operators[0].solve(rhs, adjoint_arg=adjoint_arg)
        for o in self._operators[1:]:
            out = o.solve(out)
        return out

    def _determinant(self) -> Any:
        if all(o.is_square for o in self._operators):
            out = self._operators[0].determinant()
            for o in self._operators[1:]:
                out = multiply(out, o.determinant())
            return out
        return super()._determinant()

    def _log_abs_determinant(self) -> Any:
        if all(o.is_square for o in self._operators):
            out = self._operators[0].log_abs_determinant()
            for o in self._operators[1:]:
                out = add(out, o.log_abs_determinant())
            return out
        return super()._log_abs_determinant()


class LinearOperatorInversion(LinearOperator):
    """The inverse of a square non-singular operator: matmul is its solve, solve its matmul.

    >>> import layerflow as tf
    >>> inv = tf.linalg.LinearOperatorInversion(tf.linalg.LinearOperatorDiag([2.0, 4.0]))
    >>> inv.matvec([1.0, 1.0]).numpy()
    array([0.5 , 0.25], dtype=float32)
    """

    def __init__(self, operator: LinearOperator, is_non_singular: Any = None,
                 is_self_adjoint: Any = None, is_positive_definite: Any = None,
                 is_square: Any = None, name: str | None = None) -> None:  # fmt: skip
        if operator.is_non_singular is False or is_non_singular is False:
            raise ValueError(
                f"LinearOperatorInversion: {operator.name} is singular (is_non_singular=False)."
            )
        if operator.is_square is False:
            raise ValueError(f"LinearOperatorInversion: {operator.name} is not square.")
        self._operator = operator

        def hint(own: Any, theirs: Any) -> Any:
            return theirs if own is None else own

        super().__init__(operator.dtype, None, True,
                         hint(is_self_adjoint, operator.is_self_adjoint),
                         hint(is_positive_definite, operator.is_positive_definite), True,
                         name or operator.name + "_inv", {"operator": operator})  # fmt: skip

    @property
    def operator(self) -> LinearOperator:
        return self._operator

    def _shape(self) -> tuple:
        return tuple(self._operator.shape)

    def _to_dense(self) -> Any:
        return inv(self._operator.to_dense())

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return self._operator.solve(x, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return self._operator.matmul(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _determinant(self) -> Any:
        return divide(1.0, self._operator.determinant())

    def _log_abs_determinant(self) -> Any:
        return negative(self._operator.log_abs_determinant())


class LinearOperatorAdjoint(LinearOperator):
    """The adjoint (conjugate transpose) of an operator, applied through it.

    >>> import layerflow as tf
    >>> a = tf.linalg.LinearOperatorFullMatrix([[1.0, 2.0], [3.0, 4.0]])
    >>> tf.linalg.LinearOperatorAdjoint(a).to_dense().numpy()
    array([[1., 3.],
           [2., 4.]], dtype=float32)
    """

    def __init__(self, operator: LinearOperator, is_non_singular: Any = None,
                 is_self_adjoint: Any = None, is_positive_definite: Any = None,
                 is_square: Any = None, name: str | None = None) -> None:  # fmt: skip
        self._operator = operator

        def hint(own: Any, theirs: Any) -> Any:
            return theirs if own is None else own

        super().__init__(operator.dtype, None, hint(is_non_singular, operator.is_non_singular),
                         hint(is_self_adjoint, operator.is_self_adjoint),
                         hint(is_positive_definite, operator.is_positive_definite),
                         hint(is_square, operator.is_square), name or operator.name + "_adjoint",
                         {"operator": operator})  # fmt: skip

    @property
    def operator(self) -> LinearOperator:
        return self._operator

    def _shape(self) -> tuple:
        s = tuple(self._operator.shape)
        return (*s[:-2], s[-1], s[-2])

    def _to_dense(self) -> Any:
        return _adj(self._operator.to_dense())

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return self._operator.matmul(x, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return self._operator.solve(rhs, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _determinant(self) -> Any:
        d = self._operator.determinant()
        return conj(d) if d._data.dtype.kind == "c" else d

    def _log_abs_determinant(self) -> Any:
        return self._operator.log_abs_determinant()

    def adjoint(self, name: str | None = None) -> LinearOperator:
        return self._operator


# --- BlockDiag, Kronecker -------------------------------------------------------------------------


class LinearOperatorBlockDiag(LinearOperator):
    """A block-diagonal operator of square blocks [A1, ..., An].

    >>> import layerflow as tf
    >>> a = tf.linalg.LinearOperatorDiag([2.0])
    >>> b = tf.linalg.LinearOperatorFullMatrix([[1.0, 1.0], [0.0, 1.0]])
    >>> tf.linalg.LinearOperatorBlockDiag([a, b]).matvec([1.0, 1.0, 1.0]).numpy()
    array([2., 2., 1.], dtype=float32)
    """

    def __init__(self, operators: Any, is_non_singular: Any = None, is_self_adjoint: Any = None,
                 is_positive_definite: Any = None, is_square: Any = True,
                 name: str | None = None) -> None:  # fmt: skip
        ops = list(operators)
        if not ops:
            raise ValueError("LinearOperatorBlockDiag: expected a non-empty list of operators.")
        if any(o.is_square is False for o in ops):
            raise ValueError("LinearOperatorBlockDiag: every block must be square.")
        if len({o.dtype for o in ops}) > 1:
            raise TypeError("LinearOperatorBlockDiag: every block must have the same dtype.")
        if all(o.is_non_singular for o in ops) and is_non_singular is None:
            is_non_singular = True
        self._operators = ops
        super().__init__(ops[0].dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name or "_ds_".join(o.name for o in ops),
                         {"operators": ops})  # fmt: skip

    @property
    def operators(self) -> list:
        return list(self._operators)

    def _shape(self) -> tuple:
        batch = _batch(*(tuple(o.batch_shape) for o in self._operators))
        n = sum(o.domain_dimension for o in self._operators)
        return (*batch, n, n)

    def _to_dense(self) -> Any:
        batch = tuple(self.batch_shape)
        n = self.domain_dimension
        rows, start = [], 0
        for o in self._operators:
            d = o.to_dense()
            k = o.domain_dimension
            d = broadcast_to(d, [*batch, k, k])
            r = len(batch)
            rows.append(pad(d, [[0, 0]] * r + [[0, 0], [start, n - start - k]]))
            start += k
        return concat(rows, -2)

    def _blockwise(self, x: Any, fn: str, adjoint: bool, adjoint_arg: bool) -> Any:
        x = _adj(x) if adjoint_arg else x
        sizes = [o.domain_dimension for o in self._operators]
        parts = split(x, sizes, axis=-2)
        outs = [getattr(o, fn)(p, adjoint=adjoint) for o, p in zip(self._operators, parts)]
        batch = _batch(*(tuple(o._data.shape[:-2]) for o in outs))
        return concat([broadcast_to(o, [*batch, *o._data.shape[-2:]]) for o in outs], -2)

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return self._blockwise(x, "matmul", adjoint, adjoint_arg)

    def _solve(self, rhs: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return self._blockwise(rhs, "solve", adjoint, adjoint_arg)

    def _determinant(self) -> Any:
        out = self._operators[0].determinant()
        for o in self._operators[1:]:
            out = multiply(out, o.determinant())
        return out

    def _log_abs_determinant(self) -> Any:
        out = self._operators[0].log_abs_determinant()
        for o in self._operators[1:]:
            out = add(out, o.log_abs_determinant())
        return out


def _kron(a: Any, b: Any) -> Any:
    """The Kronecker product of the last two axes of two (batched) matrices."""
    m, n = a._data.shape[-2:]
    p, q = b._data.shape[-2:]
    prod = multiply(a[..., :, None, :, None], b[..., None, :, None, :])
    return reshape(prod, [*prod._data.shape[:-4], m * p, n * q])


class LinearOperatorKronecker(LinearOperator):
    """The Kronecker product A1 ⊗ A2 ⊗ ... of operators (dense products; the determinant from
    the factors': det(A ⊗ B) = det(A)^q det(B)^p for A p x p and B q x q).

    >>> import layerflow as tf
    >>> a = tf.linalg.LinearOperatorDiag([1.0, 2.0])
    >>> b = tf.linalg.LinearOperatorDiag([3.0, 5.0])
    >>> tf.linalg.LinearOperatorKronecker([a, b]).diag_part().numpy()
    array([ 3.,  5.,  6., 10.], dtype=float32)
    """

    def __init__(self, operators: Any, is_non_singular: Any = None, is_self_adjoint: Any = None,
                 is_positive_definite: Any = None, is_square: Any = None,
                 name: str | None = None) -> None:  # fmt: skip
        ops = list(operators)
        if not ops:
            raise ValueError("LinearOperatorKronecker: expected a non-empty list of operators.")
        if len({o.dtype for o in ops}) > 1:
            raise TypeError("LinearOperatorKronecker: every factor must have the same dtype.")
        if all(o.is_non_singular for o in ops) and is_non_singular is None:
            is_non_singular = True
        self._operators = ops
        super().__init__(ops[0].dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square,
                         name or "_x_".join(o.name for o in ops), {"operators": ops})  # fmt: skip

    @property
    def operators(self) -> list:
        return list(self._operators)

    def _shape(self) -> tuple:
        batch = _batch(*(tuple(o.batch_shape) for o in self._operators))
        rows = int(np.prod([o.range_dimension for o in self._operators]))
        cols = int(np.prod([o.domain_dimension for o in self._operators]))
        return (*batch, rows, cols)

    def _to_dense(self) -> Any:
        out = self._operators[0].to_dense()
        for o in self._operators[1:]:
            out = _kron(out, o.to_dense())
        return out

    def _determinant(self) -> Any:
        n = self.domain_dimension
        out = None
        for o in self._operators:
            term = o.determinant() ** (n // o.domain_dimension)
            out = term if out is None else multiply(out, term)
        return out

    def _log_abs_determinant(self) -> Any:
        n = self.domain_dimension
        out = None
        for o in self._operators:
            term = multiply(o.log_abs_determinant(), float(n // o.domain_dimension))
            out = term if out is None else add(out, term)
        return out


# --- Zeros, LowRankUpdate, Toeplitz ---------------------------------------------------------------


class LinearOperatorZeros(LinearOperator):
    """The M x N zero operator (singular; matmul gives zeros).

    >>> import layerflow as tf
    >>> tf.linalg.LinearOperatorZeros(2, 3).matvec([1.0, 2.0, 3.0]).numpy()
    array([0., 0.], dtype=float32)
    """

    def __init__(self, num_rows: Any, num_columns: Any = None, batch_shape: Any = None,
                 dtype: Any = None, is_non_singular: Any = False, is_self_adjoint: Any = True,
                 is_positive_definite: Any = False, is_square: Any = True,
                 assert_proper_shapes: bool = False,
                 name: str = "LinearOperatorZeros") -> None:  # fmt: skip
        if is_non_singular:
            raise ValueError("A zero operator is always singular.")
        if is_positive_definite:
            raise ValueError("A zero operator is never positive definite.")
        self._rows = int(num_rows)
        self._cols = self._rows if num_columns is None else int(num_columns)
        self._batch_shape = tuple(int(b) for b in (batch_shape or ()))
        dt = dtypes.as_dtype(dtype or "float32")
        square = self._rows == self._cols
        super().__init__(dt, None, False, bool(is_self_adjoint and square), False, square, name,
                         {"num_rows": num_rows, "num_columns": num_columns})  # fmt: skip

    def _shape(self) -> tuple:
        return (*self._batch_shape, self._rows, self._cols)

    def _to_dense(self) -> Any:
        return convert_to_tensor(np.zeros(self._shape(), self._dtype.np))

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        x = _adj(x) if adjoint_arg else x
        rows = self._cols if adjoint else self._rows
        batch = _batch(self._batch_shape, tuple(x._data.shape[:-2]))
        return broadcast_to(x[..., :1, :] * 0.0, [*batch, rows, x._data.shape[-1]])

    def _determinant(self) -> Any:
        return convert_to_tensor(np.zeros(self._batch_shape, self._dtype.np))

    def _log_abs_determinant(self) -> Any:
        return convert_to_tensor(np.full(self._batch_shape, -np.inf, self._dtype.np))


class LinearOperatorLowRankUpdate(LinearOperator):
    """base_operator + U @ diag(diag_update) @ V^H (V = U when not given): solves by the
    Woodbury identity and takes the determinant by the matrix determinant lemma.

    >>> import layerflow as tf
    >>> base = tf.linalg.LinearOperatorDiag([1.0, 1.0])
    >>> op = tf.linalg.LinearOperatorLowRankUpdate(base, [[1.0], [1.0]])
    >>> float(op.determinant())
    3.0
    """

    def __init__(self, base_operator: LinearOperator, u: Any, diag_update: Any = None,
                 v: Any = None, is_diag_update_positive: Any = None, is_non_singular: Any = None,
                 is_self_adjoint: Any = None, is_positive_definite: Any = None,
                 is_square: Any = None,
                 name: str = "LinearOperatorLowRankUpdate") -> None:  # fmt: skip
        self._base = base_operator
        self._u = _as_tensor(u)
        self._v = self._u if v is None else _as_tensor(v)
        k = self._u._data.shape[-1]
        if diag_update is None:
            ones = np.ones(k, self._u._data.dtype)
            self._diag_op = LinearOperatorDiag(Tensor(self._u._device.xp.asarray(ones),
                                                      self._u._device))  # fmt: skip
        else:
            self._diag_op = LinearOperatorDiag(diag_update)
        for what, t in (("u", self._u), ("v", self._v)):
            if t._data.ndim < 2 or t._data.shape[-2] != base_operator.domain_dimension:
                raise ValueError(
                    f"LinearOperatorLowRankUpdate: {what} must be [..., "
                    f"{base_operator.domain_dimension}, K], got {list(t.shape)}."
                )
        if v is None and is_self_adjoint is None and base_operator.is_self_adjoint:
            is_self_adjoint = True
        super().__init__(base_operator.dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name,
                         {"base_operator": base_operator, "u": u, "v": v})  # fmt: skip

    @property
    def base_operator(self) -> LinearOperator:
        return self._base

    @property
    def u(self) -> Any:
        return self._u

    @property
    def v(self) -> Any:
        return self._v

    @property
    def diag_operator(self) -> LinearOperator:
        return self._diag_op

    def _shape(self) -> tuple:
        batch = _batch(tuple(self._base.batch_shape), tuple(self._u._data.shape[:-2]))
        return (*batch, self._base.range_dimension, self._base.domain_dimension)

    def _update(self) -> Any:
        return matmul(self._u, matmul(_diag(self._diag_op.diag), self._v, adjoint_b=True))

    def _to_dense(self) -> Any:
        return add(self._base.to_dense(), self._update())

    def _capacitance(self) -> Any:
        # C = D^-1 + V^H A^-1 U  (k x k)
        inv_d = _diag(divide(1.0, self._diag_op.diag))
        return add(inv_d, matmul(self._v, self._base.solve(self._u), adjoint_a=True))

    def _solve(self, rhs: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        if adjoint:
            return super()._solve(rhs, adjoint, adjoint_arg)
        rhs = _adj(rhs) if adjoint_arg else rhs
        a_inv_rhs = self._base.solve(rhs)  # Woodbury: A^-1 r - A^-1 U C^-1 V^H A^-1 r
        inner = solve(self._capacitance(), matmul(self._v, a_inv_rhs, adjoint_a=True))
        return subtract(a_inv_rhs, self._base.solve(matmul(self._u, inner)))

    def _determinant(self) -> Any:
        # det(A + U D V^H) = det(C) det(D) det(A)
        return multiply(multiply(det(self._capacitance()), self._diag_op.determinant()),
                        self._base.determinant())  # fmt: skip

    def _log_abs_determinant(self) -> Any:
        return add(add(slogdet(self._capacitance())[1], self._diag_op.log_abs_determinant()),
                   self._base.log_abs_determinant())  # fmt: skip


class LinearOperatorToeplitz(LinearOperator):
    """The Toeplitz matrix with first column `col` and first row `row` (row[0] is ignored for
    col[0], as in TF).

    >>> import layerflow as tf
    >>> tf.linalg.LinearOperatorToeplitz([1.0, 2.0, 3.0], [1.0, 4.0, 5.0]).to_dense().numpy()
    array([[1., 4., 5.],
           [2., 1., 4.],
           [3., 2., 1.]], dtype=float32)
    """

    def __init__(self, col: Any, row: Any, is_non_singular: Any = None,
                 is_self_adjoint: Any = None, is_positive_definite: Any = None,
                 is_square: Any = None, name: str = "LinearOperatorToeplitz") -> None:  # fmt: skip
        self._col, self._row = _as_tensor(col), _as_tensor(row)
        if self._col._data.shape[-1] != self._row._data.shape[-1]:
            raise ValueError(
                f"LinearOperatorToeplitz: col and row must have the same length, got "
                f"{list(self._col.shape)} and {list(self._row.shape)}."
            )
        super().__init__(self._col.dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name, {"col": col, "row": row})  # fmt: skip

    @property
    def col(self) -> Any:
        return self._col

    @property
    def row(self) -> Any:
        return self._row

    def _shape(self) -> tuple:
        n = self._col._data.shape[-1]
        batch = _batch(tuple(self._col._data.shape[:-1]), tuple(self._row._data.shape[:-1]))
        return (*batch, n, n)

    def _to_dense(self) -> Any:
        n = self._col._data.shape[-1]
        batch = tuple(self.batch_shape)
        col = broadcast_to(self._col, [*batch, n])
        row = broadcast_to(self._row, [*batch, n])
        # values = [row[n-1], ..., row[1], col[0], ..., col[n-1]]; entry (i, j) = values[n-1+i-j]
        values = concat([reverse(row[..., 1:], [-1]), col], -1)
        idx = n - 1 + np.arange(n)[:, None] - np.arange(n)[None, :]
        flat = _gather(values, Tensor(values._device.xp.asarray(idx.reshape(-1)),
                                      values._device), values._data.ndim - 1)  # fmt: skip
        return reshape(flat, [*batch, n, n])


__all__ = [
    "LinearOperatorAdjoint", "LinearOperatorBlockDiag", "LinearOperatorComposition",
    "LinearOperatorInversion", "LinearOperatorKronecker",
    "LinearOperatorLowRankUpdate", "LinearOperatorToeplitz", "LinearOperatorZeros",
]  # fmt: skip
