"""Smaller `tf.nn` names: `batch_norm_with_global_normalization`, `isotonic_regression`, and
`tf.nn.experimental.stateless_dropout` / `general_dropout`. All composed from existing ops."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import errors
from layerflow._src.ops.array_ops import constant, transpose
from layerflow._src.ops.compare_ops import cast
from layerflow._src.ops.gather_ops import gather
from layerflow._src.ops.math_ops import _as_tensor, reshape
from layerflow._src.ops.nn_ops import _noise_shape
from layerflow._src.ops.normalization_ops import batch_normalization
from layerflow._src.ops.segment_ops import unsorted_segment_sum
from layerflow._src.ops.stateless_random_ops import stateless_uniform

__all__ = [
    "IsotonicRegression",
    "batch_norm_with_global_normalization",
    "general_dropout",
    "isotonic_regression",
    "stateless_dropout",
]


def batch_norm_with_global_normalization(input: Any, mean: Any, variance: Any, beta: Any,  # noqa: A002
                                         gamma: Any, variance_epsilon: float,
                                         scale_after_normalization: bool,
                                         name: str | None = None) -> Any:  # fmt: skip
    """`batch_normalization` with TF 1's argument order; `gamma` is used only when
    `scale_after_normalization`.

    >>> import layerflow as tf
    >>> tf.nn.batch_norm_with_global_normalization(tf.ones((1, 2)), tf.zeros(2), tf.ones(2),
    ...                                            tf.ones(2), tf.ones(2) * 3, 0.0, True).numpy()
    array([[4., 4.]], dtype=float32)
    """
    return batch_normalization(
        input, mean, variance, beta, gamma if scale_after_normalization else None, variance_epsilon
    )


IsotonicRegression = collections.namedtuple("IsotonicRegression", ["output", "segments"])


def _pava_segments(rows: np.ndarray) -> np.ndarray:
    """Segment ids of the non-increasing least-squares fit of each row (pool adjacent
    violators: merge neighbouring blocks while a later block's mean exceeds an earlier one's)."""
    ids = np.zeros(rows.shape, np.int32)
    for r, row in enumerate(rows):
        sums, counts, starts = [], [], []
        for i, v in enumerate(row.astype(np.float64)):
            sums.append(v)
            counts.append(1)
            starts.append(i)
            while len(sums) > 1 and sums[-1] / counts[-1] > sums[-2] / counts[-2]:
                s, c = sums.pop(), counts.pop()
                starts.pop()
                sums[-1] += s
                counts[-1] += c
        for seg, (st, c) in enumerate(zip(starts, counts)):
            ids[r, st : st + c] = seg
    return ids


def isotonic_regression(inputs: Any, decreasing: bool = True, axis: int = -1) -> Any:
    """The least-squares non-increasing (`decreasing`, the default) or non-decreasing fit of
    every 1-D slice along `axis`: `(output, segments)`, where each output value is the mean of
    its segment of inputs and `segments` are the int32 segment ids (from 0 in each slice).
    Integer inputs give float outputs (float32 up to 16 bits, else float64), as in TF.

    >>> import layerflow as tf
    >>> out, seg = tf.nn.isotonic_regression([1.0, 3.0, 2.0, 4.0], decreasing=False)
    >>> out.numpy(), seg.numpy()
    (array([1. , 2.5, 2.5, 4. ], dtype=float32), array([0, 1, 1, 2], dtype=int32))
    """
    x = _as_tensor(inputs)
    kind, size = x._data.dtype.kind, x._data.dtype.itemsize
    if kind not in "fiu":
        raise TypeError(f"isotonic_regression: inputs must be real numbers, got {x.dtype.name}.")
    if kind != "f":
        x = cast(x, "float32" if size <= 2 else "float64")
    nd = x._data.ndim
    if nd == 0:
        raise ValueError("isotonic_regression: inputs must have at least one dimension.")
    ax = axis + nd if axis < 0 else axis
    if not 0 <= ax < nd:
        raise ValueError(f"isotonic_regression: axis {axis} is out of range for rank {nd}.")
    perm = [i for i in range(nd) if i != ax] + [ax]
    xt = transpose(x, perm) if ax != nd - 1 else x
    shape = tuple(int(v) for v in xt._data.shape)
    n = shape[-1]
    flat = reshape(xt, (-1, n))
    host = backend.to_host(flat._data)
    seg = _pava_segments(host if decreasing else -host)
    # The fit is each segment's mean: a gather of segment sums over counts, so its gradient is
    # the mean of the output gradient over each segment (segments are piecewise constant).
    rows = seg.shape[0]
    gid = (seg + (np.arange(rows) * n)[:, None]).reshape(-1)
    counts = np.bincount(gid, minlength=rows * n).astype(host.dtype)
    gid_t = constant(gid.astype(np.int32))
    sums = unsorted_segment_sum(reshape(flat, (-1,)), gid_t, rows * n)
    means = sums / constant(np.maximum(counts, 1))
    out = reshape(gather(means, gid_t), shape)
    seg_t = constant(seg.reshape(shape))
    if ax != nd - 1:
        inv = list(np.argsort(perm))
        out, seg_t = transpose(out, inv), transpose(seg_t, inv)
    return IsotonicRegression(out, seg_t)


def _check_rate(rate: Any, opname: str) -> float:
    r = float(rate.numpy() if hasattr(rate, "numpy") else rate)
    if not 0 <= r < 1:
        raise ValueError(
            f"{opname}: rate must be a scalar tensor or a float in the range [0, 1), got {r}."
        )
    return r


def _apply_keep(t: Any, random: Any, r: float) -> Any:
    keep = cast(random >= r, t.dtype)
    return t * keep * (1.0 / (1.0 - r))


def stateless_dropout(x: Any, rate: Any, seed: Any, rng_alg: Any = None, noise_shape: Any = None,
                      name: str | None = None) -> Any:  # fmt: skip
    """Dropout whose mask depends only on `seed` (a shape-[2] integer tensor): the same seed
    always drops the same elements. The random numbers are `tf.random.stateless_uniform`'s.

    >>> import layerflow as tf
    >>> a = tf.nn.experimental.stateless_dropout(tf.ones((4, 4)), 0.5, seed=[1, 2])
    >>> b = tf.nn.experimental.stateless_dropout(tf.ones((4, 4)), 0.5, seed=[1, 2])
    >>> bool(tf.reduce_all(a == b)), sorted(set(a.numpy().ravel().tolist())) == [0.0, 2.0]
    (True, True)
    """
    t = _as_tensor(x)
    if t._data.dtype.kind != "f":
        raise ValueError(f"stateless_dropout: x must be a floating-point tensor, got {t.dtype}.")
    r = _check_rate(rate, "stateless_dropout")
    if r == 0:
        return t
    shape = tuple(t._data.shape) if noise_shape is None else _noise_shape(noise_shape, t)
    return _apply_keep(t, stateless_uniform(shape, seed, dtype=t.dtype), r)


def general_dropout(x: Any, rate: Any, uniform_sampler: Any, noise_shape: Any = None,
                    name: str | None = None) -> Any:  # fmt: skip
    """Dropout with the uniform random numbers drawn by `uniform_sampler(shape, dtype)`: an
    element is kept (and scaled by 1 / (1 - rate)) where its number is >= `rate`.

    >>> import layerflow as tf
    >>> tf.nn.experimental.general_dropout(tf.ones((2,)), 0.5,
    ...                                    lambda shape, dtype: tf.constant([0.2, 0.7])).numpy()
    array([0., 2.], dtype=float32)
    """
    t = _as_tensor(x)
    if t._data.dtype.kind != "f":
        raise ValueError(f"general_dropout: x must be a floating-point tensor, got {t.dtype}.")
    r = _check_rate(rate, "general_dropout")
    if r == 0:
        return t
    shape = tuple(t._data.shape) if noise_shape is None else _noise_shape(noise_shape, t)
    random = _as_tensor(uniform_sampler(shape=list(shape), dtype=t.dtype))
    if tuple(random._data.shape) != shape:
        raise errors.InvalidArgumentError(
            None, "general_dropout", f"general_dropout: uniform_sampler returned shape "
            f"{tuple(random._data.shape)}, expected {shape}.",
        )  # fmt: skip
    return _apply_keep(t, cast(random, t.dtype), r)
