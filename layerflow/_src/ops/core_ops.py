"""The arithmetic, shape and reduction primitives that every other gradient is written with.

They share one module because their gradients use each other: add's gradient sums a broadcast
back with `reduce_sum`, `reduce_sum`'s gradient broadcasts with `broadcast_to`, whose gradient
sums again. `math_ops` re-exports every name here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.op import input_needed, op
from layerflow._src.framework import errors
from layerflow._src.framework.composite_dispatch import dispatchable
from layerflow._src.framework.convert import as_ints
from layerflow._src.framework.tensor import Tensor
from layerflow._src.ops import shape_ops
from layerflow._src.ops.compare_ops import _zeros_like, cast, equal
from layerflow._src.ops.shape_ops import _expand_dims, _size_of

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
    if type(axis) is int:
        axes: tuple[int, ...] = (axis,)
    elif type(axis) is tuple and all(type(a) is int for a in axis):
        axes = axis
    else:  # lists, tensors, NumPy integers; floats raise (never truncated)
        axes = as_ints(axis, "axis", opname)
    out = []
    for a in axes:
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
    if dy._data.dtype.kind == "c":
        # TF's MulGrad for complex operands: dy * conj(other) (the adjoint).
        x, y = _conj(x), _conj(y)
    return (
        _unbroadcast(multiply(dy, y), x) if input_needed(0) else None,
        _unbroadcast(multiply(dy, x), y) if input_needed(1) else None,
    )


@op("conj")
def _conj(xp: Any, z: Any) -> Any:
    return xp.conj(z)


@_conj.grad
def _(dy: Any, out: Any, z: Any) -> Any:
    return _conj(dy)


@op("real_div", 2, quiet=True)
def _real_div(xp: Any, x: Any, y: Any) -> Any:
    return x / y


@_real_div.grad
def _(dy: Any, out: Any, x: Any, y: Any) -> Any:
    if dy._data.dtype.kind == "c":
        # TF's RealDivGrad for complex operands: the adjoint, through conj(x) and conj(y).
        x, y = _conj(x), _conj(y)
    gx = _real_div(dy, y)
    gy = negative(multiply(gx, _real_div(x, y)))
    return _unbroadcast(gx, x), _unbroadcast(gy, y)


@op("negative")
def negative(xp: Any, x: Any) -> Any:
    return -x


@negative.grad
def _(dy: Any, out: Any, x: Any) -> Any:
    return negative(dy)


# --- reductions ----------------------------------------------------------------------------------


def _reduction_grad(dy: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    """Reshape a reduction's gradient so it broadcasts back over the reduced axes."""
    shape = tuple(x._data.shape)
    axes = range(len(shape)) if axis is None else axis
    if None in shape:
        # A tf.function trace with unknown dimensions: expand the reduced axes one by one and
        # broadcast against x itself (its size is known only when the program runs).
        if not keepdims:
            for a in sorted(axes):
                dy = _expand_dims(dy, a)
        return add(dy, _zeros_like(x))
    if not keepdims:
        kept = tuple([1 if i in axes else d for i, d in enumerate(shape)])
        if tuple(dy._data.shape) != kept:
            dy = _reshape(dy, kept)
    return _broadcast_to(dy, shape)


@op("reduce_sum", grad_uses_out=False, accepts="non_string")
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


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
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


@op("reduce_mean", grad_uses_out=False, accepts="non_string")
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
    # Divide the (small) gradient before broadcasting it: one array of x's size, not two.
    if x._data.size is None:  # unknown dimensions (a tf.function trace): counted at run time
        count = _real_div(cast(_size_of(x), dy.dtype), cast(_size_of(dy), dy.dtype))
        return _reduction_grad(_real_div(dy, count), x, axis, keepdims)
    n = x._data.size // max(dy._data.size, 1)
    count = Tensor(x._device.xp.asarray(n, dtype=dy._data.dtype), x._device)
    return _reduction_grad(_real_div(dy, count), x, axis, keepdims)


@dispatchable  # RaggedTensor arguments: ops/ragged/ragged_dispatch.py
def reduce_mean(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                name: str | None = None) -> Any:  # fmt: skip
    """Mean over `axis`; integer tensors give integer means (truncated), as in TF."""
    x = _as_tensor(input_tensor)
    return _reduce_mean(x, _norm_axis(axis, x._data.ndim, "reduce_mean"), bool(keepdims))


def _extremum(name: str, fn_name: str) -> Any:
    def identity(dtype: Any) -> Any:
        """max/min of nothing in TF: -inf/+inf for floats, the dtype's min/max otherwise."""
        if dtype.kind in "fc":
            return -np.inf if fn_name == "max" else np.inf
        info = np.iinfo(dtype)
        return info.min if fn_name == "max" else info.max

    @op(name, accepts="numeric")
    def forward(xp: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        if x.size == 0:
            shape = xp.sum(x, axis=axis, keepdims=keepdims).shape
            return xp.full(shape, identity(x.dtype), dtype=x.dtype)
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
    public.__doc__ = (
        f"`tf.{name}`: the {fn_name} over `axis` (all axes when None); NaN propagates, and the "
        f"{fn_name} of no elements is {'-inf' if fn_name == 'max' else 'inf'} (floats) or the "
        f"dtype's {'min' if fn_name == 'max' else 'max'} (integers), as in TF."
    )
    return public


reduce_max = dispatchable(_extremum("reduce_max", "max"))
reduce_min = dispatchable(_extremum("reduce_min", "min"))


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
    flags = backend.flags
    if flags.general and flags.tracer is not None and not isinstance(shape, Tensor):
        return shape_ops.traced_reshape(
            tensor, shape, lambda t, s: _reshape(t, as_ints(s, "shape", "reshape"))
        )
    return _reshape(tensor, as_ints(shape, "shape", "reshape"))


@op("broadcast_to", 1, may_alias=True)
def _broadcast_to(xp: Any, x: Any, shape: tuple[int, ...]) -> Any:
    # A broadcasting copy into a new array: the same result as broadcast_to(x).copy() at a
    # tenth of the cost (NumPy's broadcast_to is a Python-level function, ~10 us).
    if x.ndim > len(shape):  # assignment would drop leading 1s; TF refuses
        raise ValueError(f"cannot broadcast shape {tuple(x.shape)} to {tuple(shape)}")
    out = xp.empty(shape, dtype=x.dtype)
    out[...] = x
    return out


@_broadcast_to.grad
def _(dy: Any, out: Any, x: Any, shape: Any) -> Any:
    return _unbroadcast(dy, x)


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Any:  # noqa: A002
    return _broadcast_to(input, as_ints(shape, "shape", "broadcast_to"))
