"""Dense's `activation(x @ kernel + bias)` as one op, with one gradient written with ops.

Composed from `matmul`, `add` and `relu`, a Dense layer allocates three activations and
records three tape nodes per call. Fused, the forward adds the bias and clips in place on the
GEMM's own output; the gradient computes the masked gradient once and feeds the two GEMMs and
the bias reduction from it, skipping the inputs the tape does not need (the data batch of a
first layer). The results are the composed ops' results exactly: the same GEMMs on the same
operands, the same float32 sums. The gradient is written with ops, so nested tapes give
second derivatives.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.autodiff.op import input_needed, op
from layerflow._src.backend import blas_threads
from layerflow._src.ops.math_ops import _matmul, _reduce_sum, _relu_grad, _reshape

__all__ = ["dense"]


@op("dense", 3)
def _dense(xp: Any, x: Any, kernel: Any, bias: Any, relu: bool) -> Any:
    blas_threads.gemm(x.shape[0], kernel.shape[1], kernel.shape[0])
    out = xp.matmul(x, kernel)
    out += bias
    if relu:
        xp.maximum(out, 0, out=out)
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


def dense(x: Any, kernel: Any, bias: Any, relu: bool = False) -> Any:
    """`x @ kernel + bias`, then relu when `relu`, for a 2-D `x`, as one op.

    >>> import layerflow as tf
    >>> from layerflow._src.ops.dense_ops import dense
    >>> dense(tf.ones((1, 2)), tf.ones((2, 3)), tf.constant([-3.0, 0.0, 1.0]), relu=True).numpy()
    array([[0., 2., 3.]], dtype=float32)
    """
    return _dense(x, kernel, bias, bool(relu))
