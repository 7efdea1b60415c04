"""Dense's `activation(x @ kernel + bias)` as one op, with one gradient written with ops.

`dense(x, kernel, bias, activation)` is the whole layer computation: it knows which activations
it fuses (relu, from `tf.nn.relu`, `tf.keras.activations.relu` with its defaults or `"relu"`,
registered with `register_fused_activation`) and flattens the leading axes of an input of any
rank, so `Dense.call` is one call and knows nothing about fusion.

Composed from `matmul`, `add` and `relu`, a Dense layer allocates three activations and
records three tape nodes per call. Fused, the forward adds the bias and clips in place on the
GEMM's own output; the gradient computes the masked gradient once and feeds the two GEMMs and
the bias reduction from it, skipping the inputs the tape does not need (the data batch of a
first layer). The results are the composed ops' results exactly: the same GEMMs on the same
operands, the same float32 sums. The gradient is written with ops, so nested tapes give
second derivatives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerflow._src.autodiff.op import input_needed, op
from layerflow._src.backend import blas_threads
from layerflow._src.ops import fused_kernels
from layerflow._src.ops.math_ops import _matmul, _reduce_sum, _relu_grad, _reshape, reshape
from layerflow._src.ops.math_ops import relu as _relu

__all__ = ["dense"]


@op("dense", 3)
def _dense(xp: Any, x: Any, kernel: Any, bias: Any, relu: bool) -> Any:
    t = blas_threads.timed(x.shape[0], kernel.shape[1], kernel.shape[0])
    out = xp.matmul(x, kernel)
    if t is not None:
        blas_threads.done(t)
    fused_kernels.bias_relu(xp, out, bias, relu)  # one pass where the numba kernel applies
    return out


@_dense.grad
def _(dy: Any, out: Any, x: Any, kernel: Any, bias: Any, relu: bool) -> Any:
    dz = _relu_grad(dy, out) if relu else dy
    gb = None
    if input_needed(2):
        gb = _reduce_sum(dz, (0,), False)
        if tuple(gb._data.shape) != tuple(bias._data.shape):
            gb = _reshape(gb, tuple(bias._data.shape))
    return (
        _matmul(dz, kernel, False, True) if input_needed(0) else None,
        _matmul(x, dz, True, False) if input_needed(1) else None,
        gb,
    )


# Activations the op applies itself: "relu" (fused into the GEMM's output), "linear" (none).
_FUSED: dict[Callable[..., Any], str] = {_relu: "relu"}


def register_fused_activation(fn: Callable[..., Any], kind: str) -> None:
    """Declare that `fn(x)` is `kind` ("relu" or "linear"), so `dense` fuses it (Keras's
    `activations.relu` and `activations.linear` register themselves)."""
    if kind not in ("relu", "linear"):
        raise ValueError(
            f"register_fused_activation: kind must be 'relu' or 'linear', got {kind!r}."
        )
    _FUSED[fn] = kind


def dense(x: Any, kernel: Any, bias: Any = None, activation: Any = None,
          relu: bool = False) -> Any:  # fmt: skip
    """`activation(x @ kernel + bias)` contracting the last axis of `x` (any rank >= 1), with
    matmul, bias and relu fused into one op. `activation` is None (linear), a function the op
    fuses (see `register_fused_activation`), or any other callable, applied after the op;
    `relu=True` is `activation=tf.nn.relu`.

    >>> import layerflow as tf
    >>> from layerflow._src.ops.dense_ops import dense
    >>> b = tf.constant([-3.0, 0.0, 1.0])
    >>> dense(tf.ones((1, 2)), tf.ones((2, 3)), b, activation=tf.nn.relu).numpy()
    array([[0., 2., 3.]], dtype=float32)
    """
    kind = "relu" if relu else ("linear" if activation is None else _FUSED.get(activation))
    ndim = x.ndim
    flat = x
    if ndim != 2:
        lead = [-1 if d is None else d for d in x.shape[:-1]]
        flat = reshape(x, (-1, x.shape[-1]))
    if bias is not None:
        out = _dense(flat, kernel, bias, kind == "relu")
    else:
        out = _matmul(flat, kernel, False, False)
        if kind == "relu":
            out = _relu(out)
    if ndim != 2:
        out = reshape(out, (*lead, kernel.shape[-1]))
    return out if kind is not None else activation(out)
