"""`tf.ragged` functions: `constant`, `range`, `boolean_mask`, `map_flat_values`,
`stack_dynamic_partitions`, `cross`/`cross_hashed` and the row-partition helpers.

>>> import layerflow as tf
>>> tf.ragged.constant([[1, 2], [3]])
<tf.RaggedTensor [[1, 2], [3]]>
"""

from __future__ import annotations

import builtins
import collections
import itertools
from typing import Any

import numpy as np

from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops import array_ops, core_ops, fingerprint, gather_ops
from layerflow._src.ops.ragged.ragged_getitem import gather_rows
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor, _host


def _scalar_depths(x: Any, depth: int, found: set, lists: list) -> None:
    if isinstance(x, list | tuple):
        lists[0] = max(lists[0], depth + 1)
        for v in x:
            _scalar_depths(v, depth + 1, found, lists)
    else:
        found.add(depth)


def constant(pylist: Any, dtype: Any = None, ragged_rank: Any = None, inner_shape: Any = None,
             name: Any = None, row_splits_dtype: Any = "int64") -> Any:  # fmt: skip
    """A RaggedTensor from nested Python lists (rows may differ in length at every level).

    >>> import layerflow as tf
    >>> tf.ragged.constant([[[1, 2], [3]], [], [[4, 5, 6]]]).shape
    TensorShape([3, None, None])
    """
    found: set = set()
    lists = [0]
    _scalar_depths(pylist, 0, found, lists)
    if len(found) > 1:
        raise ValueError(
            f"tf.ragged.constant: all scalar values must have the same nesting depth, got "
            f"depths {sorted(found)} in {pylist!r}."
        )
    inner = None if inner_shape is None else tuple(int(d) for d in inner_shape)
    scalar_depth = found.pop() if found else None
    depth = scalar_depth if scalar_depth is not None else lists[0] + len(inner or ())
    if ragged_rank is None:
        rank = max(0, depth - 1 - len(inner or ()))
    else:
        rank = int(ragged_rank)
    if rank < 0 or (scalar_depth is not None and rank >= max(depth, 1)):
        raise ValueError(
            f"tf.ragged.constant: ragged_rank {rank} must be in [0, {max(depth - 1, 0)}) for "
            f"values of nesting depth {depth}."
        )
    if rank == 0:
        return convert_to_tensor(pylist, dtype=dtype) if dtype else _dense(pylist, inner)
    splits_dt = dtypes.as_dtype(row_splits_dtype).np
    levels = []
    items: list = list(pylist)
    for _ in builtins.range(rank):  # `range` below is tf.ragged.range
        lengths = [len(v) for v in items]
        levels.append(np.concatenate([[0], np.cumsum(lengths)]).astype(splits_dt))
        items = [x for v in items for x in v]
    if items:
        flat = convert_to_tensor(items, dtype=dtype)
        if inner is not None and tuple(flat.shape.as_list()[1:]) != inner:
            raise ValueError(
                f"tf.ragged.constant: inner_shape {inner} does not match the values' inner "
                f"shape {tuple(flat.shape.as_list()[1:])}."
            )
    else:
        dt = dtypes.as_dtype(dtype or "float32")
        tail = inner if inner is not None else ()
        flat = convert_to_tensor(np.zeros((0, *tail), dtype=dt.np))
    return RaggedTensor.from_nested_row_splits(flat, levels, validate=False)


def _dense(pylist: Any, inner: Any) -> Any:
    if isinstance(pylist, list | tuple) and not pylist:
        return convert_to_tensor(np.zeros((0, *(inner or ())), np.float32))
    return convert_to_tensor(pylist)


def range(starts: Any, limits: Any = None, deltas: Any = 1, dtype: Any = None,  # noqa: A001
          name: Any = None, row_splits_dtype: Any = "int64") -> RaggedTensor:  # fmt: skip
    """Row `i` is `tf.range(starts[i], limits[i], deltas[i])` (scalars broadcast)."""
    if limits is None:
        starts, limits = 0, starts
    s, lim, d = (_host(convert_to_tensor(v, dtype=dtype)) for v in (starts, limits, deltas))
    s, lim, d = np.broadcast_arrays(np.atleast_1d(s), np.atleast_1d(lim), np.atleast_1d(d))
    if np.any(d == 0):
        raise ValueError("tf.ragged.range: deltas must not be zero.")
    rows = [np.arange(a, b, c, dtype=s.dtype) for a, b, c in zip(s, lim, d, strict=True)]
    lengths = np.asarray([len(r) for r in rows], dtype=dtypes.as_dtype(row_splits_dtype).np)
    flat = np.concatenate(rows) if rows else np.zeros(0, s.dtype)
    return RaggedTensor.from_row_lengths(convert_to_tensor(flat.astype(s.dtype)), lengths)


def _same_partition(a: RaggedTensor, b: RaggedTensor) -> bool:
    sa, sb = a.nested_row_splits, b.nested_row_splits
    if len(sa) != len(sb):
        return False
    return all(x is y or np.array_equal(_host(x), _host(y)) for x, y in zip(sa, sb, strict=True))


def map_flat_values(op: Any, *args: Any, **kwargs: Any) -> Any:
    """`op` applied to the flat values of the ragged arguments (which must share row splits).

    >>> import layerflow as tf
    >>> tf.ragged.map_flat_values(tf.ones_like, tf.ragged.constant([[1, 2], [3]]))
    <tf.RaggedTensor [[1, 1], [1]]>
    """
    found: list = []

    def flat(v: Any) -> Any:
        if isinstance(v, RaggedTensor):
            found.append(v)
            return v.flat_values
        if isinstance(v, list | tuple):
            return type(v)(flat(x) for x in v)
        if isinstance(v, dict):
            return {k: flat(x) for k, x in v.items()}
        return v

    new_args = flat(list(args))
    new_kwargs = flat(kwargs)
    if not found:
        return op(*args, **kwargs)
    if any(not _same_partition(found[0], r) for r in found[1:]):
        raise ValueError(
            "tf.ragged.map_flat_values: all ragged inputs must have the same row splits "
            "(the same nested row partitions)."
        )
    out = op(*new_args, **new_kwargs)
    n = int(found[0].flat_values.shape[0])
    if not isinstance(out, TensorLike) or out.shape.rank == 0 or int(out.shape[0]) != n:
        raise ValueError(
            f"tf.ragged.map_flat_values: op must return a tensor with {n} rows (one per flat "
            f"value), got {getattr(out, 'shape', out)!r}."
        )
    return found[0].with_flat_values(out)


def row_splits_to_segment_ids(splits: Any, name: Any = None, out_type: Any = None) -> Any:
    s = _host(convert_to_tensor(splits, dtype_hint="int64"))
    dt = s.dtype if out_type is None else dtypes.as_dtype(out_type).np
    if s.ndim != 1 or s.size == 0:
        raise ValueError("row_splits_to_segment_ids: splits must be a non-empty 1-D tensor.")
    return convert_to_tensor(np.repeat(np.arange(len(s) - 1), np.diff(s)).astype(dt))


def segment_ids_to_row_splits(segment_ids: Any, num_segments: Any = None, out_type: Any = None,
                              name: Any = None) -> Any:  # fmt: skip
    ids = _host(convert_to_tensor(segment_ids, dtype_hint="int64"))
    if ids.ndim != 1:
        raise ValueError(f"segment_ids_to_row_splits: segment_ids must be 1-D, got {ids.shape}.")
    n = (int(ids.max()) + 1 if ids.size else 0) if num_segments is None else int(num_segments)
    counts = np.bincount(ids, minlength=n)
    dt = np.int64 if out_type is None else dtypes.as_dtype(out_type).np
    return convert_to_tensor(np.concatenate([[0], np.cumsum(counts)]).astype(dt))


# --- masks and partitions ------------------------------------------------------------------------


def _as_ragged(x: Any) -> RaggedTensor:
    if isinstance(x, RaggedTensor):
        return x
    t = x if isinstance(x, TensorLike) else convert_to_tensor(x)
    return RaggedTensor.from_tensor(t)


def boolean_mask(data: Any, mask: Any, name: Any = None) -> Any:
    """Keep the entries of `data` where `mask` (a prefix of its shape, maybe ragged) is true.

    >>> import layerflow as tf
    >>> tf.ragged.boolean_mask([[1, 2, 3], [4, 5, 6]], [[True, False, True], [False, False, True]])
    <tf.RaggedTensor [[1, 3], [6]]>
    """
    if not isinstance(mask, RaggedTensor):
        mask = mask if isinstance(mask, TensorLike) else convert_to_tensor(mask, dtype="bool")
        if mask.dtype != dtypes.bool_:
            raise TypeError(f"tf.ragged.boolean_mask: mask must be bool, got {mask.dtype.name}.")
        if mask.shape.rank == 1:
            keep = np.flatnonzero(_host(mask))
            if not isinstance(data, RaggedTensor):
                data = data if isinstance(data, TensorLike) else convert_to_tensor(data)
            n = data.nrows_int() if isinstance(data, RaggedTensor) else int(data.shape[0])
            if n != int(mask.shape[0]):
                raise ValueError(
                    f"tf.ragged.boolean_mask: mask has {int(mask.shape[0])} entries but data "
                    f"has {n} rows."
                )
            return gather_rows(data, keep)
    elif mask.dtype != dtypes.bool_:
        raise TypeError(f"tf.ragged.boolean_mask: mask must be bool, got {mask.dtype.name}.")
    data_r, mask_r = _as_ragged(data), _as_ragged(mask)
    if not np.array_equal(_host(data_r.row_splits), _host(mask_r.row_splits)):
        raise ValueError(
            "tf.ragged.boolean_mask: data and mask must have the same row lengths, got "
            f"{np.diff(_host(data_r.row_splits)).tolist()} and "
            f"{np.diff(_host(mask_r.row_splits)).tolist()}."
        )
    inner = boolean_mask(data_r.values, mask_r.values)
    if isinstance(mask_r.values, RaggedTensor) or mask_r.values.shape.rank > 1:
        lengths = np.diff(_host(mask_r.row_splits))
    else:
        ids = np.repeat(np.arange(mask_r.nrows_int()), np.diff(_host(mask_r.row_splits)))
        lengths = np.bincount(ids[_host(mask_r.values)], minlength=mask_r.nrows_int())
    return RaggedTensor.from_row_lengths(
        inner, lengths.astype(data_r.row_splits_dtype.np), validate=False
    )


def stack_dynamic_partitions(data: Any, partitions: Any, num_partitions: Any,
                             name: Any = None) -> RaggedTensor:  # fmt: skip
    """Row `p` holds the rows of `data` whose partition is `p`, in their order.

    >>> import layerflow as tf
    >>> tf.ragged.stack_dynamic_partitions(['a', 'b', 'c'], [1, 0, 1], 2)
    <tf.RaggedTensor [[b'b'], [b'a', b'c']]>
    """
    if not isinstance(data, RaggedTensor | TensorLike):
        data = convert_to_tensor(data)
    parts = _host(convert_to_tensor(partitions, dtype_hint="int32")).reshape(-1)
    n = int(num_partitions)
    if parts.size and (parts.min() < 0 or parts.max() >= n):
        raise ValueError(
            f"tf.ragged.stack_dynamic_partitions: partitions must be in [0, {n}), got "
            f"{parts.tolist()}."
        )
    order = np.argsort(parts, kind="stable")
    rows = gather_rows(data, order)
    return RaggedTensor.from_row_lengths(rows, np.bincount(parts, minlength=n).astype(np.int64))


# --- feature crosses -----------------------------------------------------------------------------


def _cross_rows(inputs: Any) -> tuple[list, int]:
    cols = []
    for x in inputs:
        if isinstance(x, RaggedTensor):
            if x.ragged_rank != 1 or x.flat_values.shape.rank != 1:
                raise ValueError("tf.ragged.cross: ragged inputs must be 2-D (ragged_rank 1).")
            cols.append(x.to_list())
        else:
            t = x if isinstance(x, TensorLike) else convert_to_tensor(x)
            if t.shape.rank != 2:
                raise ValueError(f"tf.ragged.cross: inputs must be 2-D, got shape {t.shape}.")
            cols.append(_host(t).tolist())
    nrows = {len(c) for c in cols}
    if len(nrows) > 1:
        raise ValueError(f"tf.ragged.cross: inputs must have the same number of rows, got {nrows}.")
    return cols, nrows.pop() if nrows else 0


def cross(inputs: Any, name: Any = None) -> RaggedTensor:
    """Feature crosses of each row: every combination, joined with "_X_" (strings).

    >>> import layerflow as tf
    >>> tf.ragged.cross([tf.ragged.constant([['a'], ['b', 'c']]), tf.constant([['d'], ['e']])])
    <tf.RaggedTensor [[b'a_X_d'], [b'b_X_e', b'c_X_e']]>
    """
    cols, n = _cross_rows(inputs)

    def text(v: Any) -> bytes:
        return v if isinstance(v, bytes) else str(v).encode()

    rows = [[b"_X_".join(text(v) for v in combo)
             for combo in itertools.product(*(c[i] for c in cols))]
            for i in builtins.range(n)]  # fmt: skip
    flat = np.array([v for r in rows for v in r], dtype=object)
    return RaggedTensor.from_row_lengths(convert_to_tensor(flat), [len(r) for r in rows])


def cross_hashed(inputs: Any, num_buckets: int = 0, hash_key: Any = None,
                 name: Any = None) -> RaggedTensor:  # fmt: skip
    """`cross`, each combination hashed with TF's FingerprintCat64 chain (bit-identical)."""
    cols, n = _cross_rows(inputs)
    key = 0xDECAFCAFFE if hash_key is None else int(hash_key)
    rows = []
    for i in builtins.range(n):
        row = []
        for combo in itertools.product(*(c[i] for c in cols)):
            h = key
            for v in combo:
                fp = (
                    fingerprint.fingerprint64(v) if isinstance(v, bytes) else int(v) & fingerprint.M
                )
                h = fingerprint.fingerprint_cat64(h, fp)
            row.append(h % num_buckets if num_buckets > 0 else h & 0x7FFFFFFFFFFFFFFF)
        rows.append(row)
    flat = np.array([v for r in rows for v in r], dtype=np.uint64).astype(np.int64)
    return RaggedTensor.from_row_lengths(convert_to_tensor(flat), [len(r) for r in rows])


# --- raw fill-empty-rows ops ---------------------------------------------------------------------

RaggedFillEmptyRows = collections.namedtuple(
    "RaggedFillEmptyRows",
    ["output_value_rowids", "output_values", "empty_row_indicator", "reverse_index_map"],
)
RaggedFillEmptyRowsGrad = collections.namedtuple(
    "RaggedFillEmptyRowsGrad", ["d_values", "d_default_value"]
)


def ragged_fill_empty_rows(value_rowids: Any, values: Any, nrows: Any, default_value: Any,
                           name: Any = None) -> RaggedFillEmptyRows:  # fmt: skip
    """Give every empty row one `default_value` (TF's raw op; differentiable in the values).

    >>> import layerflow as tf
    >>> out = tf.ragged_fill_empty_rows([0, 0, 2], [1.0, 2.0, 3.0], 4, 9.0)
    >>> out.output_values.numpy().tolist(), out.output_value_rowids.numpy().tolist()
    ([1.0, 2.0, 9.0, 3.0, 9.0], [0, 0, 1, 2, 3])
    """
    ids = _host(convert_to_tensor(value_rowids, dtype_hint="int64")).astype(np.int64)
    vals = values if isinstance(values, TensorLike) else convert_to_tensor(values)
    n = int(_host(convert_to_tensor(nrows, dtype_hint="int64")))
    if ids.size and (np.any(np.diff(ids) < 0) or ids[0] < 0 or ids[-1] >= n):
        raise ValueError(
            f"ragged_fill_empty_rows: value_rowids must be sorted and in [0, {n}), got "
            f"{ids.tolist()}."
        )
    empty = np.bincount(ids, minlength=n) == 0
    out_ids = np.sort(np.concatenate([ids, np.flatnonzero(empty)]), kind="stable")
    # Where each output comes from: an original value, or the default (index len(values)).
    order = np.argsort(np.concatenate([ids, np.flatnonzero(empty)]), kind="stable")
    source = np.where(order < ids.size, order, ids.size)
    reverse = np.empty(ids.size, np.int64)
    reverse[order[order < ids.size]] = np.flatnonzero(order < ids.size)
    default = convert_to_tensor(default_value, dtype=vals.dtype)
    table = array_ops.concat([vals, array_ops.expand_dims(default, 0)], 0)
    return RaggedFillEmptyRows(
        convert_to_tensor(out_ids),
        gather_ops.gather(table, source),
        convert_to_tensor(empty),
        convert_to_tensor(reverse),
    )


def ragged_fill_empty_rows_grad(reverse_index_map: Any, grad_values: Any,
                                name: Any = None) -> RaggedFillEmptyRowsGrad:  # fmt: skip
    """The gradient of `ragged_fill_empty_rows`: to the values, and to the default value."""
    rev = _host(convert_to_tensor(reverse_index_map, dtype_hint="int64")).astype(np.int64)
    g = grad_values if isinstance(grad_values, TensorLike) else convert_to_tensor(grad_values)
    filled = np.setdiff1d(np.arange(int(g.shape[0])), rev)
    return RaggedFillEmptyRowsGrad(
        gather_ops.gather(g, rev), core_ops.reduce_sum(gather_ops.gather(g, filled))
    )
