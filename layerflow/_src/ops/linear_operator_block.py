"""`tf.linalg.LinearOperatorBlockLowerTriangular`: a square operator made of blocks, zero above
the block diagonal.

`operators[i]` holds the i + 1 blocks of block row i; the last one is the (square) diagonal
block. `matmul` multiplies block by block, `solve` runs block forward substitution (backward for
the adjoint) with the diagonal blocks' own `solve`, and the determinant is the product of the
diagonal blocks' determinants. Like TF, `matmul` and `solve` also take the argument as a list of
blocks and then return a list.

>>> import layerflow as tf
>>> a = tf.linalg.LinearOperatorDiag([2.0])
>>> b = tf.linalg.LinearOperatorFullMatrix([[1.0]])
>>> c = tf.linalg.LinearOperatorDiag([4.0])
>>> op = tf.linalg.LinearOperatorBlockLowerTriangular([[a], [b, c]])
>>> op.to_dense().numpy()
array([[2., 0.],
       [1., 4.]], dtype=float32)
>>> op.solvevec([2.0, 5.0]).numpy()
array([1., 1.], dtype=float32)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops.array_ops import concat, split
from layerflow._src.ops.linear_operator import LinearOperator, _adj
from layerflow._src.ops.linear_operator_structured import _batch
from layerflow._src.ops.manip_ops import pad
from layerflow._src.ops.math_ops import (
    _as_tensor,
    add,
    broadcast_to,
    multiply,
    negative,
    subtract,
)


def _broadcast_matrices(mats: list) -> list:
    """Broadcast the batch dimensions of matrices [..., m, n] against each other."""
    batch = _batch(*(tuple(m._data.shape[:-2]) for m in mats))
    return [broadcast_to(m, [*batch, *m._data.shape[-2:]]) for m in mats]


class LinearOperatorBlockLowerTriangular(LinearOperator):
    """A block lower-triangular operator from rows of blocks
    (`tf.linalg.LinearOperatorBlockLowerTriangular`); see the module docstring."""

    def __init__(self, operators: Any, is_non_singular: Any = None, is_self_adjoint: Any = None,
                 is_positive_definite: Any = None, is_square: Any = None,
                 name: str = "LinearOperatorBlockLowerTriangular") -> None:  # fmt: skip
        rows = [list(row) for row in operators]
        if not rows:
            raise ValueError(
                "LinearOperatorBlockLowerTriangular: argument `operators` must be a list of >=1 "
                f"rows of operators. Received: {operators}."
            )
        for i, row in enumerate(rows):
            if len(row) != i + 1:
                raise ValueError(
                    f"LinearOperatorBlockLowerTriangular: argument `operators[{i}]` must "
                    f"contain {i + 1} blocks (row i holds the blocks left of and on the "
                    f"diagonal). Received: {len(row)} blocks."
                )
            for j, o in enumerate(row):
                if not isinstance(o, LinearOperator):
                    raise TypeError(
                        f"LinearOperatorBlockLowerTriangular: operators[{i}][{j}] must be a "
                        f"LinearOperator, got {type(o).__name__}. Wrap matrices in "
                        "tf.linalg.LinearOperatorFullMatrix."
                    )
        self._operators = rows
        self._check_dimensions()
        dtypes_ = {o.dtype for row in rows for o in row}
        if len(dtypes_) > 1:
            names = sorted(getattr(d, "name", str(d)) for d in dtypes_)
            raise TypeError(
                "LinearOperatorBlockLowerTriangular: every block must have the same dtype, got "
                f"{names}."
            )
        diagonal = self._diagonal_operators
        if all(o.is_non_singular for o in diagonal):
            if is_non_singular is False:
                raise ValueError(
                    "A blockwise lower-triangular operator with non-singular operators on the "
                    "main diagonal is always non-singular; got is_non_singular=False."
                )
            is_non_singular = True
        elif any(o.is_non_singular is False for o in diagonal):
            if is_non_singular is True:
                raise ValueError(
                    "A blockwise lower-triangular operator with a singular operator on the main "
                    "diagonal is always singular; got is_non_singular=True."
                )
            is_non_singular = False
        if is_square is False:
            raise ValueError(
                "LinearOperatorBlockLowerTriangular must be square; got is_square=False."
            )
        for i, o in enumerate(diagonal):
            if o.is_square is False:
                raise ValueError(
                    "LinearOperatorBlockLowerTriangular: the blocks on the diagonal (the last "
                    f"block of each row) must be square, but operators[{i}][-1] has shape "
                    f"{list(o.shape)}."
                )
        super().__init__(rows[0][0].dtype, None, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name,
                         {"operators": rows, "is_non_singular": is_non_singular,
                          "is_self_adjoint": is_self_adjoint,
                          "is_positive_definite": is_positive_definite, "is_square": True,
                          "name": name})  # fmt: skip

    def _check_dimensions(self) -> None:
        ops = self._operators
        for i in range(1, len(ops)):
            for j in range(i):
                o, above, right = ops[i][j], ops[i - 1][j], ops[i][j + 1]
                if o.domain_dimension != above.domain_dimension:
                    raise ValueError(
                        f"LinearOperatorBlockLowerTriangular: operators[{i}][{j}]."
                        f"domain_dimension ({o.domain_dimension}) must be the same as "
                        f"operators[{i - 1}][{j}].domain_dimension ({above.domain_dimension})."
                    )
                if o.range_dimension != right.range_dimension:
                    raise ValueError(
                        f"LinearOperatorBlockLowerTriangular: operators[{i}][{j}]."
                        f"range_dimension ({o.range_dimension}) must be the same as "
                        f"operators[{i}][{j + 1}].range_dimension ({right.range_dimension})."
                    )

    @property
    def operators(self) -> list:
        return [list(row) for row in self._operators]

    @property
    def _diagonal_operators(self) -> list:
        return [row[-1] for row in self._operators]

    def _sizes(self) -> list[int]:
        return [o.domain_dimension for o in self._diagonal_operators]

    def _shape(self) -> tuple:
        batch = _batch(*(tuple(o.batch_shape) for row in self._operators for o in row))
        n = sum(self._sizes())
        return (*batch, n, n)

    def _to_dense(self) -> Any:
        sizes = self._sizes()
        n = sum(sizes)
        dense = _broadcast_matrices([o.to_dense() for row in self._operators for o in row])
        rows, k = [], 0
        for i, row in enumerate(self._operators):
            blocks = dense[k : k + len(row)]
            k += len(row)
            r = concat(blocks, -1) if len(blocks) > 1 else blocks[0]
            width = sum(sizes[: i + 1])
            rank = r._data.ndim
            rows.append(pad(r, [[0, 0]] * (rank - 1) + [[0, n - width]]))
        return concat(rows, -2)

    # --- blockwise matmul and substitution ---------------------------------------------------

    def _is_blockwise(self, x: Any) -> bool:
        """TF's rule: a list with one entry per block row is blockwise when its entries are
        tensors, or when it does not read as one dense matrix of the operator's size."""
        if not isinstance(x, list | tuple) or len(x) != len(self._operators):
            return False
        if all(isinstance(b, TensorLike | np.ndarray) for b in x):
            return True
        try:
            dense = _as_tensor(x)
        except (TypeError, ValueError):
            return True
        n = sum(self._sizes())
        return not (dense._data.ndim >= 2 and n in dense._data.shape[-2:])

    def _blocks_of(self, x: Any, adjoint: bool, adjoint_arg: bool, what: str) -> tuple:
        """(blocks, blockwise): the argument split into block rows (adjoint_arg applied)."""
        if self._is_blockwise(x):
            blocks = [_as_tensor(b) for b in x]
            blocks = [_adj(b) if adjoint_arg else b for b in blocks]
            sizes = self._sizes()
            for i, (b, size) in enumerate(zip(blocks, sizes)):
                if b._data.ndim < 2 or b._data.shape[-2] != size:
                    raise ValueError(
                        f"{self.name}.{what}: block {i} of the argument must have {size} rows "
                        f"(the size of diagonal block {i}), got shape {list(b.shape)}."
                    )
                if b.dtype != self._dtype:
                    raise TypeError(
                        f"{self.name}.{what}: block {i} of the argument has dtype "
                        f"{b.dtype.name} but the operator has dtype {self._dtype.name}."
                    )
            return blocks, True
        x = self._check_input(x, adjoint, adjoint_arg, what)
        x = _adj(x) if adjoint_arg else x
        return split(x, self._sizes(), axis=-2), False

    def _finish(self, parts: list, blockwise: bool) -> Any:
        return parts if blockwise else concat(_broadcast_matrices(parts), -2)

    def matmul(self, x: Any, adjoint: bool = False, adjoint_arg: bool = False,
               name: str | None = None) -> Any:  # fmt: skip
        """self @ x; `x` may be a list of blocks (then a list comes back)."""
        if isinstance(x, LinearOperator):
            return super().matmul(x, adjoint, adjoint_arg, name)
        parts, blockwise = self._blocks_of(x, adjoint, adjoint_arg, "matmul")
        ops = self._operators
        out = []
        for i in range(len(ops)):
            if adjoint:  # column i of the blocks, adjoint: rows i.. of block column i
                terms = [ops[j][i].matmul(parts[j], adjoint=True) for j in range(i, len(ops))]
            else:
                terms = [o.matmul(parts[j]) for j, o in enumerate(ops[i])]
            acc = terms[0]
            for t in terms[1:]:
                acc = add(acc, t)
            out.append(acc)
        return self._finish(out, blockwise)

    def solve(self, rhs: Any, adjoint: bool = False, adjoint_arg: bool = False,
              name: str | None = None) -> Any:  # fmt: skip
        """X with self @ X = rhs, by block substitution; `rhs` may be a list of blocks."""
        if isinstance(rhs, LinearOperator):
            return super().solve(rhs, adjoint, adjoint_arg, name)
        self._need_non_singular("solve")
        parts, blockwise = self._blocks_of(rhs, adjoint, adjoint_arg, "solve")
        ops = self._operators
        n = len(ops)
        sol: list = [None] * n
        order = reversed(range(n)) if adjoint else range(n)
        for i in order:
            y = parts[i]
            if adjoint:  # backward substitution on the block upper-triangular adjoint
                for j in range(i + 1, n):
                    y = subtract(y, ops[j][i].matmul(sol[j], adjoint=True))
            else:
                for j, o in enumerate(ops[i][:-1]):
                    y = subtract(y, o.matmul(sol[j]))
            sol[i] = ops[i][-1].solve(y, adjoint=adjoint)
        return self._finish(sol, blockwise)

    def _vec_blocks(self, x: Any) -> list | None:
        """A list of vector blocks as matrix blocks [..., n_i, 1]; None for one dense vector."""
        if not isinstance(x, list | tuple) or len(x) != len(self._operators):
            return None
        if not all(isinstance(b, TensorLike | np.ndarray) for b in x):
            try:
                dense = _as_tensor(x)
            except (TypeError, ValueError):
                dense = None
            if dense is not None and dense._data.shape[-1] == sum(self._sizes()):
                return None
        return [_as_tensor(b)[..., None] for b in x]

    def matvec(self, x: Any, adjoint: bool = False, name: str | None = None) -> Any:
        """self @ x for vectors; `x` may be a list of vector blocks (a list comes back)."""
        blocks = self._vec_blocks(x)
        if blocks is not None:
            return [b[..., 0] for b in self.matmul(blocks, adjoint=adjoint)]
        return super().matvec(x, adjoint, name)

    def solvevec(self, rhs: Any, adjoint: bool = False, name: str | None = None) -> Any:
        """x with self @ x = rhs for vectors; `rhs` may be a list of vector blocks."""
        blocks = self._vec_blocks(rhs)
        if blocks is not None:
            return [b[..., 0] for b in self.solve(blocks, adjoint=adjoint)]
        return super().solvevec(rhs, adjoint, name)

    def inverse(self, name: str | None = None) -> LinearOperator:
        """The inverse, block lower-triangular too: the diagonal blocks' inverses, and below
        them X[i][j] = -D_i^-1 (sum over j <= k < i of L[i][k] X[k][j]) as full matrices."""
        if self._is_non_singular is False:
            raise ValueError("Cannot take the Inverse: This operator represents a singular matrix.")
        from layerflow._src.ops.linear_operator import LinearOperatorFullMatrix

        ops = self._operators
        dense: list[list[Any]] = []  # dense[i][j]: block (i, j) of the inverse, j <= i
        rows = []
        for i, row in enumerate(ops):
            dense_row, op_row = [], []
            for j in range(i):
                acc = None
                for k in range(j, i):
                    term = row[k].matmul(dense[k][j])
                    acc = term if acc is None else add(acc, term)
                block = negative(row[-1].solve(acc))
                dense_row.append(block)
                op_row.append(LinearOperatorFullMatrix(block))
            diag_inv = row[-1].inverse()
            dense_row.append(diag_inv.to_dense())
            op_row.append(diag_inv)
            dense.append(dense_row)
            rows.append(op_row)
        return LinearOperatorBlockLowerTriangular(
            rows,
            is_non_singular=self._is_non_singular,
            is_self_adjoint=self._is_self_adjoint,
            is_positive_definite=self._is_positive_definite,
            is_square=True,
        )

    def _determinant(self) -> Any:
        out = self._diagonal_operators[0].determinant()
        for o in self._diagonal_operators[1:]:
            out = multiply(out, o.determinant())
        return out

    def _log_abs_determinant(self) -> Any:
        out = self._diagonal_operators[0].log_abs_determinant()
        for o in self._diagonal_operators[1:]:
            out = add(out, o.log_abs_determinant())
        return out

    def _diag_part(self) -> Any:
        parts = _broadcast_matrices([o.diag_part()[..., None] for o in self._diagonal_operators])
        return concat(parts, -2)[..., 0]

    def trace(self, name: str | None = None) -> Any:
        out = self._diagonal_operators[0].trace()
        for o in self._diagonal_operators[1:]:
            out = add(out, o.trace())
        return out


__all__ = ["LinearOperatorBlockLowerTriangular"]
