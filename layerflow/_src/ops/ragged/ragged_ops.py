"""`tf.ragged` functions: `constant`, `range`, `map_flat_values` and the row-partition helpers.

>>> import layerflow as tf
>>> tf.ragged.constant([[1, 2], [3]])
<tf.RaggedTensor [[1, 2], [3]]>
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor


def _depth(x: Any) -> int:
    if isinstance(x, list | tuple):
        depths = {_depth(v) for v in x}
        if len(depths) > 1:
            raise ValueError("tf.ragged.constant: all scalar values must have the same nesting "
                             f"depth, got depths {sorted(depths)}.")  # fmt: skip
        return 1 + (depths.pop() if depths else 0)
    return 0


def constant(pylist: Any, dtype: Any = None, ragged_rank: Any = None, inner_shape: Any = None,
             name: Any = None, row_splits_dtype: Any = "int64") -> Any:  # fmt: skip
    """A RaggedTensor from nested Python lists (rows may differ in length at every level)."""
    depth = _depth(pylist)
    inner = 0 if inner_shape is None else len(inner_shape)
    rank = depth - 1 - inner if ragged_rank is None else int(ragged_rank)
    if rank < 0 or rank >= max(depth, 1):
        raise ValueError(f"tf.ragged.constant: ragged_rank {rank} must be in [0, {depth - 1}).")
    if rank == 0:
        return convert_to_tensor(pylist, dtype=dtype)
    splits_dt = dtypes.as_dtype(row_splits_dtype).np
    levels = []
    items: list = list(pylist)
    for _ in builtins.range(rank):  # `range` below is tf.ragged.range
        lengths = [len(v) for v in items]
        levels.append(np.concatenate([[0], np.cumsum(lengths)]).astype(splits_dt))
        items = [x for v in items for x in v]
    if items:
        flat = convert_to_tensor(items, dtype=dtype)
    else:
        dt = dtypes.as_dtype(dtype or "float32")
        flat = convert_to_tensor(np.zeros((0,) + tuple(inner_shape or ()), dtype=dt.np))
    return RaggedTensor.from_nested_row_splits(flat, levels, validate=False)


def range(starts: Any, limits: Any = None, deltas: Any = 1, dtype: Any = None,  # noqa: A001
          name: Any = None, row_splits_dtype: Any = "int64") -> RaggedTensor:  # fmt: skip
    """Row `i` is `tf.range(starts[i], limits[i], deltas[i])` (scalars broadcast)."""
    if limits is None:
        starts, limits = 0, starts
    s, lim, d = (backend.to_host(convert_to_tensor(v, dtype=dtype)._data)
                 for v in (starts, limits, deltas))  # fmt: skip
    s, lim, d = np.broadcast_arrays(np.atleast_1d(s), np.atleast_1d(lim), np.atleast_1d(d))
    if np.any(d == 0):
        raise ValueError("tf.ragged.range: deltas must not be zero.")
    rows = [np.arange(a, b, c, dtype=s.dtype) for a, b, c in zip(s, lim, d, strict=True)]
    lengths = np.asarray([len(r) for r in rows], dtype=dtypes.as_dtype(row_splits_dtype).np)
    flat = np.concatenate(rows) if rows else np.zeros(0, s.dtype)
    return RaggedTensor.from_row_lengths(convert_to_tensor(flat.astype(s.dtype)), lengths)


def map_flat_values(op: Any, *args: Any, **kwargs: Any) -> Any:
    """`op` applied to the flat values of the ragged arguments (which must share row splits)."""
    ragged = [a for a in list(args) + list(kwargs.values()) if isinstance(a, RaggedTensor)]
    if not ragged:
        return op(*args, **kwargs)
    splits = [tuple(backend.to_host(s._data).tolist() for s in r.nested_row_splits)
              for r in ragged]  # fmt: skip
    if any(s != splits[0] for s in splits[1:]):
        raise ValueError("tf.ragged.map_flat_values: all ragged inputs must have the same "
                         "row splits.")  # fmt: skip
    flat = op(*[a.flat_values if isinstance(a, RaggedTensor) else a for a in args],
              **{k: v.flat_values if isinstance(v, RaggedTensor) else v
                 for k, v in kwargs.items()})  # fmt: skip
    return ragged[0].with_flat_values(flat)


def row_splits_to_segment_ids(splits: Any, name: Any = None, out_type: Any = None) -> Any:
    s = backend.to_host(convert_to_tensor(splits, dtype_hint="int64")._data)
    dt = s.dtype if out_type is None else dtypes.as_dtype(out_type).np
    if s.ndim != 1 or s.size == 0:
        raise ValueError("row_splits_to_segment_ids: splits must be a non-empty 1-D tensor.")
    return convert_to_tensor(np.repeat(np.arange(len(s) - 1), np.diff(s)).astype(dt))


def segment_ids_to_row_splits(segment_ids: Any, num_segments: Any = None, out_type: Any = None,
                              name: Any = None) -> Any:  # fmt: skip
    ids = backend.to_host(convert_to_tensor(segment_ids, dtype_hint="int64")._data)
    n = (int(ids.max()) + 1 if ids.size else 0) if num_segments is None else int(num_segments)
    counts = np.bincount(ids, minlength=n)
    dt = np.int64 if out_type is None else dtypes.as_dtype(out_type).np
    return convert_to_tensor(np.concatenate([[0], np.cumsum(counts)]).astype(dt))
