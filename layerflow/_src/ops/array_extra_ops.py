"""Top-level array ops of TF that move or count elements: slice, strided_slice, shape_n,
broadcast_{dynamic,static}_shape, dynamic_partition/stitch, reverse_sequence, unique_with_counts,
unravel_index, histogram_fixed_width(_bins), tensor_scatter_nd_max/min, parallel_stack, bitcast.

Differentiable ones are composed (slicing, gather, scatter), so their gradients are those ops'
gradients. Two deliberate differences from TF, both noted where they matter:
`dynamic_stitch`'s gradient is the true one (an element overwritten by a later index gets no
gradient; TF's rule gives it one), and `parallel_stack` stacks in eager mode too (TF raises a
RuntimeError outside a graph; layerflow runs every `tf.function` body eagerly).
"""

from __future__ import annotations

import builtins
import collections
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import op
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.ops.array_ops import _getitem, concat, stack
from layerflow._src.ops.gather_ops import (
    _check_updates,
    _gather,
    _gather_nd,
    _nd_key,
    _scatter_args,
    scatter_nd,
)
from layerflow._src.ops.math_ops import _as_tensor, cast, equal, reshape

# --- helpers --------------------------------------------------------------------------------------


def _host(value: Any) -> np.ndarray:
    if isinstance(value, TensorLike):
        return backend.to_host(value._data)
    if isinstance(value, TensorShape):
        return np.asarray(value.as_list())
    return np.asarray(value)


def _int_vector(value: Any, opname: str, what: str) -> np.ndarray:
    v = _host(value)
    if v.size and v.dtype.kind not in "iu":
        raise TypeError(f"{opname}: {what} must be integers, got {v.dtype} values {v.tolist()}.")
    if v.ndim > 1:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: {what} must be a vector, got shape {list(v.shape)}."
        )
    return v.astype(np.int64).reshape(-1)


def _const(array: Any, like: Any) -> Tensor:
    """A host array as a tensor on `like`'s device."""
    return Tensor(like._device.xp.asarray(array), like._device)


def _bits(mask: int, i: int) -> bool:
    return bool((int(mask) >> i) & 1)


# --- slice / strided_slice ------------------------------------------------------------------------


def slice(input_: Any, begin: Any, size: Any, name: str | None = None) -> Any:  # noqa: A001
    """`size[i]` elements of `input_` from `begin[i]` along every axis (`size[i] = -1`: all the
    rest). Differentiable.

    >>> import layerflow as tf
    >>> t = tf.constant([[1, 1, 1], [2, 2, 2], [3, 3, 3]])
    >>> tf.slice(t, [1, 0], [2, -1]).numpy()
    array([[2, 2, 2],
           [3, 3, 3]], dtype=int32)
    """
    x = _as_tensor(input_)
    shape = x._data.shape
    b = _int_vector(begin, "slice", "begin")
    s = _int_vector(size, "slice", "size")
    if b.size != len(shape) or s.size != len(shape):
        raise errors.InvalidArgumentError(
            None,
            "slice",
            f"slice: begin and size must have one entry per dimension of the input (rank "
            f"{len(shape)}), got begin {b.tolist()} and size {s.tolist()}.",
        )
    key = []
    for i, (start, count, dim) in enumerate(zip(b.tolist(), s.tolist(), shape)):
        if count == -1:
            count = dim - start
        if not 0 <= start <= dim:
            raise errors.InvalidArgumentError(
                None, "slice", f"slice: expected begin[{i}] in [0, {dim}], but got {start}."
            )
        if not 0 <= count <= dim - start:
            raise errors.InvalidArgumentError(
                None,
                "slice",
                f"slice: expected size[{i}] in [0, {dim - start}], but got {count}.",
            )
        key.append(builtins.slice(start, start + count))
    return _getitem(x, tuple(key))


def strided_slice(input_: Any, begin: Any, end: Any, strides: Any = None, begin_mask: int = 0,
                  end_mask: int = 0, ellipsis_mask: int = 0, new_axis_mask: int = 0,
                  shrink_axis_mask: int = 0, var: Any = None,
                  name: str | None = None) -> Any:  # fmt: skip
    """`input_[begin:end:strides]` spelled as TF's StridedSlice: entry `i` of the spec is a
    slice, unless bit `i` of a mask says otherwise. `begin_mask`/`end_mask`: that bound is
    omitted; `ellipsis_mask`: `...` (at most one bit); `new_axis_mask`: `tf.newaxis`;
    `shrink_axis_mask`: the single index `begin[i]` (the axis is removed). Differentiable.

    >>> import layerflow as tf
    >>> t = tf.reshape(tf.range(24), [2, 3, 4])
    >>> tf.strided_slice(t, [0, 1], [2, 3], shrink_axis_mask=1).numpy()
    array([[ 4,  5,  6,  7],
           [ 8,  9, 10, 11]], dtype=int32)
    """
    x = _as_tensor(input_)
    b = _int_vector(begin, "strided_slice", "begin")
    e = _int_vector(end, "strided_slice", "end")
    st = np.ones_like(b) if strides is None else _int_vector(strides, "strided_slice", "strides")
    if not b.size == e.size == st.size:
        raise errors.InvalidArgumentError(
            None,
            "strided_slice",
            f"strided_slice: begin, end and strides must have the same length, got "
            f"{b.size}, {e.size} and {st.size}.",
        )
    if bin(int(ellipsis_mask)).count("1") > 1:
        raise errors.InvalidArgumentError(
            None,
            "strided_slice",
            f"strided_slice: multiple ellipses in slice spec not allowed (ellipsis_mask="
            f"{ellipsis_mask}); set one bit at most.",
        )
    key: list[Any] = []
    for i in range(b.size):
        if _bits(ellipsis_mask, i):  # wins over every other mask, as in TF
            key.append(Ellipsis)
        elif _bits(new_axis_mask, i):  # wins over shrink_axis_mask, as in TF
            key.append(None)
        elif st[i] == 0:
            raise errors.InvalidArgumentError(
                None, "strided_slice", f"strided_slice: strides[{i}] must be non-zero."
            )
        elif _bits(shrink_axis_mask, i):
            key.append(int(b[i]))
        else:
            start = None if _bits(begin_mask, i) else int(b[i])
            stop = None if _bits(end_mask, i) else int(e[i])
            key.append(builtins.slice(start, stop, int(st[i])))
    return _getitem(x, tuple(key))


# --- shapes ---------------------------------------------------------------------------------------


def shape_n(input: Any, out_type: Any = "int32", name: str | None = None) -> list:  # noqa: A002
    """The shape of every tensor of a list, each as a 1-D tensor of `out_type`.

    >>> import layerflow as tf
    >>> [s.numpy().tolist() for s in tf.shape_n([tf.zeros([2, 3]), tf.zeros([4])])]
    [[2, 3], [4]]
    """
    dt = dtypes.as_dtype(out_type)
    if dt.name not in ("int32", "int64"):
        raise TypeError(f"shape_n: out_type must be tf.int32 or tf.int64, got {dt.name}.")
    outs = []
    for v in input:
        t = _as_tensor(v)
        outs.append(_const(np.asarray(t._data.shape, dtype=dt.np), t))
    return outs


def _broadcast_dims(x: list, y: list) -> list | None:
    out = []
    for i in range(1, max(len(x), len(y)) + 1):
        a = x[-i] if i <= len(x) else 1
        b = y[-i] if i <= len(y) else 1
        if a == 1:
            out.append(b)
        elif b == 1 or b == a:
            out.append(a)
        elif a is None or b is None:
            out.append(a if b is None else b)
        else:
            return None
    return out[::-1]


def broadcast_dynamic_shape(shape_x: Any, shape_y: Any) -> Any:
    """The shape two shapes (1-D int tensors) broadcast to; InvalidArgumentError if they do not.

    >>> import layerflow as tf
    >>> tf.broadcast_dynamic_shape([2, 1, 3], [4, 1]).numpy()
    array([2, 4, 3], dtype=int32)
    """
    tx = _as_tensor(shape_x)
    ty = shape_y if isinstance(shape_y, TensorLike) else convert_to_tensor(shape_y)
    if tx._data.dtype != ty._data.dtype:
        raise errors.InvalidArgumentError(
            None,
            "broadcast_dynamic_shape",
            f"broadcast_dynamic_shape: both shapes must have the same dtype, got {tx.dtype.name} "
            f"and {ty.dtype.name}.",
        )
    x = _int_vector(tx, "broadcast_dynamic_shape", "shape_x").tolist()
    y = _int_vector(ty, "broadcast_dynamic_shape", "shape_y").tolist()
    out = _broadcast_dims(x, y)
    if out is None:
        raise errors.InvalidArgumentError(
            None, "broadcast_dynamic_shape", f"Incompatible shapes: {x} vs. {y}"
        )
    return _const(np.asarray(out, dtype=tx._data.dtype), tx)


def broadcast_static_shape(shape_x: Any, shape_y: Any) -> TensorShape:
    """The TensorShape two TensorShapes broadcast to (unknown dimensions stay unknown unless the
    other is known and not 1); ValueError if they cannot broadcast.

    >>> import layerflow as tf
    >>> tf.broadcast_static_shape(tf.TensorShape([None, 1, 3]), tf.TensorShape([4, 1]))
    TensorShape([None, 4, 3])
    """
    sx, sy = TensorShape(shape_x), TensorShape(shape_y)
    if sx.rank is None or sy.rank is None:
        return TensorShape(None)
    out = []
    for i in range(1, max(len(sx), len(sy)) + 1):
        a = sx[-i] if i <= len(sx) else 1
        b = sy[-i] if i <= len(sy) else 1
        if a is None or b is None:  # TF: unknown vs d>1 is d, unknown vs 1 or unknown is unknown
            known = b if a is None else a
            out.append(known if known is not None and known > 1 else None)
        elif a == 1 or a == b:
            out.append(b)
        elif b == 1:
            out.append(a)
        else:
            raise ValueError(
                "Incompatible shapes for broadcasting. Two shapes are compatible if for each "
                "dimension pair they are either equal or one of them is 1. Received: "
                f"{tuple(sx)} and {tuple(sy)}."
            )
    return TensorShape(out[::-1])


# --- dynamic_partition / dynamic_stitch -----------------------------------------------------------


def dynamic_partition(data: Any, partitions: Any, num_partitions: int,
                      name: str | None = None) -> list:  # fmt: skip
    """Split `data` into `num_partitions` tensors by the partition index of each slice:
    `outputs[i]` holds, in order, the slices `data[j...]` with `partitions[j...] == i`.
    `partitions.shape` must be a prefix of `data.shape`. Differentiable (a gather).

    >>> import layerflow as tf
    >>> a, b = tf.dynamic_partition([10, 20, 30, 40, 50], [0, 0, 1, 1, 0], 2)
    >>> a.numpy(), b.numpy()
    (array([10, 20, 50], dtype=int32), array([30, 40], dtype=int32))
    """
    x = _as_tensor(data)
    p = _host(partitions)
    if p.size and p.dtype.kind not in "iu":
        raise TypeError(f"dynamic_partition: partitions must be int32, got {p.dtype}.")
    n = int(num_partitions)
    if n < 1:
        raise ValueError(f"dynamic_partition: num_partitions must be >= 1, got {n}.")
    shape = tuple(x._data.shape)
    if shape[: p.ndim] != p.shape:
        raise errors.InvalidArgumentError(
            None,
            "dynamic_partition",
            f"dynamic_partition: data.shape must start with partitions.shape, got data.shape = "
            f"{list(shape)} and partitions.shape = {list(p.shape)}.",
        )
    flat_p = p.reshape(-1).astype(np.int64)
    bad = flat_p[(flat_p < 0) | (flat_p >= n)]
    if bad.size:
        raise errors.InvalidArgumentError(
            None,
            "dynamic_partition",
            f"dynamic_partition: partitions must be in [0, {n}), got {int(bad[0])}.",
        )
    flat = reshape(x, [-1, *shape[p.ndim :]])
    return [_gather(flat, _const(np.nonzero(flat_p == i)[0], x), 0) for i in range(n)]


def dynamic_stitch(indices: Any, data: Any, name: str | None = None) -> Any:
    """Interleave the values of `data` into one tensor: `merged[indices[m][i...]] =
    data[m][i...]`; for a repeated index the last value wins (in order of `m`, then `i`).
    Differentiable; the gradient reaches only the values that land in the result (TF's rule
    also sends it to overwritten ones).

    >>> import layerflow as tf
    >>> tf.dynamic_stitch([[0, 3], [1, 2]], [[1.0, 4.0], [2.0, 3.0]]).numpy()
    array([1., 2., 3., 4.], dtype=float32)
    """
    if len(indices) != len(data) or not indices:
        raise ValueError(
            f"dynamic_stitch: needs one data tensor per indices tensor (at least one), got "
            f"{len(indices)} indices and {len(data)} data."
        )
    idx = [_host(i) for i in indices]
    vals = [_as_tensor(d) for d in data]
    for k, (i, v) in enumerate(zip(idx, vals)):
        if i.size and i.dtype.kind not in "iu":
            raise TypeError(f"dynamic_stitch: indices[{k}] must be int32, got {i.dtype}.")
        if tuple(v._data.shape[: i.ndim]) != i.shape:
            raise errors.InvalidArgumentError(
                None,
                "dynamic_stitch",
                f"dynamic_stitch: data[{k}].shape must start with indices[{k}].shape, got "
                f"{list(v._data.shape)} and {list(i.shape)}.",
            )
    tails = {tuple(v._data.shape[i.ndim :]) for i, v in zip(idx, vals)}
    if len(tails) != 1:
        raise errors.InvalidArgumentError(
            None,
            "dynamic_stitch",
            f"dynamic_stitch: every data[m].shape[indices[m].ndim:] must agree, got "
            f"{sorted(tails)}.",
        )
    tail = tails.pop()
    flat_idx = np.concatenate([i.reshape(-1).astype(np.int64) for i in idx])
    if flat_idx.size and flat_idx.min() < 0:
        raise errors.InvalidArgumentError(
            None, "dynamic_stitch", f"dynamic_stitch: indices must be >= 0, got {flat_idx.min()}."
        )
    rows = concat([reshape(v, [-1, *tail]) for v in vals], 0)
    size = int(flat_idx.max()) + 1 if flat_idx.size else 0
    source = np.full(size, -1, dtype=np.int64)
    source[flat_idx] = np.arange(flat_idx.size)  # later positions overwrite earlier ones
    if (source < 0).any():
        missing = int(np.nonzero(source < 0)[0][0])
        raise errors.InvalidArgumentError(
            None,
            "dynamic_stitch",
            f"dynamic_stitch: index {missing} is missing from indices (the result has "
            f"{size} rows; every row needs a value).",
        )
    return _gather(rows, _const(source, rows), 0)


# --- reverse_sequence -----------------------------------------------------------------------------


def reverse_sequence(input: Any, seq_lengths: Any, seq_axis: Any = None, batch_axis: Any = None,  # noqa: A002
                     name: str | None = None) -> Any:  # fmt: skip
    """Reverse the first `seq_lengths[b]` entries along `seq_axis` of each slice `b` along
    `batch_axis` (default 0); the rest stay. Differentiable.

    >>> import layerflow as tf
    >>> tf.reverse_sequence([[1, 2, 3, 4], [5, 6, 7, 8]], [2, 3], seq_axis=1).numpy()
    array([[2, 1, 3, 4],
           [7, 6, 5, 8]], dtype=int32)
    """
    x = _as_tensor(input)
    shape = tuple(x._data.shape)
    r = len(shape)
    if seq_axis is None:
        raise TypeError("reverse_sequence: seq_axis is required (the axis to reverse).")
    ba = 0 if batch_axis is None else int(batch_axis)
    sa = int(seq_axis)
    ba, sa = ba + r if ba < 0 else ba, sa + r if sa < 0 else sa
    if not (0 <= ba < r and 0 <= sa < r) or ba == sa:
        raise errors.InvalidArgumentError(
            None,
            "reverse_sequence",
            f"reverse_sequence: seq_axis ({seq_axis}) and batch_axis ({batch_axis}) must be "
            f"two different axes of the rank-{r} input.",
        )
    lens = _int_vector(seq_lengths, "reverse_sequence", "seq_lengths")
    if lens.size != shape[ba]:
        raise errors.InvalidArgumentError(
            None,
            "reverse_sequence",
            f"reverse_sequence: len(seq_lengths) must equal input.shape[batch_axis] = "
            f"{shape[ba]}, got {lens.size}.",
        )
    if lens.size and (lens.min() < 0 or lens.max() > shape[sa]):
        raise errors.InvalidArgumentError(
            None,
            "reverse_sequence",
            f"reverse_sequence: seq_lengths must be in [0, {shape[sa]}] (input.shape[seq_axis])"
            f", got {lens.tolist()}.",
        )
    pos = np.arange(shape[sa])[None, :]
    lb = lens[:, None]
    src = np.where(pos < lb, lb - 1 - pos, pos)  # [batch, seq]: the source position
    grid = np.indices(shape)
    bshape = [1] * r
    bshape[ba], bshape[sa] = shape[ba], shape[sa]
    if ba > sa:
        src_b = src.T.reshape(bshape)
    else:
        src_b = src.reshape(bshape)
    grid[sa] = np.broadcast_to(src_b, shape)
    flat = np.ravel_multi_index(tuple(grid), shape) if x._data.size else np.zeros(shape, np.int64)
    return reshape(_gather(reshape(x, [-1]), _const(flat.reshape(-1), x), 0), list(shape))


# --- unique_with_counts / unravel_index -----------------------------------------------------------

UniqueWithCounts = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])


def unique_with_counts(x: Any, out_idx: Any = "int32", name: str | None = None) -> Any:
    """`tf.unique` plus how often each distinct value occurs.

    >>> import layerflow as tf
    >>> y, idx, count = tf.unique_with_counts([1, 1, 2, 4, 4, 4, 7, 8, 8])
    >>> count.numpy()
    array([2, 1, 3, 1, 2], dtype=int32)
    """
    from layerflow._src.ops.ordering_ops import unique

    y, idx = unique(x, out_idx=out_idx)
    dt = dtypes.as_dtype(out_idx)
    counts = np.bincount(_host(idx).astype(np.int64), minlength=int(y._data.shape[0]))
    return UniqueWithCounts(y, idx, _const(counts.astype(dt.np), y))


def unravel_index(indices: Any, dims: Any, name: str | None = None) -> Any:
    """Flat indices into an array of shape `dims` as coordinates: shape `[len(dims)] +
    indices.shape` (TF's layout: one row per dimension).

    >>> import layerflow as tf
    >>> tf.unravel_index([1, 5, 7], [3, 3]).numpy()
    array([[0, 1, 2],
           [1, 2, 1]], dtype=int32)
    """
    t = _as_tensor(indices)
    if t._data.dtype.kind not in "iu":
        raise TypeError(f"unravel_index: indices must be int32 or int64, got {t.dtype.name}.")
    i = _host(t).astype(np.int64)
    d = _int_vector(dims, "unravel_index", "dims")
    total = int(np.prod(d)) if d.size else 1
    if (d < 0).any():
        raise errors.InvalidArgumentError(
            None, "unravel_index", f"unravel_index: dims must be >= 0, got {d.tolist()}."
        )
    if i.size and (i.min() < 0 or i.max() >= total):
        raise errors.InvalidArgumentError(
            None,
            "unravel_index",
            f"unravel_index: index is out of bound as with dims {d.tolist()} (indices must be "
            f"in [0, {total})).",
        )
    coords = np.stack(np.unravel_index(i, tuple(d.tolist())), axis=0) if d.size else i[None]
    return _const(coords.astype(t._data.dtype), t)


# --- histograms -----------------------------------------------------------------------------------


def _bins(values: Any, value_range: Any, nbins: Any, opname: str) -> tuple[np.ndarray, int, Any]:
    v = _as_tensor(values)
    if v._data.dtype.kind not in "iuf":
        raise TypeError(f"{opname}: values must be numeric, got {v.dtype.name}.")
    rng = _host(value_range).astype(np.float64).reshape(-1)
    if rng.size != 2:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: value_range must be [lo, hi], got {rng.tolist()}."
        )
    lo, hi = float(rng[0]), float(rng[1])
    n = int(_host(nbins))
    if n <= 0:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: nbins should be a positive number, but got '{n}'."
        )
    if not lo < hi:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: value_range should satisfy lo < hi, got {rng.tolist()}."
        )
    x = _host(v).astype(np.float64)
    idx = np.floor((x - lo) / (hi - lo) * n)
    return np.clip(idx, 0, n - 1).astype(np.int64), n, v


def histogram_fixed_width(values: Any, value_range: Any, nbins: Any = 100, dtype: Any = "int32",
                          name: str | None = None) -> Any:  # fmt: skip
    """Counts of `values` in `nbins` equal bins over `value_range` = [lo, hi]; values below lo
    count in the first bin, values at or above hi in the last.

    >>> import layerflow as tf
    >>> tf.histogram_fixed_width([-1.0, 0.0, 1.5, 2.0, 5.0, 15], [0.0, 5.0], nbins=5).numpy()
    array([2, 1, 1, 0, 2], dtype=int32)
    """
    idx, n, v = _bins(values, value_range, nbins, "histogram_fixed_width")
    counts = np.bincount(idx.reshape(-1), minlength=n)
    return _const(counts.astype(dtypes.as_dtype(dtype).np), v)


def histogram_fixed_width_bins(values: Any, value_range: Any, nbins: Any = 100,
                               dtype: Any = "int32", name: str | None = None) -> Any:  # fmt: skip
    """The bin index of each value (shape of `values`) for `histogram_fixed_width`'s bins.

    >>> import layerflow as tf
    >>> tf.histogram_fixed_width_bins([-1.0, 0.0, 1.5, 2.0, 5.0, 15], [0.0, 5.0], 5).numpy()
    array([0, 0, 1, 2, 4, 4], dtype=int32)
    """
    idx, _, v = _bins(values, value_range, nbins, "histogram_fixed_width_bins")
    return _const(idx.astype(dtypes.as_dtype(dtype).np), v)


# --- tensor_scatter_nd_max / min ------------------------------------------------------------------


def _make_extreme(pick: str) -> Any:
    opname = f"tensor_scatter_nd_{pick}"

    @op(opname, 3, same_dtype=False)
    def forward(xp: Any, tensor: Any, indices: Any, updates: Any) -> Any:
        _check_updates(tensor, indices, updates, opname)
        out = tensor.copy()
        ufunc = xp.maximum if pick == "max" else xp.minimum
        ufunc.at(out, _nd_key(xp, tensor.shape, indices, opname), updates)
        return out

    @forward.grad
    def _(dy: Any, out: Any, tensor: Any, indices: Any, updates: Any) -> Any:
        # TF's _TensorScatterMinOrMaxGrad: ties share the gradient equally.
        x_ind = cast(equal(tensor, out), dy.dtype)
        y_ind = cast(equal(updates, _gather_nd(out, indices)), dy.dtype)
        shape = list(tensor._data.shape)
        count = x_ind + scatter_nd(indices, y_ind, shape)
        return dy * x_ind / count, None, _gather_nd(dy / count, indices) * y_ind

    return forward


_EXTREME = {"max": _make_extreme("max"), "min": _make_extreme("min")}


def tensor_scatter_nd_max(tensor: Any, indices: Any, updates: Any,
                          name: str | None = None) -> Any:  # fmt: skip
    """A copy of `tensor` with each slice at `indices` replaced by the elementwise maximum of it
    and the update. Differentiable (ties split the gradient, as in TF).

    >>> import layerflow as tf
    >>> tf.tensor_scatter_nd_max([1, 5, 3], [[0], [1]], [4, 2]).numpy()
    array([4, 5, 3], dtype=int32)
    """
    t, u = _scatter_args(tensor, updates)
    return _EXTREME["max"](t, indices, u)


def tensor_scatter_nd_min(tensor: Any, indices: Any, updates: Any,
                          name: str | None = None) -> Any:  # fmt: skip
    """A copy of `tensor` with each slice at `indices` replaced by the elementwise minimum of it
    and the update. Differentiable (ties split the gradient, as in TF).

    >>> import layerflow as tf
    >>> tf.tensor_scatter_nd_min([1, 5, 3], [[0], [1], [1]], [4, 2, 7]).numpy()
    array([1, 2, 3], dtype=int32)
    """
    t, u = _scatter_args(tensor, updates)
    return _EXTREME["min"](t, indices, u)


# --- parallel_stack / bitcast ---------------------------------------------------------------------


def parallel_stack(values: Any, name: str | None = None) -> Any:
    """Stack rank-R tensors of one shape into a rank-(R+1) tensor along a new first axis (TF
    copies them in parallel inside a graph; here it is `tf.stack(values, 0)`, and it also runs
    eagerly, where TF raises).

    >>> import layerflow as tf
    >>> tf.parallel_stack([[1, 4], [2, 5], [3, 6]]).shape
    TensorShape([3, 2])
    """
    tensors = [_as_tensor(v) for v in values]
    shapes = {tuple(t._data.shape) for t in tensors}
    if len(shapes) > 1:
        raise ValueError(
            f"parallel_stack: every value must have the same shape, got {sorted(shapes)}."
        )
    return stack(tensors, 0)


def bitcast(input: Any, type: Any, name: str | None = None) -> Any:  # noqa: A002
    """The same bytes read as another dtype, without copying. A wider input dtype adds a last
    axis of size (input item size / output item size); a narrower one needs a last axis of
    exactly (output item size / input item size), which disappears. Not differentiable.

    >>> import layerflow as tf
    >>> tf.bitcast(tf.constant([1.0]), tf.uint8).numpy()
    array([[  0,   0, 128,  63]], dtype=uint8)
    """
    x = _as_tensor(input)
    to = dtypes.as_dtype(type)
    if x._data.dtype.kind in "OSU" or to.np.kind in "OSU" or to.np == np.bool_:
        raise TypeError(f"bitcast: cannot bitcast {x.dtype.name} to {to.name} (numbers only).")
    a = x._data
    src, dst = a.dtype.itemsize, np.dtype(to.np).itemsize
    xp = x._device.xp
    if src == dst:
        out = a.view(to.np)
    elif src > dst:
        out = xp.ascontiguousarray(a)[..., None].view(to.np)
    else:
        if a.ndim == 0 or a.shape[-1] != dst // src:
            raise errors.InvalidArgumentError(
                None,
                "bitcast",
                f"bitcast: cannot bitcast from {x.dtype.name} to {to.name}: the last dimension "
                f"must be {dst // src}, got shape {list(a.shape)}.",
            )
        out = xp.ascontiguousarray(a).view(to.np)[..., 0]
    return Tensor(out, x._device)


__all__ = [
    "UniqueWithCounts", "bitcast", "broadcast_dynamic_shape", "broadcast_static_shape",
    "dynamic_partition", "dynamic_stitch", "histogram_fixed_width", "histogram_fixed_width_bins",
    "parallel_stack", "reverse_sequence", "shape_n", "slice", "strided_slice",
    "tensor_scatter_nd_max", "tensor_scatter_nd_min", "unique_with_counts", "unravel_index",
]  # fmt: skip
