"""Control flow with TF's eager semantics: `cond`, `case`, `switch_case`, `while_loop`.

Eagerly, every branch and loop body runs as plain Python on real tensors, so gradients flow
through the ops the chosen branch or each iteration ran, exactly as TF differentiates its
control-flow ops. The arguments, their checks and the error classes are TF's. Inside a
`tf.function` trace, a symbolic predicate or loop is handed to the traced forms (`graph_impl`,
filled by `function/control_flow.py`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from layerflow._src import backend
from layerflow._src.framework import errors
from layerflow._src.framework.convert import convert_to_tensor, is_symbolic_value
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.ops.array_ops import identity
from layerflow._src.utils import nest

newaxis = None

# The traced forms (`function/control_flow.py` installs them): while a `tf.function` trace runs,
# a symbolic predicate, branch index or loop hands the call to them.
graph_impl: dict[str, Callable[..., Any]] = {}


def _traced(value: Any = None) -> bool:
    return backend.flags.tracer is not None and (value is None or is_symbolic_value(value))


def _truth(pred: Any) -> bool:
    # A tensor of more than one element raises ValueError, as TF's eager cond does.
    return bool(pred)


def cond(pred: Any, true_fn: Callable[[], Any] | None = None,
         false_fn: Callable[[], Any] | None = None, name: str | None = None) -> Any:  # fmt: skip
    """`true_fn()` if `pred` else `false_fn()` (`tf.cond`); the branch's result is returned as is.

    >>> import layerflow as tf
    >>> x = tf.constant(2.0)
    >>> float(tf.cond(x > 1.0, lambda: x * 10.0, lambda: x))
    20.0
    """
    if true_fn is None:
        raise TypeError("cond(): 'true_fn' argument required")
    if false_fn is None:
        raise TypeError("cond(): 'false_fn' argument required")
    if not callable(true_fn):
        raise TypeError("'true_fn' must be callable.")
    if not callable(false_fn):
        raise TypeError("'false_fn' must be callable.")
    if _traced(pred):
        return graph_impl["cond"](pred, true_fn, false_fn)
    return true_fn() if _truth(pred) else false_fn()


def _pred_value(pred: Any) -> bool:
    if not isinstance(pred, TensorLike):
        raise TypeError(f"pred must be a Tensor, got: {pred}")
    if pred.dtype.name != "bool":
        raise TypeError(f"pred must be Tensor of type bool, got {pred.dtype.name}.")
    return _truth(pred)


def case(pred_fn_pairs: Any, default: Callable[[], Any] | None = None, exclusive: bool = False,
         strict: bool = False, name: str = "case") -> Any:  # fmt: skip
    """Run the function of the first true predicate (`tf.case`).

    Without `default`, the last pair is the default and its predicate must hold when no
    earlier one does (`InvalidArgumentError` otherwise). With `exclusive=True`, more than one
    true predicate is an `InvalidArgumentError`.

    >>> import layerflow as tf
    >>> x = tf.constant(3)
    >>> int(tf.case([(x < 0, lambda: -1), (x > 0, lambda: 1)], default=lambda: 0))
    1
    """
    if not isinstance(pred_fn_pairs, list | tuple | dict):
        raise TypeError(
            f"'pred_fn_pairs' must be a list, tuple, or dict. Received: {type(pred_fn_pairs)}"
        )
    if isinstance(pred_fn_pairs, dict):
        if not exclusive and type(pred_fn_pairs) is dict:
            raise ValueError(
                "Unordered dictionaries are not supported for the 'pred_fn_pairs' argument "
                "when `exclusive=False` and eager mode is enabled. Pass a list of pairs."
            )
        pred_fn_pairs = list(pred_fn_pairs.items())
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in 'pred_fn_pairs' must be a 2-tuple. Received {pair}.")
        if not isinstance(pair[0], TensorLike) and not is_symbolic_value(pair[0]):
            raise TypeError(f"pred must be a Tensor, got: {pair[0]}")
        if not callable(pair[1]):
            raise TypeError(f"fn for pred {pair[0]} must be callable.")
    if default is not None and not callable(default):
        raise TypeError("'default' must be callable.")
    if not pred_fn_pairs:
        raise ValueError("case: 'pred_fn_pairs' must hold at least one (pred, fn) pair.")
    if any(_traced(p) for p, _ in pred_fn_pairs):
        return _nested_cond(list(pred_fn_pairs), default)
    values = [_pred_value(p) for p, _ in pred_fn_pairs]
    fns = [f for _, f in pred_fn_pairs]
    if exclusive and sum(values) > 1:
        raise errors.InvalidArgumentError(
            None, name,
            f"Input error: exclusive=True: more than 1 conditions evaluated as True: {values}",
        )  # fmt: skip
    for value, fn in zip(values, fns):
        if value:
            return fn()
    if default is None:
        raise errors.InvalidArgumentError(
            None, name, f"Input error: None of conditions evaluated as True: {values}"
        )
    return default()


def _nested_cond(pairs: list[Any], default: Callable[[], Any] | None) -> Any:
    """`case` inside a trace: the first true predicate's function, as nested traced conds."""
    if default is None:
        pairs, default = pairs[:-1], pairs[-1][1]
    if not pairs:
        return default()
    (pred, fn), rest = pairs[0], pairs[1:]
    return cond(pred, fn, lambda: _nested_cond(rest, default))


def switch_case(branch_index: Any, branch_fns: Any, default: Callable[[], Any] | None = None,
                name: str = "switch_case") -> Any:  # fmt: skip
    """Run `branch_fns[branch_index]` (`tf.switch_case`); an index out of range runs `default`,
    or the last branch when there is no default.

    >>> import layerflow as tf
    >>> int(tf.switch_case(tf.constant(1), [lambda: 10, lambda: 20, lambda: 30]))
    20
    """
    if not isinstance(branch_index, TensorLike) and not is_symbolic_value(branch_index):
        raise TypeError(f"'branch_index' must be a Tensor, got {type(branch_index)}")
    if not branch_index.dtype.is_integer:
        raise TypeError(f"'branch_index' must be an integer Tensor, got {branch_index.dtype}")
    if not branch_fns:
        raise ValueError("Must provide at least one item in 'branch_fns'")
    if not isinstance(branch_fns, list | tuple | dict):
        raise TypeError("'branch_fns' must be a list, tuple, or dict")
    pairs = list(branch_fns.items()) if isinstance(branch_fns, dict) else list(branch_fns)
    if all(callable(fn) for fn in pairs):
        pairs = list(enumerate(pairs))
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in 'branch_fns' must be a 2-tuple. Received {pair}.")
        key, fn = pair
        if not isinstance(key, int):
            raise TypeError(f"key must be a Python `int`, got {type(key)}")
        if not callable(fn):
            raise TypeError(f"fn for key {key} must be callable.")
    keys = [k for k, _ in pairs]
    if min(keys) < 0 or max(keys) >= len(keys) or len(set(keys)) != len(keys):
        found = ",".join(map(str, sorted(keys)))
        raise ValueError(
            f"branch indices (keys) must form contiguous range of [0 to {len(keys)}) but "
            f"found {{{found}}}"
        )
    actions = [fn for _, fn in sorted(pairs, key=lambda p: p[0])]
    if default is not None:
        actions.append(default)
    if branch_index.shape.rank != 0:
        raise errors.InvalidArgumentError(
            None, name, f"branch_index must be a scalar, got shape {branch_index.shape}."
        )
    if _traced(branch_index):
        return graph_impl["switch_case"](branch_index, actions)
    index = int(branch_index)
    n = len(keys)
    return actions[index]() if 0 <= index < n else actions[-1]()


def _same_structure(expected: Any, got: Any, what: str) -> None:
    try:
        nest.assert_same_structure(expected, got, check_types=False)
    except (ValueError, TypeError) as err:
        raise ValueError(
            f"{what} must return the structure of its loop variables: expected {expected!r}, "
            f"got {got!r} ({err})"
        ) from None


def while_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Any,
               shape_invariants: Any = None, parallel_iterations: int = 10,
               back_prop: bool = True, swap_memory: bool = False,
               maximum_iterations: Any = None, name: str | None = None) -> Any:  # fmt: skip
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)` (`tf.while_loop`).

    `loop_vars` is a list or tuple (possibly nested); `body` returns the same structure. At most
    `maximum_iterations` iterations run. The result's leaves are tensors. `shape_invariants`,
    `parallel_iterations` and `swap_memory` are accepted for graph code and change nothing
    eagerly, as in TF.

    >>> import layerflow as tf
    >>> i, s = tf.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s + i), (0, 0))
    >>> int(i), int(s)
    (4, 6)
    """
    if not callable(cond):
        raise TypeError("'cond' must be callable.")
    if not callable(body):
        raise TypeError("'body' must be callable.")
    if isinstance(loop_vars, list | tuple) and not loop_vars:
        raise ValueError("'loop_vars' must be provided.")
    if not isinstance(loop_vars, list | tuple):
        raise TypeError(
            f"'loop_vars' must be a list or tuple of loop variables, got "
            f"{type(loop_vars).__name__}. Wrap a single variable: loop_vars=[x]."
        )
    if _traced():
        return graph_impl["while_loop"](cond, body, loop_vars, shape_invariants,
                                        maximum_iterations)  # fmt: skip
    limit = None if maximum_iterations is None else int(maximum_iterations)
    values: Any = loop_vars
    count = 0
    while (limit is None or count < limit) and _truth(cond(*values)):
        new = body(*values)
        if not isinstance(new, list | tuple):
            raise ValueError(
                f"while_loop: body must return a list or tuple of {len(loop_vars)} loop "
                f"variable(s) (the structure of loop_vars), got {type(new).__name__}. "
                f"Return e.g. [x] or (x,)."
            )
        _same_structure(list(loop_vars), list(new), "while_loop body")
        values = new
        count += 1
    return nest.map_structure(_as_tensor, values)


def _as_tensor(x: Any) -> Any:
    # Composite values (a TensorArray, IndexedSlices: they have a `_type_spec`) stay as they are.
    if isinstance(x, TensorLike) or hasattr(type(x), "_type_spec"):
        return x
    return convert_to_tensor(x)


def identity_n(input: Any, name: str | None = None) -> list[Any]:  # noqa: A002 - TF's name
    """`tf.identity` of every tensor of a list (`tf.identity_n`).

    >>> import layerflow as tf
    >>> [int(t) for t in tf.identity_n([1, tf.constant(2)])]
    [1, 2]
    """
    return [identity(x) for x in input]


def no_op(name: str | None = None) -> None:
    """Does nothing (`tf.no_op`); eagerly it returns None, as in TF."""
    return None


def group(*inputs: Any, **kwargs: Any) -> None:
    """Groups ops for graph execution (`tf.group`); eagerly every input has already run, so it
    returns None, as TF does. Only `name=` is accepted as a keyword."""
    unknown = set(kwargs) - {"name"}
    if unknown:
        raise TypeError(f"Unknown keyword arguments: {', '.join(sorted(unknown))}")
    return None


def tuple_(tensors: Any, control_inputs: Any = None, name: str | None = None) -> list[Any]:
    """The tensors, as a list (`tf.tuple`); eagerly they are already computed, so the values
    are returned unchanged (None stays None), as in TF."""
    if control_inputs is not None:
        for c in control_inputs:
            if callable(c):
                c()
    return list(tensors)


@contextlib.contextmanager
def control_dependencies(control_inputs: Any) -> Iterator[None]:
    """`tf.control_dependencies`: eagerly ops run in program order, so the block needs no
    ordering; callables among `control_inputs` are called first, as TF does eagerly."""
    if control_inputs:
        for c in control_inputs:
            if callable(c):
                c()
    yield


def executing_eagerly() -> bool:
    """True, except while a `tf.function` is traced (its body then builds a program)."""
    return backend.flags.tracer is None


def get_static_value(tensor: Any, partial: bool = False) -> Any:
    """The NumPy value of a tensor, None for a symbolic one (a KerasTensor), and any other value
    as it is (`tf.get_static_value`).

    >>> import layerflow as tf
    >>> tf.get_static_value(tf.constant([1, 2]))
    array([1, 2], dtype=int32)
    """
    if is_symbolic_value(tensor):
        return None
    if isinstance(tensor, TensorLike):
        return tensor.numpy()
    return tensor


def ensure_shape(x: Any, shape: Any, name: str | None = None) -> Tensor:
    """`x` unchanged if its shape is compatible with `shape`; `InvalidArgumentError` otherwise.

    >>> import layerflow as tf
    >>> tf.ensure_shape(tf.zeros([2, 3]), [None, 3]).shape
    TensorShape([2, 3])
    """
    x = _as_tensor(x)
    expected = shape if isinstance(shape, TensorShape) else TensorShape(shape)
    if not x.shape.is_compatible_with(expected):

        def text(s: TensorShape) -> str:
            if s.rank is None:
                return "<unknown>"
            return "[" + ",".join("?" if d is None else str(d) for d in s.as_list()) + "]"

        raise errors.InvalidArgumentError(
            None, name or "EnsureShape",
            f"Shape of tensor input {text(x.shape)} is not compatible with expected shape "
            f"{text(expected)}.",
        )  # fmt: skip
    return identity(x)


def timestamp(name: str | None = None) -> Tensor:
    """Seconds since the epoch, as a float64 scalar tensor (`tf.timestamp`)."""
    return convert_to_tensor(time.time(), dtype="float64")
