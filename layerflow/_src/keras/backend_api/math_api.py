"""Keras backend reductions, elementwise math, comparisons, `dot`, `batch_dot`, normalization."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.keras.engine.backend_config import floatx
from layerflow._src.ops import (
    array_ops,
    compare_ops,
    core_ops,
    elementwise_ops,
    math_ops,
    nn_ops,
    normalization_ops,
    reduce_ops,
)


def _t(x: Any) -> Any:
    return x if hasattr(x, "dtype") and hasattr(x, "shape") else convert_to_tensor(x)


def int_shape(x: Any) -> tuple | None:
    """The shape as a tuple of ints / None: `K.int_shape(K.zeros((2, 3)))` is `(2, 3)`."""
    try:
        shape = x.shape
        if not isinstance(shape, tuple):
            shape = tuple(shape.as_list())
        return shape
    except ValueError:
        return None


def ndim(x: Any) -> int | None:
    """The rank of `x` as a Python int."""
    return x.shape.rank


def dtype(x: Any) -> str:
    """The dtype name of `x`: `K.dtype(K.variable(1.))` is `'float32'`."""
    return x.dtype.base_dtype.name


def count_params(x: Any) -> Any:
    """The number of elements of a variable or tensor (a NumPy int)."""
    return np.prod(x.shape.as_list())


def cast(x: Any, dtype: Any) -> Any:
    return compare_ops.cast(x, dtype)


def _floaty(x: Any) -> Any:
    x = _t(x)
    return compare_ops.cast(x, floatx()) if x.dtype == dtypes.bool_ else x


def max(x: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001 - Keras's name
    return core_ops.reduce_max(x, axis, keepdims)


def min(x: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001 - Keras's name
    return core_ops.reduce_min(x, axis, keepdims)


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001 - Keras's name
    """`K.sum(x, axis, keepdims)`: `tf.reduce_sum` with Keras's positional order."""
    return core_ops.reduce_sum(x, axis, keepdims)


def prod(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return reduce_ops.reduce_prod(x, axis, keepdims)


def cumsum(x: Any, axis: int = 0) -> Any:
    return reduce_ops.cumsum(x, axis=axis)


def cumprod(x: Any, axis: int = 0) -> Any:
    return reduce_ops.cumprod(x, axis=axis)


def var(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return reduce_ops.reduce_variance(_floaty(x), axis=axis, keepdims=keepdims)


def std(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return reduce_ops.reduce_std(_floaty(x), axis=axis, keepdims=keepdims)


def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """`K.mean(x, axis, keepdims)`; booleans are averaged as `floatx()`.

    >>> float(mean([[1.0, 2.0], [3.0, 4.0]]))
    2.5
    """
    return core_ops.reduce_mean(_floaty(x), axis, keepdims)


def any(x: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001 - Keras's name
    return reduce_ops.reduce_any(compare_ops.cast(x, dtypes.bool_), axis, keepdims)


def all(x: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001 - Keras's name
    return reduce_ops.reduce_all(compare_ops.cast(x, dtypes.bool_), axis, keepdims)


def argmax(x: Any, axis: int = -1) -> Any:
    return reduce_ops.argmax(x, axis)


def argmin(x: Any, axis: int = -1) -> Any:
    return reduce_ops.argmin(x, axis)


def square(x: Any) -> Any:
    return math_ops.square(x)


def abs(x: Any) -> Any:  # noqa: A001 - Keras's name
    return math_ops.abs(x)


def sqrt(x: Any) -> Any:
    """Square root with negatives clamped to 0 first, as Keras does."""
    x = _t(x)
    return math_ops.sqrt(math_ops.maximum(x, array_ops.constant(0.0, dtype=x.dtype)))


def exp(x: Any) -> Any:
    return math_ops.exp(x)


def log(x: Any) -> Any:
    return math_ops.log(x)


def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return reduce_ops.reduce_logsumexp(x, axis, keepdims)


def round(x: Any) -> Any:  # noqa: A001 - Keras's name
    return elementwise_ops.round(x)


def sign(x: Any) -> Any:
    return math_ops.sign(x)


def pow(x: Any, a: Any) -> Any:  # noqa: A001 - Keras's name
    return math_ops.pow(x, a)


def clip(x: Any, min_value: Any, max_value: Any) -> Any:
    """Clip to `[min_value, max_value]`; `None` is unbounded and `max < min` clips to `min`."""
    if isinstance(min_value, (int, float)) and isinstance(max_value, (int, float)):
        if max_value < min_value:
            max_value = min_value
    if min_value is None:
        min_value = -np.inf
    if max_value is None:
        max_value = np.inf
    return elementwise_ops.clip_by_value(x, min_value, max_value)


def equal(x: Any, y: Any) -> Any:
    return compare_ops.equal(x, y)


def not_equal(x: Any, y: Any) -> Any:
    return compare_ops.not_equal(x, y)


def greater(x: Any, y: Any) -> Any:
    return compare_ops.greater(x, y)


def greater_equal(x: Any, y: Any) -> Any:
    return compare_ops.greater_equal(x, y)


def less(x: Any, y: Any) -> Any:
    return compare_ops.less(x, y)


def less_equal(x: Any, y: Any) -> Any:
    return compare_ops.less_equal(x, y)


def maximum(x: Any, y: Any) -> Any:
    return math_ops.maximum(x, y)


def minimum(x: Any, y: Any) -> Any:
    return math_ops.minimum(x, y)


def sin(x: Any) -> Any:
    return elementwise_ops.sin(x)


def cos(x: Any) -> Any:
    return elementwise_ops.cos(x)


def transpose(x: Any) -> Any:
    return array_ops.transpose(x)


def dot(x: Any, y: Any) -> Any:
    """Keras's N-D dot: contracts the last axis of `x` with the second-to-last of `y`.

    Shapes `(2, 3, 4) . (4, 5)` give `(2, 3, 5)`; `(2, 3) . (4, 3, 5)` gives `(2, 4, 5)`.
    """
    x, y = _t(x), _t(y)
    if ndim(x) is not None and (ndim(x) > 2 or ndim(y) > 2):
        x_shape = tuple(int_shape(x))
        y_shape = tuple(int_shape(y))
        perm = list(range(ndim(y)))
        perm = [perm.pop(-2)] + perm
        xt = core_ops.reshape(x, [-1, x_shape[-1]])
        yt = core_ops.reshape(array_ops.transpose(y, perm=perm), [y_shape[-2], -1])
        return core_ops.reshape(
            math_ops.matmul(xt, yt), list(x_shape[:-1] + y_shape[:-2] + y_shape[-1:])
        )
    return math_ops.matmul(x, y)


def batch_dot(x: Any, y: Any, axes: Any = None) -> Any:
    """Batchwise dot product over `axes` (tf_keras's rules: default last axis of x, and the
    last axis of a rank-2 y or the second-to-last otherwise; axis 0 is the batch)."""
    x, y = _t(x), _t(y)
    x_shape, y_shape = int_shape(x), int_shape(y)
    x_ndim, y_ndim = len(x_shape), len(y_shape)
    if x_ndim < 2 or y_ndim < 2:
        raise ValueError(
            f"Cannot do batch_dot on inputs with rank < 2. Received inputs with shapes "
            f"{x_shape} and {y_shape}."
        )
    if x_shape[0] is not None and y_shape[0] is not None and x_shape[0] != y_shape[0]:
        raise ValueError(
            f"Cannot do batch_dot on inputs with different batch sizes. Received inputs with "
            f"shapes {x_shape} and {y_shape}."
        )
    if isinstance(axes, int):
        axes = [axes, axes]
    if axes is None:
        axes = [x_ndim - 1, y_ndim - 1] if y_ndim == 2 else [x_ndim - 1, y_ndim - 2]
    if builtins.any(isinstance(a, (list, tuple)) for a in axes):
        raise ValueError(
            "Multiple target dimensions are not supported. Expected: None, int, (int, int), "
            f"Provided: {axes}"
        )
    axes = list(axes)
    if axes[0] < 0:
        axes[0] += x_ndim
    if axes[1] < 0:
        axes[1] += y_ndim
    if 0 in axes:
        raise ValueError(
            "Cannot perform batch_dot over axis 0. If your inputs are not batched, add a dummy "
            "batch dimension to your inputs using K.expand_dims(x, 0)"
        )
    a0, a1 = axes
    d1, d2 = x_shape[a0], y_shape[a1]
    if d1 is not None and d2 is not None and d1 != d2:
        raise ValueError(
            f"Cannot do batch_dot on inputs with shapes {x_shape} and {y_shape} with "
            f"axes={axes}. x.shape[{axes[0]}] != y.shape[{axes[1]}] ({d1} != {d2})."
        )
    orig_x_ndim, orig_y_ndim = x_ndim, y_ndim
    if x_ndim == 2:
        x = array_ops.expand_dims(x, 1)
        a0 += 1
        x_ndim += 1
    if y_ndim == 2:
        y = array_ops.expand_dims(y, 2)
        y_ndim += 1
    if a0 != x_ndim - 1:
        pattern = list(range(x_ndim))
        for i in range(a0, x_ndim - 1):
            pattern[i] = pattern[i + 1]
        pattern[-1] = a0
        x = array_ops.transpose(x, pattern)
    if a1 != 1:
        pattern = list(range(y_ndim))
        for i in range(a1, 1, -1):
            pattern[i] = pattern[i - 1]
        pattern[1] = a1
        y = array_ops.transpose(y, pattern)
    xs, ys = list(x.shape), list(y.shape)
    if x_ndim > 3:
        x = core_ops.reshape(x, [xs[0], -1, xs[-1]])
    if y_ndim > 3:
        y = core_ops.reshape(y, [ys[0], ys[1], -1])
    result = math_ops.matmul(x, y)
    out_shape = list(result.shape)
    if x_ndim > 3:
        out_shape = out_shape[:1] + xs[1:-1] + out_shape[-1:]
    if y_ndim > 3:
        out_shape = out_shape[:-1] + ys[2:]
    if x_ndim > 3 or y_ndim > 3:
        result = core_ops.reshape(result, out_shape)
    if orig_x_ndim == 2:
        result = array_ops.squeeze(result, [1])
    elif orig_y_ndim == 2:
        result = array_ops.squeeze(result, [-1])
    return result


def normalize_batch_in_training(
    x: Any, gamma: Any, beta: Any, reduction_axes: Any, epsilon: float = 1e-3
) -> tuple:
    """Normalize `x` by its batch moments over `reduction_axes`; returns (normed, mean, var)."""
    x = _t(x)
    m, v = nn_ops.moments(x, list(reduction_axes), keepdims=False)
    target = [1 if a in reduction_axes else x.shape[a] for a in range(ndim(x))]
    bm, bv = core_ops.reshape(m, target), core_ops.reshape(v, target)
    bg = None if gamma is None else core_ops.reshape(gamma, target)
    bb = None if beta is None else core_ops.reshape(beta, target)
    return normalization_ops.batch_normalization(x, bm, bv, bb, bg, epsilon), m, v


def batch_normalization(
    x: Any, mean: Any, var: Any, beta: Any, gamma: Any, axis: int = -1, epsilon: float = 1e-3
) -> Any:
    """`(x - mean) / sqrt(var + epsilon) * gamma + beta`, the statistics broadcast on `axis`."""
    x = _t(x)
    rank = ndim(x)
    if rank == 4 and axis in (1, -3, 3, -1):
        ax = axis % rank
        target = [1] * rank
        target[ax] = x.shape[ax]

        def fit(t: Any) -> Any:
            return None if t is None else core_ops.reshape(t, target)

        mean, var, beta, gamma = fit(mean), fit(var), fit(beta), fit(gamma)
    return normalization_ops.batch_normalization(x, mean, var, beta, gamma, epsilon)
