"""Python functions as ops (`tf.py_function`, `tf.numpy_function`) and the gradient helpers
`tf.grad_pass_through`, `tf.recompute_grad`, `tf.UnconnectedGradients`, `tf.AggregationMethod`,
and `tf.gradients` / `tf.hessians` (graph-only in TF 2: they raise eagerly, as TF does).

Eagerly a py_function is just a call: the function's layerflow ops record on the active tapes,
so gradients flow through it (TF differentiates it the same way). A numpy_function hands the
function NumPy arrays, so nothing it computes is differentiable (TF gives None too). Errors
raised by the function become TF's op errors (ValueError and TypeError: InvalidArgumentError;
StopIteration: OutOfRangeError; NotImplementedError: UnimplementedError; MemoryError:
ResourceExhaustedError; anything else: UnknownError), with the original chained.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.custom_gradient import custom_gradient
from layerflow._src.autodiff.tape import GradientTape, stop_recording_all
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.utils import nest

_ERRORS = (
    ((ValueError, TypeError), errors.InvalidArgumentError),
    ((StopIteration,), errors.OutOfRangeError),
    ((NotImplementedError,), errors.UnimplementedError),
    ((MemoryError,), errors.ResourceExhaustedError),
)


def _op_error(err: Exception, opname: str) -> errors.OpError:
    cls = next((c for kinds, c in _ERRORS if isinstance(err, kinds)), errors.UnknownError)
    return cls(None, opname, f"{type(err).__name__}: {err}")


def _out_dtypes(Tout: Any) -> tuple[list[dtypes.DType | None], bool]:  # noqa: N803 - TF's name
    """The output dtypes and whether Tout was a list (then a list is returned)."""

    def one(t: Any) -> dtypes.DType:
        return dtypes.as_dtype(t.dtype if hasattr(t, "shape") and hasattr(t, "dtype") else t)

    if isinstance(Tout, list | tuple):
        return [one(t) for t in Tout], True
    if Tout is None:
        return [None], False
    return [one(Tout)], False


def _convert_outputs(ret: Any, out: list[Any], as_list: bool, opname: str,
                     check: bool) -> Any:  # fmt: skip
    if as_list:
        values = [] if ret is None else list(ret) if isinstance(ret, list | tuple) else [ret]
        if len(values) != len(out):
            raise errors.InvalidArgumentError(
                None,
                opname,
                f"{opname}: the function returned {len(values)} value(s) but Tout lists "
                f"{len(out)}.",
            )
    else:
        values = [ret]
    result = []
    for value, dt in zip(values, out, strict=True):
        try:
            result.append(_as_output(value, dt, check))
        except (TypeError, ValueError) as err:
            raise errors.InvalidArgumentError(
                None, opname, f"{opname}: {type(err).__name__}: {err}"
            ) from err
    return result if as_list else result[0]


def _as_output(value: Any, dt: dtypes.DType | None, check: bool) -> Tensor:
    """py_function (`check`): the value as a tensor of Tout's dtype, or an error. numpy_function:
    tensors and NumPy arrays keep their dtype (TF does not cast eagerly); Python values take
    Tout's dtype."""
    if check or not isinstance(value, TensorLike | np.ndarray | np.generic):
        return convert_to_tensor(value, dt)
    return convert_to_tensor(value)


def py_function(func: Callable[..., Any] | None = None, inp: Any = None, Tout: Any = None,  # noqa: N803
                name: str | None = None) -> Any:  # fmt: skip
    """Call `func` on the tensors `inp` and return its results as tensors of the dtypes
    `Tout` (a dtype, TensorSpec, or a list of them: then a list is returned). Gradients flow
    through the layerflow ops `func` runs.

    >>> import layerflow as tf
    >>> tf.py_function(lambda a: a * 2.0, [tf.constant([1.0, 2.0])], tf.float32).numpy()
    array([2., 4.], dtype=float32)
    """
    if func is None:
        return functools.partial(py_function, inp=inp, Tout=Tout, name=name)
    inp = [] if inp is None else inp
    args = [a if isinstance(a, TensorLike) else convert_to_tensor(a) for a in inp]
    out, as_list = _out_dtypes(Tout)
    try:
        ret = func(*args)
    except errors.OpError:
        raise
    except Exception as err:
        raise _op_error(err, "EagerPyFunc") from err
    return _convert_outputs(ret, out, as_list, "py_function", check=True)


def numpy_function(func: Callable[..., Any] | None = None, inp: Any = None, Tout: Any = None,  # noqa: N803
                   stateful: bool = True, name: str | None = None) -> Any:  # fmt: skip
    """Call `func` on NumPy arrays (copies of `inp`) and wrap its results as tensors. Not
    differentiable. As in TF eagerly, NumPy results keep their dtype; Python values take Tout's.

    >>> import layerflow as tf
    >>> tf.numpy_function(lambda a: a * 2, [tf.constant([1.0, 2.0])], tf.float32).numpy()
    array([2., 4.], dtype=float32)
    """
    if func is None:
        return functools.partial(numpy_function, inp=inp, Tout=Tout, stateful=stateful, name=name)
    arrays = []
    for a in [] if inp is None else inp:
        t = a if isinstance(a, TensorLike) else convert_to_tensor(a)
        arrays.append(backend.to_host(t._data).copy())
    out, as_list = _out_dtypes(Tout)
    with stop_recording_all():
        try:
            ret = func(*arrays)
        except errors.OpError:
            raise
        except Exception as err:
            raise _op_error(err, "PyFunc") from err
        return _convert_outputs(ret, out, as_list, "numpy_function", check=False)


def grad_pass_through(f: Callable[..., Any]) -> Callable[..., Any]:
    """`f` with an identity gradient: the forward is `f(x)`, the backward passes `dy` through
    (e.g. to train through a quantizer or `tf.round`).

    >>> import layerflow as tf
    >>> x = tf.constant([0.4, 1.6])
    >>> with tf.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = tf.grad_pass_through(tf.round)(x * 3.0)
    >>> tape.gradient(y, x).numpy()
    array([3., 3.], dtype=float32)
    """

    @functools.wraps(f)
    @custom_gradient
    def passed(*args: Any, **kwargs: Any) -> Any:
        def grad(dy: Any, variables: Any = None) -> Any:
            if variables:
                return dy, [None] * len(variables)
            return dy

        return f(*args, **kwargs), grad

    return passed


def recompute_grad(f: Callable[..., Any]) -> Callable[..., Any]:
    """`f` that keeps no intermediate values for the backward pass: the forward runs without
    recording, and the gradient runs `f` again under a tape (trading compute for memory).

    >>> import layerflow as tf
    >>> g = tf.recompute_grad(lambda z: tf.sin(z) * z)
    >>> x = tf.constant([1.0])
    >>> with tf.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = g(x)
    >>> round(float(tape.gradient(y, x)[0]), 4)
    1.3818
    """

    @functools.wraps(f)
    @custom_gradient
    def recomputed(*args: Any, **kwargs: Any) -> Any:
        # custom_gradient runs this with the outer tapes paused (only its probe, which finds
        # the variables `f` reads, records), so no intermediate value is kept for backward.
        result = f(*args, **kwargs)
        inputs = [a for a in args if isinstance(a, TensorLike)]

        def grad(*dresult: Any, variables: Any = None) -> Any:
            variables = list(variables or [])
            with GradientTape(watch_accessed_variables=False) as tape:
                tape.watch(inputs)
                tape.watch(variables)
                again = f(*args, **kwargs)
            grads = tape.gradient(
                nest.flatten(again), inputs + variables, output_gradients=list(dresult)
            )
            in_grads = grads[: len(inputs)]
            if variables:
                return in_grads, grads[len(inputs) :]
            return in_grads

        return result, grad

    return recomputed


class UnconnectedGradients(enum.StrEnum):
    """What `gradient` returns for a source the target does not depend on: None or zeros."""

    NONE = "none"
    ZERO = "zero"


class AggregationMethod:
    """How gradients of a value used several times are summed (TF's names; layerflow always
    sums pairwise as they arrive, which every method computes the same)."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


_EAGER_ONLY = (
    "tf.gradients is not supported when eager execution is enabled. Use tf.GradientTape instead."
)


def gradients(ys: Any, xs: Any, grad_ys: Any = None, name: str = "gradients",
              gate_gradients: bool = False, aggregation_method: Any = None,
              stop_gradients: Any = None,
              unconnected_gradients: Any = UnconnectedGradients.NONE) -> Any:  # fmt: skip
    """Graph-mode symbolic gradients: layerflow always executes eagerly, so this raises TF's
    eager RuntimeError. Use `tf.GradientTape`."""
    raise RuntimeError(_EAGER_ONLY)


def hessians(ys: Any, xs: Any, name: str = "hessians", colocate_gradients_with_ops: bool = False,
             gate_gradients: bool = False, aggregation_method: Any = None) -> Any:  # fmt: skip
    """Graph-mode Hessians: raises eagerly as TF does. Nest two `tf.GradientTape`s (or use
    `tape.jacobian` of a gradient) instead."""
    raise RuntimeError(_EAGER_ONLY)
