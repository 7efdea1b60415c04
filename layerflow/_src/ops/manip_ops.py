"""Layout ops: tile, pad, reverse, meshgrid, repeat, roll and sequence_mask.

meshgrid and repeat are composed (reshape + broadcast_to, gather), so their gradients come from
those ops; roll is one op whose gradient is the opposite roll.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.dispatch import public_api
from layerflow._src.autodiff.op import op
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.composite_dispatch import dispatchable
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.ops.array_ops import _getitem, _shape_tuple
from layerflow._src.ops.gather_ops import _gather, _host_value
from layerflow._src.ops.math_ops import _as_tensor, _norm_axis, broadcast_to, reduce_sum, reshape


def _host_ints(value: Any, opname: str, what: str) -> np.ndarray:
    v = backend.to_host(value._data) if isinstance(value, TensorLike) else np.asarray(value)
    if v.size and v.dtype.kind not in "iu":
        raise TypeError(f"{opname}: {what} must be integers, got {v.dtype} values {v.tolist()}.")
    return v.astype(np.int64)


# --- meshgrid -------------------------------------------------------------------------------------


def meshgrid(*args: Any, **kwargs: Any) -> list:
    """N-D coordinate grids from N 1-D tensors. `indexing='xy'` (default, Cartesian) makes the
    outputs `(len(y), len(x), ...)`; `indexing='ij'` (matrix) makes them `(len(x), len(y), ...)`.

    >>> import layerflow as tf
    >>> X, Y = tf.meshgrid([1, 2, 3], [4, 5])
    >>> X.numpy()
    array([[1, 2, 3],
           [1, 2, 3]], dtype=int32)
    >>> Y.numpy()
    array([[4, 4, 4],
           [5, 5, 5]], dtype=int32)
    """
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"meshgrid got unexpected keyword arguments {sorted(kwargs)}.")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}.")
    vectors = [reshape(_as_tensor(a), [-1]) for a in args]
    n = len(vectors)
    sizes = [int(v._data.shape[0]) for v in vectors]
    order = list(range(n))
    if indexing == "xy" and n > 1:  # Cartesian: the first two axes swap
        order[0], order[1] = 1, 0
    full = [sizes[order[i]] for i in range(n)]
    out = []
    for i, v in enumerate(vectors):
        shape = [1] * n
        shape[order.index(i)] = -1
        out.append(broadcast_to(reshape(v, shape), full))
    return out


# --- repeat ---------------------------------------------------------------------------------------


@public_api("repeat")
def repeat(input: Any, repeats: Any, axis: Any = None, name: str | None = None) -> Any:  # noqa: A002
    """Repeat each element of `input` along `axis` `repeats` times (one count, or one per
    element); with `axis=None` the input is flattened first.

    >>> import layerflow as tf
    >>> tf.repeat([[1, 2], [3, 4]], repeats=[2, 1], axis=0).numpy()
    array([[1, 2],
           [1, 2],
           [3, 4]], dtype=int32)
    >>> tf.repeat([1, 2], 3).numpy()
    array([1, 1, 1, 2, 2, 2], dtype=int32)
    """
    x = _as_tensor(input)
    if axis is None:
        x, ax = reshape(x, [-1]), 0
    else:
        if x._data.ndim == 0:
            raise errors.InvalidArgumentError(
                None, "repeat", "repeat: a scalar input needs axis=None."
            )
        ax = _norm_axis(axis, x._data.ndim, "repeat")[0]
    n = int(x._data.shape[ax])
    reps = _host_ints(repeats, "repeat", "repeats")
    if reps.ndim > 1 or (reps.ndim == 1 and reps.size not in (1, n)):
        raise errors.InvalidArgumentError(
            None,
            "repeat",
            f"repeat: repeats must be a scalar or have one entry per element along axis {ax} "
            f"({n}), got shape {list(reps.shape)}.",
        )
    if bool(np.any(reps < 0)):
        raise errors.InvalidArgumentError(
            None, "repeat", f"repeat: repeats must be non-negative, got {reps.tolist()}."
        )
    idx = np.repeat(np.arange(n, dtype=np.int64), reps.reshape(-1) if reps.ndim else int(reps))
    return _gather(x, Tensor(x._device.xp.asarray(idx), x._device), ax)


# --- roll -----------------------------------------------------------------------------------------


@op("roll")
def _roll(xp: Any, x: Any, shifts: tuple[int, ...], axes: tuple[int, ...]) -> Any:
    return xp.roll(x, shifts, axes)


@_roll.grad
def _(dy: Any, out: Any, x: Any, shifts: tuple[int, ...], axes: tuple[int, ...]) -> Any:
    return _roll(dy, tuple(-s for s in shifts), axes)


def roll(input: Any, shift: Any, axis: Any, name: str | None = None) -> Any:  # noqa: A002
    """Shift elements along `axis` by `shift`, wrapping around; `shift` and `axis` may be lists
    of equal length (shifts of a repeated axis add up).

    >>> import layerflow as tf
    >>> tf.roll([0, 1, 2, 3, 4], shift=2, axis=0).numpy()
    array([3, 4, 0, 1, 2], dtype=int32)
    """
    x = _as_tensor(input)
    shifts = _host_ints(shift, "roll", "shift").reshape(-1)
    axes = _host_ints(axis, "roll", "axis").reshape(-1)
    if shifts.size != axes.size:
        raise errors.InvalidArgumentError(
            None,
            "roll",
            f"roll: shift and axis must have the same number of entries, got {shifts.tolist()} "
            f"and {axes.tolist()}.",
        )
    norm = _norm_axis(tuple(axes.tolist()), x._data.ndim, "roll") if axes.size else ()
    return _roll(x, tuple(int(s) for s in shifts), tuple(norm))


# --- sequence_mask --------------------------------------------------------------------------------


def sequence_mask(lengths: Any, maxlen: Any = None, dtype: Any = "bool",
                  name: str | None = None) -> Any:  # fmt: skip
    """`mask[i..., j] = j < lengths[i...]`: shape `lengths.shape + [maxlen]`, where `maxlen`
    defaults to the largest length.

    >>> import layerflow as tf
    >>> tf.sequence_mask([1, 3, 2], 4).numpy()
    array([[ True, False, False, False],
           [ True,  True,  True, False],
           [ True,  True, False, False]])
    """
    lens = _as_tensor(lengths)
    if lens._data.dtype.kind not in "iu":
        raise TypeError(f"sequence_mask: lengths must be integers, got {lens.dtype.name}.")
    xp = lens._device.xp
    if maxlen is None:
        n = int(backend.to_host(lens._data).max()) if lens._data.size else 0
    else:
        m = _host_ints(maxlen, "sequence_mask", "maxlen")
        if m.ndim != 0:
            raise errors.InvalidArgumentError(
                None, "sequence_mask", f"sequence_mask: maxlen must be a scalar, got {m.tolist()}."
            )
        n = int(m)
        if n < 0:
            raise errors.InvalidArgumentError(
                None, "sequence_mask", f"sequence_mask: maxlen must be >= 0, got {n}."
            )
    mask = xp.arange(n) < lens._data[..., None]
    return Tensor(mask.astype(dtypes.as_dtype(dtype).np, copy=False), lens._device)


__all__ = ["meshgrid", "repeat", "roll", "sequence_mask"]


# --- tile, pad, reverse ---------------------------------------------------------------------------


@op("tile")
def _tile(xp: Any, x: Any, multiples: tuple[int, ...]) -> Any:
    return xp.tile(x, multiples)


@_tile.grad
def _(dy: Any, out: Any, x: Any, multiples: tuple[int, ...]) -> Any:
    # Each output axis of size m*d is (m, d): sum over the m axes.
    shape = tuple(x._data.shape)
    split = [s for pair in zip(multiples, shape) for s in pair]
    return reduce_sum(reshape(dy, split), tuple(range(0, 2 * len(shape), 2)))


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def tile(input: Any, multiples: Any, name: str | None = None) -> Any:  # noqa: A002
    """Repeat `input` `multiples[i]` times along axis i.

    >>> import layerflow as tf
    >>> tf.tile([[1, 2]], [2, 2]).numpy()
    array([[1, 2, 1, 2],
           [1, 2, 1, 2]], dtype=int32)
    """
    x = _as_tensor(input)
    mult = _shape_tuple(multiples, "tile", "multiples")
    if len(mult) != x._data.ndim:
        raise errors.InvalidArgumentError(
            None,
            "tile",
            f"tile: multiples has {len(mult)} entries but the input has rank {x._data.ndim} "
            f"(shape {x.shape}); give one multiple per axis.",
        )
    return _tile(x, mult)


@op("pad")
def _pad(xp: Any, x: Any, paddings: tuple[tuple[int, int], ...], value: Any) -> Any:
    return xp.pad(x, paddings, mode="constant", constant_values=value)


@_pad.grad
def _(dy: Any, out: Any, x: Any, paddings: Any, value: Any) -> Any:
    key = tuple(slice(b, b + d) for (b, _), d in zip(paddings, x._data.shape))
    return _getitem(dy, key)


def pad(tensor: Any, paddings: Any, mode: str = "CONSTANT", constant_values: Any = 0,
        name: str | None = None) -> Any:  # fmt: skip
    """Pad `tensor` with `paddings[i] = [before, after]` along axis i; mode CONSTANT, REFLECT
    or SYMMETRIC.

    >>> import layerflow as tf
    >>> tf.pad([[1, 2]], [[1, 0], [0, 1]]).numpy()
    array([[0, 0, 0],
           [1, 2, 0]], dtype=int32)
    """
    x = _as_tensor(tensor)
    p = _host_value(paddings)
    if np.asarray(p).size and np.asarray(p).dtype.kind not in "iu":
        raise TypeError(f"pad: paddings must be integers, got {p!r}.")
    try:
        pairs = tuple((int(a), int(b)) for a, b in np.asarray(p).reshape(-1, 2))
    except ValueError:
        raise ValueError(f"pad: paddings must have shape [rank, 2], got {p!r}.") from None
    if len(pairs) != x._data.ndim or any(a < 0 or b < 0 for a, b in pairs):
        raise errors.InvalidArgumentError(
            None,
            "pad",
            f"pad: paddings must be [rank={x._data.ndim}, 2] non-negative values, got "
            f"{[list(q) for q in pairs]}.",
        )
    mode = mode.upper()
    if mode == "CONSTANT":
        return _pad(x, pairs, _host_value(constant_values))
    if mode not in ("REFLECT", "SYMMETRIC"):
        raise ValueError(f"pad: mode must be CONSTANT, REFLECT or SYMMETRIC, got {mode!r}.")
    # Reflection is a gather per axis, so its gradient comes from gather's.
    out = x
    for axis, (before, after) in enumerate(pairs):
        n = x._data.shape[axis]
        limit = n - 1 if mode == "REFLECT" else n
        if before > limit or after > limit:
            raise errors.InvalidArgumentError(
                None, "pad", f"pad: {mode} paddings must be at most {limit} for axis {axis} "
                f"of size {n}, got {[before, after]}.",
            )  # fmt: skip
        if before or after:
            idx = np.pad(np.arange(n), (before, after), mode=mode.lower()).astype(np.int64)
            out = _gather(out, Tensor(x._device.xp.asarray(idx), x._device), axis)
    return out


@op("reverse", may_alias=True)
def _reverse(xp: Any, x: Any, axes: tuple[int, ...]) -> Any:
    return xp.flip(x, axes)


@_reverse.grad
def _(dy: Any, out: Any, x: Any, axes: tuple[int, ...]) -> Any:
    return _reverse(dy, axes)


def reverse(tensor: Any, axis: Any, name: str | None = None) -> Any:
    """`tensor` with the order of elements along each axis in `axis` reversed."""
    x = _as_tensor(tensor)
    return _reverse(x, _norm_axis(axis, x._data.ndim, "reverse"))
