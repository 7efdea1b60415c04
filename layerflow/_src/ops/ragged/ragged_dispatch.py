"""Ops over RaggedTensors (TF's ragged dispatch): elementwise ops on the flat values,
reductions over ragged axes, `concat`/`stack`/`gather`/`expand_dims`/`size`/`where`, and the
Python operators of `tf.RaggedTensor`.

Each override is registered for one public function (`framework/composite_dispatch.py`);
the ops themselves know nothing of ragged values. Values move with ordinary ops (gather,
segment reductions), so gradients reach `flat_values`.

>>> import layerflow as tf
>>> rt = tf.ragged.constant([[1.0, 2.0], [3.0]])
>>> rt * 2 + 1
<tf.RaggedTensor [[3.0, 5.0], [7.0]]>
>>> tf.reduce_sum(rt, axis=1).numpy()
array([3., 3.], dtype=float32)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.composite_dispatch import register_override
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.ops import (
    array_ops,
    compare_ops,
    complex_ops,
    core_ops,
    elementwise_more_ops,
    elementwise_ops,
    gather_ops,
    manip_ops,
    math_ops,
    nn_ops,
    reduce_ops,
    segment_ops,
    segment_reduce_ops,
    special_math_ops,
)
from layerflow._src.ops.ragged import ragged_shape
from layerflow._src.ops.ragged.ragged_getitem import gather_rows
from layerflow._src.ops.ragged.ragged_ops import _same_partition
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor, _host

_MODULES = (
    math_ops,
    core_ops,
    compare_ops,
    nn_ops,
    elementwise_more_ops,
    elementwise_ops,
    special_math_ops,
    complex_ops,
    array_ops,
)

UNARY = (
    "abs", "negative", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "square", "sin", "cos",
    "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid",
    "sign", "round", "floor", "ceil", "rint", "reciprocal", "erf", "erfc", "softplus", "softsign",
    "is_nan", "is_inf", "is_finite", "logical_not", "relu", "relu6", "elu", "selu", "gelu",
    "leaky_relu", "silu", "swish", "log_sigmoid", "lgamma", "digamma", "identity",
    "stop_gradient", "zeros_like", "ones_like", "cast", "saturate_cast",
)  # fmt: skip
BINARY = (
    "add", "subtract", "multiply", "truediv", "divide", "realdiv", "floordiv", "floormod", "mod",
    "pow", "maximum", "minimum", "equal", "not_equal", "less", "less_equal", "greater",
    "greater_equal", "logical_and", "logical_or", "logical_xor", "squared_difference",
    "divide_no_nan", "multiply_no_nan", "atan2", "xdivy", "xlogy", "truncatediv",
    "truncatemod",
)  # fmt: skip


def _tensor(x: Any) -> Any:
    return x if isinstance(x, TensorLike) else convert_to_tensor(x)


# --- elementwise ---------------------------------------------------------------------------------


def _unary(fn: Any) -> Any:
    def ragged_unary(x: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(x, RaggedTensor):
            raise TypeError(f"{fn.__name__}: only its first argument may be a RaggedTensor.")
        return x.with_flat_values(fn(x.flat_values, *args, **kwargs))

    return ragged_unary


def _flat_coords(rt: RaggedTensor) -> np.ndarray:
    """The dense coordinates (one per ragged level plus the row) of every flat value."""
    cols = [np.arange(rt.nrows_int(), dtype=np.int64)]
    v: Any = rt
    while isinstance(v, RaggedTensor):
        s = _host(v.row_splits).astype(np.int64)
        rowids = np.repeat(np.arange(len(s) - 1), np.diff(s))
        pos = np.arange(int(s[-1]), dtype=np.int64) - s[rowids]
        cols = [c[rowids] for c in cols] + [pos]
        v = v.values
    return np.stack(cols, axis=1)


def _broadcast_dense(rt: RaggedTensor, y: Any) -> Any:
    """`y` (dense) as values aligned with `rt.flat_values`, for a broadcasting binary op."""
    inner_rank = rt.flat_values.shape.rank - 1
    if not isinstance(y, TensorLike):
        if np.ndim(y) <= inner_rank:
            return y  # a Python value: the op converts it with the ragged values' dtype
        y = convert_to_tensor(y, dtype_hint=rt.dtype)
    if y.shape.rank <= inner_rank:
        return y  # broadcasts against the inner dimensions of every value
    rank = rt.shape.rank
    if y.shape.rank > rank:
        raise ValueError(
            f"Cannot broadcast a tensor of shape {y.shape} against a RaggedTensor of shape "
            f"{rt.shape}."
        )
    shape = [1] * (rank - y.shape.rank) + y.shape.as_list()
    y = core_ops.reshape(y, shape)
    k = rt.ragged_rank
    coords = _flat_coords(rt)
    for d in range(k + 1):
        if shape[d] == 1:
            coords[:, d] = 0
        elif (d == 0 and shape[0] != rt.nrows_int()) or (
            d > 0 and _row_length_mismatch(rt, d, shape[d])
        ):
            raise ValueError(
                f"Cannot broadcast a tensor of shape {y.shape} against a RaggedTensor of shape "
                f"{rt.shape}: its dimension {d} has size {shape[d]}, which matches neither 1 "
                "nor the RaggedTensor's lengths along that dimension."
            )
    outer = core_ops.reshape(y, [int(np.prod(shape[: k + 1])), *shape[k + 1 :]])
    flat_index = np.ravel_multi_index(coords.T, shape[: k + 1]) if coords.size else coords[:, 0]
    return gather_ops.gather(outer, flat_index.astype(np.int64))


def _row_length_mismatch(rt: RaggedTensor, level: int, size: int) -> bool:
    v: Any = rt
    for _ in range(level - 1):
        v = v.values
    lengths = np.diff(_host(v.row_splits))
    return bool(np.any(lengths != size))


def _binary(fn: Any) -> Any:
    def ragged_binary(x: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(x, RaggedTensor) and isinstance(y, RaggedTensor):
            if not _same_partition(x, y):
                raise ValueError(
                    f"{fn.__name__}: the RaggedTensors have incompatible row partitions "
                    f"(shapes {x.shape} and {y.shape}, row lengths "
                    f"{[_host(t).tolist() for t in x.nested_row_lengths()]} and "
                    f"{[_host(t).tolist() for t in y.nested_row_lengths()]})."
                )
            return x.with_flat_values(fn(x.flat_values, y.flat_values, *args, **kwargs))
        if isinstance(x, RaggedTensor):
            return x.with_flat_values(fn(x.flat_values, _broadcast_dense(x, y), *args, **kwargs))
        return y.with_flat_values(fn(_broadcast_dense(y, x), y.flat_values, *args, **kwargs))

    return ragged_binary


def _lookup(name: str) -> Any:
    for module in _MODULES:
        fn = getattr(module, name, None)
        if callable(fn) and not isinstance(fn, type):
            return fn
    return None


def _register_elementwise() -> None:
    seen: set[int] = set()
    for names, make in ((UNARY, _unary), (BINARY, _binary)):
        for name in names:
            fn = _lookup(name)
            if fn is None or id(fn) in seen:
                continue
            seen.add(id(fn))
            register_override(fn, RaggedTensor, make(fn))


# --- reductions ----------------------------------------------------------------------------------


def _segment(kind: str) -> Any:
    return {
        "sum": segment_ops.unsorted_segment_sum,
        "max": segment_reduce_ops.unsorted_segment_max,
        "min": segment_reduce_ops.unsorted_segment_min,
        "prod": segment_reduce_ops.unsorted_segment_prod,
    }[kind]


def _segment_reduce(x: Any, ids: np.ndarray, n: int, kind: str) -> Any:
    """Combine the rows of `x` with equal `ids` elementwise (ragged rows aligned on the left)."""
    if not isinstance(x, RaggedTensor):
        return _segment(kind)(x, ids.astype(np.int64), n)
    lengths = np.diff(_host(x.row_splits)).astype(np.int64)
    out_len = np.zeros(n, np.int64)
    np.maximum.at(out_len, ids, lengths)
    out_splits = np.concatenate([[0], np.cumsum(out_len)])
    rowids = np.repeat(np.arange(len(lengths)), lengths)
    pos = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(
        _host(x.row_splits)[:-1].astype(np.int64), lengths
    )
    inner = _segment_reduce(x.values, out_splits[ids[rowids]] + pos, int(out_splits[-1]), kind)
    return RaggedTensor.from_row_splits(
        inner, out_splits.astype(x.row_splits_dtype.np), validate=False
    )


def _reduce_axis(x: Any, axis: int, kind: str) -> Any:
    if not isinstance(x, RaggedTensor):
        dense = {"sum": core_ops.reduce_sum, "max": core_ops.reduce_max,
                 "min": core_ops.reduce_min, "prod": reduce_ops.reduce_prod}[kind]  # fmt: skip
        return dense(x, axis)
    if axis == 0:
        lengths = np.diff(_host(x.row_splits)).astype(np.int64)
        pos = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(
            _host(x.row_splits)[:-1].astype(np.int64), lengths
        )
        return _segment_reduce(x.values, pos, int(lengths.max()) if lengths.size else 0, kind)
    if axis == 1:
        ids = _host(x.value_rowids()).astype(np.int64)
        return _segment_reduce(x.values, ids, x.nrows_int(), kind)
    return x.with_values(_reduce_axis(x.values, axis - 1, kind))


def _axes(x: RaggedTensor, axis: Any, what: str) -> list[int]:
    rank = x.shape.rank
    if axis is None:
        return list(range(rank))
    if isinstance(axis, TensorLike):
        axis = _host(axis).tolist()
    axes = [axis] if isinstance(axis, int | np.integer) else list(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -rank <= a < rank:
            raise ValueError(f"{what}: axis {a} is out of range for a RaggedTensor of rank {rank}.")
        out.append(a % rank)
    return sorted(set(out), reverse=True)


def _reduction(kind: str, what: str) -> Any:
    def reduce(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: Any = None) -> Any:  # fmt: skip
        x = input_tensor
        axes = _axes(x, axis, what)
        out: Any = _reduce_axis(x.flat_values, None, kind) if axis is None else x
        if axis is not None:
            for a in axes:
                out = _reduce_axis(out, a, kind)
        if keepdims:  # the reduced axes come back with length 1 (TF)
            for a in sorted(axes):
                out = _expand_dims(out, a) if isinstance(out, RaggedTensor) else (
                    array_ops.expand_dims(out, a))  # fmt: skip
        return out

    return reduce


def _reduce_mean(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                 name: Any = None) -> Any:  # fmt: skip
    x = input_tensor
    if not x.dtype.is_floating:  # TF's ragged mean of integers is float64
        x = x.with_flat_values(compare_ops.cast(x.flat_values, dtypes.float64))
    total = _reduction("sum", "tf.reduce_mean")(x, axis, keepdims)
    ones = x.with_flat_values(compare_ops.ones_like(x.flat_values))
    count = _reduction("sum", "tf.reduce_mean")(ones, axis, keepdims)
    return math_ops.truediv(total, count)


def _reduce_bool(kind: str, what: str) -> Any:
    def reduce(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: Any = None) -> Any:  # fmt: skip
        as_int = input_tensor.with_flat_values(
            compare_ops.cast(input_tensor.flat_values, dtypes.int32)
        )
        out = _reduction(kind, what)(as_int, axis, keepdims)
        return compare_ops.cast(out, dtypes.bool_)

    return reduce


# --- concat, stack, gather, shape -----------------------------------------------------------------


def _as_ragged(x: Any, ragged_rank: int) -> RaggedTensor:
    if isinstance(x, RaggedTensor):
        return x
    return RaggedTensor.from_tensor(_tensor(x), ragged_rank=ragged_rank)


def _concat0(xs: list) -> Any:
    if not isinstance(xs[0], RaggedTensor):
        return array_ops.concat(list(xs), 0)
    values = _concat0([x.values for x in xs])
    splits, offset = [np.zeros(1, np.int64)], 0
    for x in xs:
        s = _host(x.row_splits).astype(np.int64)
        splits.append(s[1:] + offset)
        offset += int(s[-1])
    return RaggedTensor.from_row_splits(
        values, np.concatenate(splits).astype(xs[0].row_splits_dtype.np), validate=False
    )


def _prepare(values: Any, what: str) -> list[RaggedTensor]:
    xs = list(values)
    rr = max(x.ragged_rank for x in xs if isinstance(x, RaggedTensor))
    xs = [_as_ragged(x, rr) for x in xs]
    if any(x.ragged_rank != rr for x in xs):
        xs = [x if x.ragged_rank == rr else _deepen(x, rr) for x in xs]
    ranks = {x.shape.rank for x in xs}
    if len(ranks) > 1:
        raise ValueError(f"{what}: all values must have the same rank, got ranks {sorted(ranks)}.")
    return xs


def _deepen(x: RaggedTensor, rr: int) -> RaggedTensor:
    """`x` with its uniform inner dimensions turned ragged, up to ragged rank `rr`."""
    return x.with_flat_values(
        RaggedTensor.from_tensor(x.flat_values, ragged_rank=rr - x.ragged_rank)
    )


def _stack1(xs: list, what: str) -> RaggedTensor:
    n = {x.nrows_int() for x in xs}
    if len(n) > 1:
        raise ValueError(f"{what}: along axis 1 the values must have the same number of rows.")
    nrows, k = n.pop(), len(xs)
    joined = _concat0(xs)
    order = (np.arange(k)[None, :] * nrows + np.arange(nrows)[:, None]).reshape(-1)
    return RaggedTensor.from_uniform_row_length(gather_rows(joined, order), k, nrows=nrows)


def _concat(values: Any, axis: int, name: Any = None) -> Any:
    xs = _prepare(values, "tf.concat")
    rank = xs[0].shape.rank
    a = axis + rank if axis < 0 else axis
    if a == 0:
        return _concat0(xs)
    if a == 1:
        return _stack1(xs, "tf.concat").merge_dims(1, 2)
    return _inner_axis(xs, a, "tf.concat", _concat)


def _stack(values: Any, axis: int = 0, name: Any = None) -> Any:
    xs = _prepare(values, "tf.stack")
    rank = xs[0].shape.rank + 1
    a = axis + rank if axis < 0 else axis
    if a == 0:
        return RaggedTensor.from_row_lengths(_concat0(xs), [x.nrows_int() for x in xs])
    if a == 1:
        return _stack1(xs, "tf.stack")
    return _inner_axis(xs, a, "tf.stack", _stack)


def _inner_axis(xs: list, a: int, what: str, again: Any) -> Any:
    if any(not _same_partition_outer(xs[0], x) for x in xs[1:]):
        raise ValueError(f"{what}: along axis {a} the values must have the same row lengths.")
    return xs[0].with_values(again([x.values for x in xs], a - 1))


def _same_partition_outer(a: RaggedTensor, b: RaggedTensor) -> bool:
    return np.array_equal(_host(a.row_splits), _host(b.row_splits))


def _gather(params: Any, indices: Any, validate_indices: Any = None, axis: Any = None,
            batch_dims: int = 0, name: Any = None) -> Any:  # fmt: skip
    if isinstance(indices, RaggedTensor):
        return indices.with_flat_values(_gather(params, indices.flat_values, axis=axis))
    if axis not in (None, 0) or batch_dims:
        raise NotImplementedError(
            "tf.gather on a RaggedTensor supports axis=0 and batch_dims=0 only."
        )
    idx = _host(_tensor(indices)).astype(np.int64)
    n = params.nrows_int()
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise ValueError(f"tf.gather: indices {idx.tolist()} out of range for {n} rows.")
    rows = gather_rows(params, idx.reshape(-1) % max(n, 1))
    for d in reversed(idx.shape[1:]):  # indices of rank > 1 add uniform outer dimensions
        rows = RaggedTensor.from_uniform_row_length(rows, d)
    return rows


def _size(input: Any, out_type: Any = "int32", name: Any = None) -> Any:  # noqa: A002
    return array_ops.size(input.flat_values, out_type=out_type)


def _expand_dims(input: Any, axis: int, name: Any = None) -> Any:  # noqa: A002
    rank = input.shape.rank + 1
    a = axis + rank if axis < 0 else axis
    if a == 0:
        return RaggedTensor.from_uniform_row_length(input, input.nrows_int(), nrows=1)
    if a == 1:
        return RaggedTensor.from_uniform_row_length(input, 1)
    values = input.values
    new = (
        _expand_dims(values, a - 1)
        if isinstance(values, RaggedTensor)
        else array_ops.expand_dims(values, a - 1)
    )
    return input.with_values(new)


def _where(condition: Any, x: Any = None, y: Any = None, name: Any = None) -> Any:
    if x is None and y is None:
        cond = condition
        keep = _host(cond.flat_values).astype(bool)
        coords = _flat_coords(cond)
        if keep.ndim > 1:  # inner dense dims: every true entry of every value
            inner = np.argwhere(keep)
            coords = np.concatenate([coords[inner[:, 0]], inner[:, 1:]], axis=1)
        else:
            coords = coords[keep]
        return convert_to_tensor(coords.astype(np.int64).reshape(-1, cond.shape.rank))
    if x is None or y is None:
        raise ValueError("tf.where: give both x and y, or neither.")
    ragged = [v for v in (condition, x, y) if isinstance(v, RaggedTensor)]
    base = ragged[0]
    flat = [v.flat_values if isinstance(v, RaggedTensor) else _broadcast_dense(base, v)
            for v in (condition, x, y)]  # fmt: skip
    if any(not _same_partition(base, r) for r in ragged[1:]):
        raise ValueError("tf.where: the RaggedTensors must have the same row partitions.")
    return base.with_flat_values(math_ops.where(*flat))


def _add_n(inputs: Any, name: Any = None) -> Any:
    xs = list(inputs)
    total = xs[0]
    for x in xs[1:]:
        total = math_ops.add(total, x)
    return total


def _rank(input: Any, name: Any = None) -> Any:  # noqa: A002
    return convert_to_tensor(np.asarray(input.shape.rank, np.int32))


def _tile(input: Any, multiples: Any, name: Any = None) -> Any:  # noqa: A002
    m = [int(v) for v in np.asarray(_host(_tensor(multiples))).reshape(-1)]
    if len(m) != input.shape.rank or any(v < 0 for v in m):
        raise ValueError(
            f"tf.tile: multiples must hold {input.shape.rank} non-negative values (one per "
            f"dimension of the RaggedTensor), got {m}."
        )
    out: Any = input
    if any(v != 1 for v in m[2:]):  # inner dimensions first: each row's values tiled
        values = out.values
        inner = [1, *m[2:]]
        tiled = _tile(values, inner) if isinstance(values, RaggedTensor) else manip_ops.tile(
            values, inner)  # fmt: skip
        out = out.with_values(tiled)
    if m[1] != 1:
        out = _concat([out] * m[1], 1) if m[1] else _inner_empty(out)
    if m[0] != 1:
        out = _concat0([out] * m[0]) if m[0] else gather_rows(out, np.zeros(0, np.int64))
    return out


def _inner_empty(rt: RaggedTensor) -> RaggedTensor:
    return gather_rows(rt, np.arange(rt.nrows_int()))[:, :0]


def _register() -> None:
    _register_elementwise()
    table = {
        core_ops.reduce_sum: _reduction("sum", "tf.reduce_sum"),
        core_ops.reduce_max: _reduction("max", "tf.reduce_max"),
        core_ops.reduce_min: _reduction("min", "tf.reduce_min"),
        reduce_ops.reduce_prod: _reduction("prod", "tf.reduce_prod"),
        core_ops.reduce_mean: _reduce_mean,
        reduce_ops.reduce_any: _reduce_bool("max", "tf.reduce_any"),
        reduce_ops.reduce_all: _reduce_bool("min", "tf.reduce_all"),
        array_ops.concat: _concat,
        array_ops.stack: _stack,
        gather_ops.gather: _gather,
        array_ops.size: _size,
        array_ops.expand_dims: _expand_dims,
        math_ops.where: _where,
        array_ops.shape: ragged_shape.shape,
        array_ops.rank: _rank,
        reduce_ops.add_n: _add_n,
        manip_ops.tile: _tile,
    }
    for fn, impl in table.items():
        register_override(fn, RaggedTensor, impl)


_register()


# --- Python operators ----------------------------------------------------------------------------


def _reflect(fn: Any) -> Any:
    def reflected(self: Any, other: Any) -> Any:
        return fn(other, self)

    return reflected


_OPERATORS = {
    "__add__": math_ops.add, "__radd__": _reflect(math_ops.add),
    "__sub__": math_ops.subtract, "__rsub__": _reflect(math_ops.subtract),
    "__mul__": math_ops.multiply, "__rmul__": _reflect(math_ops.multiply),
    "__truediv__": math_ops.truediv, "__rtruediv__": _reflect(math_ops.truediv),
    "__floordiv__": math_ops.floordiv, "__rfloordiv__": _reflect(math_ops.floordiv),
    "__mod__": math_ops.floormod, "__rmod__": _reflect(math_ops.floormod),
    "__pow__": math_ops.pow, "__rpow__": _reflect(math_ops.pow),
    "__lt__": math_ops.less, "__le__": math_ops.less_equal,
    "__gt__": math_ops.greater, "__ge__": math_ops.greater_equal,
    "__and__": math_ops.logical_and, "__rand__": _reflect(math_ops.logical_and),
    "__or__": math_ops.logical_or, "__ror__": _reflect(math_ops.logical_or),
    "__xor__": math_ops.logical_xor, "__rxor__": _reflect(math_ops.logical_xor),
    "__neg__": math_ops.negative, "__abs__": math_ops.abs, "__invert__": math_ops.logical_not,
}  # fmt: skip


def _eq(self: Any, other: Any) -> Any:
    # Elementwise, as TF 2's `==`; values that cannot be compared are simply unequal.
    if other is None:
        return False
    try:
        return math_ops.equal(self, other)
    except (errors.InvalidArgumentError, TypeError, ValueError):
        return False


def _ne(self: Any, other: Any) -> Any:
    if other is None:
        return True
    try:
        return math_ops.not_equal(self, other)
    except (errors.InvalidArgumentError, TypeError, ValueError):
        return True


_OPERATORS["__eq__"], _OPERATORS["__ne__"] = _eq, _ne
for _name, _fn in _OPERATORS.items():
    setattr(RaggedTensor, _name, _fn)


def _unhashable(self: Any) -> int:
    raise TypeError("RaggedTensor is unhashable.")  # TF's rule, as its `==` is elementwise


RaggedTensor.__hash__ = _unhashable  # type: ignore[method-assign]


def stack(values: Any, axis: int = 0, name: Any = None) -> Any:
    """`tf.ragged.stack`: `tf.stack` whose result is always a RaggedTensor.

    >>> import layerflow as tf
    >>> tf.ragged.stack([tf.ragged.constant([[1, 2], [3]]), tf.ragged.constant([[4]])])
    <tf.RaggedTensor [[[1, 2], [3]], [[4]]]>
    """
    xs = list(values)
    if not any(isinstance(x, RaggedTensor) for x in xs):
        xs = [RaggedTensor.from_tensor(_tensor(x)) for x in xs]
    return _stack(xs, axis)
