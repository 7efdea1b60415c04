"""Window ops beyond plain pooling: `max_pool_with_argmax`, morphological `dilation2d` /
`erosion2d`, fractional max/average pooling, and `tf.extract_volume_patches`.

All are composed from strided slices, pads, maxima, means and concatenations, so their gradients
come from those ops (a maximum's gradient goes to the maximal element; ties share it).
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes, errors
from layerflow._src.ops import conv_kernels as _k
from layerflow._src.ops import random_ops
from layerflow._src.ops.array_ops import concat, constant, stack
from layerflow._src.ops.manip_ops import pad, reverse
from layerflow._src.ops.math_ops import _as_tensor, maximum, reduce_max, reduce_mean, reshape
from layerflow._src.ops.pool_ops import max_pool2d

__all__ = [
    "dilation2d",
    "erosion2d",
    "extract_volume_patches",
    "fractional_avg_pool",
    "fractional_max_pool",
    "max_pool_with_argmax",
]


def _lowest(dtype: Any) -> float:
    return float(np.finfo(dtype).min) if np.dtype(dtype).kind == "f" else 0.0


def _taps(x: Any, k: tuple, s: tuple, d: tuple, padding: Any, fill: float, opname: str) -> tuple:
    """Every kernel tap's strided view of the padded input, in row-major tap order."""
    spatial = tuple(int(v) for v in x._data.shape[1:-1])
    outs, pads = _k.geometry(spatial, k, s, d, padding, opname)
    if any(b or a for b, a in pads):
        x = pad(x, [[0, 0], *[list(p) for p in pads], [0, 0]], constant_values=fill)
    views = []
    for tap in itertools.product(*(range(kk) for kk in k)):
        key = tuple(slice(t * dd, t * dd + (o - 1) * ss + 1, ss)
                    for t, dd, o, ss in zip(tap, d, outs, s))  # fmt: skip
        views.append(x[(slice(None), *key)])
    return views, outs, pads


def max_pool_with_argmax(
    input: Any,
    ksize: Any,
    strides: Any,
    padding: str,  # noqa: A002
    data_format: str = "NHWC",
    output_dtype: Any = "int64",
    include_batch_in_index: bool = False,
    name: str | None = None,
) -> Any:
    """(max_pool2d output, the flat index of each maximum): `(y * width + x) * channels + c`,
    plus `b * height * width * channels` with `include_batch_in_index`; the first maximum of a
    window in row-major order wins, as TF.

    >>> import layerflow as tf
    >>> x = tf.reshape(tf.range(16.0), (1, 4, 4, 1))
    >>> out, arg = tf.nn.max_pool_with_argmax(x, 2, 2, "VALID")
    >>> arg[0, :, :, 0].numpy()
    array([[ 5,  7],
           [13, 15]])
    """
    if str(data_format).upper() != "NHWC":
        raise ValueError(
            f"max_pool_with_argmax: data_format must be 'NHWC' (as in TF), got {data_format!r}."
        )
    x = _as_tensor(input)
    if x._data.ndim != 4:
        raise errors.InvalidArgumentError(
            None, "max_pool_with_argmax", "max_pool_with_argmax needs an input [N, H, W, C], "
            f"got shape {tuple(x._data.shape)}.",
        )  # fmt: skip
    odt = dtypes.as_dtype(output_dtype)
    if odt.name not in ("int32", "int64"):
        raise TypeError(f"max_pool_with_argmax: output_dtype must be int32 or int64, got {odt}.")
    k = _k.ints(ksize, 2, "ksize", "max_pool_with_argmax")
    s = _k.ints(strides, 2, "strides", "max_pool_with_argmax")
    out = max_pool2d(x, k, s, padding)
    # The indices: a host computation over the window taps (not differentiable, as in TF).
    host = backend.to_host(x._data)
    n, h, w, c = host.shape
    outs, pads = _k.geometry((h, w), k, s, (1, 1), str(padding).upper(), "max_pool_with_argmax")
    best = np.full((n, *outs, c), -np.inf)
    arg = np.zeros((n, *outs, c), np.int64)
    oy, ox = np.meshgrid(np.arange(outs[0]), np.arange(outs[1]), indexing="ij")
    for dy, dx in itertools.product(range(k[0]), range(k[1])):
        yy, xx = oy * s[0] + dy - pads[0][0], ox * s[1] + dx - pads[1][0]
        ok = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
        vals = np.where(ok[None, :, :, None], host[:, yy.clip(0, h - 1), xx.clip(0, w - 1)],
                        -np.inf)  # fmt: skip
        better = vals > best
        best = np.where(better, vals, best)
        flat = ((yy * w + xx) * c)[None, :, :, None] + np.arange(c)
        arg = np.where(better, np.broadcast_to(flat, arg.shape), arg)
    if include_batch_in_index:
        arg = arg + (np.arange(n) * h * w * c)[:, None, None, None]
    return out, constant(arg.astype(odt.as_numpy_dtype))


def _morph_args(x: Any, f: Any, strides: Any, data_format: Any, dilations: Any,
                opname: str) -> tuple:  # fmt: skip
    if str(data_format).upper() != "NHWC":
        raise ValueError(f"{opname}: data_format must be 'NHWC' (as in TF), got {data_format!r}.")
    if x._data.ndim != 4 or f._data.ndim != 3 or x._data.shape[3] != f._data.shape[2]:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname} needs input [N, H, W, C] and filters [FH, FW, C], got "
            f"shapes {tuple(x._data.shape)} and {tuple(f._data.shape)}.",
        )  # fmt: skip
    return (_k.ints(strides, 2, "strides", opname), _k.ints(dilations, 2, "dilations", opname))


def dilation2d(input: Any, filters: Any, strides: Any, padding: str,  # noqa: A002
               data_format: str = "NHWC", dilations: Any = (1, 1, 1, 1),
               name: str | None = None) -> Any:  # fmt: skip
    """Grayscale morphological dilation: the max over each window of `input + filters`
    (`filters` [FH, FW, C]; padded positions never win).

    >>> import layerflow as tf
    >>> x = tf.reshape(tf.range(9.0), (1, 3, 3, 1))
    >>> tf.nn.dilation2d(x, tf.zeros((2, 2, 1)), [1, 1, 1, 1], "VALID", "NHWC",
    ...                  [1, 1, 1, 1])[0, :, :, 0].numpy()
    array([[4., 5.],
           [7., 8.]], dtype=float32)
    """
    x, f = _as_tensor(input), _as_tensor(filters)
    s, d = _morph_args(x, f, strides, data_format, dilations, "dilation2d")
    k = tuple(int(v) for v in f._data.shape[:2])
    views, _, _ = _taps(x, k, s, d, str(padding).upper(), _lowest(x._data.dtype), "dilation2d")
    taps = itertools.product(range(k[0]), range(k[1]))
    return functools.reduce(maximum, [v + f[t] for v, t in zip(views, taps)])


def erosion2d(value: Any, filters: Any, strides: Any, padding: str, data_format: str = "NHWC",
              dilations: Any = (1, 1, 1, 1), name: str | None = None) -> Any:  # fmt: skip
    """Grayscale morphological erosion: the min over each window of `value - filters`
    (reflected), i.e. `-dilation2d(-value, reverse(filters))`.

    >>> import layerflow as tf
    >>> x = tf.reshape(tf.range(1.0, 10.0), (1, 3, 3, 1))
    >>> tf.nn.erosion2d(x, tf.zeros((2, 2, 1)), [1, 1, 1, 1], "VALID", "NHWC",
    ...                 [1, 1, 1, 1])[0, :, :, 0].numpy()
    array([[1., 2.],
           [4., 5.]], dtype=float32)
    """
    f = _as_tensor(filters)
    return -dilation2d(-_as_tensor(value), reverse(f, [0, 1]), strides, padding, data_format,
                       dilations)  # fmt: skip


def _pooling_sequence(n_in: int, n_out: int, pseudo_random: bool, rng: Any) -> np.ndarray:
    """TF's cumulative pooling sequence (fractional_pool_common.cc): steps of k or k + 1,
    k = n_in // n_out, either a shuffled multiset (random) or ceil(alpha * (i + u)) with
    u uniform in (0, u_max) (pseudo-random, Graham's paper)."""
    k = n_in // n_out
    if n_in % n_out == 0:
        diff = np.full(n_out, k, np.int64)
    elif pseudo_random:
        alpha = n_in / n_out
        u_max = min((k + 2) / alpha - 1, (n_in + 1 - k) / alpha - (n_out - 1))
        u = rng.random() * u_max
        cum = np.empty(n_out + 1, np.int64)
        cum[0], cum[n_out] = 1, n_in + 1
        for i in range(1, n_out):
            cum[i] = int(math.ceil(alpha * (i + u)))
        diff = np.diff(cum)
    else:
        diff = np.full(n_out, k, np.int64)
        diff[: n_in % n_out] += 1
        rng.shuffle(diff)
    return np.concatenate([[0], np.cumsum(diff)]).astype(np.int64)


def _fractional(kind: str, value: Any, pooling_ratio: Any, pseudo_random: bool,
                overlapping: bool, seed: int, opname: str) -> tuple:  # fmt: skip
    x = _as_tensor(value)
    if x._data.ndim != 4:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname} needs an input [N, H, W, C], got {tuple(x._data.shape)}."
        )
    ratio = (
        [float(pooling_ratio)] if np.ndim(pooling_ratio) == 0 else list(map(float, pooling_ratio))
    )
    if len(ratio) == 1:
        ratio = [1.0, ratio[0], ratio[0], 1.0]
    elif len(ratio) == 2:
        ratio = [1.0, *ratio, 1.0]
    if len(ratio) != 4 or ratio[0] != 1.0 or ratio[3] != 1.0 or min(ratio[1:3]) < 1.0:
        raise ValueError(
            f"{opname}: pooling_ratio must be a float >= 1, or 2 such, or 4 with the batch and "
            f"channel entries 1.0; got {pooling_ratio!r}."
        )
    h, w = int(x._data.shape[1]), int(x._data.shape[2])
    oh, ow = int(h // ratio[1]), int(w // ratio[2])
    if oh < 1 or ow < 1:
        raise ValueError(f"{opname}: pooling_ratio {ratio} leaves no output for input {h}x{w}.")
    if seed:
        # A fixed seed gives the same sequences on every call (TF's deterministic mode).
        g = random_ops.get_global_seed()
        rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, 0 if g is None else g & 0xFFFFFFFF])
    else:
        rng = random_ops.generator(None)
    rows = _pooling_sequence(h, oh, pseudo_random, rng)
    cols = _pooling_sequence(w, ow, pseudo_random, rng)
    red = reduce_max if kind == "max" else reduce_mean

    def pool_axis(t: Any, seq: np.ndarray, axis: int, size: int) -> Any:
        parts = []
        for i in range(len(seq) - 1):
            hi = min(int(seq[i + 1]) + (1 if overlapping else 0), size)
            key = [slice(None)] * 4
            key[axis] = slice(int(seq[i]), hi)
            parts.append(red(t[tuple(key)], axis=axis, keepdims=True))
        return concat(parts, axis=axis)

    y = pool_axis(pool_axis(x, rows, 1, h), cols, 2, w)
    return y, constant(rows), constant(cols)


def fractional_max_pool(
    value: Any,
    pooling_ratio: Any,
    pseudo_random: bool = False,
    overlapping: bool = False,
    seed: int = 0,
    name: str | None = None,
) -> tuple:
    """Max pooling by a non-integer ratio (Graham, 2014): `(output, row_pooling_sequence,
    col_pooling_sequence)`. Regions are k or k + 1 rows/cols wide (k = floor(ratio)), in a
    random order or (`pseudo_random`) a pseudo-random sequence; `overlapping` shares the
    boundary row/col with the next region. A non-zero `seed` gives the same sequences on every
    call. The sequences follow TF's rules; the random draws are layerflow's own (NumPy), so the
    exact sequences differ from TF's Philox ones.

    >>> import layerflow as tf
    >>> x = tf.reshape(tf.range(16.0), (1, 4, 4, 1))
    >>> y, rows, cols = tf.nn.fractional_max_pool(x, [1.0, 2.0, 2.0, 1.0], seed=1)
    >>> y[0, :, :, 0].numpy(), rows.numpy()
    (array([[ 5.,  7.],
           [13., 15.]], dtype=float32), array([0, 2, 4]))
    """
    return _fractional("max", value, pooling_ratio, pseudo_random, overlapping, seed,
                       "fractional_max_pool")  # fmt: skip


def fractional_avg_pool(
    value: Any,
    pooling_ratio: Any,
    pseudo_random: bool = False,
    overlapping: bool = False,
    seed: int = 0,
    name: str | None = None,
) -> tuple:
    """Average pooling by a non-integer ratio; see `fractional_max_pool`.

    >>> import layerflow as tf
    >>> x = tf.reshape(tf.range(16.0), (1, 4, 4, 1))
    >>> tf.nn.fractional_avg_pool(x, [1.0, 2.0, 2.0, 1.0], seed=1)[0][0, :, :, 0].numpy()
    array([[ 2.5,  4.5],
           [10.5, 12.5]], dtype=float32)
    """
    return _fractional("avg", value, pooling_ratio, pseudo_random, overlapping, seed,
                       "fractional_avg_pool")  # fmt: skip


def extract_volume_patches(input: Any, ksizes: Any, strides: Any, padding: str,  # noqa: A002
                           name: str | None = None) -> Any:  # fmt: skip
    """The `ksizes` patches of `input` [N, D, H, W, C] as [N, OD, OH, OW, KD * KH * KW * C]
    (patch values in (kd, kh, kw, c) order; SAME pads with zeros).

    >>> import layerflow as tf
    >>> tf.extract_volume_patches(tf.ones((1, 4, 4, 4, 2)), [1, 2, 2, 2, 1], [1, 2, 2, 2, 1],
    ...                           "VALID").shape
    TensorShape([1, 2, 2, 2, 16])
    """
    x = _as_tensor(input)
    if x._data.ndim != 5:
        raise errors.InvalidArgumentError(
            None, "extract_volume_patches", "extract_volume_patches needs an input "
            f"[N, D, H, W, C], got shape {tuple(x._data.shape)}.",
        )  # fmt: skip
    k = _k.ints(ksizes, 3, "ksizes", "extract_volume_patches")
    s = _k.ints(strides, 3, "strides", "extract_volume_patches")
    pad_s = str(padding).upper()
    if pad_s not in ("SAME", "VALID"):
        raise ValueError(
            f"extract_volume_patches: padding must be 'SAME' or 'VALID', got {padding!r}."
        )
    views, outs, _ = _taps(x, k, s, (1, 1, 1), pad_s, 0.0, "extract_volume_patches")
    y = stack(views, axis=4)  # [N, OD, OH, OW, taps, C]
    return reshape(y, (int(x._data.shape[0]), *outs, -1))
