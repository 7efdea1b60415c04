"""`tf.random.stateless_parameterized_truncated_normal`: normal values truncated to per-element
[minval, maxval], determined by `seed` alone.

Sampling follows TF's kernel (ParameterizedTruncatedNormal) in standardized units
a = (minval - mean) / stddev, b = (maxval - mean) / stddev, per element (an interval entirely
below zero is mirrored first):
- when the interval holds the bulk of the normal (a < -1.3 <= 0 <= b, or a <= 0 < 1.3 < b),
  plain normal draws, rejected outside [a, b];
- when it is narrow (b - a below Robert's cutoff), uniform draws on [a, b] accepted with
  probability exp((a'^2 - z^2) / 2), a' the point of [a, b] closest to zero;
- otherwise (a tail), Robert's (1995) exponential proposal a + Exp(1) / alpha, accepted with
  probability exp(-(z - alpha)^2 / 2).
The draws come from the seed's Philox stream (as the other stateless ops here), so the values are
not TF's bits; the distribution, shapes, dtypes, errors and determinism are TF's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.array_ops import _shape_tuple
from layerflow._src.ops.random_ops import _num, _place
from layerflow._src.ops.stateless_random_ops import _rng

_OP = "StatelessParameterizedTruncatedNormal"
_NORMAL_BOUND = 1.3  # TF's kStdDevsInsideBoundsToUseRandnSampler


def _params(values: dict[str, Any]) -> tuple[list[np.ndarray], np.dtype]:
    arrays, dtype = [], None
    for i, (name, v) in enumerate(values.items()):
        t = v if hasattr(v, "_data") else convert_to_tensor(v)
        if t.dtype.name not in ("float16", "float32", "float64"):
            raise errors.InvalidArgumentError(
                None,
                _OP,
                f"stateless_parameterized_truncated_normal: {name} has dtype {t.dtype.name}; "
                "means, stddevs, minvals and maxvals must be float16, float32 or float64.",
            )
        if dtype is not None and t.dtype.np != dtype:
            raise errors.InvalidArgumentError(
                None,
                _OP,
                f"stateless_parameterized_truncated_normal: {name} (input #{i + 2}) has dtype "
                f"{t.dtype.name} but means has {np.dtype(dtype).name}; all four parameters "
                f"must share one dtype. Cast it with tf.cast({name}, tf.{np.dtype(dtype).name}).",
            )
        dtype = t.dtype.np
        arrays.append(np.asarray(_num(t), dtype=np.float64))
    return arrays, np.dtype(dtype)


def _standard(gen: np.random.Generator, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One draw per element of the standard normal truncated to [a, b] (TF's three samplers)."""
    flip = b < 0
    a, b = np.where(flip, -b, a), np.where(flip, -a, b)
    out = np.empty(a.shape)
    sqrt_factor = np.sqrt(a * a + 4.0)
    with np.errstate(over="ignore", invalid="ignore"):
        cutoff = 2.0 * np.exp(0.5 + a * (a - sqrt_factor) / 4.0) / (a + sqrt_factor)
    normal = ((a < -_NORMAL_BOUND) & (b >= 0)) | ((b > _NORMAL_BOUND) & (a <= 0))
    uniform = ~normal & (b - a < cutoff)
    todo = np.ones(a.shape, bool)
    while todo.any():
        idx = np.flatnonzero(todo)
        n = idx.size
        ai, bi = a.flat[idx], b.flat[idx]
        z = np.empty(n)
        ok = np.zeros(n, bool)
        m = normal.flat[idx]
        if m.any():
            zn = gen.standard_normal(int(m.sum()))
            z[m] = zn
            ok[m] = (zn >= ai[m]) & (zn <= bi[m])
        m = uniform.flat[idx]
        if m.any():
            lo, hi = ai[m], bi[m]
            zu = lo + (hi - lo) * gen.random(lo.size)
            closest = np.where(lo < 0, 0.0, lo * lo)
            z[m] = zu
            ok[m] = gen.random(lo.size) < np.exp((closest - zu * zu) / 2.0)
        m = ~normal.flat[idx] & ~uniform.flat[idx]
        if m.any():
            lo, hi = ai[m], bi[m]
            alpha = (lo + np.sqrt(lo * lo + 4.0)) / 2.0
            ze = lo - np.log1p(-gen.random(lo.size)) / alpha
            z[m] = ze
            accept = gen.random(lo.size) < np.exp(-((ze - alpha) ** 2) / 2.0)
            ok[m] = accept & (ze <= hi)
        done = idx[ok]
        out.flat[done] = z[ok]
        todo.flat[done] = False
    return np.where(flip, -out, out)


def stateless_parameterized_truncated_normal(shape: Any, seed: Any, means: Any = 0.0,
                                             stddevs: Any = 1.0, minvals: Any = -2.0,
                                             maxvals: Any = 2.0,
                                             name: str | None = None) -> Tensor:  # fmt: skip
    """Normal(means, stddevs) values truncated to [minvals, maxvals], determined by `seed`.

    The four parameters share one float dtype (the result's); they broadcast together, and
    their broadcast shape must be the trailing dimensions of `shape` (TF's rule).

    >>> import layerflow as tf
    >>> x = tf.random.stateless_parameterized_truncated_normal(
    ...     [2, 3], seed=[1, 2], means=[0.0, 10.0, 20.0], minvals=[-1.0, 9.0, 19.0],
    ...     maxvals=[1.0, 11.0, 21.0])
    >>> bool(tf.reduce_all(tf.abs(x - [0.0, 10.0, 20.0]) <= 1.0))
    True
    """
    (mean, std, lo, hi), dtype = _params(
        {"means": means, "stddevs": stddevs, "minvals": minvals, "maxvals": maxvals}
    )
    gen = _rng(seed, _OP)
    size = _shape_tuple(shape)
    try:
        params_shape = np.broadcast_shapes(mean.shape, std.shape, lo.shape, hi.shape)
    except ValueError:
        raise errors.InvalidArgumentError(
            None,
            _OP,
            "stateless_parameterized_truncated_normal: means, stddevs, minvals and maxvals "
            f"have shapes {[list(a.shape) for a in (mean, std, lo, hi)]}, which do not "
            "broadcast together.",
        ) from None
    k = len(params_shape)
    if k > len(size) or (k and tuple(size[-k:]) != tuple(params_shape)):
        raise errors.InvalidArgumentError(
            None,
            _OP,
            f"Shape passed in must end with broadcasted shape: shape {list(size)} does not end "
            f"with the parameters' broadcast shape {list(params_shape)}.",
        )
    mean, std, lo, hi = (np.broadcast_to(v, size) for v in (mean, std, lo, hi))
    bad = ~((std > 0) & (lo < hi) & (np.isfinite(lo) | np.isfinite(hi)))
    if bad.any():
        i = tuple(int(j) for j in np.unravel_index(int(np.flatnonzero(bad)[0]), size))
        raise errors.InvalidArgumentError(
            None,
            _OP,
            f"Invalid parameters: at index {list(i)}, stddev={std[i]}, minval={lo[i]}, "
            f"maxval={hi[i]}; each stddev must be > 0, each minval < its maxval, and at least "
            "one of them finite.",
        )
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        a, b = (lo - mean) / std, (hi - mean) / std
    z = _standard(gen, a, b)
    out = np.clip(mean + std * z, lo, hi)
    return _place(out.astype(dtype))


__all__ = ["stateless_parameterized_truncated_normal"]
