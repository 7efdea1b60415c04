"""`tf.sparse`, part 1: conversions, order, `sparse_dense_matmul`, `add`, and the ops that only
move entries (reorder, reshape, slice, retain, concat, transpose, expand_dims, split, ...).

Index bookkeeping runs on the host with NumPy (indices are int64 structure, not data); values
move with differentiable ops (`gather`, segment sums), so a tape that watches `st.values` gets
their gradients. Two primitives have their own gradients: `to_dense` (a scatter) and
`sparse_dense_matmul` (SciPy's CSR kernel, `cupyx.scipy.sparse` on a GPU, through
`backend.sparse_matrices`; the matrix is never densified).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import input_needed, op
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.ops.array_ops import concat as _concat
from layerflow._src.ops.array_ops import transpose as _dense_transpose
from layerflow._src.ops.complex_ops import conj
from layerflow._src.ops.core_ops import broadcast_to, reduce_sum
from layerflow._src.ops.gather_ops import gather, gather_nd
from layerflow._src.ops.segment_ops import unsorted_segment_sum


def _err(opname: str, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, opname, f"{opname}: {message}")


def check_sparse(value: Any, opname: str, what: str = "sp_input") -> SparseTensor:
    if not isinstance(value, SparseTensor):
        raise TypeError(
            f"tf.sparse.{opname}: {what} must be a SparseTensor, got {type(value).__name__}. "
            "Build one with tf.SparseTensor(indices, values, dense_shape) or "
            "tf.sparse.from_dense(x)."
        )
    return value


def as_values(value: Any) -> Tensor:
    return value if isinstance(value, TensorLike) else convert_to_tensor(value)


def index_tensor(indices: np.ndarray, like: Tensor) -> Tensor:
    """A host int64 array as a tensor on the device of `like`."""
    arr = np.ascontiguousarray(indices, dtype=np.int64)
    return Tensor(backend.to_device(arr, like._device), like._device)


def make(indices: np.ndarray, values: Tensor, shape: Any) -> SparseTensor:
    shape_arr = np.asarray(list(shape), dtype=np.int64)
    return SparseTensor(
        index_tensor(indices.reshape(indices.shape[0], shape_arr.size), values),
        values,
        index_tensor(shape_arr, values),
    )


def take(values: Tensor, positions: np.ndarray) -> Tensor:
    """values[positions], differentiably; `values` itself when nothing moves."""
    n = values.shape[0]
    if positions.shape[0] == n and np.array_equal(positions, np.arange(n)):
        return values
    return gather(values, index_tensor(positions, values))


def row_major_order(indices: np.ndarray) -> np.ndarray:
    """The stable permutation that sorts indices lexicographically (row-major)."""
    if indices.shape[0] == 0 or indices.shape[1] == 0:
        return np.arange(indices.shape[0])
    return np.lexsort(indices.T[::-1])


def check_canonical(indices: np.ndarray, shape: tuple[int, ...], opname: str) -> None:
    """TF's checks for ops that need canonical order: bounds, then order, then repeats."""
    for i, idx in enumerate(indices):
        if np.any(idx < 0) or np.any(idx >= np.asarray(shape)):
            raise _err(
                opname,
                f"indices[{i}] = [{','.join(map(str, idx))}] is out of bounds: need "
                f"0 <= index < [{','.join(map(str, shape))}]",
            )
    if indices.shape[0] < 2:
        return
    a, b = indices[:-1], indices[1:]
    diff = b - a
    nz = diff != 0
    first = np.where(nz.any(axis=1), nz.argmax(axis=1), 0)
    lead = diff[np.arange(diff.shape[0]), first]
    bad = np.flatnonzero(lead <= 0)
    if bad.size:
        i = int(bad[0]) + 1
        text = ",".join(map(str, indices[i]))
        if lead[i - 1] == 0:
            raise _err(opname, f"indices[{i}] = [{text}] is repeated")
        raise _err(
            opname,
            f"indices[{i}] = [{text}] is out of order. Many sparse ops require sorted indices. "
            "Use `tf.sparse.reorder` to create a correctly ordered copy.",
        )


# --- conversions ----------------------------------------------------------------------------------


@op("sparse_to_dense", 2)
def _to_dense(xp: Any, values: Any, default: Any, indices: Any, shape: tuple[int, ...]) -> Any:
    out = xp.full(shape, default, dtype=values.dtype)
    if indices.shape[0] and indices.shape[1] == 0:
        out[()] = values[-1]  # a scalar: the last entry wins
    elif indices.shape[0]:
        out[tuple(xp.asarray(indices).T)] = values
    return out


@_to_dense.grad
def _(dy: Any, out: Any, values: Any, default: Any, indices: Any, shape: Any) -> Any:
    idx = index_tensor(indices, dy)
    at = gather_nd(dy, idx) if indices.shape[1] else broadcast_to(dy, values.shape)
    d_default = reduce_sum(dy) - reduce_sum(at) if input_needed(1) else None
    return at, d_default


def to_dense(sp_input: Any, default_value: Any = None, validate_indices: bool = True,
             name: str | None = None) -> Tensor:  # fmt: skip
    """The dense tensor of `sp_input`, `default_value` (0) where there is no entry.

    >>> import layerflow as tf
    >>> tf.sparse.to_dense(tf.SparseTensor([[1]], [5], [3])).numpy()
    array([0, 5, 0], dtype=int32)
    """
    sp = check_sparse(sp_input, "to_dense")
    indices, shape = sp.host_indices(), sp.host_shape()
    if validate_indices:
        check_canonical(indices, shape, "SparseToDense")
    else:
        _check_bounds(indices, shape, "SparseToDense")
    default = as_values(0 if default_value is None else default_value)
    if default.dtype != sp.dtype:
        default = Tensor(default._data.astype(sp.dtype.np), default._device)
    return _to_dense(sp.values, default, indices, shape)


def _check_bounds(indices: np.ndarray, shape: tuple[int, ...], opname: str) -> None:
    if indices.size and (np.any(indices < 0) or np.any(indices >= np.asarray(shape))):
        row = int(np.flatnonzero(np.any((indices < 0) | (indices >= np.asarray(shape)), 1))[0])
        raise _err(
            opname,
            f"indices[{row}] = {indices[row].tolist()} is out of bounds: need 0 <= index < "
            f"{list(shape)}",
        )


def from_dense(tensor: Any, name: str | None = None) -> SparseTensor:
    """A SparseTensor of the non-zero entries of `tensor`, in row-major order.

    >>> import layerflow as tf
    >>> tf.sparse.from_dense([0, 3, 0]).indices.numpy().tolist()
    [[1]]
    """
    t = as_values(tensor)
    host = backend.to_host(t._data)
    indices = np.argwhere(host != 0).astype(np.int64)
    values = gather_nd(t, index_tensor(indices, t)) if host.ndim else t[None]
    return make(indices, values, host.shape)


def reorder(sp_input: Any, name: str | None = None) -> SparseTensor:
    """The same SparseTensor with its entries in canonical row-major order."""
    sp = check_sparse(sp_input, "reorder")
    indices = sp.host_indices()
    order = row_major_order(indices)
    if np.array_equal(order, np.arange(order.size)):
        return sp
    return SparseTensor(index_tensor(indices[order], sp.values), take(sp.values, order),
                        sp.dense_shape)  # fmt: skip


# --- sparse x dense matmul ------------------------------------------------------------------------


class _Rows:
    """The row structure of a matrix's indices, computed once per SparseTensor: the indices,
    and (when the rows are in order) CSR row pointers and column indices, int32 where they
    fit (SciPy's kernels run on those; int64 ones cost about 3x)."""

    __slots__ = ("indices", "indptr", "cols")

    def __init__(self, indices: np.ndarray, shape: tuple[int, int]) -> None:
        self.indices = indices
        self.indptr = self.cols = None
        rows = indices[:, 0]
        if rows.size < 2 or bool((rows[1:] >= rows[:-1]).all()):
            itype = np.int32 if max(shape[1], rows.size) < 2**31 - 1 else np.int64
            counts = np.bincount(rows, minlength=shape[0]) if rows.size else np.zeros(shape[0])
            self.indptr = np.zeros(shape[0] + 1, itype)
            np.cumsum(counts, out=self.indptr[1:])
            self.cols = indices[:, 1].astype(itype)


def _csr(xp: Any, values: Any, rows: _Rows, shape: tuple[int, int]) -> Any:
    sparse = backend.sparse_matrices(xp)
    if rows.indptr is not None:
        # Rows in order (canonical order, the common case): CSR directly, without COO's sort.
        # Repeated entries stay separate and add up in the product, as in TF's kernel.
        structure = (values, xp.asarray(rows.cols), xp.asarray(rows.indptr))
        return sparse.csr_matrix(structure, shape=shape)
    # Any order: COO -> CSR sums the duplicates.
    r, c = xp.asarray(rows.indices[:, 0]), xp.asarray(rows.indices[:, 1])
    return sparse.coo_matrix((values, (r, c)), shape=shape).tocsr()


@op("sparse_tensor_dense_mat_mul", 2)
def _spmm(xp: Any, values: Any, b: Any, rows: _Rows, shape: tuple[int, int],
          adjoint_a: bool, adjoint_b: bool) -> Any:  # fmt: skip
    a = _csr(xp, values, rows, shape)
    if adjoint_a:
        a = a.conj().T if values.dtype.kind == "c" else a.T
    if adjoint_b:
        b = b.conj().T if b.dtype.kind == "c" else b.T
    out = a @ b
    return xp.asarray(out).astype(values.dtype, copy=False)


@_spmm.grad
def _(dy: Any, out: Any, values: Any, b: Any, rows_: _Rows, shape: Any, adjoint_a: bool,
      adjoint_b: bool) -> Any:  # fmt: skip
    indices = rows_.indices
    bm = _dense_transpose(conj(b)) if adjoint_b else b  # op(B), the right operand as used
    d_values = d_b = None
    if input_needed(0):
        rows, cols = index_tensor(indices[:, 0], dy), index_tensor(indices[:, 1], dy)
        if adjoint_a:  # dA = op(B) dy^H
            d_values = reduce_sum(gather(bm, rows) * conj(gather(dy, cols)), axis=1)
        else:  # dA = dy op(B)^H
            d_values = reduce_sum(gather(dy, rows) * conj(gather(bm, cols)), axis=1)
    if input_needed(1):
        d_bm = _spmm(values, dy, rows_, shape, not adjoint_a, False)  # op(A)^H dy
        d_b = _dense_transpose(conj(d_bm)) if adjoint_b else d_bm
    return d_values, d_b


def sparse_dense_matmul(sp_a: Any, b: Any, adjoint_a: bool = False, adjoint_b: bool = False,
                        name: str | None = None) -> Tensor:  # fmt: skip
    """`op(sp_a) @ op(b)` for a rank-2 SparseTensor and a dense matrix (either may be the
    sparse one), without densifying; `op` is the adjoint when asked. Duplicates add up.

    >>> import layerflow as tf
    >>> a = tf.SparseTensor([[0, 1]], [2.0], [2, 2])
    >>> tf.sparse.sparse_dense_matmul(a, tf.ones([2, 3])).numpy().tolist()
    [[2.0, 2.0, 2.0], [0.0, 0.0, 0.0]]
    """
    if not isinstance(sp_a, SparseTensor) and isinstance(b, SparseTensor):
        # D S = (S^T D^T)^T, with adjoints for complex operands.
        dense = as_values(sp_a)
        out = sparse_dense_matmul(b, dense, adjoint_a=not adjoint_b, adjoint_b=not adjoint_a)
        return _dense_transpose(conj(out)) if dense.dtype.is_complex else _dense_transpose(out)
    sp = check_sparse(sp_a, "sparse_dense_matmul", "sp_a")
    dense = as_values(b)
    shape = sp.host_shape()
    opname = "SparseTensorDenseMatMul"
    if len(shape) != 2 or dense.shape.rank != 2:
        raise ValueError(
            f"tf.sparse.sparse_dense_matmul: both operands must be matrices, got sp_a of shape "
            f"{list(shape)} and b of shape {dense.shape}."
        )
    if dense.dtype != sp.dtype:
        raise _err(
            opname,
            f"sp_a has dtype {sp.dtype.name} but b has dtype {dense.dtype.name}; cast one "
            "with tf.cast.",
        )
    m, k = shape
    memo = sp._memo if sp._memo is not None else {}
    rows = memo.get("rows")
    if rows is None:
        indices = sp.host_indices()
        _check_matrix_bounds(indices, m, k, opname)
        rows = _Rows(indices, (m, k))
        memo["rows"] = rows
        sp._memo = memo
    inner_a = m if adjoint_a else k
    inner_b = dense.shape[1] if adjoint_b else dense.shape[0]
    if inner_a != inner_b:
        raise _err(
            opname,
            f"Cannot multiply A and B because inner dimension does not match: {inner_a} vs. "
            f"{inner_b}. Did you forget a transpose? Dimensions of A: {list(shape)}. "
            f"Dimensions of B: {dense.shape.as_list()}",
        )
    return _spmm(sp.values, dense, rows, (m, k), bool(adjoint_a), bool(adjoint_b))


def _check_matrix_bounds(indices: np.ndarray, m: int, k: int, opname: str) -> None:
    for col, bound, letter in ((0, m, "m"), (1, k, "k")):
        column = indices[:, col]
        if not column.size or (column.min() >= 0 and column.max() < bound):
            continue
        bad = int(np.flatnonzero((column < 0) | (column >= bound))[0])
        raise _err(
            opname,
            f"{letter} ({int(column[bad])}) from index[{bad},{col}] out of bounds (>={bound})",
        )


# --- add ------------------------------------------------------------------------------------------


def merge_positions(parts: list[np.ndarray], shape: tuple[int, ...]) -> tuple[Any, Any]:
    """The sorted union of the rows of several index arrays, and each input row's position."""
    stacked = np.concatenate(parts, axis=0) if parts else np.zeros((0, len(shape)), np.int64)
    if stacked.shape[0] == 0:
        return stacked.reshape(0, len(shape)), np.zeros(0, np.int64)
    keys = np.ravel_multi_index(tuple(stacked.T), shape) if shape else np.zeros(len(stacked))
    unique, inverse = np.unique(keys, return_inverse=True)
    union = np.stack(np.unravel_index(unique, shape), axis=1) if shape else stacked[:1]
    return union.astype(np.int64).reshape(-1, len(shape)), inverse.reshape(-1)


def _same_shape(a: SparseTensor, b: SparseTensor, opname: str) -> tuple[int, ...]:
    sa, sb = a.host_shape(), b.host_shape()
    if len(sa) != len(sb):
        raise _err(opname, f"Operands do not have the same ranks; got shapes: {sa} and {sb}")
    for d, (x, y) in enumerate(zip(sa, sb)):
        if x != y:
            raise _err(opname, f"Operands' shapes do not match: got {x} and {y} for dimension {d}")
    return sa


def add(a: Any, b: Any, threshold: Any = 0) -> Any:
    """Sparse + sparse (a SparseTensor, dropping sums with magnitude below `threshold`) or
    sparse + dense (a dense Tensor).

    >>> import layerflow as tf
    >>> s = tf.sparse.add(tf.SparseTensor([[0]], [1.0], [2]), tf.SparseTensor([[0]], [2.0], [2]))
    >>> s.values.numpy().tolist()
    [3.0]
    """
    a_sp, b_sp = isinstance(a, SparseTensor), isinstance(b, SparseTensor)
    if not a_sp and not b_sp:
        return as_values(a) + as_values(b)
    if a_sp != b_sp:
        sp, dense = (a, as_values(b)) if a_sp else (b, as_values(a))
        return dense + to_dense(sp, validate_indices=False)
    if a.dtype != b.dtype:
        raise TypeError(
            f"tf.sparse.add: a has dtype {a.dtype.name} but b has dtype {b.dtype.name}; cast "
            "one with tf.cast."
        )
    shape = _same_shape(a, b, "SparseAdd")
    union, inverse = merge_positions([a.host_indices(), b.host_indices()], shape)
    both = _concat([a.values, b.values], 0)
    summed = unsorted_segment_sum(both, index_tensor(inverse, both), union.shape[0])
    thr = float(backend.to_host(as_values(threshold)._data))
    if thr < 0:
        raise _err("SparseAdd", f"threshold must be non-negative, got {thr}")
    if thr > 0:
        keep = np.flatnonzero(np.abs(backend.to_host(summed._data)) >= thr)
        return make(union[keep], take(summed, keep), shape)
    return make(union, summed, shape)


# --- ops that only move entries -------------------------------------------------------------------


def reshape(sp_input: Any, shape: Any, name: str | None = None) -> SparseTensor:
    """The same entries in a tensor of `shape` (row-major, one dimension may be -1)."""
    sp = check_sparse(sp_input, "reshape")
    old = sp.host_shape()
    new = [int(d) for d in np.asarray(backend.to_host(as_values(shape)._data)).reshape(-1)]
    total = int(np.prod(old, dtype=np.int64))
    unknown = [i for i, d in enumerate(new) if d == -1]
    if len(unknown) > 1:
        raise _err("SparseReshape", f"only one output dimension may be -1, not both {unknown}")
    known = int(np.prod([d for d in new if d != -1], dtype=np.int64))
    if unknown:
        if known == 0 or total % known:
            raise _err(
                "SparseReshape",
                f"Input to reshape is a SparseTensor with {total} dense values, but the "
                f"requested shape requires a multiple of {known}. input_shape={list(old)} "
                f"output_shape={new}",
            )
        new[unknown[0]] = total // known
    elif known != total:
        raise _err(
            "SparseReshape",
            f"Input to reshape is a tensor with {total} dense values, but the requested shape "
            f"has {known}. input_shape={list(old)} output_shape={new}",
        )
    indices = sp.host_indices()
    if indices.shape[0] and old:
        flat = np.ravel_multi_index(tuple(indices.T), old)
    else:
        flat = np.zeros(indices.shape[0], np.int64)
    out = np.stack(np.unravel_index(flat, new), axis=1) if new else flat.reshape(-1, 0)
    return make(out.astype(np.int64).reshape(-1, len(new)), sp.values, new)


def slice(sp_input: Any, start: Any, size: Any, name: str | None = None) -> SparseTensor:  # noqa: A001
    """The entries inside the box `[start, start + size)`, shifted to start at 0."""
    sp = check_sparse(sp_input, "slice")
    shape = np.asarray(sp.host_shape(), np.int64)
    start = np.asarray(backend.to_host(as_values(start)._data), np.int64).reshape(-1)
    size = np.asarray(backend.to_host(as_values(size)._data), np.int64).reshape(-1)
    if start.size != shape.size or size.size != shape.size:
        raise _err(
            "SparseSlice",
            f"start and size must have one entry per dimension ({shape.size}), got "
            f"{start.tolist()} and {size.tolist()}",
        )
    if np.any(start < 0) or np.any(size < 0):
        raise _err("SparseSlice", f"start {start.tolist()} and size {size.tolist()} must be >= 0")
    end = np.minimum(start + size, shape)
    indices = sp.host_indices()
    inside = np.all((indices >= start) & (indices < end), axis=1)
    keep = np.flatnonzero(inside)
    return make(indices[keep] - start, take(sp.values, keep), np.maximum(end - start, 0))


def retain(sp_input: Any, to_retain: Any) -> SparseTensor:
    """The entries where the boolean vector `to_retain` is True."""
    sp = check_sparse(sp_input, "retain")
    mask = np.asarray(backend.to_host(as_values(to_retain)._data))
    n = sp.values.shape[0]
    if mask.dtype != np.bool_ or mask.shape != (n,):
        raise ValueError(
            f"tf.sparse.retain: to_retain must be a bool vector of length {n} (one per value), "
            f"got dtype {mask.dtype} and shape {list(mask.shape)}."
        )
    keep = np.flatnonzero(mask)
    return make(sp.host_indices()[keep], take(sp.values, keep), sp.host_shape())


def concat(axis: int, sp_inputs: Any, expand_nonconcat_dims: bool = False,
           name: str | None = None) -> SparseTensor:  # fmt: skip
    """SparseTensors joined along `axis`; with `expand_nonconcat_dims` the other dimensions
    grow to the largest input's instead of having to agree."""
    sps = [check_sparse(s, "concat", "sp_inputs") for s in sp_inputs]
    if not sps:
        raise ValueError("tf.sparse.concat: sp_inputs must hold at least one SparseTensor.")
    shapes = [np.asarray(s.host_shape(), np.int64) for s in sps]
    rank = shapes[0].size
    if any(s.size != rank for s in shapes):
        raise _err("SparseConcat", f"all inputs must have rank {rank}, got shapes "
                   f"{[s.tolist() for s in shapes]}")  # fmt: skip
    ax = int(axis) + rank if int(axis) < 0 else int(axis)
    if not 0 <= ax < rank:
        raise _err("SparseConcat", f"axis {axis} is out of range for rank {rank}")
    out_shape = np.max(np.stack(shapes), axis=0)
    if not expand_nonconcat_dims:
        for i, s in enumerate(shapes):
            other = [d for d in range(rank) if d != ax and s[d] != shapes[0][d]]
            if other:
                d = other[0]
                raise _err(
                    "SparseConcat",
                    f"Input shapes must match: expected {shapes[0][d]} for dimension {d} but "
                    f"got {s[d]} at position {i}",
                )
    parts, offset = [], 0
    for s, shape in zip(sps, shapes):
        idx = s.host_indices().copy()
        idx[:, ax] += offset
        offset += int(shape[ax])
        parts.append(idx)
    out_shape[ax] = offset
    indices = np.concatenate(parts, axis=0)
    values = _concat([s.values for s in sps], 0)
    order = row_major_order(indices)
    return make(indices[order], take(values, order), out_shape)


def transpose(sp_input: Any, perm: Any = None, name: str | None = None) -> SparseTensor:
    """The SparseTensor with dimensions permuted (reversed by default), reordered."""
    sp = check_sparse(sp_input, "transpose")
    shape = sp.host_shape()
    rank = len(shape)
    p = list(range(rank))[::-1] if perm is None else [int(d) for d in np.asarray(perm).ravel()]
    if sorted(p) != list(range(rank)):
        raise _err("SparseTranspose", f"perm {p} is not a permutation of 0..{rank - 1}")
    indices = sp.host_indices()[:, p]
    order = row_major_order(indices)
    return make(indices[order], take(sp.values, order), [shape[d] for d in p])


def expand_dims(sp_input: Any, axis: Any = None, name: str | None = None) -> SparseTensor:
    """The SparseTensor with a new dimension of size 1 at `axis` (default 0)."""
    sp = check_sparse(sp_input, "expand_dims")
    shape = list(sp.host_shape())
    ax = 0 if axis is None else int(axis)
    if not -len(shape) - 1 <= ax <= len(shape):
        raise _err(
            "SparseExpandDims",
            f"axis {ax} is out of range [{-len(shape) - 1}, {len(shape)}] for rank {len(shape)}",
        )
    ax = ax + len(shape) + 1 if ax < 0 else ax
    indices = np.insert(sp.host_indices(), ax, 0, axis=1)
    shape.insert(ax, 1)
    return make(indices, sp.values, shape)


def split(sp_input: Any = None, num_split: Any = None, axis: Any = None,
          name: str | None = None) -> list[SparseTensor]:  # fmt: skip
    """`num_split` SparseTensors along `axis`; the first `dim % num_split` are one larger."""
    sp = check_sparse(sp_input, "split")
    if num_split is None or axis is None:
        raise ValueError("tf.sparse.split: num_split and axis are required.")
    shape = sp.host_shape()
    ax = int(axis) + len(shape) if int(axis) < 0 else int(axis)
    n = int(num_split)
    if not 0 <= ax < len(shape) or n < 1 or n > max(shape[ax], 1):
        raise _err(
            "SparseSplit",
            f"need 0 <= axis < {len(shape)} and 1 <= num_split <= {shape[ax]}, got axis "
            f"{axis} and num_split {n}",
        )
    base, extra = divmod(shape[ax], n)
    out, begin = [], 0
    for i in range(n):
        width = base + (1 if i < extra else 0)
        start = [0] * len(shape)
        start[ax] = begin
        size = list(shape)
        size[ax] = width
        out.append(slice(sp, start, size))
        begin += width
    return out


def eye(num_rows: Any, num_columns: Any = None, dtype: Any = "float32",
        name: str | None = None) -> SparseTensor:  # fmt: skip
    """A sparse identity matrix of shape [num_rows, num_columns]."""
    rows = int(num_rows)
    cols = rows if num_columns is None else int(num_columns)
    n = min(rows, cols)
    dt = dtypes.as_dtype(dtype)
    diag = np.arange(n, dtype=np.int64)
    return make(np.stack([diag, diag], axis=1), as_values(np.ones(n, dt.np)), [rows, cols])


def reset_shape(sp_input: Any, new_shape: Any = None) -> SparseTensor:
    """The same entries with dense_shape `new_shape` (at least the current one), or the
    tightest shape that holds them when None."""
    sp = check_sparse(sp_input, "reset_shape")
    indices = sp.host_indices()
    if new_shape is None:
        tight = indices.max(axis=0) + 1 if indices.shape[0] else np.zeros(indices.shape[1])
        return make(indices, sp.values, tight.astype(np.int64))
    new = np.asarray(backend.to_host(as_values(new_shape)._data), np.int64).reshape(-1)
    old = np.asarray(sp.host_shape(), np.int64)
    if new.size != old.size:
        raise ValueError(
            f"tf.sparse.reset_shape: new_shape has rank {new.size} but sp_input has rank "
            f"{old.size}."
        )
    if np.any(new < old):
        raise ValueError(
            "Requested new_shape should have dimension sizes >= sp_input.shape.  Found "
            f"new_shape ({new}), sp_input.shape ({old})."
        )
    return make(indices, sp.values, new)


def map_values(op: Any, *args: Any, **kwargs: Any) -> SparseTensor:
    """`op` applied to the values of the SparseTensor arguments (which must share indices)."""
    found: list[SparseTensor] = [
        a for a in (*args, *kwargs.values()) if isinstance(a, SparseTensor)
    ]
    if not found:
        raise ValueError("tf.sparse.map_values: no SparseTensor among the arguments.")
    first = found[0]
    idx, shape = first.host_indices(), first.host_shape()
    for other in found[1:]:
        if other.host_shape() != shape or not np.array_equal(other.host_indices(), idx):
            raise _err("map_values", "all SparseTensor arguments must have the same indices")

    def unwrap(v: Any) -> Any:
        return v.values if isinstance(v, SparseTensor) else v

    out = op(*(unwrap(a) for a in args), **{k: unwrap(v) for k, v in kwargs.items()})
    return SparseTensor(first.indices, as_values(out), first.dense_shape)


def _sparse_dense_cwise(sp: SparseTensor, dense: Any, fn: Any) -> SparseTensor:
    if isinstance(dense, SparseTensor):
        raise TypeError(
            "SparseTensor * SparseTensor is not defined (as in TF); densify one operand with "
            "tf.sparse.to_dense, or combine them with tf.sparse.add / tf.sparse.maximum."
        )
    d = dense if isinstance(dense, TensorLike) else convert_to_tensor(dense, dtype=sp.dtype)
    full = broadcast_to(d, sp.host_shape())
    picked = gather_nd(full, sp.indices)
    return SparseTensor(sp.indices, fn(sp.values, picked), sp.dense_shape)


SparseTensor.__mul__ = lambda self, other: _sparse_dense_cwise(self, other, lambda a, b: a * b)
SparseTensor.__truediv__ = lambda self, other: _sparse_dense_cwise(self, other, lambda a, b: a / b)
SparseTensor.__div__ = SparseTensor.__truediv__
