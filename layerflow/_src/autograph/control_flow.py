"""The functional forms of `if`, `while` and `for` that converted code calls (TF's operators).

Each statement arrives as closures over the user's variables: `body()` (and `orelse()`, `test()`,
`extra_test()`) run a block, `get_state()` returns the values of the variables the block changes
and `set_state(values)` writes them back (through `nonlocal`). When the condition (or the
iterated object) is a tensor, eager or symbolic, the statement becomes `tf.cond` /
`tf.while_loop` over that state, with TF's checks: a name defined in one branch only, a loop
variable that changes dtype, shape or structure. Python values run as plain Python, with
Python's semantics. Eagerly, `tf.cond` and `tf.while_loop` run one branch / a Python loop, so
the tensor path gives the results of the Python path; inside a `tf.function` trace they record
one control-flow step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src.autograph.variables import (
    Undefined,
    UndefinedReturnValue,
    is_symbolic,
    is_tensor,
    is_undefined,
)
from layerflow._src.data.dataset import Dataset
from layerflow._src.framework import errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.ops import array_ops, compare_ops, control_flow_ops, core_ops, debugging_ops
from layerflow._src.ops.gather_ops import gather
from layerflow._src.utils import nest

_PY_SCALARS = (bool, int, float, str, np.ndarray, np.generic)


def _verify_condition(cond: Any, tag: str) -> Any:
    """`cond` as a scalar bool tensor, or TF's ValueError."""
    hint = "to check for None, use `is not None`"
    if not is_tensor(cond):
        cond = convert_to_tensor(cond)
    if cond.dtype.name != "bool":
        raise ValueError(
            f"condition of {tag} expected to be `tf.bool` scalar, got {cond}; to use as boolean "
            f"Tensor, use `tf.cast`; {hint}"
        )
    shape = TensorShape(cond.shape)
    if shape.rank is None:
        return core_ops.reshape(cond, [])
    if shape.rank > 0:
        known = [d for d in shape.as_list() if d is not None]
        if int(np.prod(known)) > 1:
            raise ValueError(
                f"condition of {tag} expected to be `tf.bool` scalar, got {cond}; {hint}"
            )
        return core_ops.reshape(cond, [])
    return cond


# --- consistency checks (TF's messages) -----------------------------------------------------
def _as_checked(value: Any) -> Any:
    return convert_to_tensor(value) if isinstance(value, _PY_SCALARS) else value


def _branch_vars(values: tuple, names: tuple, branch: str) -> None:
    for name, value in zip(names, values):
        if isinstance(value, Undefined):
            raise ValueError(f"'{name}' must also be initialized in the {branch} branch")
        if isinstance(value, UndefinedReturnValue):
            raise ValueError(f"the {branch} branch must also have a return statement.")


def _cond_vars(body_vars: tuple, orelse_vars: tuple, names: tuple) -> None:
    for name, a, b in zip(names, body_vars, orelse_vars):
        try:
            nest.assert_same_structure(a, b, check_types=False)
        except (ValueError, TypeError) as err:
            raise TypeError(
                f"'{name}' must have the same nested structure in the main and else branches:"
                f"\n\n{err}"
            ) from err
        for x, y in zip(nest.flatten(a), nest.flatten(b)):
            if x is None:
                raise ValueError(f"'{name}' is None at the end of the main branch.")
            if y is None:
                raise ValueError(f"'{name}' is None at the end of the else branch.")
            x, y = _as_checked(x), _as_checked(y)
            if is_tensor(x) and is_tensor(y) and x.dtype != y.dtype:
                raise TypeError(
                    f"'{name}' has dtype {x.dtype.name} in the main branch, but dtype "
                    f"{y.dtype.name} in the else branch"
                )


def _is_subshape(left: TensorShape, right: TensorShape) -> bool:
    if right.rank is None:
        return True
    if left.rank != right.rank:
        return False
    return all(r is None or l_ == r for l_, r in zip(left.as_list(), right.as_list()))


def _loop_var(name: str, entry: Any, exit_: Any, invariant: Any) -> None:
    if exit_ is None:
        raise ValueError(f"'{name}' is None at the end of the iteration.")
    entry, exit_ = _as_checked(entry), _as_checked(exit_)
    if not (is_tensor(entry) and is_tensor(exit_)):
        return
    if entry.dtype != exit_.dtype:
        raise TypeError(
            f"'{name}' has dtype {entry.dtype.name} before the loop, but dtype "
            f"{exit_.dtype.name} after one iteration"
        )
    exit_shape = TensorShape(exit_.shape)
    if invariant is None:
        if not _is_subshape(exit_shape, TensorShape(entry.shape)):
            raise ValueError(
                f"'{name}' has shape {TensorShape(entry.shape)} before the loop, but shape "
                f"{exit_shape} after one iteration. Use tf.autograph.experimental."
                "set_loop_options to set shape invariants."
            )
    elif not _is_subshape(exit_shape, TensorShape(invariant)):
        raise ValueError(
            f"'{name}' has shape {exit_shape} after one iteration, which does not conform with "
            f"the shape invariant {TensorShape(invariant)}."
        )


def _loop_vars(entry: tuple, exit_: tuple, names: tuple, invariants: tuple) -> None:
    for name, a, b, inv in zip(names, entry, exit_, invariants):
        if is_undefined(a):  # first iteration of a variable the loop defines
            continue
        try:
            nest.assert_same_structure(a, b, check_types=False)
        except (ValueError, TypeError) as err:
            raise TypeError(
                f"'{name}' does not have the same nested structure after one iteration.\n\n{err}"
            ) from err
        invs = [None] * len(nest.flatten(a)) if inv is None else [inv]
        for x, y, i in zip(nest.flatten(a), nest.flatten(b), invs):
            _loop_var(name, x, y, i)


def _init_vars(values: tuple, names: tuple) -> None:
    for name, value in zip(names, values):
        if isinstance(value, UndefinedReturnValue):
            raise NotImplementedError(
                "a return statement cannot be placed inside this TensorFlow loop; this may "
                "happen if a return statement depends on a static Python condition such as a "
                "hyperparameter"
            )
        if value is None:
            raise ValueError(f"'{name}' is not allowed to be None before the loop")
        if isinstance(value, Undefined):
            raise ValueError(f"'{name}' must be defined before the loop")


# --- if -------------------------------------------------------------------------------------
def if_stmt(cond: Any, body: Callable, orelse: Callable, get_state: Callable,
            set_state: Callable, symbol_names: tuple, nouts: int) -> None:  # fmt: skip
    """`if cond: body() else: orelse()`; a tensor `cond` becomes `tf.cond` over the state."""
    if is_tensor(cond):
        _tf_if_stmt(cond, body, orelse, get_state, set_state, symbol_names, nouts)
    elif cond:
        body()
    else:
        orelse()


def _tf_if_stmt(cond: Any, body: Callable, orelse: Callable, get_state: Callable,
                set_state: Callable, names: tuple, nouts: int) -> None:  # fmt: skip
    cond = _verify_condition(cond, "if statement")
    init = get_state()
    outs: dict[str, tuple] = {}

    def branch(fn: Callable, label: str, other: str) -> Callable[[], tuple]:
        def run() -> tuple:
            # The caller's state is left as it was: a gradient re-traces the branch later, after
            # the `if` (tf.cond's gradient), and must not change the names the code goes on with.
            saved = get_state()
            set_state(init)
            try:
                fn()
                values = tuple(get_state())[:nouts]
            finally:
                set_state(saved)
            outs[label] = values
            _branch_vars(values, names, label)
            if other in outs:
                pair = (values, outs[other]) if label == "main" else (outs[other], values)
                _cond_vars(*pair, names)
            return values

        return run

    result = control_flow_ops.cond(
        cond, branch(body, "main", "else"), branch(orelse, "else", "main")
    )
    set_state(tuple(result) + tuple(init)[nouts:])


# --- while ----------------------------------------------------------------------------------
def while_stmt(test: Callable, body: Callable, get_state: Callable, set_state: Callable,
               symbol_names: tuple, opts: dict) -> None:  # fmt: skip
    """`while test(): body()`; a tensor test becomes `tf.while_loop` over the state."""
    first = test()
    if is_tensor(first):
        _tf_while_stmt(test, body, get_state, set_state, symbol_names, opts, first)
        return
    if not first:
        return
    body()
    while _py_test(test(), "while"):
        body()


def _py_test(value: Any, what: str) -> bool:
    try:
        return bool(value)
    except errors.OperatorNotAllowedInGraphError as err:
        if what == "while":
            raise NotImplementedError(
                "The condition of while loop started as non-Tensor, then changed to Tensor. "
                "This may happen either because variables changed type, or when a break or "
                "return statement inside the loop depends on a Tensor condition. In both cases, "
                "changing to a TF loop should remove the error."
            ) from err
        raise NotImplementedError(
            "break and return statements which depend on a TF condition are not supported in "
            "Python for loops. Did you intend to make it a TF loop?"
        ) from err


def _invariants(opts: dict, init: tuple) -> tuple:
    pairs = opts.get("shape_invariants") or ()
    by_id = {id(var): shape for var, shape in pairs}
    return tuple(by_id.get(id(v)) for v in init)


def _placeholder(value: Any) -> Any:
    if isinstance(value, _PY_SCALARS):
        return type(value)(0) if isinstance(value, bool | int | float) else value
    if is_tensor(value):
        shape = TensorShape(value.shape)
        if shape.is_fully_defined():
            return array_ops.zeros(shape.as_list(), dtype=value.dtype)
        return compare_ops.zeros_like(value)
    return value


def _tf_while_stmt(test: Callable, body: Callable, get_state: Callable, set_state: Callable,
                   names: tuple, opts: dict, first_test: Any = None) -> None:  # fmt: skip
    init = tuple(get_state())
    if any(isinstance(v, UndefinedReturnValue) for v in init):
        _init_vars(init, names)  # TF's NotImplementedError: a return inside a tensor loop
    invariants = _invariants(opts, init)
    nulls = tuple(v is None or is_undefined(v) for v in init)
    symbolic = is_symbolic(first_test) or any(is_symbolic(v) for v in nest.flatten(list(init)))
    missing = ", ".join(
        "the function return value" if isinstance(v, UndefinedReturnValue) else n
        for n, v, null in zip(names, init, nulls)
        if null
    )
    message = f"loop must iterate at least once to initialize {missing}"
    start, flag = init, False
    if any(nulls) and symbolic:
        # Stage one iteration to learn each undefined variable's dtype and shape (TF does the
        # same); its ops are dead code once the loop's own body is recorded.
        try:
            body()
            staged = tuple(get_state())
        finally:
            set_state(init)
        _init_vars(tuple(s if n else v for v, n, s in zip(init, nulls, staged)), names)
        start = tuple(_placeholder(s) if n else v for v, n, s in zip(init, nulls, staged))
    elif any(nulls):
        # Eagerly, the first iteration runs here with the real Undefined objects (reading one
        # raises as Python would); the loop continues from the state it leaves.
        if not bool(_verify_condition(test(), "while loop")):
            raise errors.InvalidArgumentError(None, None, message)
        body()
        start, flag = tuple(get_state()), True
        _init_vars(start, names)

    # Both leave the caller's state as they found it (see `_tf_if_stmt`): the loop's gradient
    # traces the body again after the loop.
    def aug_test(flag: Any, *values: Any) -> Any:
        saved = get_state()
        set_state(values)
        try:
            return _verify_condition(test(), "while loop")
        finally:
            set_state(saved)

    def aug_body(flag: Any, *values: Any) -> tuple:
        saved = get_state()
        set_state(values)
        try:
            body()
            new = tuple(get_state())
        finally:
            set_state(saved)
        _loop_vars(values, new, names, invariants)
        return (True, *new)

    kwargs = {k: opts[k] for k in ("maximum_iterations", "parallel_iterations", "swap_memory")
              if k in opts}  # fmt: skip
    if any(i is not None for i in invariants):
        kwargs["shape_invariants"] = (None, *invariants)
    final = control_flow_ops.while_loop(aug_test, aug_body, (flag, *start), **kwargs)
    if any(nulls) and symbolic:
        debugging_ops.Assert(final[0], [message])
    set_state(tuple(final[1:]))


# --- for ------------------------------------------------------------------------------------
def for_stmt(iter_: Any, extra_test: Callable | None, body: Callable, get_state: Callable,
             set_state: Callable, symbol_names: tuple, opts: dict) -> None:  # fmt: skip
    """`for target in iter_: body(target)`, stopping when `extra_test()` is false (break,
    return). Tensors iterate their first axis in a `tf.while_loop`; datasets fold with
    `Dataset.reduce`; anything else is a Python loop."""
    if isinstance(iter_, Dataset):
        _dataset_for_stmt(iter_, extra_test, body, get_state, set_state, symbol_names, opts)
    elif is_tensor(iter_):
        _tensor_for_stmt(iter_, extra_test, body, get_state, set_state, symbol_names, opts)
    else:
        _py_for_stmt(iter_, extra_test, body)


def _py_for_stmt(iter_: Any, extra_test: Callable | None, body: Callable) -> None:
    if extra_test is None:
        for target in iter_:
            body(target)
        return
    if not _py_test(extra_test(), "for"):
        return
    for target in iter_:
        body(target)
        if not _py_test(extra_test(), "for"):
            break


def _and_extra(main: Any, extra_test: Callable | None) -> Any:
    if extra_test is None:
        return main
    if not is_tensor(main):
        return extra_test() if main else False
    return control_flow_ops.cond(main, extra_test, lambda: False)


def _tensor_for_stmt(iter_: Any, extra_test: Callable | None, body: Callable,
                     get_state: Callable, set_state: Callable, names: tuple,
                     opts: dict) -> None:  # fmt: skip
    shape = TensorShape(iter_.shape)
    if shape.rank == 0:
        raise TypeError(f"Cannot iterate over a scalar tensor: {iter_}.")
    n = shape[0] if shape.rank is not None and shape[0] is not None else None
    if n is None:
        n = gather(array_ops.shape(iter_), 0)
    else:
        opts = {**opts, "maximum_iterations": n}
    index = 0

    def aug_get_state() -> tuple:
        return (index, *get_state())

    def aug_set_state(values: tuple) -> None:
        nonlocal index
        index, *rest = values
        set_state(tuple(rest))

    def aug_body() -> None:
        nonlocal index
        body(gather(iter_, index))
        index = index + 1

    def aug_test() -> Any:
        return _and_extra(index < n, extra_test)

    _tf_while_stmt(aug_test, aug_body, aug_get_state, aug_set_state,
                   ("<internal iterate>", *names), opts, first_test=iter_)  # fmt: skip


def _dataset_for_stmt(ds: Dataset, extra_test: Callable | None, body: Callable,
                      get_state: Callable, set_state: Callable, names: tuple,
                      opts: dict) -> None:  # fmt: skip
    init = tuple(get_state())
    _init_vars(init, names)
    invariants = _invariants(opts, init)
    dummy = not init
    if dummy:
        init = (0,)

    def reduce_body(state: Any, element: Any) -> tuple:
        state = tuple(state) if isinstance(state, list | tuple) else (state,)
        loop = () if dummy else state

        def main_path() -> tuple:
            set_state(loop)
            body(element)
            new = tuple(get_state())
            _loop_vars(loop, new, names, invariants)
            return state if dummy else new

        if extra_test is None:
            return main_path()
        set_state(loop)
        go = extra_test()
        if not is_tensor(go):
            return main_path() if go else state
        return tuple(control_flow_ops.cond(go, main_path, lambda: state))

    final = ds.reduce(init, reduce_body)
    final = tuple(final) if isinstance(final, list | tuple) else (final,)
    set_state(() if dummy else final)
