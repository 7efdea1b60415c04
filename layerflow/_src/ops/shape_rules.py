"""Output-spec rules of the op families layers and common TF code use (see `autodiff/specs.py`).

Each rule takes the inputs' `ArraySpec`s (None for an unknown dimension) and the op's
attributes, exactly as the forward takes arrays and attributes, and returns the output's spec.
Importing this module declares the rules on the ops (`op.spec(rule)` or a family name).

>>> from layerflow._src.autodiff.specs import ArraySpec
>>> broadcast_shapes((None, 1, 3), (4, 1))
(None, 4, 3)
>>> reduce(ArraySpec((None, 3, 4), "float32"), (1,), True).shape
(None, 1, 4)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.autodiff.specs import ArraySpec, SpecError, register_family
from layerflow._src.framework import dtypes
from layerflow._src.ops import (
    array_ops,
    compare_ops,
    conv_kernels,
    conv_ops,
    core_ops,
    dense_ops,
    elementwise_ops,
    gather_ops,
    manip_ops,
    math_ops,
    nn_ops,
    pool_ops,
    reduce_ops,
)


def _error(what: str, detail: str) -> SpecError:
    return SpecError(f"{what}: {detail}")


def broadcast_shapes(*shapes: tuple, what: str = "broadcast") -> tuple:
    """NumPy/TF broadcasting of shapes with None (unknown) dimensions."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-rank, 0):
        dims = [s[i] for s in shapes if len(s) >= -i]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise _error(
                what,
                f"shapes {[tuple(s) for s in shapes]} cannot be broadcast (axis {rank + i} has "
                f"sizes {sorted(known)}).",
            )
        if known:
            out.append(known.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


@register_family("same")
def same(x: ArraySpec, *attrs: Any, **kwargs: Any) -> ArraySpec:
    """Unary elementwise: the input's shape and dtype (activations, softmax, clip...)."""
    return ArraySpec(x.shape, x.dtype)


@register_family("elementwise")
def elementwise(*inputs: ArraySpec, **kwargs: Any) -> ArraySpec:
    """Broadcasting elementwise: the broadcast shape, the first input's dtype."""
    return ArraySpec(broadcast_shapes(*(s.shape for s in inputs)), inputs[0].dtype)


@register_family("compare")
def compare(*inputs: ArraySpec, **kwargs: Any) -> ArraySpec:
    """Broadcasting comparison or logical op: the broadcast shape, bool."""
    return ArraySpec(broadcast_shapes(*(s.shape for s in inputs)), np.dtype(bool))


@register_family("reduce")
def reduce(x: ArraySpec, axis: Any = None, keepdims: bool = False) -> ArraySpec:
    """A reduction over normalised `axis` (a tuple, or None for all axes)."""
    axes = set(range(x.ndim)) if axis is None else {a % max(x.ndim, 1) for a in axis}
    shape = [(1 if i in axes else d) for i, d in enumerate(x.shape) if keepdims or i not in axes]
    dt = np.dtype(np.int32) if x.dtype.kind == "b" else x.dtype
    return ArraySpec(shape, dt)


def _arg_reduce(x: ArraySpec, axis: int, out_dtype: Any) -> ArraySpec:
    return ArraySpec([d for i, d in enumerate(x.shape) if i != axis % x.ndim], out_dtype)


def _matmul(a: ArraySpec, b: ArraySpec, transpose_a: bool = False,
            transpose_b: bool = False) -> ArraySpec:  # fmt: skip
    if a.ndim < 2 or b.ndim < 2:
        raise _error("matmul", f"both inputs need rank >= 2, got shapes {a.shape} and {b.shape}.")
    m, ka = (a.shape[-1], a.shape[-2]) if transpose_a else a.shape[-2:]
    kb, n = (b.shape[-1], b.shape[-2]) if transpose_b else b.shape[-2:]
    if ka is not None and kb is not None and ka != kb:
        raise _error(
            "matmul",
            f"inner dimensions differ: {a.shape} and {b.shape} (transpose_a={transpose_a}, "
            f"transpose_b={transpose_b}).",
        )
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], what="matmul")
    return ArraySpec((*batch, m, n), a.dtype)


def _dense(x: ArraySpec, kernel: ArraySpec, bias: ArraySpec, relu: bool) -> ArraySpec:
    return ArraySpec((*x.shape[:-1], kernel.shape[-1]), x.dtype)


def _reshape(x: ArraySpec, shape: tuple) -> ArraySpec:
    """-1 is inferred when every other size is known, else unknown; None stays unknown."""
    shape = [None if d is None else int(d) for d in shape]
    if shape.count(-1) > 1:
        raise _error("reshape", f"at most one -1 in the new shape, got {tuple(shape)}.")
    if -1 in shape:
        known_in = None if None in x.shape else int(np.prod(x.shape, dtype=np.int64))
        rest = [d for d in shape if d != -1]
        if known_in is not None and None not in rest:
            part = int(np.prod(rest, dtype=np.int64))
            if part == 0 or known_in % part:
                raise _error("reshape", f"cannot reshape {x.shape} into {tuple(shape)}.")
            shape[shape.index(-1)] = known_in // part
        else:
            shape[shape.index(-1)] = None
    elif None not in x.shape and None not in shape:
        if int(np.prod(x.shape, dtype=np.int64)) != int(np.prod(shape, dtype=np.int64)):
            raise _error("reshape", f"cannot reshape {x.shape} into {tuple(shape)}.")
    return ArraySpec(shape, x.dtype)


def _transpose(x: ArraySpec, perm: tuple) -> ArraySpec:
    return ArraySpec([x.shape[p] for p in perm], x.dtype)


def _join(what: str, values: list[ArraySpec], axis: int, new_axis: bool) -> ArraySpec:
    first = values[0]
    rank = first.ndim + (1 if new_axis else 0)
    ax = axis % rank
    out: list[Any] = []
    for i in range(first.ndim):
        dims = [v.shape[i] for v in values]
        if not new_axis and i == ax:
            out.append(None if None in dims else sum(dims))
            continue
        known = {d for d in dims if d is not None}
        if len(known) > 1:
            raise _error(what, f"shapes {[v.shape for v in values]} differ on axis {i}.")
        out.append(known.pop() if known else None)
    if new_axis:
        out.insert(ax, len(values))
    return ArraySpec(out, first.dtype)


def _gather(params: ArraySpec, indices: ArraySpec, axis: int) -> ArraySpec:
    ax = axis % params.ndim
    return ArraySpec((*params.shape[:ax], *indices.shape, *params.shape[ax + 1 :]), params.dtype)


def _slice_dim(size: Any, key: slice) -> Any:
    # A slice of an unknown dimension has an unknown size (as TF's strided_slice reports).
    return None if size is None else len(range(*key.indices(size)))


def _strided_slice(x: ArraySpec, key: Any) -> Any:
    """Basic indexing (ints, slices, None, Ellipsis); other keys have no rule (fallback)."""
    keys = key if isinstance(key, tuple) else (key,)
    if not all(k is None or k is Ellipsis or isinstance(k, int | slice) for k in keys):
        raise NotImplementedError  # advanced indexing: handled by `_getitem_spec`
    n_real = sum(1 for k in keys if k is not None and k is not Ellipsis)
    if keys.count(Ellipsis):
        at = keys.index(Ellipsis)
        keys = keys[:at] + (slice(None),) * (x.ndim - n_real) + keys[at + 1 :]
    keys = keys + (slice(None),) * (x.ndim - sum(1 for k in keys if k is not None))
    out, dim = [], 0
    for k in keys:
        if k is None:
            out.append(1)
            continue
        size = x.shape[dim]
        dim += 1
        if isinstance(k, slice):
            out.append(_slice_dim(size, k))
        elif size is not None and not -size <= k < size:
            raise _error("strided_slice", f"index {k} is out of range for shape {x.shape}.")
    return ArraySpec(out, x.dtype)


def _getitem_spec(x: ArraySpec, key: Any) -> Any:
    try:
        return _strided_slice(x, key)
    except NotImplementedError:
        # Index tensors and masks: run on zeros with unknown dims 2, then 3; the axes whose
        # sizes differ are unknown (the same two-size fallback as `specs.run_twice`).
        def run(size: int) -> Any:
            shape = tuple(size if d is None else d for d in x.shape)
            return array_ops._getitem(np.zeros(shape, x.dtype), key)

        a, b = run(2), run(3)
        return ArraySpec([p if p == q else None for p, q in zip(a.shape, b.shape)], x.dtype)


def _cast(x: ArraySpec, dtype: Any) -> ArraySpec:
    return ArraySpec(x.shape, dtypes.as_dtype(dtype).np)


def _like(x: ArraySpec, dtype: Any = None) -> ArraySpec:
    return ArraySpec(x.shape, x.dtype if dtype is None else dtypes.as_dtype(dtype).np)


def _select(cond: ArraySpec, x: ArraySpec, y: ArraySpec) -> ArraySpec:
    return ArraySpec(broadcast_shapes(cond.shape, x.shape, y.shape, what="where"), x.dtype)


def _spatial(what: str, x: ArraySpec, kernel: tuple, strides: tuple, dilations: tuple,
             padding: Any) -> list:  # fmt: skip
    """Output sizes of the spatial axes (1, 2) of an NHWC input; None where unknown."""
    known = [2 * k * d + 1 if n is None else n for n, k, d in
             zip(x.shape[1:3], kernel, dilations)]  # fmt: skip
    outs, _ = conv_kernels.geometry(tuple(known), tuple(kernel), strides, dilations, padding, what)
    return [None if n is None else o for n, o in zip(x.shape[1:3], outs)]


def _conv(x: ArraySpec, w: ArraySpec, attrs: tuple) -> ArraySpec:
    strides, dilations, padding, _groups = attrs
    hw = _spatial("conv2d", x, w.shape[:2], strides, dilations, padding)
    return ArraySpec((x.shape[0], *hw, w.shape[3]), x.dtype)


def _conv_bias_act(x: ArraySpec, w: ArraySpec, b: ArraySpec, attrs: tuple,
                   relu: bool) -> ArraySpec:  # fmt: skip
    return _conv(x, w, attrs)


def _pool(x: ArraySpec, ksize: tuple, strides: tuple, padding: Any) -> ArraySpec:
    hw = _spatial("pool", x, ksize, strides, (1, 1), padding)
    return ArraySpec((x.shape[0], *hw, x.shape[3]), x.dtype)


def _tile(x: ArraySpec, multiples: tuple) -> ArraySpec:
    return ArraySpec([None if d is None else d * m for d, m in zip(x.shape, multiples)], x.dtype)


def _broadcast_to(x: ArraySpec, shape: tuple) -> ArraySpec:
    return ArraySpec(shape, x.dtype)


def _pad(x: ArraySpec, paddings: tuple, value: Any = None) -> ArraySpec:
    return ArraySpec(
        [None if d is None else d + lo + hi for d, (lo, hi) in zip(x.shape, paddings)], x.dtype
    )


# --- declaring the rules on the ops -------------------------------------------------------------

for _op in (
    core_ops.negative, math_ops.abs, math_ops.sign, math_ops.exp, math_ops.log, math_ops.sqrt,
    math_ops.square, math_ops.tanh, math_ops.sigmoid, math_ops.relu, nn_ops._softmax,
    nn_ops._log_softmax, nn_ops.relu6, nn_ops._leaky_relu, nn_ops._elu, nn_ops.softplus,
    nn_ops.softsign, elementwise_ops.erf, elementwise_ops.rsqrt, elementwise_ops.log1p,
    elementwise_ops.expm1, elementwise_ops.floor, elementwise_ops.ceil, elementwise_ops.round,
    elementwise_ops.sin, elementwise_ops.cos, elementwise_ops.reciprocal, array_ops.identity,
    array_ops.stop_gradient,
):  # fmt: skip
    _op.spec("same")
for _op in (
    core_ops.add, core_ops.subtract, core_ops.multiply, core_ops._real_div, math_ops.pow,
    math_ops.maximum, math_ops.minimum, math_ops.squared_difference, math_ops.floordiv,
    math_ops.floormod, math_ops._div_no_nan, elementwise_ops._clip,
):  # fmt: skip
    _op.spec("elementwise")
for _op in (
    compare_ops.equal, compare_ops.not_equal, compare_ops.less, compare_ops.less_equal,
    compare_ops.greater, compare_ops.greater_equal, compare_ops.logical_and,
    compare_ops.logical_or, compare_ops.logical_xor, compare_ops.logical_not,
    elementwise_ops.is_nan, elementwise_ops.is_inf, elementwise_ops.is_finite,
):  # fmt: skip
    _op.spec("compare")
for _op in (core_ops._reduce_sum, core_ops._reduce_mean, reduce_ops._reduce_prod):
    _op.spec("reduce")
for _op in (reduce_ops._reduce_any, reduce_ops._reduce_all):
    _op.spec(lambda x, axis=None, keepdims=False: ArraySpec(reduce(x, axis, keepdims).shape, bool))
reduce_ops._argmax.spec(_arg_reduce)
reduce_ops._argmin.spec(_arg_reduce)
math_ops._matmul.spec(_matmul)
dense_ops._dense.spec(_dense)
core_ops._reshape.spec(_reshape)
core_ops._broadcast_to.spec(_broadcast_to)
array_ops._transpose.spec(_transpose)
array_ops._concat.spec(lambda values, axis: _join("concat", values, axis, False))
array_ops._stack.spec(lambda values, axis: _join("stack", values, axis, True))
array_ops._getitem.spec(_getitem_spec)
gather_ops._gather.spec(_gather)
manip_ops._tile.spec(_tile)
manip_ops._pad.spec(_pad)
compare_ops._cast.spec(_cast)
compare_ops._zeros_like.spec(_like)
compare_ops._ones_like.spec(_like)
math_ops._select.spec(_select)
conv_ops._conv.spec(_conv)
conv_ops._conv_bias_act.spec(_conv_bias_act)
pool_ops._max_pool.spec(_pool)
pool_ops._avg_pool.spec(_pool)
