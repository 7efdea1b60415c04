"""The optimizers' kernels: small gradient-free ops that compute an update from tensors.

Each op takes the gradient and the current slot values (Variables read in place, never
copied) and returns the new slot values and the variable's increment as tensors; the
optimizer writes them through the Variable (`assign`, `assign_add`, `assign_sub`), so every
state change is an op followed by a Variable write, which a traced `tf.function` sees and a
`MirroredVariable` applies to every copy. Per-step scalars (the learning rate, Adam's
bias-corrected rate, weight decay's factor) come in as a float64 `step_scalars` vector, a
tensor input, so a traced step reads them at every call. The formulas are Keras 2.11+'s, in
the same float order as the former in-place updates, so results are unchanged bit for bit.

No op here has a gradient: an optimizer step is never differentiated (a tape that watches a
slot records nothing).

>>> import layerflow as tf
>>> m, delta = sgd_momentum(tf.constant([1.0]), tf.Variable([0.5]), 0.1, 0.9, False)
>>> m.numpy(), delta.numpy()
(array([0.35], dtype=float32), array([0.35], dtype=float32))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import op
from layerflow._src.framework.convert import to_array
from layerflow._src.framework.tensor import ShapedValue, Tensor, TensorLike

__all__ = [
    "adagrad",
    "adam_delta",
    "adam_moments",
    "as_gradient",
    "clip_gradients",
    "rmsprop",
    "running_max",
    "scale_add",
    "scale_by",
    "select_by",
    "sgd_delta",
    "sgd_momentum",
    "slot_like",
    "step_scalar",
    "step_scalars",
    "Scratch",
]


# --- slots and gradients --------------------------------------------------------------------------
def slot_like(ref: Any, initial_value: Any = None, shape: Any = None, fill: float | None = None
              ) -> Tensor:  # fmt: skip
    """A fresh tensor on `ref`'s device with its dtype: zeros (or `fill`) of `ref`'s shape (or
    `shape`), or `initial_value` (broadcast to `shape` when given), copied."""
    device, dt = ref._device, ref._data.dtype
    xp = device.xp
    if initial_value is None:
        shp = tuple(ref._data.shape) if shape is None else tuple(shape)
        value = xp.zeros(shp, dtype=dt) if fill is None else xp.full(shp, fill, dtype=dt)
        return Tensor(value, device)
    value = to_array(initial_value, None, device) if isinstance(initial_value, TensorLike) else (
        backend.to_device(np.asarray(initial_value, dtype=dt), device)
    )  # fmt: skip
    if shape is not None:
        value = xp.broadcast_to(value, tuple(shape))
    return Tensor(xp.array(value, dtype=dt, copy=True), device)


def as_gradient(value: Any, variable: Any) -> Tensor:
    """A gradient given as a Python or NumPy value, as a tensor of `variable`'s dtype on its
    device (a tensor, or a symbolic one of a tf.function trace, passes unchanged)."""
    if isinstance(value, ShapedValue):
        return value
    device = variable._device
    return Tensor(backend.to_device(np.asarray(value, dtype=variable._data.dtype), device), device)


# --- clipping -------------------------------------------------------------------------------------
@op("clip_gradient_by_value")
def _clip_value(xp: Any, g: Any, c: float) -> Any:
    return xp.clip(g, -c, c)


@op("clip_gradient_by_norm")
def _clip_norm(xp: Any, g: Any, c: float) -> Any:
    norm = float(xp.sqrt(xp.sum(g * g)))
    return g * (c / norm) if norm > c else g


@op("clip_gradients_by_global_norm", list_input=True, multi_out=True, same_dtype=False)
def _clip_global(xp: Any, grads: list[Any], c: float) -> Any:
    total = math.sqrt(sum(float((a * a).sum()) for a in grads))
    if total > c:
        scale = c / total
        return [a * a.dtype.type(scale) for a in grads]
    return list(grads)


def clip_gradients(grads: Sequence[Any], clipvalue: float | None, clipnorm: float | None,
                   global_clipnorm: float | None) -> list[Any]:  # fmt: skip
    """Keras's gradient clipping: by value, by each gradient's norm, or by their global norm
    (at most one is set; with none, the gradients unchanged)."""
    if clipvalue is not None:
        return [_clip_value(g, float(clipvalue)) for g in grads]
    if clipnorm is not None:
        return [_clip_norm(g, float(clipnorm)) for g in grads]
    if global_clipnorm is not None and grads:
        return list(_clip_global(list(grads), float(global_clipnorm)))
    return list(grads)


# --- update rules ---------------------------------------------------------------------------------
class Scratch:
    """One reusable array per variable for an update's temporary (owned by one optimizer).

    A fresh parameter-sized temporary each step costs more than the arithmetic (the allocator
    maps new pages for large arrays); an op given a Scratch writes its result into the same
    array every step, and the caller consumes it (a Variable write) before the next step.
    """

    __slots__ = ("_array",)

    def __init__(self) -> None:
        self._array: Any = None

    def like(self, xp: Any, a: Any) -> Any:
        buf = self._array
        if buf is None or buf.shape != a.shape or buf.dtype != a.dtype or type(buf) is not type(a):
            buf = self._array = xp.empty_like(a)
        return buf


def step_scalars(values: Sequence[float], like: Any) -> Tensor:
    """The per-step scalars of an update (learning rate, bias corrections, ...) as one float64
    vector on `like`'s device: an input of the kernels below, so a traced step reads them at
    every call instead of freezing them (computed in Python float64, as the rules always did;
    each kernel rounds its scalar to the variable's dtype as NumPy rounds a Python float)."""
    device = like._device
    return Tensor(backend.to_device(np.asarray(values, dtype=np.float64), device), device)


def _as_scalars(value: Any, like: Any) -> Any:
    """A kernel's scalars input: a step_scalars vector as is, a Python number as a vector."""
    return value if isinstance(value, ShapedValue) else step_scalars([float(value)], like)


def _scalar(s: Any, i: int, a: Any) -> Any:
    return s[i].astype(a.dtype)


@op("sgd_delta", 2, same_dtype=False)
def _sgd_delta(xp: Any, g: Any, s: Any, i: int, scratch: Scratch | None) -> Any:
    lr = _scalar(s, i, g)
    if scratch is None:
        return xp.multiply(g, lr)
    return xp.multiply(g, lr, out=scratch.like(xp, g))


def sgd_delta(g: Any, lr: Any, scratch: Scratch | None = None, index: int = 0) -> Tensor:
    """Plain SGD's decrement of the variable: `lr g` (into `scratch`'s array when given: the
    result is then valid until the next call with that scratch). `lr` is a number or a
    `step_scalars` vector whose entry `index` is the learning rate (likewise below)."""
    return _sgd_delta(g, _as_scalars(lr, g), index, scratch)


@op("sgd_momentum_update", 3, multi_out=True, same_dtype=False)
def _sgd_momentum(xp: Any, g: Any, m: Any, s: Any, i: int, momentum: float,
                  nesterov: bool) -> Any:  # fmt: skip
    step = xp.multiply(g, _scalar(s, i, g))
    new_m = m * momentum
    new_m -= step
    if not nesterov:
        return new_m, new_m
    return new_m, step, xp.multiply(new_m, momentum)


def sgd_momentum(g: Any, m: Any, lr: Any, momentum: float, nesterov: bool, index: int = 0
                 ) -> tuple:  # fmt: skip
    """SGD with momentum: `(m', delta)` with `m' = momentum m - lr g`, and the variable gains
    `delta = m'`; with Nesterov `(m', lr g, momentum m')`: the variable loses the second and
    gains the third (two writes, in the former in-place order)."""
    return _sgd_momentum(g, m, _as_scalars(lr, g), index, float(momentum), bool(nesterov))


@op("adam_moments_update", 3, multi_out=True)
def _adam_moments(xp: Any, g: Any, m: Any, v: Any, beta_1: float, beta_2: float) -> Any:
    new_m = g - m
    new_m *= 1.0 - beta_1
    new_m += m
    new_v = g * g
    new_v -= v
    new_v *= 1.0 - beta_2
    new_v += v
    return new_m, new_v


def adam_moments(g: Any, m: Any, v: Any, beta_1: float, beta_2: float) -> tuple:
    """Adam's moments: `m' = m + (1 - beta_1)(g - m)`, `v' = v + (1 - beta_2)(g^2 - v)`."""
    return _adam_moments(g, m, v, float(beta_1), float(beta_2))


@op("adam_delta", 3, same_dtype=False)
def _adam_delta(xp: Any, m: Any, v: Any, s: Any, i: int, epsilon: float) -> Any:
    out = xp.sqrt(v)
    out += epsilon
    xp.divide(m, out, out=out)
    out *= _scalar(s, i, out)
    return out


def adam_delta(m: Any, v: Any, alpha: Any, epsilon: float, index: int = 0) -> Tensor:
    """Adam's decrement of the variable: `alpha m / (sqrt(v) + epsilon)` (`alpha` the
    bias-corrected learning rate)."""
    return _adam_delta(m, v, _as_scalars(alpha, m), index, float(epsilon))


@op("rmsprop_update", list_input=True, multi_out=True, same_dtype=False)
def _rmsprop(xp: Any, values: list[Any], i: int, rho: float, epsilon: float) -> Any:
    g, vel, s = values[0], values[1], values[-1]
    sq = g * g
    sq *= 1.0 - rho
    new_vel = vel * rho
    new_vel += sq
    if len(values) == 4:  # centered: subtract the squared running mean gradient
        avg = values[2]
        new_avg = avg * rho
        new_avg += g * (1.0 - rho)
        den = new_vel - new_avg * new_avg
    else:
        new_avg, den = None, new_vel.copy()
    den += epsilon
    xp.sqrt(den, out=den)
    xp.divide(g, den, out=den)
    den *= _scalar(s, i, den)
    return (new_vel, den) if new_avg is None else (new_vel, den, new_avg)


def rmsprop(g: Any, velocity: Any, average_gradient: Any, lr: Any, rho: float,
            epsilon: float, index: int = 0) -> tuple:  # fmt: skip
    """RMSprop: `(velocity', delta[, average_gradient'])`; the variable loses `delta`
    (`lr g / sqrt(velocity' - average_gradient'^2 + epsilon)`, centered when
    `average_gradient` is given)."""
    values = [g, velocity] if average_gradient is None else [g, velocity, average_gradient]
    values.append(_as_scalars(lr, g))
    return _rmsprop(values, index, float(rho), float(epsilon))


@op("adagrad_update", 3, multi_out=True, same_dtype=False)
def _adagrad(xp: Any, g: Any, acc: Any, s: Any, i: int, epsilon: float) -> Any:
    new_acc = g * g
    new_acc += acc
    den = new_acc + epsilon
    xp.sqrt(den, out=den)
    xp.divide(g, den, out=den)
    den *= _scalar(s, i, den)
    return new_acc, den


def adagrad(g: Any, accumulator: Any, lr: Any, epsilon: float, index: int = 0) -> tuple:
    """Adagrad: `(accumulator', delta)`, `accumulator' = accumulator + g^2`; the variable loses
    `delta = lr g / sqrt(accumulator' + epsilon)`."""
    return _adagrad(g, accumulator, _as_scalars(lr, g), index, float(epsilon))


@op("scale_by_scalar", 2, same_dtype=False)
def _scale_by(xp: Any, a: Any, s: Any, i: int, scratch: Scratch | None) -> Any:
    f = _scalar(s, i, a)
    return a * f if scratch is None else xp.multiply(a, f, out=scratch.like(xp, a))


def scale_by(a: Any, s: Any, index: int, scratch: Scratch | None = None) -> Tensor:
    """`a` times entry `index` of a step_scalars vector (weight decay's `1 - lr wd`)."""
    return _scale_by(a, s, index, scratch)


@op("step_scalar", 1, same_dtype=False)
def _step_scalar(xp: Any, s: Any, i: int, dtype: Any) -> Any:
    return xp.asarray(s[i], dtype=dtype)


def step_scalar(s: Any, index: int, like: Any) -> Tensor:
    """Entry `index` of a step_scalars vector as a scalar tensor of `like`'s dtype (a Variable;
    the value a Python float would take in an op with it)."""
    return _step_scalar(s, index, like._data.dtype)


@op("select_by_scalar", 3, same_dtype=False)
def _select_by(xp: Any, a: Any, b: Any, s: Any, i: int) -> Any:
    return xp.array(b if float(s[i]) else a, copy=True)


def select_by(a: Any, b: Any, s: Any, index: int) -> Tensor:
    """A copy of `b` when entry `index` of a step_scalars vector is nonzero, else of `a` (the
    EMA's overwrite every `ema_overwrite_frequency` steps)."""
    return _select_by(a, b, s, index)


@op("running_max", 2)
def _running_max(xp: Any, a: Any, b: Any) -> Any:
    return xp.maximum(a, b)


def running_max(a: Any, b: Any) -> Tensor:
    """The elementwise maximum of a slot and a new value (AMSGrad's `vhat`)."""
    return _running_max(a, b)


@op("scale_add", 2)
def _scale_add(xp: Any, acc: Any, delta: Any, scale: float) -> Any:
    out = acc * scale
    out += delta
    return out


def scale_add(acc: Any, scale: float, delta: Any) -> Tensor:
    """`scale acc + delta` (a momentum accumulator's new value)."""
    return _scale_add(acc, delta, float(scale))
