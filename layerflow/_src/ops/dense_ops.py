"""Dense's `activation(x @ kernel + bias)` as one op, with one fused gradient.

Composed from `matmul`, `add` and `relu`, a Dense layer allocates three activations and
records three tape nodes per call, and its backward pass builds the relu mask, un-broadcasts
the bias gradient and wraps each intermediate in a tensor. Fused, the forward adds the bias and
clips in place on the GEMM's own output, and the backward computes the masked gradient once
and feeds the two GEMMs and the bias reduction from it, skipping the inputs the tape does not
need (the data batch of a first layer). The results are the composed ops' results exactly: the
same GEMMs on the same operands, the same float32 sums.

While an outer tape records the backward pass (second derivatives), the gradient is built from
the differentiable ops instead, so higher-order gradients stay right.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.autodiff import tape as _tape
from layerflow._src.autodiff.op import input_needed, op
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops.math_ops import _reduce_sum, _relu_grad, _unbroadcast, matmul, reduce_sum

# The bias gradient uses reduce_sum's own kernel (a GEMV for long batches), so the fused and
# the composed gradients are the same sums.
_sum_kernel = _reduce_sum.prim.forward

__all__ = ["dense"]


@op("dense", 3)
def _dense(xp: Any, x: Any, kernel: Any, bias: Any, relu: bool) -> Any:
    out = xp.matmul(x, kernel)
    out += bias
    if relu:
        xp.maximum(out, 0, out=out)
    return out


@_dense.grad
def _(dy: Any, out: Any, x: Any, kernel: Any, bias: Any, relu: bool) -> Any:
    need_x, need_k, need_b = input_needed(0), input_needed(1), input_needed(2)
    if _tape._state.tapes:
        # An outer tape records this backward pass: differentiable ops only.
        dz = _relu_grad(dy, out) if relu else dy
        return (
            matmul(dz, kernel, transpose_b=True) if need_x else None,
            matmul(x, dz, transpose_a=True) if need_k else None,
            _unbroadcast(reduce_sum(dz, axis=0), bias) if need_b else None,
        )
    device = dy._device
    xp = device.xp
    d = dy._data
    if relu:
        # dy * (out > 0) as relu_grad computes it; one new array, the bool mask aside.
        d = xp.multiply(d, out._data > 0)
    gx = gk = gb = None
    if need_x:
        gx = Tensor(xp.matmul(d, kernel._data.T), device)
    if need_k:
        gk = Tensor(xp.matmul(x._data.T, d), device)
    if need_b:
        gb = Tensor(_sum_kernel(xp, d, (0,)).reshape(bias._data.shape), device)
    return gx, gk, gb


def dense(x: Any, kernel: Any, bias: Any, relu: bool = False) -> Any:
    """`x @ kernel + bias`, then relu when `relu`, for a 2-D `x`, as one op.

    >>> import layerflow as tf
    >>> from layerflow._src.ops.dense_ops import dense
    >>> dense(tf.ones((1, 2)), tf.ones((2, 3)), tf.constant([-3.0, 0.0, 1.0]), relu=True).numpy()
    array([[0., 2., 3.]], dtype=float32)
    """
    return _dense(x, kernel, bias, bool(relu))
