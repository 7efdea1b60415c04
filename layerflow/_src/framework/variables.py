"""`tf.Variable`: mutable state. Its array is updated in place, so optimizers allocate nothing.

Ops read a Variable's live array; `read_value()`, `value()`, `numpy()` and
`tf.convert_to_tensor(v)` return copies, so a value read stays what it was.

Writing has one entry below the public `assign*` methods: `Variable._update(fn, *args)` calls
`fn(array, *args)`, which mutates the variable's array in place. Optimizers, metrics, restore
and callbacks write state through it (or through `_write`, which is built on it), never by
touching the array themselves, so a variable that keeps several copies (`MirroredVariable`)
overrides that one method and every writer keeps its copies equal.
"""

from __future__ import annotations

import contextlib
import copy as _copy
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import host_array, to_array
from layerflow._src.framework.tensor import Tensor, TensorLike, numpy_text
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.variable_scatter import ScatterMethods
from layerflow._src.utils import naming

_creators = threading.local()
_flags = backend.flags


def _creator_stack() -> list[Callable[..., Any]]:
    stack = getattr(_creators, "stack", None)
    if stack is None:
        stack = _creators.stack = []
    return stack


@contextlib.contextmanager
def variable_creator_scope(creator: Callable[..., Any]) -> Iterator[None]:
    """Route `tf.Variable(...)` through `creator(next_creator, **kwargs)` (TF's API)."""
    stack = _creator_stack()
    stack.append(creator)
    try:
        yield
    finally:
        stack.pop()


class _VariableMeta(type):
    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        stack = _creator_stack()
        if cls is not Variable or not stack:
            return super().__call__(*args, **kwargs)
        names = ("initial_value", "trainable", "validate_shape", "caching_device", "name")
        kwargs.update(zip(names, args))

        def chain(i: int) -> Callable[..., Any]:
            if i < 0:
                return lambda **kw: type.__call__(Variable, **kw)
            return lambda **kw: stack[i](chain(i - 1), **kw)

        return chain(len(stack) - 1)(**kwargs)


class VariableAggregation:
    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


class VariableSynchronization:
    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class Variable(ScatterMethods, TensorLike, metaclass=_VariableMeta):
    """A mutable tensor: model parameters and other state.

    >>> import layerflow as tf
    >>> v = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="w")
    >>> v.name
    'w:0'
    >>> float(v[0, 0].assign(42.0)[0, 0])
    42.0
    """

    __slots__ = ("_data", "_device", "_name", "_trainable", "constraint", "aggregation",
                 "synchronization", "__dict__", "__weakref__")  # fmt: skip
    _shares_buffer = False  # np.asarray(variable) is a snapshot, as in TF

    def __init__(
        self,
        initial_value: Any = None,
        trainable: bool | None = None,
        validate_shape: bool = True,
        caching_device: Any = None,
        name: str | None = None,
        variable_def: Any = None,
        dtype: Any = None,
        import_scope: Any = None,
        constraint: Callable[[Any], Any] | None = None,
        synchronization: int = VariableSynchronization.AUTO,
        aggregation: int = VariableAggregation.NONE,
        shape: Any = None,
        experimental_enable_variable_lifting: bool = True,
    ) -> None:
        if initial_value is None:
            raise ValueError("tf.Variable needs an initial_value (a value or a callable).")
        if callable(initial_value) and not isinstance(initial_value, TensorLike):
            initial_value = initial_value()
        dt = None if dtype is None else dtypes.as_dtype(dtype)
        device = backend.current_device()
        if isinstance(initial_value, TensorLike):
            value = initial_value
            if dt is not None and value._data.dtype != dt.np:
                data = backend.to_device(backend.to_host(value._data).astype(dt.np), device)
            else:
                data = to_array(value, None, device).copy()
        else:
            data = backend.to_device(np.array(host_array(initial_value, dt)), device)
        if shape is not None and validate_shape:
            wanted = TensorShape(shape)
            if wanted.rank is not None and not wanted.is_compatible_with(data.shape):
                raise ValueError(
                    f"tf.Variable: shape={wanted} was given but the initial value has shape "
                    f"{TensorShape(data.shape)}."
                )
        if trainable is None:
            trainable = synchronization != VariableSynchronization.ON_READ
        self._data = data
        self._device = device
        self._name = naming.current_scope() + (name or "Variable") + ":0"
        self._trainable = bool(trainable)
        self.constraint = constraint
        self.aggregation = aggregation
        self.synchronization = synchronization

    # --- identity -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def initial_value(self) -> Tensor:
        return self.read_value()

    @property
    def handle(self) -> Variable:
        return self

    def __hash__(self) -> int:
        raise TypeError("Variable is unhashable. Instead, use variable.ref() as the key.")

    # --- reading -----------------------------------------------------------------------------
    def read_value(self) -> Tensor:
        if _flags.general and _flags.tracer is not None:  # a tf.function trace reads at every call
            return _flags.tracer.read_variable(self)
        return Tensor(self._data.copy(), self._device)

    def value(self) -> Tensor:
        return self.read_value()

    def __repr__(self) -> str:
        return (
            f"<tf.Variable '{self._name}' shape={self.shape} dtype={self.dtype.name}, "
            f"numpy={numpy_text(backend.to_host(self._data), is_repr=True)}>"
        )

    def __str__(self) -> str:
        return self.__repr__()

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    # --- writing ------------------------------------------------------------------------------
    def _value_array(self, value: Any, target_shape: tuple[int, ...], what: str) -> Any:
        if isinstance(value, TensorLike):
            if value._data.dtype != self._data.dtype:
                raise TypeError(
                    f"Cannot {what} a {value.dtype.name} value to variable '{self._name}' of "
                    f"dtype {self.dtype.name}. Cast it first: tf.cast(value, {self.dtype!r})."
                )
            arr = to_array(value, None, self._device)
        else:
            arr = backend.to_device(host_array(value, self.dtype), self._device)
        shape = tuple(arr.shape)
        if shape != target_shape:
            try:
                ok = np.broadcast_shapes(shape, target_shape) == target_shape and what != "assign"
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(
                    f"Cannot {what} a value of shape {TensorShape(shape)} to variable "
                    f"'{self._name}' of shape {TensorShape(target_shape)}; the shapes must "
                    "match. The variable is unchanged."
                )
        return arr

    def _update(self, fn: Callable[..., Any], *args: Any) -> Variable:
        """Change the value in place: `fn(array, *args)` mutates this variable's array.

        The one in-place write entry for code outside `framework/` (optimizer rules, weight
        decay, step counters, metrics, restore). `fn` must keep the array's shape and dtype
        and should not keep a reference to it. Variables with several copies override this
        method (`MirroredVariable` updates its primary copy, then every replica's). The
        extra arguments avoid a closure per call on the optimizer's hot path.

        >>> import operator
        >>> v = Variable([1.0, 2.0])
        >>> v._update(operator.isub, 0.5).numpy().tolist()
        [0.5, 1.5]
        """
        if _flags.general and _flags.tracer is not None:
            return _flags.tracer.variable_call(self, "_update", (fn, *args))
        fn(self._data, *args)
        return self

    def _write(self, array: Any) -> None:
        """Overwrite the whole value with an already validated array (same shape and dtype).

        Loaders and `set_weights` call this after checking everything; it goes through
        `_update`, so variables that keep several copies write every replica.
        """
        self._update(_overwrite, backend.to_device(array, self._device))

    def assign(self, value: Any, use_locking: Any = None, name: Any = None,
               read_value: bool = True) -> Variable:  # fmt: skip
        """Write `value` into the variable (same shape, same dtype); returns the variable."""
        if _flags.general and _flags.tracer is not None:  # a step of the tf.function being traced
            return _flags.tracer.variable_call(self, "assign", (value,))
        self._data[...] = self._value_array(value, self._data.shape, "assign")
        return self

    def assign_add(self, delta: Any, use_locking: Any = None, name: Any = None,
                   read_value: bool = True) -> Variable:  # fmt: skip
        if _flags.general and _flags.tracer is not None:  # a step of the tf.function being traced
            return _flags.tracer.variable_call(self, "assign_add", (delta,))
        self._data += self._value_array(delta, self._data.shape, "assign_add")
        return self

    def assign_sub(self, delta: Any, use_locking: Any = None, name: Any = None,
                   read_value: bool = True) -> Variable:  # fmt: skip
        if _flags.general and _flags.tracer is not None:  # a step of the tf.function being traced
            return _flags.tracer.variable_call(self, "assign_sub", (delta,))
        self._data -= self._value_array(delta, self._data.shape, "assign_sub")
        return self

    def _assign_slice(self, key: Any, value: Any) -> Variable:
        if _flags.general and _flags.tracer is not None:
            return _flags.tracer.variable_call(self, "_assign_slice", (key, value))
        target = self._data[key]
        self._data[key] = self._value_array(value, tuple(target.shape), "slice-assign")
        return self

    def scatter_nd_update(self, indices: Any, updates: Any) -> Variable:
        idx = backend.to_host(
            indices._data if isinstance(indices, TensorLike) else np.asarray(indices)
        )
        upd = self._value_array(updates, tuple(np.shape(updates)), "scatter")
        self._data[tuple(np.moveaxis(idx, -1, 0))] = upd
        return self

    def set_shape(self, shape: Any) -> None:
        wanted = TensorShape(shape)
        if not wanted.is_compatible_with(self._data.shape):
            raise ValueError(
                f"Shapes {self.shape} and {wanted} are not compatible: variable '{self._name}' "
                f"has shape {self.shape}, which set_shape cannot change."
            )

    # --- copies and pickling ---------------------------------------------------------------
    def __reduce__(self) -> Any:
        return _rebuild_variable, (backend.to_host(self._data).copy(), self._name, self._trainable)

    def __deepcopy__(self, memo: dict) -> Variable:
        new = _copy.copy(self)
        new._data = self._data.copy()
        memo[id(self)] = new
        return new


def _overwrite(array: Any, value: Any) -> None:
    array[...] = value


def _rebuild_variable(array: np.ndarray, name: str, trainable: bool) -> Variable:
    base = name[:-2] if name.endswith(":0") else name
    with naming.name_scope(None):
        v = Variable(array, trainable=trainable)
    v._name = base + ":0"
    return v
