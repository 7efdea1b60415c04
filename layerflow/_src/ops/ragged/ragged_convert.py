"""Conversions between RaggedTensors and dense or sparse tensors, and `merge_dims`.

Every conversion that moves values does so with `gather` (or `reshape`) on the values, so
gradients reach `flat_values` (and a dense source) through the ordinary ops; only the integer
index plans are computed on the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.ops import array_ops, core_ops, gather_ops, manip_ops
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor, _bounding, _host


def _tensor(value: Any) -> Any:
    return value if isinstance(value, TensorLike) else convert_to_tensor(value)


# --- dense -> ragged ------------------------------------------------------------------------------


def from_tensor(tensor: Any, lengths: Any, padding: Any, ragged_rank: int,
                row_splits_dtype: Any) -> RaggedTensor:  # fmt: skip
    t = _tensor(tensor)
    shape = t.shape.as_list()
    ragged_rank = int(ragged_rank)
    if not 1 <= ragged_rank < len(shape):
        raise ValueError(
            f"RaggedTensor.from_tensor: ragged_rank must be in [1, {len(shape)}) for a tensor "
            f"of rank {len(shape)}, got {ragged_rank}."
        )
    if lengths is not None and padding is not None:
        raise ValueError("RaggedTensor.from_tensor: specify lengths or padding, not both.")
    splits_dt = dtypes.as_dtype(row_splits_dtype)
    if ragged_rank > 1:
        # The outer dimensions stay uniform (TF): rows of rows, the innermost one ragged.
        flat = core_ops.reshape(t, [shape[0] * shape[1], *shape[2:]])
        inner = from_tensor(flat, lengths, padding, ragged_rank - 1, splits_dt)
        return RaggedTensor.from_uniform_row_length(inner, shape[1], nrows=shape[0])
    nrows, ncols = shape[0], shape[1]
    if lengths is None and padding is None:
        rt = RaggedTensor.from_uniform_row_length(
            core_ops.reshape(t, [nrows * ncols, *shape[2:]]), ncols, nrows=nrows
        )
        return rt.with_row_splits_dtype(splits_dt)
    if padding is not None:
        arr = _host(t)
        pad = _host(convert_to_tensor(padding, dtype=t.dtype))
        is_pad = arr == pad
        is_pad = is_pad.reshape(nrows, ncols, -1).all(axis=2) if arr.ndim > 2 else is_pad
        # A row's length: up to its last non-padding entry.
        keep = ~is_pad
        last = np.where(keep.any(axis=1), ncols - np.argmax(keep[:, ::-1], axis=1), 0)
        lens = last.astype(np.int64)
    else:
        lens = _host(_tensor(lengths)).astype(np.int64).reshape(-1)
        if lens.size != nrows or np.any(lens < 0) or np.any(lens > ncols):
            raise ValueError(
                f"RaggedTensor.from_tensor: lengths must hold {nrows} values in [0, {ncols}], "
                f"got {lens.tolist()}."
            )
    idx = np.concatenate([i * ncols + np.arange(n) for i, n in enumerate(lens)] or [[]])
    flat = core_ops.reshape(t, [nrows * ncols, *shape[2:]])
    values = gather_ops.gather(flat, idx.astype(np.int64))
    return RaggedTensor.from_row_lengths(values, lens.astype(splits_dt.np), validate=False)


def from_sparse(st: Any, row_splits_dtype: Any) -> RaggedTensor:
    if not isinstance(st, SparseTensor):
        raise TypeError(f"RaggedTensor.from_sparse: expected a SparseTensor, got {st!r}.")
    idx = _host(st.indices)
    shape = _host(st.dense_shape)
    if shape.size != 2:
        raise ValueError(
            f"RaggedTensor.from_sparse: st_input must have rank 2, got rank {shape.size}."
        )
    rowids = idx[:, 0].astype(dtypes.as_dtype(row_splits_dtype).np)
    return RaggedTensor.from_value_rowids(st.values, rowids, int(shape[0]))


# --- ragged -> dense ------------------------------------------------------------------------------


def _dense_index(rt: RaggedTensor, dims: list[int]) -> np.ndarray:
    """For each position of a dense array of ragged shape `dims` (one per ragged level plus the
    rows), the flat_values row it takes, or -1 where it is padding."""
    parent = np.arange(dims[0], dtype=np.int64)
    parent[parent >= rt.nrows_int()] = -1
    v: Any = rt
    for d in dims[1:]:
        s = _host(v._row_splits).astype(np.int64)
        valid = parent >= 0
        p = np.where(valid, parent, 0)
        start, length = s[p], s[p + 1] - s[p]
        cols = np.arange(d, dtype=np.int64)
        child = start[..., None] + cols
        ok = valid[..., None] & (cols < length[..., None])
        parent = np.where(ok, child, -1)
        v = v._values
    return parent


def to_tensor(rt: RaggedTensor, default_value: Any, shape: Any) -> Any:
    flat = rt.flat_values
    full = _bounding(rt)
    k = rt.ragged_rank
    if shape is not None:
        want = TensorShape(shape)
        if want.rank is not None:
            if want.rank != len(full):
                raise ValueError(
                    f"RaggedTensor.to_tensor: shape {want} must have rank {len(full)} (the "
                    "RaggedTensor's rank)."
                )
            full = [f if s is None else int(s) for f, s in zip(full, want.as_list(), strict=True)]
    inner = list(flat.shape)[1:]
    if default_value is None:
        fill = b"" if flat.dtype == dtypes.string else 0
        default = array_ops.fill(inner, convert_to_tensor(fill, dtype=flat.dtype))
    else:
        default = core_ops.broadcast_to(convert_to_tensor(default_value, dtype=flat.dtype), inner)
    idx = _dense_index(rt, full[: k + 1])
    n = int(flat.shape[0])
    idx = np.where(idx < 0, n, idx)
    table = array_ops.concat([flat, array_ops.expand_dims(default, 0)], 0)
    out = gather_ops.gather(table, idx.reshape(-1))
    out = core_ops.reshape(out, full[: k + 1] + inner)
    # Inner (uniform) dimensions: crop or pad to the requested shape.
    crop = tuple(slice(None) for _ in range(k + 1)) + tuple(
        slice(0, min(a, b)) for a, b in zip(full[k + 1 :], inner, strict=True)
    )
    if any(a < b for a, b in zip(full[k + 1 :], inner, strict=True)):
        out = out[crop]
    pads = [[0, 0]] * (k + 1) + [
        [0, max(a - b, 0)] for a, b in zip(full[k + 1 :], inner, strict=True)
    ]
    if any(p[1] for p in pads):
        pad_value = 0 if default_value is None else _host(convert_to_tensor(default_value)).flat[0]
        out = manip_ops.pad(out, pads, constant_values=pad_value)
    return out


def to_sparse(rt: RaggedTensor) -> SparseTensor:
    flat = rt.flat_values
    full = _bounding(rt)
    k = rt.ragged_rank
    idx = _dense_index(rt, full[: k + 1])
    where = np.argwhere(idx >= 0)
    order = idx[idx >= 0]
    coords = np.empty_like(where)
    coords[order] = where
    inner = [int(d) for d in list(flat.shape)[1:]]
    if inner:
        grid = np.indices(inner).reshape(len(inner), -1).T
        reps = grid.shape[0]
        coords = np.concatenate(
            [np.repeat(coords, reps, axis=0), np.tile(grid, (coords.shape[0], 1))], axis=1
        )
    values = core_ops.reshape(flat, [-1])
    return SparseTensor(coords.astype(np.int64), values, np.asarray(full, np.int64))


# --- merge_dims ----------------------------------------------------------------------------------


def _merge_pair(x: Any, axis: int) -> Any:
    """Merge dimensions `axis` and `axis + 1` of `x` (a RaggedTensor or a Tensor)."""
    if not isinstance(x, RaggedTensor):
        shape = x.shape.as_list()
        return core_ops.reshape(x, shape[:axis] + [-1] + shape[axis + 2 :])
    if axis == 0:
        return x.values
    values = x.values
    if axis == 1 and isinstance(values, RaggedTensor):
        # Two ragged levels: row i is the concatenation of its sub-rows.
        splits = _host(values.row_splits)[_host(x.row_splits)]
        return RaggedTensor.from_row_splits(values.values, splits, validate=False)
    if axis == 1:
        # The ragged rows absorb the next (uniform) dimension: each row grows by that factor.
        d = int(values.shape[1])
        splits = _host(x.row_splits) * d
        return RaggedTensor.from_row_splits(_merge_pair(values, 0), splits, validate=False)
    return x.with_values(_merge_pair(values, axis - 1))


def merge_dims(rt: RaggedTensor, outer_axis: int, inner_axis: int) -> Any:
    rank = rt.shape.rank
    outer = outer_axis + rank if outer_axis < 0 else outer_axis
    inner = inner_axis + rank if inner_axis < 0 else inner_axis
    if not 0 <= outer <= inner < rank:
        raise ValueError(
            f"RaggedTensor.merge_dims: expected 0 <= outer_axis ({outer_axis}) <= inner_axis "
            f"({inner_axis}) < rank ({rank})."
        )
    result: Any = rt
    for axis in range(inner - 1, outer - 1, -1):
        result = _merge_pair(result, axis)
    return result


# --- padded sequences (how Keras's RNN layers consume ragged input) -------------------------------


def call_padded(fn: Any, rt: RaggedTensor, return_sequences: bool, kwargs: dict) -> Any:
    """`fn(dense, mask=mask, **kwargs)` on `rt` padded to a dense batch, with the time-step mask
    of its row lengths (as tf_keras's RNN layers take ragged input); with `return_sequences`,
    the output sequences are cut back to the rows' lengths (a RaggedTensor)."""
    if rt.ragged_rank != 1:
        raise ValueError(
            f"A recurrent layer takes a RaggedTensor of ragged rank 1 (batch, None, features), "
            f"got ragged rank {rt.ragged_rank} and shape {rt.shape}."
        )
    lengths = np.diff(_host(rt.row_splits)).astype(np.int64)
    dense = rt.to_tensor()
    steps = int(dense.shape[1])
    mask = convert_to_tensor(np.arange(steps)[None, :] < lengths[:, None])
    if kwargs.get("mask") is not None:
        raise ValueError("A RaggedTensor input carries its own mask; do not pass mask= as well.")
    out = fn(dense, **{**kwargs, "mask": mask})
    if not return_sequences:
        return out
    if isinstance(out, list | tuple):
        return [from_tensor(out[0], lengths, None, 1, rt.row_splits_dtype), *out[1:]]
    return from_tensor(out, lengths, None, 1, rt.row_splits_dtype)
