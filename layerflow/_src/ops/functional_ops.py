"""Higher-order functions over the first axis: `map_fn`, `scan`, `foldl`, `foldr`,
`vectorized_map`, with TF's arguments, structure rules and dtype checks.

Each runs `fn` eagerly on the slices (`tf.unstack`) and joins the results (`tf.stack`), so the
gradient is the one of those ops and of what `fn` computes, as TF's gradient of its loops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.ops.array_ops import stack, unstack, zeros
from layerflow._src.utils import nest


def _check_callable(fn: Any, opname: str) -> None:
    if not callable(fn):
        raise TypeError(f"{opname}: 'fn' must be callable, got {type(fn).__name__}.")


def _columns(elems: Any, opname: str) -> tuple[list[Any], list[list[Any]], int]:
    """The leaves of `elems` as tensors, each unstacked along axis 0, and their common length."""
    flat = [x if isinstance(x, TensorLike) else convert_to_tensor(x) for x in nest.flatten(elems)]
    if not flat:
        raise ValueError(f"{opname}: 'elems' must hold at least one tensor, got {elems!r}.")
    for t in flat:
        if t.shape.rank == 0:
            raise ValueError("Elements in elems must be 1+ dimensional Tensors, not scalars")
    n = flat[0].shape[0]
    for t in flat[1:]:
        if t.shape[0] != n:
            raise ValueError(
                f"Dimensions {n} and {t.shape[0]} are not compatible: every tensor in "
                f"'elems' of {opname} must have the same first dimension."
            )
    return flat, [unstack(t) for t in flat], n


def _slice(elems: Any, cols: list[list[Any]], i: int) -> Any:
    return nest.pack_sequence_as(elems, [c[i] for c in cols])


def _spec(s: Any) -> tuple[dtypes.DType, TensorShape | None]:
    """(dtype, shape or None) of a DType or a TensorSpec-like leaf of `fn_output_signature`."""
    if isinstance(s, dtypes.DType) or isinstance(s, str):
        return dtypes.as_dtype(s), None
    if hasattr(s, "dtype") and hasattr(s, "shape"):
        return dtypes.as_dtype(s.dtype), TensorShape(s.shape)
    raise TypeError(f"fn_output_signature leaves must be tf.DType or tf.TensorSpec, got {s!r}.")


def _same_structure(expected: Any, got: Any, opname: str) -> None:
    try:
        nest.assert_same_structure(expected, got, check_types=False)
    except (ValueError, TypeError) as err:
        raise ValueError(
            f"{opname}: fn returned a value whose structure differs from the expected one "
            f"({err}). Expected structure: {expected!r}; got {got!r}. Set fn_output_signature "
            f"when fn's output structure differs from its input's."
        ) from None


def _leaf(value: Any, dtype: dtypes.DType | None, opname: str) -> Any:
    if not isinstance(value, TensorLike):
        return convert_to_tensor(value, dtype=dtype)
    if dtype is not None and value.dtype != dtype:
        raise errors.InvalidArgumentError(
            None, opname,
            f"{opname}: fn returned a {value.dtype.name} tensor where {dtype.name} was "
            f"expected. Set fn_output_signature to the dtype fn returns, or cast inside fn.",
        )  # fmt: skip
    return value


def _stack_leaves(rows: list[list[Any]], opname: str) -> list[Any]:
    out = []
    for j in range(len(rows[0])):
        column = [r[j] for r in rows]
        first = column[0].shape
        for t in column[1:]:
            if t.shape != first:
                raise ValueError(
                    f"{opname}: Incompatible shape for value ({tuple(t.shape.as_list())}), "
                    f"expected ({tuple(first.as_list())}): fn must return the same shape "
                    f"for every element."
                )
        out.append(stack(column))
    return out


def map_fn(fn: Callable[[Any], Any], elems: Any, dtype: Any = None,
           parallel_iterations: int | None = None, back_prop: bool = True,
           swap_memory: bool = False, infer_shape: bool = True, name: str | None = None,
           fn_output_signature: Any = None) -> Any:  # fmt: skip
    """`fn` applied to each slice of `elems` along axis 0, the results stacked (`tf.map_fn`).

    The output has the structure and dtypes of `fn_output_signature` (a DType, a TensorSpec
    or a structure of them), or of `elems` when it is not given.

    >>> import layerflow as tf
    >>> tf.map_fn(lambda x: x * x, tf.constant([1.0, 2.0, 3.0])).numpy()
    array([1., 4., 9.], dtype=float32)
    """
    _check_callable(fn, "map_fn")
    if dtype is not None and fn_output_signature is not None:
        raise ValueError("Only one of `dtype` and `fn_output_signature` should be specified.")
    signature = fn_output_signature if fn_output_signature is not None else dtype
    flat, cols, n = _columns(elems, "map_fn")
    if signature is None:
        structure = elems
        specs = [(t.dtype, None) for t in flat]
    else:
        structure = signature
        specs = [_spec(s) for s in nest.flatten(signature)]
    if n == 0:
        leaves = [zeros((0, *(shape.as_list() if shape is not None and shape.is_fully_defined()
                                  else [])), dt) for dt, shape in specs]  # fmt: skip
        return nest.pack_sequence_as(structure, leaves)
    rows = []
    for i in range(n):
        y = fn(_slice(elems, cols, i))
        _same_structure(structure, y, "map_fn")
        rows.append([_leaf(v, dt, "map_fn") for v, (dt, _) in zip(nest.flatten(y), specs)])
    return nest.pack_sequence_as(structure, _stack_leaves(rows, "map_fn"))


def _as_tensors(structure: Any) -> Any:
    return nest.map_structure(
        lambda v: v if isinstance(v, TensorLike) else convert_to_tensor(v), structure
    )


def _empty_error(opname: str) -> errors.OutOfRangeError:
    return errors.OutOfRangeError(
        None, opname,
        f"{opname}: Tried to read from index 0 but array size is: 0. 'elems' is empty and "
        f"there is no initializer to start from; pass initializer=.",
    )  # fmt: skip


def _accumulate(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any, order: list[int],
                cols: list[list[Any]], opname: str, keep: bool) -> tuple[Any, list]:  # fmt: skip
    """Run the fold; returns the last accumulator and (if `keep`) every accumulator."""
    if initializer is None:
        if not order:
            raise _empty_error(opname)
        acc = _slice(elems, cols, order[0])
        order = order[1:]
    else:
        acc = _as_tensors(initializer)
    history = [acc] if keep and initializer is None else []
    acc_dtypes = [t.dtype for t in nest.flatten(acc)]
    for i in order:
        new = fn(acc, _slice(elems, cols, i))
        _same_structure(acc, new, opname)
        acc = nest.pack_sequence_as(
            new, [_leaf(v, dt, opname) for v, dt in zip(nest.flatten(new), acc_dtypes)]
        )
        if keep:
            history.append(acc)
    return acc, history


def scan(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None,
         parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
         infer_shape: bool = True, reverse: bool = False,
         name: str | None = None) -> Any:  # fmt: skip
    """Every accumulator of `acc = fn(acc, x)` over the slices of `elems`, stacked (`tf.scan`).

    Without `initializer` the first slice starts the accumulation (and is the first output).

    >>> import layerflow as tf
    >>> tf.scan(lambda a, x: a + x, tf.constant([1, 2, 3, 4])).numpy()
    array([ 1,  3,  6, 10], dtype=int32)
    """
    _check_callable(fn, "scan")
    _, cols, n = _columns(elems, "scan")
    order = list(range(n))[::-1] if reverse else list(range(n))
    acc, history = _accumulate(fn, elems, initializer, order, cols, "scan", keep=True)
    if not history:  # empty elems with an initializer: empty outputs of the accumulator's shape
        leaves = [zeros((0, *t.shape.as_list()), t.dtype) for t in nest.flatten(acc)]
        return nest.pack_sequence_as(acc, leaves)
    if reverse:
        history.reverse()
    rows = [nest.flatten(a) for a in history]
    return nest.pack_sequence_as(history[-1], _stack_leaves(rows, "scan"))


def foldl(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None,
          parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
          name: str | None = None) -> Any:  # fmt: skip
    """`acc = fn(acc, x)` over the slices of `elems` from first to last (`tf.foldl`).

    >>> import layerflow as tf
    >>> int(tf.foldl(lambda a, x: a - x, tf.constant([1, 2, 3]), initializer=0))
    -6
    """
    _check_callable(fn, "foldl")
    _, cols, n = _columns(elems, "foldl")
    acc, _ = _accumulate(fn, elems, initializer, list(range(n)), cols, "foldl", keep=False)
    return acc


def foldr(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None,
          parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
          name: str | None = None) -> Any:  # fmt: skip
    """`acc = fn(acc, x)` over the slices of `elems` from last to first (`tf.foldr`).

    >>> import layerflow as tf
    >>> int(tf.foldr(lambda a, x: a - x, tf.constant([1, 2, 3, 4])))
    -2
    """
    _check_callable(fn, "foldr")
    _, cols, n = _columns(elems, "foldr")
    acc, _ = _accumulate(fn, elems, initializer, list(range(n))[::-1], cols, "foldr", keep=False)
    return acc


def vectorized_map(fn: Callable[[Any], Any], elems: Any, fallback_to_while_loop: bool = True,
                   warn: bool = True) -> Any:  # fmt: skip
    """`fn` over the slices of `elems` along axis 0, results stacked (`tf.vectorized_map`).

    Unlike `map_fn`, the output's structure and dtypes are whatever `fn` returns.

    >>> import layerflow as tf
    >>> tf.vectorized_map(lambda x: tf.reduce_sum(x), tf.ones([3, 2])).numpy()
    array([2., 2., 2.], dtype=float32)
    """
    _check_callable(fn, "vectorized_map")
    flat, cols, n = _columns(elems, "vectorized_map")
    if n == 0:
        # The output's shape comes from one call of fn on a slice of zeros, as TF's pfor
        # derives it from fn's trace.
        probe = [zeros(t.shape.as_list()[1:], t.dtype) for t in flat]
        y = _as_tensors(fn(nest.pack_sequence_as(elems, probe)))
        leaves = [zeros((0, *t.shape.as_list()), t.dtype) for t in nest.flatten(y)]
        return nest.pack_sequence_as(y, leaves)
    first = _as_tensors(fn(_slice(elems, cols, 0)))
    specs = [t.dtype for t in nest.flatten(first)]
    rows = [nest.flatten(first)]
    for i in range(1, n):
        y = fn(_slice(elems, cols, i))
        _same_structure(first, y, "vectorized_map")
        rows.append([_leaf(v, dt, "vectorized_map") for v, dt in zip(nest.flatten(y), specs)])
    return nest.pack_sequence_as(first, _stack_leaves(rows, "vectorized_map"))
