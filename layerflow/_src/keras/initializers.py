"""`tf.keras.initializers`: objects called as `init(shape, dtype)` that return a starting tensor.

As in Keras 2 (TF 2.10): an initializer built with `seed=` returns the same values on every call;
without a seed it draws from the global stream, so `tf.random.set_seed` makes a run reproducible.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src.framework import dtypes
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops import array_ops, random_ops
from layerflow._src.ops.array_ops import _shape_tuple

from . import serialization

# TF truncates a standard normal at two standard deviations; this is the std of what remains,
# used so that VarianceScaling's truncated draws have the variance asked for.
_TRUNCATED_STD = 0.87962566103423978


def _dtype(dtype: Any, who: str, floating: bool = True) -> dtypes.DType:
    dt = dtypes.as_dtype("float32" if dtype is None else dtype)
    if floating and not dt.is_floating:
        raise ValueError(
            f"{who} draws floating-point values, so dtype must be floating; got {dt.name}. "
            "Use a float dtype such as tf.float32."
        )
    return dt


def _generator(seed: int | None) -> np.random.Generator:
    # A seeded initializer is a pure function of its seed (Keras 2); an unseeded one follows the
    # global seed through random_ops' streams.
    if seed is None:
        return random_ops.generator(None)
    return np.random.default_rng(int(seed) & 0xFFFFFFFFFFFFFFFF)


def _truncated(gen: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    z = gen.standard_normal(shape)
    bad = np.abs(z) > 2
    while bad.any():
        z[bad] = gen.standard_normal(int(bad.sum()))
        bad = np.abs(z) > 2
    return z


def _tensor(arr: np.ndarray, dt: dtypes.DType) -> Any:
    return array_ops.constant(np.asarray(arr).astype(dt.np, copy=False))


def _compute_fans(shape: tuple[int, ...]) -> tuple[float, float]:
    """Keras's fan rule: kernels are (..., fan_in, fan_out), times the receptive field."""
    if len(shape) < 1:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    if len(shape) == 2:
        return float(shape[0]), float(shape[1])
    receptive = float(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer(serialization.Configurable):
    """Base class: subclasses define `__call__(self, shape, dtype=None)` returning a tensor.

    >>> import layerflow as tf
    >>> class Twos(tf.keras.initializers.Initializer):
    ...     def __call__(self, shape, dtype=None):
    ...         return tf.fill(shape, 2.0)
    >>> Twos()((2,)).numpy()
    array([2., 2.], dtype=float32)
    """

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"{type(self).__name__} must define __call__(self, shape, dtype=None) "
            "returning a tensor."
        )

    @classmethod
    def from_config(cls, config: dict) -> Initializer:
        config = dict(config)
        config.pop("dtype", None)  # TF 1-style configs carry a dtype; Keras 2 ignores it
        return cls(**config)


class _Filled(Initializer):
    """One value everywhere, from `_fill(shape, dtype)`; any dtype."""

    _fill: Callable[[tuple[int, ...], dtypes.DType], Any]

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Any:
        dt = _dtype(dtype, type(self).__name__, floating=False)
        return type(self)._fill(_shape_tuple(shape), dt)


class Zeros(_Filled):
    """All zeros (`tf.zeros_initializer()`).

    >>> import layerflow as tf
    >>> tf.keras.initializers.Zeros()((2,)).numpy()
    array([0., 0.], dtype=float32)
    """

    _fill = staticmethod(array_ops.zeros)


class Ones(_Filled):
    """All ones (`tf.ones_initializer()`).

    >>> import layerflow as tf
    >>> tf.keras.initializers.Ones()((2,)).numpy()
    array([1., 1.], dtype=float32)
    """

    _fill = staticmethod(array_ops.ones)


class Constant(Initializer):
    """A constant: a scalar broadcast to the shape, or an array of exactly that many values.

    >>> import layerflow as tf
    >>> tf.keras.initializers.Constant(1)((2, 2)).numpy()
    array([[1., 1.],
           [1., 1.]], dtype=float32)
    """

    def __init__(self, value: Any = 0, **kwargs: Any) -> None:
        kwargs.pop("verify_shape", None)  # TF 1 argument, meaningless in eager mode
        if kwargs:
            raise TypeError(f"Constant got unexpected arguments {sorted(kwargs)}.")
        if isinstance(value, TensorLike):
            value = value.numpy()
        self.value = value

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Any:
        target = _shape_tuple(shape)
        dt = _dtype(dtype, "Constant", floating=False)
        arr = np.asarray(self.value)
        if arr.size != 1 and arr.size != int(np.prod(target)):
            raise ValueError(
                f"Constant initializer holds {arr.size} values ({arr.shape}), which cannot fill "
                f"shape {list(target)}: give a scalar or exactly {int(np.prod(target))} values."
            )
        return array_ops.constant(arr, dtype=dt, shape=target)

    def get_config(self) -> dict:
        value = self.value
        if isinstance(value, np.ndarray | np.generic):
            value = value.tolist()
        return {"value": value}


class _Seeded(Initializer):
    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed

    def get_config(self) -> dict:
        return {"seed": self.seed}


class _MeanStddev(_Seeded):
    """`mean + stddev * z` for standard draws `z` from `_standard(generator, shape)`."""

    _standard: Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None) -> None:
        super().__init__(seed)
        self.mean = mean
        self.stddev = stddev

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Any:
        dt = _dtype(dtype, type(self).__name__)
        z = type(self)._standard(_generator(self.seed), _shape_tuple(shape))
        return _tensor(z * float(self.stddev) + float(self.mean), dt)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomNormal(_MeanStddev):
    """Normal draws (`tf.random_normal_initializer`; Keras's stddev default 0.05).

    >>> import layerflow as tf
    >>> w = tf.random_normal_initializer(mean=1.0, stddev=0.01, seed=0)((100,))
    >>> bool(abs(float(tf.reduce_mean(w)) - 1.0) < 0.01)
    True
    """

    _standard = staticmethod(np.random.Generator.standard_normal)


class RandomUniform(_Seeded):
    """Uniform draws in `[minval, maxval)`; integer dtypes draw integers.

    >>> import layerflow as tf
    >>> w = tf.keras.initializers.RandomUniform(-1.0, 1.0, seed=0)((100,))
    >>> bool(tf.reduce_max(tf.abs(w)) <= 1.0)
    True
    """

    def __init__(
        self, minval: float = -0.05, maxval: float = 0.05, seed: int | None = None
    ) -> None:
        super().__init__(seed)
        self.minval = minval
        self.maxval = maxval

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Any:
        dt = _dtype(dtype, "RandomUniform", floating=False)
        gen = _generator(self.seed)
        shape = _shape_tuple(shape)
        if dt.is_integer:
            return _tensor(gen.integers(int(self.minval), int(self.maxval), size=shape), dt)
        if not dt.is_floating:
            raise ValueError(
                f"RandomUniform cannot draw dtype {dt.name}; use a float or int dtype."
            )
        lo, hi = float(self.minval), float(self.maxval)
        return _tensor(lo + (hi - lo) * gen.random(shape), dt)

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class TruncatedNormal(_MeanStddev):
    """Normal draws redrawn until within two standard deviations of the mean.

    >>> import layerflow as tf
    >>> w = tf.keras.initializers.TruncatedNormal(0.0, 1.0, seed=0)((1000,))
    >>> bool(tf.reduce_max(tf.abs(w)) <= 2.0)
    True
    """

    _standard = staticmethod(_truncated)


class VarianceScaling(_Seeded):
    """Draws scaled to the kernel's fan: variance `scale / n`, `n` from `mode`.

    >>> import layerflow as tf
    >>> init = tf.keras.initializers.VarianceScaling(2.0, "fan_in", "uniform", seed=1)
    >>> bool(tf.reduce_max(tf.abs(init((50, 10)))) <= (3 * 2.0 / 50) ** 0.5)
    True
    """

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTRIBUTIONS = ("normal", "truncated_normal", "untruncated_normal", "uniform")

    def __init__(
        self,
        scale: float = 1.0,
        mode: str = "fan_in",
        distribution: str = "truncated_normal",
        seed: int | None = None,
    ) -> None:
        if scale <= 0.0:
            raise ValueError(f"VarianceScaling: scale must be positive, got {scale!r}.")
        mode = str(mode).lower()
        if mode not in self._MODES:
            raise ValueError(f"VarianceScaling: mode must be one of {self._MODES}, got {mode!r}.")
        distribution = str(distribution).lower()
        if distribution not in self._DISTRIBUTIONS:
            raise ValueError(
                f"VarianceScaling: distribution must be one of {self._DISTRIBUTIONS}, "
                f"got {distribution!r}."
            )
        super().__init__(seed)
        self.scale = scale
        self.mode = mode
        self.distribution = distribution

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Any:
        dt = _dtype(dtype, type(self).__name__)
        shape = _shape_tuple(shape)
        fan_in, fan_out = _compute_fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        gen = _generator(self.seed)
        if self.distribution in ("normal", "truncated_normal"):
            values = _truncated(gen, shape) * (math.sqrt(scale) / _TRUNCATED_STD)
        elif self.distribution == "untruncated_normal":
            values = gen.standard_normal(shape) * math.sqrt(scale)
        else:
            limit = math.sqrt(3.0 * scale)
            values = gen.uniform(-limit, limit, size=shape)
        return _tensor(values, dt)

    def get_config(self) -> dict:
        return {
            "scale": self.scale,
            "mode": self.mode,
            "distribution": self.distribution,
            "seed": self.seed,
        }


class _FixedScaling(VarianceScaling):
    _ARGS: tuple[float, str, str] = (1.0, "fan_in", "truncated_normal")

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(*self._ARGS, seed=seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}


class GlorotUniform(_FixedScaling):
    """Xavier uniform: U(-limit, limit), limit = sqrt(6 / (fan_in + fan_out)); Dense's default.

    >>> import layerflow as tf
    >>> w = tf.keras.initializers.GlorotUniform(seed=0)((4, 8))
    >>> bool(tf.reduce_max(tf.abs(w)) <= (6 / 12) ** 0.5)
    True
    """

    _ARGS = (1.0, "fan_avg", "uniform")


class GlorotNormal(_FixedScaling):
    """Xavier normal: truncated normal with stddev sqrt(2 / (fan_in + fan_out))."""

    _ARGS = (1.0, "fan_avg", "truncated_normal")


class HeNormal(_FixedScaling):
    """He normal: truncated normal with stddev sqrt(2 / fan_in)."""

    _ARGS = (2.0, "fan_in", "truncated_normal")


class HeUniform(_FixedScaling):
    """He uniform: limit sqrt(6 / fan_in)."""

    _ARGS = (2.0, "fan_in", "uniform")


class LecunNormal(_FixedScaling):
    """LeCun normal: truncated normal with stddev sqrt(1 / fan_in)."""

    _ARGS = (1.0, "fan_in", "truncated_normal")


class LecunUniform(_FixedScaling):
    """LeCun uniform: limit sqrt(3 / fan_in)."""

    _ARGS = (1.0, "fan_in", "uniform")


class Orthogonal(_Seeded):
    """A (semi-)orthogonal matrix times `gain`, from the QR decomposition of a normal draw.

    >>> import layerflow as tf, numpy as np
    >>> q = tf.keras.initializers.Orthogonal(seed=0)((3, 3)).numpy()
    >>> bool(np.allclose(q.T @ q, np.eye(3), atol=1e-5))
    True
    """

    def __init__(self, gain: float = 1.0, seed: int | None = None) -> None:
        super().__init__(seed)
        self.gain = gain

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Any:
        dt = _dtype(dtype, "Orthogonal")
        shape = _shape_tuple(shape)
        if len(shape) < 2:
            raise ValueError(
                f"Orthogonal initializer needs a shape of rank >= 2, got {list(shape)}."
            )
        rows = int(np.prod(shape[:-1]))
        cols = shape[-1]
        a = _generator(self.seed).standard_normal((max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(a)
        # Multiplying by the signs of R's diagonal makes Q uniformly distributed (Mezzadri 2007).
        q = q * np.where(np.diag(r) < 0, -1.0, 1.0)
        if rows < cols:
            q = q.T
        return _tensor(float(self.gain) * q.reshape(shape), dt)

    def get_config(self) -> dict:
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    """`gain` times the identity matrix (2-D shapes only).

    >>> import layerflow as tf
    >>> tf.keras.initializers.Identity(2.0)((2, 2)).numpy()
    array([[2., 0.],
           [0., 2.]], dtype=float32)
    """

    def __init__(self, gain: float = 1.0) -> None:
        self.gain = gain

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Any:
        dt = _dtype(dtype, "Identity")
        shape = _shape_tuple(shape)
        if len(shape) != 2:
            raise ValueError(f"Identity initializer needs a 2-D shape, got {list(shape)}.")
        return _tensor(float(self.gain) * np.eye(*shape), dt)

    def get_config(self) -> dict:
        return {"gain": self.gain}


# Keras's lower-case aliases (classes, so `zeros()` builds an initializer).
zeros = Zeros
ones = Ones
constant = Constant
random_normal = RandomNormal
random_uniform = RandomUniform
truncated_normal = TruncatedNormal
glorot_uniform = GlorotUniform
glorot_normal = GlorotNormal
he_normal = HeNormal
he_uniform = HeUniform
lecun_normal = LecunNormal
lecun_uniform = LecunUniform
orthogonal = Orthogonal
identity = Identity
variance_scaling = VarianceScaling

# TF's top-level names (`tf.zeros_initializer()`, ...).
zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_normal_initializer = RandomNormal
random_uniform_initializer = RandomUniform
truncated_normal_initializer = TruncatedNormal
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal

_MODULE_OBJECTS = {
    name: obj
    for name, obj in dict(globals()).items()
    if inspect.isclass(obj) and issubclass(obj, Initializer) and not name.startswith("_")
}
_MODULE_OBJECTS.update(
    {"uniform": RandomUniform, "normal": RandomNormal, "one": Ones, "zero": Zeros}
)


def serialize(initializer: Initializer) -> dict:
    """`{"class_name": ..., "config": ...}` for an initializer.

    >>> import layerflow as tf
    >>> tf.keras.initializers.serialize(tf.keras.initializers.GlorotUniform(seed=3))
    {'class_name': 'GlorotUniform', 'config': {'seed': 3}}
    """
    return serialization.serialize_keras_object(initializer)


def deserialize(config: Any, custom_objects: dict | None = None) -> Initializer:
    """An initializer from `serialize`'s output or a name such as `"glorot_uniform"`."""
    return serialization.deserialize_keras_object(
        config, _MODULE_OBJECTS, custom_objects, printable_module_name="initializer"
    )


def get(identifier: Any) -> Any:
    """An initializer from None, a name, a config dict, a class, an instance or a callable.

    >>> import layerflow as tf
    >>> type(tf.keras.initializers.get("glorot_uniform")).__name__
    'GlorotUniform'
    """
    return serialization.get_object(
        identifier,
        deserialize,
        "initializer",
        "Pass a name such as 'glorot_uniform', an Initializer instance, a config dict, or a "
        "callable(shape, dtype).",
        instantiate_classes=True,
    )
