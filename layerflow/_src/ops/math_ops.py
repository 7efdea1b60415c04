"""Binary and unary elementwise math, `where` and matmul: forward and gradient side by side.

Binary ops broadcast like NumPy; their gradients sum back to each input's shape
(`_unbroadcast`). Integer inputs never get gradients (the tape does not watch them).

This module is the ops' common import point: the primitives every gradient uses (add, multiply,
reshape, the reductions, ...) live in `core_ops`, comparisons and casts in `compare_ops`, and
both are re-exported here, so `math_ops.reduce_sum` or `math_ops.cast` keep working.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.autodiff.dispatch import public_api
from layerflow._src.autodiff.op import input_needed, op
from layerflow._src.backend import blas_threads, jit
from layerflow._src.framework import errors
from layerflow._src.framework.composite_dispatch import dispatchable
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops import fused_kernels, norm_jit
from layerflow._src.ops.compare_ops import (  # noqa: F401 - re-exported
    _cast,
    _float_to_int,
    _ones_like,
    _zeros_like,
    cast,
    equal,
    greater,
    greater_equal,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    not_equal,
    ones_like,
    zeros_like,
)
from layerflow._src.ops.core_ops import (  # noqa: F401 - re-exported
    _as_tensor,
    _broadcast_to,
    _conj,
    _norm_axis,
    _real_div,
    _reduce_mean,
    _reduce_sum,
    _reduction_grad,
    _reshape,
    _unbroadcast,
    add,
    broadcast_to,
    multiply,
    negative,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_sum,
    reshape,
    subtract,
)

_TRUEDIV_TARGET = {
    "int8": "float32",
    "int16": "float32",
    "uint8": "float32",
    "uint16": "float32",
    "int32": "float64",
    "int64": "float64",
    "uint32": "float64",
    "uint64": "float64",
}


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def truediv(x: Any, y: Any, name: str | None = None) -> Any:
    """x / y; integer inputs are first cast to float (int8/16 -> float32, int32/64 -> float64)."""
    x, y = _pair(x, y, "truediv")
    target = _TRUEDIV_TARGET.get(x.dtype.name)
    if target is not None:
        x, y = cast(x, target), cast(y, target)
    return _real_div(x, y)


divide = truediv


@op("div_no_nan", 2)
def _div_no_nan(xp: Any, x: Any, y: Any) -> Any:
    zero = y == 0
    out = x / xp.where(zero, xp.ones((), dtype=y.dtype), y)  # no division by zero to warn about
    return xp.where(zero, xp.zeros((), dtype=out.dtype), out)


@_div_no_nan.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    # TF's DivNoNanGrad: d/dx = dy / y and d/dy = dy * (-x / y) / y, each 0 where y == 0.
    gx = _div_no_nan(dy, y) if input_needed(0) else None
    gy = multiply(dy, _div_no_nan(_div_no_nan(negative(x), y), y)) if input_needed(1) else None
    return (None if gx is None else _unbroadcast(gx, x)), (
        None if gy is None else _unbroadcast(gy, y)
    )


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def divide_no_nan(x: Any, y: Any, name: str | None = None) -> Any:
    """x / y, but 0 wherever y is 0 (even when x is 0 or inf); floats only.

    >>> import layerflow as tf
    >>> tf.math.divide_no_nan([3.0, 1.0], [2.0, 0.0]).numpy()
    array([1.5, 0. ], dtype=float32)
    """
    x, y = _pair(x, y, "divide_no_nan")
    if x._data.dtype.kind not in "fc":
        raise TypeError(
            f"divide_no_nan: inputs must be floating point, got {x.dtype.name}; cast them with "
            "tf.cast(x, tf.float32)."
        )
    return _div_no_nan(x, y)


def _pair(x: Any, y: Any, opname: str) -> tuple[Any, Any]:
    """Convert a binary op's operands together, the Python value taking the tensor's dtype."""
    from layerflow._src.autodiff.op import _convert_inputs  # same layer: the shared converter

    pair, _ = _convert_inputs(add.prim, [x, y])
    if pair is None:  # symbolic operands (a tf.function trace): the Python one takes their dtype
        like = x if hasattr(x, "_data") else y
        pair = [v if hasattr(v, "_data") else _as_dtype_of(v, like) for v in (x, y)]
    a, b = pair
    if a._data.dtype != b._data.dtype:
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: both inputs must have the same dtype, got {a.dtype.name} and "
            f"{b.dtype.name}. Cast one with tf.cast().",
        )
    return a, b


def _check_int_divisor(xp: Any, x: Any, y: Any, opname: str) -> None:
    # NumPy returns 0 for an integer division by zero (with a warning); TF refuses.
    if x.dtype.kind in "iu" and not bool(xp.all(y)):
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: integer division by zero (the divisor of shape {tuple(y.shape)} holds a "
            "0). Check the divisor first, or divide floats, which give inf or nan.",
        )


@op("floordiv", 2, accepts="numeric", quiet=True)
def floordiv(xp: Any, x: Any, y: Any) -> Any:
    """x // y, rounding toward minus infinity; an integer division by zero raises.

    >>> import layerflow as tf
    >>> (tf.constant([7, -7]) // 2).numpy()
    array([ 3, -4], dtype=int32)
    """
    _check_int_divisor(xp, x, y, "floordiv")
    return xp.floor_divide(x, y)


@floordiv.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    return None, None


floor_div = floordiv


@op("floormod", 2, accepts="numeric", quiet=True)
def floormod(xp: Any, x: Any, y: Any) -> Any:
    """x % y with the sign of y (Python's rule); an integer division by zero raises."""
    _check_int_divisor(xp, x, y, "floormod")
    return xp.mod(x, y)


@floormod.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    return _unbroadcast(dy, x), _unbroadcast(negative(multiply(dy, floordiv(x, y))), y)


mod = floormod


@op("pow", 2, quiet=True)
def pow(xp: Any, x: Any, y: Any) -> Any:  # noqa: A001 - TF's name
    if x.dtype.kind in "iu" and xp.any(y < 0):
        raise errors.InvalidArgumentError(
            None, "pow", "pow: integers to negative integer powers are not allowed; use floats."
        )
    return xp.power(x, y)


@pow.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    gx = multiply(dy, multiply(y, pow(x, subtract(y, 1))))
    safe_x = where(greater(x, 0), x, ones_like(x))
    gy = multiply(dy, multiply(out, where(greater(x, 0), log(safe_x), zeros_like(x))))
    return _unbroadcast(gx, x), _unbroadcast(gy, y)


@op("maximum", 2, accepts="non_string")
def maximum(xp: Any, x: Any, y: Any) -> Any:
    return xp.maximum(x, y)


@maximum.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    mask = greater_equal(x, y)
    zero = zeros_like(dy)
    return _unbroadcast(where(mask, dy, zero), x), _unbroadcast(where(mask, zero, dy), y)


@op("minimum", 2, accepts="non_string")
def minimum(xp: Any, x: Any, y: Any) -> Any:
    return xp.minimum(x, y)


@minimum.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    mask = less_equal(x, y)
    zero = zeros_like(dy)
    return _unbroadcast(where(mask, dy, zero), x), _unbroadcast(where(mask, zero, dy), y)


@op("squared_difference", 2)
def squared_difference(xp: Any, x: Any, y: Any) -> Any:
    d = x - y
    return d * d


@squared_difference.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    g = multiply(dy, multiply(subtract(x, y), 2))
    return _unbroadcast(g, x), _unbroadcast(negative(g), y)


# --- unary -------------------------------------------------------------------------------------


@op("abs")
def abs(xp: Any, x: Any) -> Any:  # noqa: A001 - TF's name
    return xp.abs(x)


@abs.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    if x._data.dtype.kind == "c":
        # TF's ComplexAbs gradient: complex(dy, 0) * x / complex(|x|, 0), 0 where |x| is 0.
        return multiply(_cast(_div_no_nan(dy, out), x._data.dtype), x)
    return multiply(dy, sign(x))


@op("sign")
def sign(xp: Any, x: Any) -> Any:
    return xp.sign(x)


@sign.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return zeros_like(x)


@op("exp", accepts="float")
def exp(xp: Any, x: Any) -> Any:
    return xp.exp(x)


@exp.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, out)


@op("log", accepts="float")
def log(xp: Any, x: Any) -> Any:
    return xp.log(x)


@log.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return _real_div(dy, x)


@op("sqrt", accepts="float")
def sqrt(xp: Any, x: Any) -> Any:
    return xp.sqrt(x)


@sqrt.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return _sqrt_grad(out, dy)


# TF's SqrtGrad, RsqrtGrad and ReciprocalGrad kernels return 0 wherever the incoming gradient
# is 0, even where the derivative itself is inf or nan: the gradient of the masking pattern
# `tf.where(x > 0, tf.sqrt(x), 0.)` is then 0 at x <= 0, not nan. (Log, division and the other
# gradients have no such rule in TF: 0 * inf stays nan there.)


@op("sqrt_grad", 2)
def _sqrt_grad(xp: Any, y: Any, dy: Any) -> Any:
    """0.5 * dy / y, and 0 where dy == 0 (y = sqrt(x))."""
    with np.errstate(divide="ignore", invalid="ignore"):
        g = (0.5 * dy) / y
    return xp.where(dy == 0, xp.zeros((), dtype=g.dtype), g)


@_sqrt_grad.grad
def _(g: Any, out: Any, y: Any, dy: Any) -> Any:
    # TF's SqrtGradGrad: out = 0.5 * dy / y.
    ga = _real_div(g, y)
    return negative(multiply(ga, out)), multiply(ga, 0.5)


@op("square")
def square(xp: Any, x: Any) -> Any:
    return x * x


@square.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, multiply(x, 2))


@op("tanh", accepts="float")
def tanh(xp: Any, x: Any) -> Any:
    return xp.tanh(x)


@tanh.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, subtract(1, square(out)))


@op("sigmoid", accepts="float")
def sigmoid(xp: Any, x: Any) -> Any:
    # 1 / (1 + exp(-x)) in place: four vectorised passes, relative error ~1 ulp in both tails.
    # exp(-x) may overflow to inf for x < -88 (float32), which gives exactly 0, the true limit;
    # the overflow is expected, so NumPy is told not to warn about it.
    e = xp.negative(x, out=xp.empty_like(x))  # an array even for rank 0, so `out=` works below
    with np.errstate(over="ignore"):
        xp.exp(e, out=e)
    e += 1
    xp.reciprocal(e, out=e)
    return e


@sigmoid.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return _sigmoid_grad(out, dy)


@op("sigmoid_grad", 2)
def _sigmoid_grad(xp: Any, y: Any, dy: Any) -> Any:
    """dy * y * (1 - y), fused (TF's SigmoidGrad): one temporary instead of three."""
    g = fused_kernels.sigmoid_grad(y, dy)  # one pass instead of three, the same bits
    if g is not None:
        return g
    g = 1 - y
    g *= y
    g *= dy
    return g


@_sigmoid_grad.grad
def _(g: Any, out: Any, y: Any, dy: Any) -> Any:
    gy = multiply(multiply(g, dy), subtract(1, multiply(2, y))) if input_needed(0) else None
    return gy, _sigmoid_grad(y, g) if input_needed(1) else None


@op("relu")
def relu(xp: Any, x: Any) -> Any:
    return xp.maximum(x, 0)


@relu.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return _relu_grad(dy, out)


@op("relu_grad", 2)
def _relu_grad(xp: Any, dy: Any, out: Any) -> Any:
    if xp is np and dy.size >= _RELU_KERNEL_SIZE and jit.enabled():
        dx = norm_jit.relu_grad(dy, out)  # one pass instead of a mask and a product
        if dx is not None:
            return dx
    return dy * (out > 0)


_RELU_KERNEL_SIZE = 1 << 14


@_relu_grad.grad
def _(ddx: Any, out: Any, dy: Any, y: Any) -> Any:
    return _relu_grad(ddx, y), zeros_like(y)


# --- where, cast, like ---------------------------------------------------------------------------


@op("select", 3, same_dtype=False)
def _select(xp: Any, cond: Any, x: Any, y: Any) -> Any:
    if x.dtype != y.dtype:
        raise errors.InvalidArgumentError(
            None, "where", f"where: x and y must have the same dtype, got {x.dtype} and {y.dtype}."
        )
    return xp.where(cond, x, y)


@_select.grad
def _(dy: Any, out: Any, cond: Any, x: Any, y: Any) -> Any:
    zero = zeros_like(dy)
    return None, _unbroadcast(_select(cond, dy, zero), x), _unbroadcast(_select(cond, zero, dy), y)


@public_api("where")
def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Any:
    """`tf.where`: pick from x where condition holds, else y; with one argument, the indices
    (int64, shape [n, rank]) of the true elements."""
    if x is None and y is None:
        return _where_indices(condition)
    if x is None or y is None:
        raise ValueError("tf.where needs both x and y, or neither.")
    if not isinstance(x, Tensor | type(None)) and isinstance(y, Tensor):
        x = _as_dtype_of(x, y)
    elif not isinstance(y, Tensor) and isinstance(x, Tensor):
        y = _as_dtype_of(y, x)
    return _select(condition, x, y)


def _as_dtype_of(value: Any, like: Any) -> Any:
    from layerflow._src.framework.convert import to_array

    return Tensor(to_array(value, like.dtype, like._device), like._device)


@op("where_indices")
def _where_indices(xp: Any, cond: Any) -> Any:
    return xp.argwhere(cond).astype(np.int64)


# --- reductions ----------------------------------------------------------------------------------
# --- matmul --------------------------------------------------------------------------------------


@op("matmul", 2)
def _matmul(xp: Any, a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False) -> Any:
    if a.ndim < 2 or b.ndim < 2:
        raise errors.InvalidArgumentError(
            None,
            "matmul",
            f"matmul needs inputs of rank >= 2, got shapes {tuple(a.shape)} and {tuple(b.shape)}. "
            "Use tf.tensordot or tf.linalg.matvec for vectors.",
        )
    if transpose_a:
        a = a.swapaxes(-1, -2)  # the method: NumPy's function is a Python wrapper
    if transpose_b:
        b = b.swapaxes(-1, -2)
    # BLAS threads for a.size * n multiply-adds (measured now and then); below, BLAS uses one.
    t = blas_threads.timed(a.size, b.shape[-1], 1) if a.size > 255 else None
    try:
        out = xp.matmul(a, b)
        if t is not None:
            blas_threads.done(t)
        return out
    except ValueError:  # explain the common mistake; other mismatches get the generic message
        if a.shape[-1] == b.shape[-2]:
            raise
    raise errors.InvalidArgumentError(
        None,
        "matmul",
        f"matmul: the inner dimensions of shapes {tuple(a.shape)} and {tuple(b.shape)} "
        f"(after transposes) differ: {a.shape[-1]} vs {b.shape[-2]}.",
    )


@_matmul.grad
def _(dy: Any, out: Any, a: Any, b: Any, transpose_a: bool = False,
      transpose_b: bool = False) -> Any:  # fmt: skip
    # Each product only when its input needs a gradient: a training step's first layer has no
    # use for d(loss)/d(data batch), a quarter of the GEMM work of an MLP step.
    ga = gb = None
    if dy._data.dtype.kind == "c":
        # TF's MatMulGrad for complex operands: the adjoint, through conj(a) and conj(b).
        a, b = _conj(a), _conj(b)
    if input_needed(0):
        if not transpose_a:
            ga = _matmul(dy, b, transpose_b=not transpose_b)
        elif not transpose_b:
            ga = _matmul(b, dy, transpose_b=True)
        else:
            ga = _matmul(b, dy, transpose_a=True, transpose_b=True)
        ga = _unbroadcast(ga, a)
    if input_needed(1):
        if not transpose_b:
            gb = _matmul(a, dy, transpose_a=not transpose_a)
        elif not transpose_a:
            gb = _matmul(dy, a, transpose_a=True)
        else:
            gb = _matmul(dy, a, transpose_a=True, transpose_b=True)
        gb = _unbroadcast(gb, b)
    return ga, gb


def matmul(
    a: Any,
    b: Any,
    transpose_a: bool = False,
    transpose_b: bool = False,
    adjoint_a: bool = False,
    adjoint_b: bool = False,
    a_is_sparse: bool = False,
    b_is_sparse: bool = False,
    output_type: Any = None,
    name: str | None = None,
) -> Any:
    """Matrix product of the last two axes, batched over the leading ones.

    >>> import layerflow as tf
    >>> tf.matmul([[1.0, 2.0]], [[3.0], [4.0]]).numpy()
    array([[11.]], dtype=float32)
    """
    if adjoint_a or adjoint_b:
        # The adjoint is the conjugate transpose (a plain transpose for real dtypes).
        a, b = _as_tensor(a), _as_tensor(b)
        if adjoint_a and a._data.dtype.kind == "c":
            a = _conj(a)
        if adjoint_b and b._data.dtype.kind == "c":
            b = _conj(b)
    if transpose_a or transpose_b or adjoint_a or adjoint_b:
        return _matmul(a, b, bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b))
    return _matmul(a, b)  # the common case, without attributes to pass along and record
