"""Elementwise arithmetic, comparisons, reductions and matmul: forward and gradient side by side.

Binary ops broadcast like NumPy; their gradients sum back to each input's shape
(`_unbroadcast`). Integer inputs never get gradients (the tape does not watch them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.autodiff import tape as _tape
from layerflow._src.autodiff.op import input_needed, op
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.tensor import Tensor

# --- helpers -----------------------------------------------------------------------------------


def _unbroadcast(g: Any, x: Any) -> Any:
    """Sum `g` down to the shape of `x` (undo broadcasting)."""
    gs, xs = tuple(g._data.shape), tuple(x._data.shape)
    if gs == xs:
        return g
    lead = len(gs) - len(xs)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, d in enumerate(xs) if d == 1 and gs[i + lead] != 1
    )
    if axes:
        g = reduce_sum(g, axis=axes)
    if tuple(g._data.shape) != xs:
        g = reshape(g, xs)
    return g


def _norm_axis(axis: Any, ndim: int, opname: str) -> tuple[int, ...] | None:
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        axis = axis.numpy().tolist()
    axes = tuple(axis) if isinstance(axis, list | tuple) else (axis,)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < max(ndim, 1):
            raise errors.InvalidArgumentError(
                None,
                opname,
                f"{opname}: axis {a} is out of range for a tensor of rank {ndim}; valid axes "
                f"are {-ndim}..{ndim - 1}.",
            )
        out.append(a % ndim if ndim else 0)
    return tuple(out)


# --- binary arithmetic -------------------------------------------------------------------------


@op("add", 2)
def add(xp: Any, x: Any, y: Any) -> Any:
    """x + y, elementwise with broadcasting.

    >>> import layerflow as tf
    >>> tf.add([1, 2], 3).numpy()
    array([4, 5], dtype=int32)
    """
    return x + y


@add.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    # A bias add's gradient for the bias is a reduction over the batch: only when asked for.
    return (
        _unbroadcast(dy, x) if input_needed(0) else None,
        _unbroadcast(dy, y) if input_needed(1) else None,
    )


@op("subtract", 2)
def subtract(xp: Any, x: Any, y: Any) -> Any:
    return x - y


@subtract.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    return (
        _unbroadcast(dy, x) if input_needed(0) else None,
        _unbroadcast(negative(dy), y) if input_needed(1) else None,
    )


@op("multiply", 2)
def multiply(xp: Any, x: Any, y: Any) -> Any:
    if x.dtype == np.bool_:
        return x & y
    return x * y


@multiply.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    return (
        _unbroadcast(multiply(dy, y), x) if input_needed(0) else None,
        _unbroadcast(multiply(dy, x), y) if input_needed(1) else None,
    )


@op("real_div", 2)
def _real_div(xp: Any, x: Any, y: Any) -> Any:
    return x / y


@_real_div.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    gx = _real_div(dy, y)
    gy = negative(multiply(gx, _real_div(x, y)))
    return _unbroadcast(gx, x), _unbroadcast(gy, y)


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


def truediv(x: Any, y: Any, name: str | None = None) -> Any:
    """x / y; integer inputs are first cast to float (int8/16 -> float32, int32/64 -> float64)."""
    x, y = _pair(x, y, "truediv")
    target = _TRUEDIV_TARGET.get(x.dtype.name)
    if target is not None:
        x, y = cast(x, target), cast(y, target)
    return _real_div(x, y)


divide = truediv


def _pair(x: Any, y: Any, opname: str) -> tuple[Any, Any]:
    """Convert a binary op's operands together, the Python value taking the tensor's dtype."""
    from layerflow._src.autodiff.op import _convert_inputs  # same layer: the shared converter

    (a, b), _ = _convert_inputs(add.prim, [x, y])
    if a._data.dtype != b._data.dtype:
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: both inputs must have the same dtype, got {a.dtype.name} and "
            f"{b.dtype.name}. Cast one with tf.cast().",
        )
    return a, b


@op("floordiv", 2)
def floordiv(xp: Any, x: Any, y: Any) -> Any:
    return xp.floor_divide(x, y)


@floordiv.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    return None, None


floor_div = floordiv


@op("floormod", 2)
def floormod(xp: Any, x: Any, y: Any) -> Any:
    return xp.mod(x, y)


@floormod.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    return _unbroadcast(dy, x), _unbroadcast(negative(multiply(dy, floordiv(x, y))), y)


mod = floormod


@op("pow", 2)
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


@op("maximum", 2)
def maximum(xp: Any, x: Any, y: Any) -> Any:
    return xp.maximum(x, y)


@maximum.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    mask = greater_equal(x, y)
    zero = zeros_like(dy)
    return _unbroadcast(where(mask, dy, zero), x), _unbroadcast(where(mask, zero, dy), y)


@op("minimum", 2)
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


@op("negative")
def negative(xp: Any, x: Any) -> Any:
    return -x


@negative.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return negative(dy)


@op("abs")
def abs(xp: Any, x: Any) -> Any:  # noqa: A001 - TF's name
    return xp.abs(x)


@abs.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, sign(x))


@op("sign")
def sign(xp: Any, x: Any) -> Any:
    return xp.sign(x)


@sign.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return zeros_like(x)


@op("exp")
def exp(xp: Any, x: Any) -> Any:
    return xp.exp(x)


@exp.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, out)


@op("log")
def log(xp: Any, x: Any) -> Any:
    return xp.log(x)


@log.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return _real_div(dy, x)


@op("sqrt")
def sqrt(xp: Any, x: Any) -> Any:
    return xp.sqrt(x)


@sqrt.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return _real_div(dy, multiply(out, 2))


@op("square")
def square(xp: Any, x: Any) -> Any:
    return x * x


@square.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, multiply(x, 2))


@op("tanh")
def tanh(xp: Any, x: Any) -> Any:
    return xp.tanh(x)


@tanh.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return multiply(dy, subtract(1, square(out)))


@op("sigmoid")
def sigmoid(xp: Any, x: Any) -> Any:
    # 1 / (1 + exp(-x)) in place: four vectorised passes, relative error ~1 ulp in both tails.
    # exp(-x) may overflow to inf for x < -88 (float32), which gives exactly 0, the true limit;
    # the overflow is expected, so NumPy is told not to warn about it.
    if x.dtype.kind not in "fc":
        raise errors.InvalidArgumentError(
            None, "sigmoid", f"sigmoid needs a float tensor, got {x.dtype}; cast it with tf.cast."
        )
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
    return dy * (out > 0)


@_relu_grad.grad
def _(ddx: Any, out: Any, dy: Any, y: Any) -> Any:
    return _relu_grad(ddx, y), zeros_like(y)


# --- comparisons and logic (no gradient) ---------------------------------------------------------


def _compare(name: str, fn: Any) -> Any:
    def forward(xp: Any, x: Any, y: Any) -> Any:
        return fn(x, y)

    forward.__name__ = name
    forward.__doc__ = f"Elementwise `{name}` (a bool tensor)."
    return op(name, 2)(forward)


equal = _compare("equal", np.equal)
not_equal = _compare("not_equal", np.not_equal)
less = _compare("less", np.less)
less_equal = _compare("less_equal", np.less_equal)
greater = _compare("greater", np.greater)
greater_equal = _compare("greater_equal", np.greater_equal)
logical_and = _compare("logical_and", np.logical_and)
logical_or = _compare("logical_or", np.logical_or)
logical_xor = _compare("logical_xor", np.logical_xor)


@op("logical_not")
def logical_not(xp: Any, x: Any) -> Any:
    return xp.logical_not(x)


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


@op("cast", 1, may_alias=True)
def _cast(xp: Any, x: Any, dtype: Any) -> Any:
    if dtype.kind in "iu" and x.dtype.kind == "f":
        return xp.trunc(x).astype(dtype)
    return x.astype(dtype, copy=False)


@_cast.grad
def _(dy: Any, out: Any, x: Any, dtype: Any) -> Any:
    if x._data.dtype.kind not in "fc":
        return None
    return _cast(dy, x._data.dtype)


def cast(x: Any, dtype: Any, name: str | None = None) -> Any:
    """Convert `x` to `dtype` (floats to ints truncate toward zero, as in TF)."""
    return _cast(x, dtypes.as_dtype(dtype).np)


@op("zeros_like", may_alias=False)
def _zeros_like(xp: Any, x: Any, dtype: Any = None) -> Any:
    return xp.zeros_like(x, dtype=dtype)


@op("ones_like")
def _ones_like(xp: Any, x: Any, dtype: Any = None) -> Any:
    return xp.ones_like(x, dtype=dtype)


def zeros_like(input: Any, dtype: Any = None, name: str | None = None) -> Any:  # noqa: A002
    return _zeros_like(input, None if dtype is None else dtypes.as_dtype(dtype).np)


def ones_like(input: Any, dtype: Any = None, name: str | None = None) -> Any:  # noqa: A002
    return _ones_like(input, None if dtype is None else dtypes.as_dtype(dtype).np)


# --- reductions ----------------------------------------------------------------------------------


def _reduction_grad(dy: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    """Reshape a reduction's gradient so it broadcasts back over the reduced axes."""
    shape = list(x._data.shape)
    axes = range(len(shape)) if axis is None else axis
    if not keepdims:
        kept = [1 if i in axes else d for i, d in enumerate(shape)]
        dy = reshape(dy, kept)
    return broadcast_to(dy, shape)


@op("reduce_sum")
def _reduce_sum(xp: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    dt = x.dtype if x.dtype.kind != "b" else np.int32
    if (
        axis
        and not keepdims
        and axis == tuple(range(len(axis)))
        and len(axis) < x.ndim
        and x.dtype.kind == "f"
        and x.dtype.itemsize >= 4
        and x.flags.c_contiguous
    ):
        # Summing the leading (batch) axes, e.g. a bias gradient: one GEMV with a ones vector
        # is ~8x faster than NumPy's row-by-row reduction when the kept axes are short.
        rows = 1
        for d in x.shape[: len(axis)]:
            rows *= d
        if rows >= 1024:
            flat = x.reshape(rows, -1)
            return (xp.ones(rows, dtype=x.dtype) @ flat).reshape(x.shape[len(axis) :])
    return xp.sum(x, axis=axis, keepdims=keepdims, dtype=dt)


@_reduce_sum.grad
def _(dy: Any, out: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return _reduction_grad(dy, x, axis, keepdims)


def reduce_sum(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Any:  # fmt: skip
    """Sum over `axis` (all axes when None).

    >>> import layerflow as tf
    >>> int(tf.reduce_sum([[1, 2], [3, 4]]))
    10
    """
    x = _as_tensor(input_tensor)
    return _reduce_sum(x, _norm_axis(axis, x._data.ndim, "reduce_sum"), bool(keepdims))


def _as_tensor(x: Any) -> Any:
    if isinstance(x, Tensor) or hasattr(x, "_data"):
        return x
    from layerflow._src.framework.convert import convert_to_tensor

    return convert_to_tensor(x)


@op("reduce_mean")
def _reduce_mean(xp: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    if x.dtype.kind in "iub":
        s = xp.sum(x, axis=axis, keepdims=keepdims, dtype=np.int64)
        n = x.size // max(s.size, 1) if x.size else 1
        return xp.trunc(s / n).astype(x.dtype if x.dtype.kind != "b" else np.int32)
    if x.size and x.dtype.kind == "f" and x.dtype.itemsize >= 4:
        # NumPy's own mean (a sum in the input's dtype, then a true divide by the count),
        # without its Python-level wrapper: the same bits in a fifth of the time.
        s = xp.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
        return xp.asarray(s / (x.size // max(s.size, 1)), dtype=x.dtype)
    return xp.mean(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


@_reduce_mean.grad
def _(dy: Any, out: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    n = x._data.size // max(out._data.size, 1)
    if axis is None and not _tape._state.tapes:
        # The mean of everything (a loss): every element gets dy / n; one array, no ops to
        # record (the composed form below is what an outer tape differentiates).
        xa = x._data
        xp = x._device.xp
        return Tensor(xp.full(xa.shape, dy._data / xp.asarray(n, dtype=xa.dtype), xa.dtype),
                      x._device)  # fmt: skip
    return _real_div(_reduction_grad(dy, x, axis, keepdims), Tensor(
        x._device.xp.asarray(n, dtype=x._data.dtype), x._device))  # fmt: skip


def reduce_mean(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                name: str | None = None) -> Any:  # fmt: skip
    """Mean over `axis`; integer tensors give integer means (truncated), as in TF."""
    x = _as_tensor(input_tensor)
    return _reduce_mean(x, _norm_axis(axis, x._data.ndim, "reduce_mean"), bool(keepdims))


def _extremum(name: str, fn_name: str) -> Any:
    @op(name)
    def forward(xp: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        if x.size == 0:
            raise errors.InvalidArgumentError(None, name, f"{name} of an empty tensor.")
        return getattr(xp, fn_name)(x, axis=axis, keepdims=keepdims)

    @forward.grad
    def _(dy: Any, out: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        # Ties share the gradient equally, as TF does.
        y = _reduction_grad(out, x, axis, keepdims)
        mask = cast(equal(x, y), x._data.dtype)
        count = _reduction_grad(_reduce_sum(mask, axis, keepdims), x, axis, keepdims)
        return multiply(_real_div(mask, count), _reduction_grad(dy, x, axis, keepdims))

    def public(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Any:  # fmt: skip
        x = _as_tensor(input_tensor)
        return forward(x, _norm_axis(axis, x._data.ndim, name or forward.prim.name), bool(keepdims))

    public.__name__ = name
    public.__doc__ = f"`tf.{name}`: the {fn_name} over `axis` (all axes when None)."
    return public


reduce_max = _extremum("reduce_max", "max")
reduce_min = _extremum("reduce_min", "min")


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
        a = xp.swapaxes(a, -1, -2)
    if transpose_b:
        b = xp.swapaxes(b, -1, -2)
    try:
        return xp.matmul(a, b)
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
    if transpose_a or transpose_b or adjoint_a or adjoint_b:
        return _matmul(a, b, bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b))
    return _matmul(a, b)  # the common case, without attributes to pass along and record


# --- shape ops the gradients above need -----------------------------------------------------------


@op("reshape", 1, may_alias=True)
def _reshape(xp: Any, x: Any, shape: tuple[int, ...]) -> Any:
    try:
        return x.reshape(shape)
    except ValueError:
        raise errors.InvalidArgumentError(
            None,
            "reshape",
            f"reshape: cannot reshape a tensor with {x.size} elements (shape {tuple(x.shape)}) "
            f"to shape {list(shape)}.",
        ) from None


@_reshape.grad
def _(dy: Any, out: Any, x: Any, shape: Any) -> Any:
    return _reshape(dy, tuple(x._data.shape))


def reshape(tensor: Any, shape: Any, name: str | None = None) -> Any:
    """A tensor with the same elements in a new shape (one dimension may be -1)."""
    if isinstance(shape, Tensor):
        shape = shape.numpy().tolist()
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)
    return _reshape(tensor, shape)


@op("broadcast_to", 1, may_alias=True)
def _broadcast_to(xp: Any, x: Any, shape: tuple[int, ...]) -> Any:
    return xp.broadcast_to(x, shape).copy()


@_broadcast_to.grad
def _(dy: Any, out: Any, x: Any, shape: Any) -> Any:
    return _unbroadcast(dy, x)


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Any:  # noqa: A002
    if isinstance(shape, Tensor):
        shape = shape.numpy().tolist()
    return _broadcast_to(input, tuple(int(d) for d in shape))
