"""`tf.random.stateless_*`, `split`, `fold_in`, `gamma` and `poisson`.

A stateless op's result depends only on its `seed` (a shape-[2] integer tensor), never on the
global seed or on earlier calls: the seed keys a Philox counter-based generator, the algorithm TF
uses. The numbers are not bit-identical to TF's; shapes, dtypes, argument checks and the
determinism contract are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.ops.array_ops import _shape_tuple
from layerflow._src.ops.random_ops import _num, _place, generator

_MASK64 = (1 << 64) - 1
_UNIFORM_DTYPES = ("float16", "bfloat16", "float32", "float64", "int32", "int64", "uint32",
                   "uint64")  # fmt: skip


def _seed(seed: Any, opname: str) -> tuple[np.ndarray, np.dtype]:
    arr = np.asarray(_num(seed))
    if arr.dtype.kind not in "iu":
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: seed must be an int32 or int64 tensor, got {arr.dtype}."
        )
    if arr.shape != (2,):
        dims = ",".join(str(d) for d in arr.shape)
        raise errors.InvalidArgumentError(None, opname, f"seed must have shape [2], not [{dims}]")
    dt = arr.dtype if isinstance(seed, TensorLike) else np.dtype(np.int32)
    return arr.astype(np.int64), dt


def _rng(seed: Any, opname: str) -> np.random.Generator:
    s, _ = _seed(seed, opname)
    key = [int(s[0]) & _MASK64, int(s[1]) & _MASK64]
    return np.random.Generator(np.random.Philox(key=key))


def _float(dtype: Any, opname: str) -> np.dtype:
    dt = dtypes.as_dtype(dtype)
    if not dt.is_floating:
        raise TypeError(f"{opname}: dtype must be a floating point type, got {dt.name}.")
    return dt.np


def stateless_uniform(shape: Any, seed: Any, minval: Any = 0, maxval: Any = None,
                      dtype: Any = "float32", name: str | None = None,
                      alg: Any = "auto_select") -> Tensor:  # fmt: skip
    """Uniform values in [minval, maxval) determined by `seed` alone.

    For an integer dtype, `minval` and `maxval` are both given, or both None for the full range.

    >>> import layerflow as tf
    >>> a = tf.random.stateless_uniform([3], seed=[1, 2])
    >>> bool(tf.reduce_all(a == tf.random.stateless_uniform([3], seed=[1, 2])))
    True
    """
    dt = dtypes.as_dtype(dtype)
    if dt.name not in _UNIFORM_DTYPES:
        raise ValueError(
            f"Argument `dtype` got invalid value {dt!r}. Accepted dtypes are "
            f"({', '.join('tf.' + d for d in _UNIFORM_DTYPES)})."
        )
    gen = _rng(seed, "stateless_random_uniform")
    size = _shape_tuple(shape)
    if dt.is_integer:
        if (minval is None) != (maxval is None):
            raise ValueError(
                f"For integer `dtype` argument {dt!r}, argument `minval` and `maxval` must be "
                f"both None or not None. Got `minval`={minval} and `maxval`={maxval}."
            )
        if minval is None:
            info = np.iinfo(dt.np)
            return _place(gen.integers(info.min, info.max, size=size, dtype=dt.np, endpoint=True))
        return _place(gen.integers(_num(minval), _num(maxval), size=size, dtype=dt.np))
    lo = np.asarray(_num(minval), dtype=np.float64)
    hi = np.asarray(1.0 if maxval is None else _num(maxval), dtype=np.float64)
    return _place((lo + (hi - lo) * gen.random(size)).astype(dt.np))


def stateless_normal(shape: Any, seed: Any, mean: Any = 0.0, stddev: Any = 1.0,
                     dtype: Any = "float32", name: str | None = None,
                     alg: Any = "auto_select") -> Tensor:  # fmt: skip
    """Normal values determined by `seed` alone."""
    dt = _float(dtype, "stateless_normal")
    z = _rng(seed, "stateless_random_normal").standard_normal(_shape_tuple(shape))
    return _place((z * _num(stddev) + _num(mean)).astype(dt))


def stateless_truncated_normal(shape: Any, seed: Any, mean: Any = 0.0, stddev: Any = 1.0,
                               dtype: Any = "float32", name: str | None = None,
                               alg: Any = "auto_select") -> Tensor:  # fmt: skip
    """Normal values within two standard deviations of the mean, determined by `seed` alone."""
    dt = _float(dtype, "stateless_truncated_normal")
    gen = _rng(seed, "stateless_truncated_normal")
    z = gen.standard_normal(_shape_tuple(shape))
    bad = np.abs(z) > 2
    while bad.any():
        z[bad] = gen.standard_normal(int(bad.sum()))
        bad = np.abs(z) > 2
    return _place((z * _num(stddev) + _num(mean)).astype(dt))


def stateless_categorical(logits: Any, num_samples: Any, seed: Any, dtype: Any = "int64",
                          name: str | None = None) -> Tensor:  # fmt: skip
    """`num_samples` class indices per row of `logits` ([batch, classes]), from `seed` alone."""
    lg = np.asarray(_num(logits), dtype=np.float64)
    if lg.ndim != 2:
        raise errors.InvalidArgumentError(
            None, "stateless_categorical",
            f"logits should be a matrix [batch_size, num_classes], got shape {lg.shape}.",
        )  # fmt: skip
    out_dt = dtypes.as_dtype(dtype)
    if out_dt.name not in ("int32", "int64"):
        raise TypeError(f"stateless_categorical: dtype must be int32 or int64, got {out_dt.name}.")
    gen = _rng(seed, "stateless_categorical")
    p = np.exp(lg - lg.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    n = int(_num(num_samples))
    out = np.stack([gen.choice(p.shape[1], size=n, p=row) for row in p]) if len(p) else None
    out = np.zeros((0, n)) if out is None else out
    return _place(out.astype(out_dt.np))


def _param(value: Any, shape: tuple[int, ...], what: str, opname: str) -> np.ndarray:
    arr = np.asarray(_num(value), dtype=np.float64)
    try:
        return np.broadcast_to(arr, shape)
    except ValueError:
        raise errors.InvalidArgumentError(
            None, opname,
            f"{opname}: shape {list(shape)} must end with the shape of {what}, "
            f"{list(arr.shape)}.",
        ) from None  # fmt: skip


def stateless_poisson(shape: Any, seed: Any, lam: Any, dtype: Any = "int32",
                      name: str | None = None) -> Tensor:  # fmt: skip
    """Poisson counts with rates `lam` (broadcast to `shape`'s trailing dimensions)."""
    size = _shape_tuple(shape)
    rates = _param(lam, size, "lam", "stateless_poisson")
    out = _rng(seed, "stateless_poisson").poisson(rates)
    return _place(out.astype(dtypes.as_dtype(dtype).np))


def stateless_gamma(shape: Any, seed: Any, alpha: Any, beta: Any = None, dtype: Any = "float32",
                    name: str | None = None) -> Tensor:  # fmt: skip
    """Gamma(alpha, beta) values (beta is the rate) broadcast to `shape`, from `seed` alone."""
    dt = _float(dtype, "stateless_gamma")
    size = _shape_tuple(shape)
    a = _param(alpha, size, "alpha", "stateless_gamma")
    b = _param(1.0 if beta is None else beta, size, "beta", "stateless_gamma")
    return _place((_rng(seed, "stateless_gamma").standard_gamma(a) / b).astype(dt))


def stateless_binomial(shape: Any, seed: Any, counts: Any, probs: Any,
                       output_dtype: Any = "int32", name: str | None = None) -> Tensor:  # fmt: skip
    """Binomial(counts, probs) counts broadcast to `shape`, from `seed` alone."""
    size = _shape_tuple(shape)
    n = _param(counts, size, "counts", "stateless_binomial").astype(np.int64)
    p = _param(probs, size, "probs", "stateless_binomial")
    out = _rng(seed, "stateless_binomial").binomial(n, p)
    return _place(out.astype(dtypes.as_dtype(output_dtype).np))


def _new_seeds(seed: Any, num: int, salt: int, opname: str) -> Tensor:
    s, dt = _seed(seed, opname)
    gen = np.random.Generator(np.random.Philox(key=[int(s[0]) & _MASK64, int(s[1]) & _MASK64],
                                               counter=[salt & _MASK64, 0, 0, 0]))  # fmt: skip
    info = np.iinfo(dt)
    out = gen.integers(info.min, info.max, size=(num, 2), dtype=dt, endpoint=True)
    return _place(out)


def split(seed: Any, num: int = 2, alg: Any = "auto_select") -> Tensor:
    """`num` new seeds, shape [num, 2], derived from `seed` (its dtype kept).

    >>> import layerflow as tf
    >>> tf.random.split([1, 2], 3).shape
    TensorShape([3, 2])
    """
    return _new_seeds(seed, int(num), 0, "split")


def fold_in(seed: Any, data: Any, alg: Any = "auto_select") -> Tensor:
    """A new seed, shape [2], derived from `seed` and the integer `data`."""
    d = int(_num(data))
    return _new_seeds(seed, 1, (d << 1) | 1, "fold_in")[0]


def gamma(shape: Any, alpha: Any, beta: Any = None, dtype: Any = "float32",
          seed: int | None = None, name: str | None = None) -> Tensor:  # fmt: skip
    """Gamma samples of shape `shape + broadcast(alpha, beta).shape` (beta is the rate);
    TF's op-seed/global-seed rules."""
    dt = _float(dtype, "random_gamma")
    a = np.asarray(_num(alpha), dtype=np.float64)
    b = np.asarray(1.0 if beta is None else _num(beta), dtype=np.float64)
    a, b = np.broadcast_arrays(a, b)
    size = _shape_tuple(shape) + a.shape
    return _place((generator(seed).standard_gamma(a, size=size) / b).astype(dt))


def poisson(shape: Any, lam: Any, dtype: Any = "float32", seed: int | None = None,
            name: str | None = None) -> Tensor:  # fmt: skip
    """Poisson samples of shape `shape + lam.shape`; TF's op-seed/global-seed rules."""
    dt = dtypes.as_dtype(dtype)
    if not (dt.is_floating or dt.name in ("int32", "int64")):
        raise TypeError(f"random.poisson: dtype must be floating, int32 or int64, got {dt.name}.")
    rates = np.asarray(_num(lam), dtype=np.float64)
    size = _shape_tuple(shape) + rates.shape
    return _place(generator(seed).poisson(rates, size=size).astype(dt.np))
