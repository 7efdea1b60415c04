"""Random tensors with TF's seeding rules.

- `set_seed(s)` makes every later sequence of random ops reproducible.
- An op with `seed=` and a global seed draws from its own stream keyed by both seeds: calling it
  again gives new numbers, and the same numbers again after the next `set_seed(s)`.
- With neither seed, numbers come from the process's entropy.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.ops.array_ops import _out_of_memory, _shape_tuple

_DEFAULT_GLOBAL_SEED = 87654321


class _Seeds:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.global_seed: int | None = None
        self.counter = 0
        self.streams: dict[tuple[int, int], np.random.Generator] = {}
        self.entropy = np.random.default_rng()


_seeds = _Seeds()


def set_seed(seed: int | None) -> None:
    """Set the global random seed (`tf.random.set_seed`).

    >>> import layerflow as tf
    >>> tf.random.set_seed(1); a = tf.random.uniform((2,))
    >>> tf.random.set_seed(1); b = tf.random.uniform((2,))
    >>> bool(tf.reduce_all(a == b))
    True
    """
    with _seeds.lock:
        _seeds.global_seed = None if seed is None else int(seed)
        _seeds.counter = 0
        _seeds.streams.clear()


def get_global_seed() -> int | None:
    return _seeds.global_seed


def generator(seed: int | None = None) -> np.random.Generator:
    """The NumPy generator an op with this op-level `seed` draws from."""
    with _seeds.lock:
        g = _seeds.global_seed
        if g is None and seed is None:
            return _seeds.entropy
        if g is None:
            g = _DEFAULT_GLOBAL_SEED
        if seed is None:
            _seeds.counter += 1
            seed = -_seeds.counter
        key = (g, int(seed))
        stream = _seeds.streams.get(key)
        if stream is None:
            stream = _seeds.streams[key] = np.random.default_rng(
                [g & 0xFFFFFFFF, seed & 0xFFFFFFFF]
            )
        return stream


def _float_dtype(dtype: Any, opname: str) -> np.dtype:
    dt = dtypes.as_dtype(dtype)
    if not dt.is_floating:
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: dtype must be a floating type, got {dt.name}."
        )
    return dt.np


def _place(arr: np.ndarray) -> Tensor:
    device = backend.current_device()
    return Tensor(backend.to_device(arr, device), device)


def _num(v: Any) -> Any:
    if isinstance(v, TensorLike):
        return backend.to_host(v._data)
    return v


def drawn_per_call(spec: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """Inside a `tf.function` trace, the decorated random function becomes a step of the
    program that draws anew at every call (never a constant drawn at trace time). `spec(*args,
    **kwargs)` gives the output's ArraySpec when the arguments hold symbolic tensors."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            tracer = backend.flags.tracer if backend.flags.general else None
            if tracer is not None:
                return tracer.random_call(fn, args, kwargs, spec)
            return fn(*args, **kwargs)

        return wrapper

    return decorate


@drawn_per_call()
def uniform(shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = "float32",
            seed: int | None = None, name: str | None = None) -> Tensor:  # fmt: skip
    """Uniform values in [minval, maxval) (maxval defaults to 1 for floats; ints need it)."""
    dt = dtypes.as_dtype(dtype)
    shape = _shape_tuple(shape, "random_uniform")
    try:
        return _uniform(shape, minval, maxval, dt, generator(seed))
    except MemoryError:
        raise _out_of_memory("random_uniform", shape, dt) from None


def _uniform(shape: tuple[int, ...], minval: Any, maxval: Any, dt: Any, gen: Any) -> Tensor:
    if dt.is_integer:
        if maxval is None:
            raise ValueError("random.uniform: an integer dtype needs an explicit maxval.")
        arr = gen.integers(_num(minval), _num(maxval), size=shape, dtype=dt.np)
        return _place(arr)
    if not dt.is_floating:
        raise errors.InvalidArgumentError(
            None, "random_uniform", f"random.uniform: unsupported dtype {dt.name}."
        )
    lo = np.asarray(_num(minval), dtype=dt.np)
    hi = np.asarray(1 if maxval is None else _num(maxval), dtype=dt.np)
    base = gen.random(shape, dtype=np.float32 if dt.np == np.float16 else dt.np)
    return _place((lo + (hi - lo) * base).astype(dt.np, copy=False))


@drawn_per_call()
def normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = "float32",
           seed: int | None = None, name: str | None = None) -> Tensor:  # fmt: skip
    """Normally distributed values."""
    dt = _float_dtype(dtype, "random_normal")
    dims = _shape_tuple(shape, "random_normal")
    gen = generator(seed)
    try:
        z = gen.standard_normal(dims, dtype=np.float64 if dt == np.float64 else np.float32)
        return _place((z * _num(stddev) + _num(mean)).astype(dt, copy=False))
    except MemoryError:
        raise _out_of_memory("random_normal", dims, dt) from None


@drawn_per_call()
def truncated_normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = "float32",
                     seed: int | None = None, name: str | None = None) -> Tensor:  # fmt: skip
    """Normal values redrawn until they lie within two standard deviations of the mean."""
    dt = _float_dtype(dtype, "truncated_normal")
    gen = generator(seed)
    shape = _shape_tuple(shape, "truncated_normal")
    try:
        z = gen.standard_normal(shape)
    except MemoryError:
        raise _out_of_memory("truncated_normal", shape, dt) from None
    bad = np.abs(z) > 2
    while bad.any():
        z[bad] = gen.standard_normal(int(bad.sum()))
        bad = np.abs(z) > 2
    return _place((z * _num(stddev) + _num(mean)).astype(dt))


@drawn_per_call(lambda value, *a, **k: value._data)
def shuffle(value: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """The tensor with its first axis randomly permuted."""
    x = value if isinstance(value, TensorLike) else _place(np.asarray(value))
    perm = generator(seed).permutation(x._data.shape[0])
    xp = x._device.xp
    return Tensor(x._data[xp.asarray(perm)], x._device)


def categorical(logits: Any, num_samples: int, dtype: Any = "int64", seed: int | None = None,
                name: str | None = None) -> Tensor:  # fmt: skip
    """Draw class indices from unnormalized log-probabilities, one row per batch entry."""
    lg = np.asarray(_num(logits), dtype=np.float64)
    p = np.exp(lg - lg.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    gen = generator(seed)
    out = np.stack([gen.choice(p.shape[-1], size=int(num_samples), p=row) for row in p])
    return _place(out.astype(dtypes.as_dtype(dtype).np))
