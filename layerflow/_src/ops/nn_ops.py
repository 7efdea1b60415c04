"""`tf.nn`: activations, softmax and the fused cross-entropies, dropout, moments, bias_add.

Softmax, log-softmax and the softmax cross-entropies are fused primitives: one stable forward
(max subtracted before exp) and a closed-form gradient, never log(softmax(x)) in two steps.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from layerflow._src.autodiff.op import input_needed, op, recording
from layerflow._src.autodiff.specs import ArraySpec
from layerflow._src.framework import errors
from layerflow._src.framework.composite_dispatch import dispatchable
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops import fused_kernels, random_ops
from layerflow._src.ops.array_ops import stop_gradient, transpose
from layerflow._src.ops.elementwise_ops import erf
from layerflow._src.ops.math_ops import (
    _as_tensor,
    _norm_axis,
    _reduce_sum,
    _select,
    add,
    exp,
    greater,
    less,
    logical_and,
    multiply,
    negative,
    reduce_mean,
    relu,
    reshape,
    sigmoid,
    square,
    squared_difference,
    subtract,
    tanh,
    zeros_like,
)

# --- softmax family -----------------------------------------------------------------------------
# A +inf or NaN logit makes the whole row NaN, as TF's own kernel does (and TF's float64 path;
# TF's oneDNN float32 kernel gives 0 instead of NaN for the row's finite entries).


@op("softmax", accepts="real_float")
def _softmax(xp: Any, x: Any, axis: int) -> Any:
    e = xp.exp(x - x.max(axis=axis, keepdims=True))
    e /= e.sum(axis=axis, keepdims=True)
    return e


def _softmax_vjp(v: Any, p: Any, axis: int) -> Any:
    """(v - sum(v * p)) * p: the gradient through softmax, `p` its output, `v` the incoming."""
    return multiply(subtract(v, _reduce_sum(multiply(v, p), (axis,), True)), p)


@_softmax.grad
def _(dy: Any, out: Any, x: Any, axis: int) -> Any:
    return _softmax_vjp(dy, out, axis)


@op("log_softmax", accepts="real_float")
def _log_softmax(xp: Any, x: Any, axis: int) -> Any:
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))


@_log_softmax.grad
def _(dy: Any, out: Any, x: Any, axis: int) -> Any:
    return subtract(dy, multiply(exp(out), _reduce_sum(dy, (axis,), True)))


def _axis(logits: Any, axis: Any, opname: str) -> tuple[Any, int]:
    x = _as_tensor(logits)
    if x._data.dtype.kind != "f":
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname} expects floating-point logits (float16, float32 or float64), got "
            f"{x.dtype.name}. Cast them first, e.g. tf.cast(logits, tf.float32).",
        )
    if x._data.ndim == 0:
        raise errors.InvalidArgumentError(None, opname, f"{opname} needs a tensor of rank >= 1.")
    return x, _norm_axis(-1 if axis is None else axis, x._data.ndim, opname)[0]


def softmax(logits: Any, axis: Any = None, name: str | None = None) -> Any:
    """exp(x) / sum(exp(x)) along `axis` (the last by default), computed stably.

    >>> import layerflow as tf
    >>> tf.nn.softmax([0.0, 0.0]).numpy()
    array([0.5, 0.5], dtype=float32)
    """
    x, ax = _axis(logits, axis, "softmax")
    return _softmax(x, ax)


def log_softmax(logits: Any, axis: Any = None, name: str | None = None) -> Any:
    """log(softmax(x)) in one stable step.

    >>> import layerflow as tf
    >>> tf.nn.log_softmax([0.0, 0.0]).numpy()
    array([-0.6931472, -0.6931472], dtype=float32)
    """
    x, ax = _axis(logits, axis, "log_softmax")
    return _log_softmax(x, ax)


# --- softmax cross-entropies ----------------------------------------------------------------------
# The forward computes the loss and, while a tape records, the backprop (softmax - labels) in
# the same buffers, saved as the op's residual (see autodiff/op.py). The gradient hands it to a
# gradient op that multiplies it by the incoming gradient, or recomputes it when it is absent;
# that op's own gradient is written with ops, so second derivatives are right.


def _expand_last(t: Any) -> Any:
    return reshape(t, tuple(t._data.shape) + (1,))


def _check_labels(labels: Any, n: int) -> None:
    if labels.size and (int(labels.min()) < 0 or int(labels.max()) >= n):
        bad = labels[(labels < 0) | (labels >= n)].ravel()[0]
        raise errors.InvalidArgumentError(
            None,
            "sparse_softmax_cross_entropy_with_logits",
            f"Received a label value of {int(bad)} which is outside the valid range of [0, {n}). "
            "Labels must be class indices; for one-hot labels use "
            "softmax_cross_entropy_with_logits (or CategoricalCrossentropy).",
        )


@op("sparse_softmax_cross_entropy_with_logits", 2, same_dtype=False, saves=True)
def _sparse_xent(xp: Any, logits: Any, labels: Any) -> Any:
    n = logits.shape[-1]
    keep = recording()
    if _class_major(logits, labels):
        # One pass per row before and after NumPy's exp (`fused_kernels`): the same bits.
        fused = fused_kernels.xent(logits, labels, None, loss=True, grad=keep)
        if fused is not None:
            if fused[3] >= 0:
                _check_labels(labels, n)
            return fused[0], fused[1]
        _check_labels(labels, n)
        return _sparse_xent_class_major(xp, logits, labels, keep)
    _check_labels(labels, n)
    # Rows of a (batch, classes) view indexed by (row, label): cheaper than take_along_axis,
    # and the exp, the normalisation and the one-hot subtraction all reuse one buffer.
    shifted = logits - logits.max(axis=-1, keepdims=True)
    flat = shifted.reshape(labels.size, n)
    rows = xp.arange(flat.shape[0])
    cols = labels.reshape(-1)
    picked = flat[rows, cols].reshape(labels.shape)
    e = xp.exp(shifted, out=shifted)
    s = e.sum(axis=-1, keepdims=True)
    loss = xp.log(s)[..., 0] - picked
    if not keep:
        return loss, None
    e /= s
    e.reshape(labels.size, n)[rows, cols] -= 1
    return loss, e


# NumPy reduces a short last axis row by row (12 us for 256 x 10); in a class-major copy the
# max and the sum over classes run down whole rows of the batch instead (2-3 us).
_CLASS_MAJOR_MAX = 32


def _class_major(logits: Any, labels: Any) -> bool:
    """Whether the class-major kernels (and their fused twins) compute this loss."""
    n = logits.shape[-1] if logits.ndim else 0
    return logits.ndim == 2 and 0 < n <= _CLASS_MAJOR_MAX and labels.size >= 4 * n


def _sparse_xent_class_major(xp: Any, logits: Any, labels: Any, keep: bool) -> Any:
    z = xp.ascontiguousarray(logits.T)  # (classes, batch), a copy we own
    z -= z.max(axis=0)
    cols = xp.arange(z.shape[1])
    picked = z[labels, cols]
    xp.exp(z, out=z)
    s = z.sum(axis=0)
    loss = xp.log(s) - picked
    if not keep:
        return loss, None
    z /= s
    z[labels, cols] -= 1
    return loss, xp.ascontiguousarray(z.T)


def _sparse_xent_grad_class_major(xp: Any, dy: Any, logits: Any, labels: Any) -> Any:
    """`dy[:, None] * backprop` with the forward's class-major backprop, in one buffer: no loss
    (the compiled step's forward is dead code), and `dy` multiplied in before the copy back,
    the same products (bit for bit) without a third (batch, classes) array."""
    z = xp.ascontiguousarray(logits.T)
    z -= z.max(axis=0)
    xp.exp(z, out=z)
    z /= z.sum(axis=0)
    z[labels, xp.arange(z.shape[1])] -= 1
    z *= dy
    return xp.ascontiguousarray(z.T)


# Spec rules: a trace gets the output specs without running the forward on placeholders (which
# would import numba and load the fused kernels inside the trace).
@_sparse_xent.spec
def _(logits: Any, labels: Any) -> Any:
    lead = tuple(logits.shape[:-1])
    if len(labels.shape) == len(lead):  # a size either one knows
        lead = tuple(a if a is not None else b for a, b in zip(lead, labels.shape))
    return ArraySpec(lead, logits.dtype)


@_sparse_xent.grad
def _(dy: Any, out: Any, logits: Any, labels: Any, saved: Any = None) -> Any:
    return _sparse_xent_grad(dy, logits, labels, saved), None


@op("sparse_softmax_cross_entropy_with_logits_grad", 3, same_dtype=False)
def _sparse_xent_grad(xp: Any, dy: Any, logits: Any, labels: Any, backprop: Any) -> Any:
    """dy * (softmax(logits) - one_hot(labels)); `backprop` is the forward's memo of the
    second factor, or None to recompute it."""
    n = logits.shape[-1]
    if backprop is None and _class_major(logits, labels):
        # The forward's own kernel (a compiled tf.function recomputes here): its bits, faster.
        fused = fused_kernels.xent(logits, labels, dy, loss=False, grad=True)
        if fused is not None:
            if fused[3] >= 0:
                _check_labels(labels, n)
            return fused[1]
    if backprop is None:
        # A compiled step recomputes here, its loss forward dead: the labels are checked here
        # (a negative one would silently index from the end).
        _check_labels(labels, n)
    if backprop is None and _class_major(logits, labels):
        if dy.dtype == logits.dtype and dy.shape == labels.shape:
            return _sparse_xent_grad_class_major(xp, dy, logits, labels)
        backprop = _sparse_xent_class_major(xp, logits, labels, True)[1]
    if backprop is None:
        shifted = logits - logits.max(axis=-1, keepdims=True)
        backprop = xp.exp(shifted, out=shifted)
        backprop /= backprop.sum(axis=-1, keepdims=True)
        backprop.reshape(labels.size, n)[xp.arange(labels.size), labels.reshape(-1)] -= 1
    return dy[..., None] * backprop


@_sparse_xent_grad.spec
def _(dy: Any, logits: Any, labels: Any, backprop: Any) -> Any:
    return ArraySpec(tuple(logits.shape), np.result_type(dy.dtype, logits.dtype))


@_sparse_xent_grad.grad
def _(g: Any, out: Any, dy: Any, logits: Any, labels: Any, backprop: Any) -> Any:
    last = logits._data.ndim - 1
    p = _softmax(logits, last)
    g_dy = g_logits = None
    if input_needed(0):
        from layerflow._src.ops.gather_ops import one_hot

        hot = one_hot(labels, logits._data.shape[-1], dtype=logits.dtype)
        g_dy = _reduce_sum(multiply(g, subtract(p, hot)), (last,), False)
    if input_needed(1):
        g_logits = _softmax_vjp(multiply(_expand_last(dy), g), p, last)
    return g_dy, g_logits, None


def sparse_softmax_cross_entropy_with_logits(labels: Any = None, logits: Any = None,
                                             name: str | None = None) -> Any:  # fmt: skip
    """Per-example cross-entropy between integer class `labels` [...] and `logits` [..., C].

    >>> import layerflow as tf
    >>> loss = tf.nn.sparse_softmax_cross_entropy_with_logits([0], [[0.0, 0.0]])
    >>> round(float(loss[0]), 4)
    0.6931
    """
    if labels is None or logits is None:
        raise ValueError("sparse_softmax_cross_entropy_with_logits needs labels= and logits=.")
    x, _ = _axis(logits, -1, "sparse_softmax_cross_entropy_with_logits")
    y = _as_tensor(labels)
    if y._data.dtype.kind not in "iu":
        raise TypeError(
            "sparse_softmax_cross_entropy_with_logits: labels must be int32 or int64 class "
            f"indices, got {y.dtype.name}."
        )
    if tuple(y._data.shape) != tuple(x._data.shape[:-1]):
        raise errors.InvalidArgumentError(
            None,
            "sparse_softmax_cross_entropy_with_logits",
            f"labels shape {tuple(y._data.shape)} must equal logits shape "
            f"{tuple(x._data.shape)} without its last dimension, i.e. {tuple(x._data.shape[:-1])}.",
        )
    return _sparse_xent(x, y)


@op("softmax_cross_entropy_with_logits", 2, saves=True)
def _xent(xp: Any, logits: Any, labels: Any) -> Any:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    e = xp.exp(shifted)
    s = e.sum(axis=-1, keepdims=True)
    loss = -(labels * (shifted - xp.log(s))).sum(axis=-1)
    if not recording():
        return loss, None
    # Labels need not sum to one: d/dx = softmax * sum(labels) - labels.
    return loss, (e / s) * labels.sum(axis=-1, keepdims=True) - labels


@_xent.grad
def _(dy: Any, out: Any, logits: Any, labels: Any, saved: Any = None) -> Any:
    g_logits = _xent_grad(dy, logits, labels, saved) if input_needed(0) else None
    g_labels = None
    if input_needed(1):  # rare (labels from another model): composed, no memo
        log_p = _log_softmax(logits, logits._data.ndim - 1)
        g_labels = negative(multiply(_expand_last(dy), log_p))
    return g_logits, g_labels


@op("softmax_cross_entropy_with_logits_grad", 3)
def _xent_grad(xp: Any, dy: Any, logits: Any, labels: Any, backprop: Any) -> Any:
    """dy * (softmax(logits) * sum(labels) - labels); `backprop` is the forward's memo of the
    second factor, or None to recompute it."""
    if backprop is None:
        e = xp.exp(logits - logits.max(axis=-1, keepdims=True))
        backprop = (e / e.sum(axis=-1, keepdims=True)) * labels.sum(axis=-1, keepdims=True)
        backprop -= labels
    return dy[..., None] * backprop


@_xent_grad.grad
def _(g: Any, out: Any, dy: Any, logits: Any, labels: Any, backprop: Any) -> Any:
    # out = d * (p * s - labels), with d = dy[..., None], p = softmax(logits), s = sum(labels).
    last = logits._data.ndim - 1
    p = _softmax(logits, last)
    s = _reduce_sum(labels, (last,), True)
    d = _expand_last(dy)
    g_dy = g_logits = g_labels = None
    if input_needed(0):
        g_dy = _reduce_sum(multiply(g, subtract(multiply(p, s), labels)), (last,), False)
    if input_needed(1):
        g_logits = _softmax_vjp(multiply(multiply(d, s), g), p, last)
    if input_needed(2):
        g_labels = multiply(d, subtract(_reduce_sum(multiply(g, p), (last,), True), g))
    return g_dy, g_logits, g_labels


def softmax_cross_entropy_with_logits(labels: Any = None, logits: Any = None, axis: int = -1,
                                      name: str | None = None) -> Any:  # fmt: skip
    """Per-example cross-entropy between probability `labels` and `logits` along `axis`.

    >>> import layerflow as tf
    >>> loss = tf.nn.softmax_cross_entropy_with_logits([[1.0, 0.0]], [[0.0, 0.0]])
    >>> round(float(loss[0]), 4)
    0.6931
    """
    if labels is None or logits is None:
        raise ValueError("softmax_cross_entropy_with_logits needs labels= and logits=.")
    x, ax = _axis(logits, axis, "softmax_cross_entropy_with_logits")
    y = _as_tensor(labels)
    if tuple(y._data.shape) != tuple(x._data.shape):
        raise errors.InvalidArgumentError(
            None,
            "softmax_cross_entropy_with_logits",
            f"logits and labels must have the same shape, got {tuple(x._data.shape)} and "
            f"{tuple(y._data.shape)}.",
        )
    last = x._data.ndim - 1
    if ax != last:
        perm = [i for i in range(x._data.ndim) if i != ax] + [ax]
        x, y = transpose(x, perm), transpose(y, perm)
    return _xent(x, y)


@op("sigmoid_cross_entropy_with_logits", 2)
def _sigmoid_xent(xp: Any, logits: Any, labels: Any) -> Any:
    # max(x, 0) - x * z + log(1 + exp(-|x|)): no overflow for any x.
    return xp.maximum(logits, 0) - logits * labels + xp.log1p(xp.exp(-xp.abs(logits)))


@_sigmoid_xent.grad
def _(dy: Any, out: Any, logits: Any, labels: Any) -> Any:
    return multiply(dy, subtract(sigmoid(logits), labels)), multiply(dy, -logits)


def sigmoid_cross_entropy_with_logits(labels: Any = None, logits: Any = None,
                                      name: str | None = None) -> Any:  # fmt: skip
    """Elementwise logistic loss between `labels` in [0, 1] and `logits`, stable for any logit.

    >>> import layerflow as tf
    >>> float(tf.nn.sigmoid_cross_entropy_with_logits(1.0, 0.0))
    0.6931471824645996
    """
    if labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy_with_logits needs labels= and logits=.")
    x, y = _as_tensor(logits), _as_tensor(labels)
    if tuple(x._data.shape) != tuple(y._data.shape):
        raise ValueError(
            "sigmoid_cross_entropy_with_logits: logits and labels must have the same shape, got "
            f"{tuple(x._data.shape)} and {tuple(y._data.shape)}."
        )
    return _sigmoid_xent(x, y)


# --- activations ----------------------------------------------------------------------------------


@op("relu6")
def relu6(xp: Any, features: Any) -> Any:
    """min(max(x, 0), 6)."""
    return xp.clip(features, 0, 6)


@relu6.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return _select(logical_and(greater(x, 0), less(x, 6)), dy, zeros_like(dy))


@op("leaky_relu")
def _leaky_relu(xp: Any, x: Any, alpha: float) -> Any:
    return xp.where(x > 0, x, x * x.dtype.type(alpha))


@_leaky_relu.grad
def _(dy: Any, out: Any, x: Any, alpha: float) -> Any:
    return _select(greater(x, 0), dy, multiply(dy, alpha))


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None) -> Any:
    """x for x > 0, alpha * x otherwise (alpha 0.2 by default, as in tf.nn); integer features
    are cast to float32 first, as TF does.

    >>> import layerflow as tf
    >>> tf.nn.leaky_relu(tf.constant([-5, 2])).numpy()
    array([-1.,  2.], dtype=float32)
    """
    x = _as_tensor(features)
    if x._data.dtype.kind in "iu":
        x = _cast_to(x, "float32")
    return _leaky_relu(x, float(alpha))


@op("elu", accepts="real_float")
def _elu(xp: Any, x: Any, alpha: float) -> Any:
    return xp.where(x > 0, x, x.dtype.type(alpha) * xp.expm1(xp.minimum(x, 0)))


@_elu.grad
def _(dy: Any, out: Any, x: Any, alpha: float) -> Any:
    return _select(greater(x, 0), dy, multiply(dy, add(out, alpha)))


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def elu(features: Any, alpha: float = 1.0, name: str | None = None) -> Any:
    """x for x > 0, alpha * (exp(x) - 1) otherwise (`alpha` is Keras' extension)."""
    return _elu(features, float(alpha))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def selu(features: Any, name: str | None = None) -> Any:
    """scale * elu(x, alpha) with the self-normalizing constants."""
    return multiply(elu(features, _SELU_ALPHA), _SELU_SCALE)


@op("softplus", accepts="real_float")
def softplus(xp: Any, features: Any) -> Any:
    """log(1 + exp(x)), without overflow."""
    return xp.maximum(features, 0) + xp.log1p(xp.exp(-xp.abs(features)))


@softplus.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, sigmoid(x))


@op("softsign", accepts="real_float")
def softsign(xp: Any, features: Any) -> Any:
    """x / (1 + |x|)."""
    return features / (1 + xp.abs(features))


@softsign.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    from layerflow._src.ops.math_ops import _real_div, abs

    return _real_div(dy, square(add(abs(x), 1)))


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def gelu(features: Any, approximate: bool = False, name: str | None = None) -> Any:
    """x * Phi(x) with Phi the standard normal CDF (or its tanh approximation).

    >>> import layerflow as tf
    >>> round(float(tf.nn.gelu(1.0)), 4)
    0.8413
    """
    x = _as_tensor(features)
    if approximate:
        inner = multiply(add(x, multiply(x * x * x, 0.044715)), math.sqrt(2.0 / math.pi))
        return multiply(multiply(x, 0.5), add(tanh(inner), 1.0))
    return multiply(multiply(x, 0.5), add(erf(multiply(x, 1.0 / math.sqrt(2.0))), 1.0))


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def silu(features: Any, beta: float = 1.0, name: str | None = None) -> Any:
    """x * sigmoid(beta * x) (also `tf.nn.swish`)."""
    x = _as_tensor(features)
    return multiply(x, sigmoid(x if beta == 1.0 else multiply(x, beta)))


swish = silu


# --- bias_add, l2_loss, moments, dropout ----------------------------------------------------------


def bias_add(value: Any, bias: Any, data_format: str | None = None, name: str | None = None) -> Any:
    """value + bias along the channel axis (last for NHWC, the second for NC...).

    >>> import layerflow as tf
    >>> tf.nn.bias_add([[1.0, 2.0]], [10.0, 20.0]).numpy()
    array([[11., 22.]], dtype=float32)
    """
    x, b = _as_tensor(value), _as_tensor(bias)
    if b._data.ndim != 1:
        raise ValueError(f"bias_add: bias must be 1-D, got shape {tuple(b._data.shape)}.")
    if x._data.ndim < 2:
        raise ValueError(f"bias_add: value must have rank >= 2, got shape {tuple(x._data.shape)}.")
    channels_first = data_format is not None and data_format.startswith("NC")
    axis = 1 if channels_first else x._data.ndim - 1
    if x._data.shape[axis] != b._data.shape[0]:
        raise errors.InvalidArgumentError(
            None,
            "bias_add",
            f"bias_add: bias has {b._data.shape[0]} entries but value has {x._data.shape[axis]} "
            f"channels (axis {axis} of shape {tuple(x._data.shape)}).",
        )
    if channels_first:
        b = reshape(b, (-1,) + (1,) * (x._data.ndim - 2))
    return add(x, b)


@op("l2_loss", accepts="real_float")
def l2_loss(xp: Any, t: Any) -> Any:
    """sum(t ** 2) / 2."""
    return (t * t).sum() / 2


@l2_loss.grad
def _(dy: Any, out: Any, t: Any) -> Any:
    return multiply(t, dy)


def moments(x: Any, axes: Any, shift: Any = None, keepdims: bool = False,
            name: str | None = None) -> tuple[Any, Any]:  # fmt: skip
    """(mean, variance) of `x` over `axes`.

    >>> import layerflow as tf
    >>> m, v = tf.nn.moments(tf.constant([1.0, 2.0, 3.0, 4.0]), axes=[0])
    >>> float(m), float(v)
    (2.5, 1.25)
    """
    t = _as_tensor(x)
    ax = _norm_axis(axes, t._data.ndim, "moments")
    # The input of float16 is upcast for the reduction, as TF does.
    work = t if t._data.dtype != np.float16 else _cast_to(t, "float32")
    mean = reduce_mean(work, ax, keepdims=True)
    variance = reduce_mean(squared_difference(work, stop_gradient(mean)), ax, keepdims=True)
    if not keepdims:
        kept = [d for i, d in enumerate(t._data.shape) if i not in ax]
        mean, variance = reshape(mean, kept), reshape(variance, kept)
    if work is not t:
        mean, variance = _cast_to(mean, "float16"), _cast_to(variance, "float16")
    return mean, variance


def _cast_to(t: Any, dtype: str) -> Any:
    from layerflow._src.ops.math_ops import cast

    return cast(t, dtype)


def dropout(x: Any, rate: Any = None, noise_shape: Any = None, seed: int | None = None,
            name: str | None = None) -> Any:  # fmt: skip
    """Zero each element with probability `rate` and scale the rest by 1 / (1 - rate).

    >>> import layerflow as tf
    >>> y = tf.nn.dropout(tf.ones((1000,)), rate=0.5, seed=1)
    >>> sorted(set(y.numpy().tolist()))
    [0.0, 2.0]
    """
    t = _as_tensor(x)
    if t._data.dtype.kind != "f":
        raise ValueError(f"dropout: x must be a floating-point tensor, got {t.dtype.name}.")
    if rate is None:
        raise ValueError("dropout needs rate= (the probability of dropping each element).")
    r = float(rate)
    if not 0 <= r < 1:
        raise ValueError(f"dropout: rate must be in [0, 1), got {r}.")
    if r == 0:
        return t
    shape = tuple(t._data.shape) if noise_shape is None else _noise_shape(noise_shape, t)
    return multiply(t, _dropout_scale(shape, r, t._data.dtype, seed, t._device))


@random_ops.drawn_per_call()
def _dropout_scale(shape: tuple, r: float, dtype: Any, seed: Any, device: Any) -> Tensor:
    """The kept elements' scale 1 / (1 - r), zero where dropped (drawn at every call)."""
    gen = random_ops.generator(seed)
    keep = gen.random(shape, dtype=np.float32 if dtype != np.float64 else np.float64) >= r
    return Tensor(device.xp.asarray((keep / (1 - r)).astype(dtype)), device)


def _noise_shape(noise_shape: Any, t: Any) -> tuple[int, ...]:
    from layerflow._src.ops.array_ops import _shape_tuple

    shape = tuple(t._data.shape)
    given = [d if d is not None else shape[i] for i, d in enumerate(noise_shape)]
    dims = _shape_tuple(given, "dropout", "noise_shape")
    try:
        if np.broadcast_shapes(dims, shape) != shape:
            raise ValueError
    except ValueError:
        raise ValueError(
            f"dropout: noise_shape {list(dims)} must broadcast to the shape of x {list(shape)}."
        ) from None
    return dims


__all__ = [
    "bias_add", "dropout", "elu", "gelu", "l2_loss", "leaky_relu", "log_softmax", "moments",
    "relu", "relu6", "selu", "sigmoid_cross_entropy_with_logits", "silu", "softmax",
    "softmax_cross_entropy_with_logits", "softplus", "softsign",
    "sparse_softmax_cross_entropy_with_logits", "swish",
]  # fmt: skip
