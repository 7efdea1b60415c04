"""Turning Python values, NumPy arrays, Tensors and Variables into backend arrays (TF's rules)."""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.tensor import Tensor, TensorLike

_SCALARS = (bool, int, float, complex)


class SymbolicRegistry:
    """Which symbolic tensor types ops accept, and who turns a call on them into a result.

    A higher layer (the functional API's KerasTensor, in keras) registers its type and a
    handler `handler(op, args, kwargs) -> result` when it is imported, so this layer never
    imports keras. Ops (`autodiff/op.py`) and `@public_api` functions (`autodiff/dispatch.py`)
    hand any call with a registered symbolic argument to the handler; `convert_to_tensor`
    returns such a value unchanged, so Python-level functions that convert first still reach
    the op. One handler per type; registering a type again replaces its handler.

    >>> class Sym: ...
    >>> registry = SymbolicRegistry()
    >>> registry.register(Sym, lambda op, args, kwargs: ("symbolic", op.__name__))
    >>> registry.handler_for(Sym())(len, (), {})
    ('symbolic', 'len')
    >>> registry.handler_for(1.0) is None
    True
    """

    def __init__(self, state: list[Any] | None = None) -> None:
        self._handlers: dict[type, Any] = {}
        # `state` = [types tuple, handler]: the fast view the op wrappers read on their slow
        # path (`symbolic[0]` is empty when nothing is registered).
        self.state = state if state is not None else [(), None]

    def register(self, cls: type, handler: Any) -> None:
        if not isinstance(cls, type) or not callable(handler):
            raise TypeError(
                f"SymbolicRegistry.register takes a class and a callable handler, got "
                f"{cls!r} and {handler!r}."
            )
        self._handlers[cls] = handler
        self._sync()

    def unregister(self, cls: type) -> None:
        self._handlers.pop(cls, None)
        self._sync()

    def handler_for(self, value: Any) -> Any:
        """The handler of `value`'s symbolic type, or None when it is not symbolic."""
        for cls, handler in self._handlers.items():
            if isinstance(value, cls):
                return handler
        return None

    @property
    def types(self) -> tuple[type, ...]:
        return tuple(self._handlers)

    def _sync(self) -> None:
        handlers = list(self._handlers.values())
        self.state[0] = tuple(self._handlers)
        if len(set(map(id, handlers))) > 1:
            self.state[1] = self._dispatch
        else:
            self.state[1] = handlers[0] if handlers else None

    def _dispatch(self, op: Any, args: tuple, kwargs: dict) -> Any:
        for value in [*args, *kwargs.values()]:
            for v in value if isinstance(value, list | tuple) else (value,):
                handler = self.handler_for(v)
                if handler is not None:
                    return handler(op, args, kwargs)
        raise TypeError(f"{op!r} was handed a symbolic call without a symbolic argument.")


# The fast view of the registry for the op wrappers: `symbolic[0]` the registered types,
# `symbolic[1]` the handler.
symbolic: list[Any] = [(), None]
symbolic_registry = SymbolicRegistry(symbolic)


def register_symbolic(types: tuple[type, ...], handler: Any) -> None:
    """Register `handler` for each of `types` (see `SymbolicRegistry`)."""
    for cls in types:
        symbolic_registry.register(cls, handler)


def is_symbolic_value(value: Any) -> bool:
    types = symbolic[0]
    return bool(types) and isinstance(value, types)


def host_array(value: Any, dtype: dtypes.DType | None = None) -> np.ndarray:
    """A NumPy array for a non-tensor value, with TF's dtype rules.

    NumPy values keep their dtype; Python values take TF's (int -> int32, or int64 when too
    large; float -> float32; bool -> bool; strings -> string). With `dtype`, the value is cast
    to it, except where that would lose information (float -> int, number -> bool, out of
    range), which raises.

    String tensors hold `bytes` (str is encoded as UTF-8), never other Python objects: a NumPy
    object array (say from `np.load(..., allow_pickle=True)`) converts only when every element
    is str or bytes, or, with a numeric `dtype`, a plain number; otherwise it raises ValueError
    as TF does.

    >>> host_array([1, 2]).dtype, host_array(np.arange(2)).dtype
    (dtype('int32'), dtype('int64'))
    >>> host_array("héllo")
    array(b'h\\xc3\\xa9llo', dtype=object)
    """
    if isinstance(value, np.ndarray | np.generic):
        arr = np.asarray(value)
        kind = arr.dtype.kind
        if kind in "US" or (kind == "O" and (dtype is None or dtype.np.kind == "O")):
            arr = _string_array(arr)
        elif kind == "O":
            arr = _numbers_array(arr)
        elif kind not in "biufc" and arr.dtype.name not in dtypes.ML_DTYPES:
            raise ValueError(
                f"Cannot convert a NumPy array of dtype {arr.dtype} to a tensor: tensors hold "
                "numbers, bools or strings."
            )
    else:
        fix = getattr(type(value), "_dense_conversion_fix", None)
        if fix is not None:  # a composite with no dense value (SparseTensor): TF refuses it
            raise ValueError(
                f"Attempt to convert a value ({_short(value)}) with an unsupported type "
                f"({type(value).__name__}) to a Tensor. Convert it explicitly with {fix}."
            )
        arr = _python_array(value)
        if arr.dtype.kind == "O":
            arr = _string_array(arr)
        if arr.size == 0 and dtype is not None:  # `[]` holds no value to lose: any dtype (TF)
            return _string_array(arr) if dtype.np.kind == "O" else arr.astype(dtype.np)
        if dtype is None:
            return arr.astype(_python_dtype(arr), copy=False)
    return arr if dtype is None else _cast_checked(arr, dtype, value)


def _string_array(arr: np.ndarray) -> np.ndarray:
    """An object array of `bytes` for an array of str/bytes (any other element raises)."""
    out = np.empty(arr.shape, dtype=object)
    flat = out.reshape(-1)
    for i, v in enumerate(arr.reshape(-1).tolist()):
        if isinstance(v, bytes):
            flat[i] = v
        elif isinstance(v, str):
            flat[i] = v.encode("utf-8")
        else:
            raise ValueError(
                f"Cannot convert a NumPy object array to a tensor: element {i} has type "
                f"{type(v).__name__} ({_short(v)}). Only str and bytes elements make a string "
                "tensor; tensors never hold other Python objects. For numbers, convert the "
                "array with .astype(...) first."
            )
    return out


def _numbers_array(arr: np.ndarray) -> np.ndarray:
    """An object array of plain numbers (asked for with a numeric dtype) as a numeric array."""
    for i, v in enumerate(arr.reshape(-1).tolist()):
        if not isinstance(v, bool | int | float | complex):
            raise ValueError(
                f"Cannot convert a NumPy object array to a numeric tensor: element {i} has type "
                f"{type(v).__name__} ({_short(v)}), not a number."
            )
    return np.array(arr.tolist())


def _python_array(value: Any) -> np.ndarray:
    """NumPy's reading of a Python value (int64/float64 at full precision), checked."""
    if isinstance(value, str | bytes):
        return np.asarray(value, dtype=object)
    if isinstance(value, list | tuple):
        value = _unwrap(value)
    try:
        arr = np.asarray(value)
    except OverflowError:  # beyond uint64
        raise ValueError(f"{_short(value)} is out of range for any integer dtype.") from None
    except ValueError:  # ragged nesting, e.g. [[1, 2], [3]]
        arr = np.asarray(None, dtype=object)
    kind = arr.dtype.kind
    if kind == "O" and value is None:
        raise ValueError("Cannot convert a NoneType value (None) to a tensor.")
    if kind == "O" and any(
        isinstance(v, int) and not -(2**63) <= v < 2**63 for v in _flat([value])
    ):
        raise ValueError(f"{_short(value)} is out of range for dtype int64.")
    if kind == "O":
        raise ValueError(
            f"Cannot convert {_short(value)} to a tensor: expected a rectangular nested list of "
            "numbers (every row the same length, no None)."
        )
    if kind in "US":
        if isinstance(value, list | tuple) and not all(
            isinstance(v, str | bytes) for v in _flat(value)
        ):
            raise ValueError(
                f"Cannot convert {_short(value)} to a tensor: it mixes strings and numbers."
            )
        # From the Python leaves, not NumPy's fixed-width copy, which drops trailing NULs.
        leaves = _flat(value) if isinstance(value, list | tuple) else [value]
        out = np.empty(arr.shape, dtype=object)
        if len(leaves) == arr.size and all(isinstance(v, str | bytes) for v in leaves):
            flat = out.reshape(-1)
            for i, v in enumerate(leaves):
                flat[i] = v
            return out
        return arr.astype(object)
    if kind == "u" and arr.dtype.itemsize == 8:  # NumPy's pick for ints in [2**63, 2**64)
        raise ValueError(f"{_short(value)} is out of range for dtype int64.")
    return arr


def _python_dtype(arr: np.ndarray) -> np.dtype:
    """TF's dtype for an array read from Python values (float32, int32 unless too large)."""
    kind = arr.dtype.kind
    if kind == "f":
        return np.dtype(np.float32)
    if kind == "i" and arr.dtype.itemsize == 8:
        small = not arr.size or (arr.max() <= 2**31 - 1 and arr.min() >= -(2**31))
        return np.dtype(np.int32 if small else np.int64)
    return arr.dtype  # bool, complex128, object (strings)


def _cast_checked(arr: np.ndarray, dtype: dtypes.DType, value: Any) -> np.ndarray:
    """`arr` as `dtype`, the way TF converts constants: never float -> int or number -> bool."""
    src = dtypes.ML_DTYPES.get(arr.dtype.name, arr.dtype.kind)
    dst = dtype.kind
    if src == dst == "f" or arr.dtype == dtype.np:
        return arr.astype(dtype.np, copy=False)
    if dst == "q" and src in "iu":  # a quantized dtype: integers in its structured stand-in
        base = dtype.np[0]
        info = np.iinfo(base)
        if arr.size and (arr.max() > info.max or arr.min() < info.min):
            raise ValueError(f"{_short(value)} is out of range for dtype {dtype.name}.")
        return arr.astype(base).view(dtype.np)
    widening = {"b": "biufc", "i": "iufc", "u": "iufc", "f": "fc", "c": "c", "O": "O"}
    if dst not in widening.get(src, ""):
        raise TypeError(
            f"Cannot convert {_short(value)} to a tensor of dtype {dtype.name}: a "
            f"{dtypes.from_numpy(arr.dtype).name} value does not fit. Use tf.cast(...) to "
            "convert explicitly."
        )
    if src in "iu" and dst in "iu" and arr.size:
        if arr.max() > dtype.max or arr.min() < dtype.min:
            raise ValueError(f"{_short(value)} is out of range for dtype {dtype.name}.")
    return arr.astype(dtype.np)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _flat(value: Any) -> list[Any]:
    out: list[Any] = []
    for v in value:
        if isinstance(v, list | tuple):
            out.extend(_flat(v))
        else:
            out.append(v)
    return out


def _unwrap(value: Any) -> Any:
    """Tensors inside (nested) lists as host arrays, so NumPy can read the whole list."""
    if isinstance(value, TensorLike):
        return backend.to_host(value._data)
    if isinstance(value, list | tuple):
        return [_unwrap(v) for v in value]
    return value


def to_array(value: Any, dtype: dtypes.DType | None, device: backend.Device) -> Any:
    """A backend array on `device` holding `value` (Tensors must already have `dtype`)."""
    if isinstance(value, TensorLike):
        if dtype is not None and value._data.dtype != dtype.np:
            raise TypeError(
                f"Expected a tensor of dtype {dtype.name}, got one of dtype {value.dtype.name}. "
                "Use tf.cast(...) to convert it."
            )
        data = value._data
        return data if value._device is device else backend.to_device(data, device)
    if hasattr(type(value), "_dense_tensor"):  # IndexedSlices as an op input
        return to_array(value._dense_tensor(), dtype, device)
    return backend.to_device(host_array(value, dtype), device)


def convert_to_tensor(value: Any, dtype: Any = None, dtype_hint: Any = None) -> Tensor:
    """`tf.convert_to_tensor`: a Tensor (Variables are read, i.e. copied)."""
    dt = None if dtype is None else dtypes.as_dtype(dtype)
    if type(value) is Tensor:
        if dt is not None and value._data.dtype != dt.np:
            raise ValueError(
                f"Tensor conversion requested dtype {dt.name} for a Tensor of dtype "
                f"{value.dtype.name}: {_short(value)}. Use tf.cast(...) instead."
            )
        return value
    if isinstance(value, TensorLike):
        if dt is not None and value._data.dtype != dt.np:
            raise ValueError(
                f"Tensor conversion requested dtype {dt.name} for a variable of dtype "
                f"{value.dtype.name}. Use tf.cast(...) instead."
            )
        read = getattr(value, "read_value", None)
        if read is not None:  # a Variable: read (each call in a trace; seen by a tape)
            return read()
        return Tensor(value._data.copy(), value._device)
    if symbolic[0] and isinstance(value, symbolic[0]):
        return value  # a KerasTensor: the op it flows into records it (see register_symbolic)
    dense = getattr(type(value), "_dense_tensor", None)
    if dense is not None:  # a composite with a dense value (IndexedSlices): TF densifies it
        return convert_to_tensor(dense(value), dtype)
    if dt is None and dtype_hint is not None and not isinstance(value, np.ndarray | np.generic):
        try:
            hinted = dtypes.as_dtype(dtype_hint)
            device = backend.current_device()
            return Tensor(to_array(value, hinted, device), device)
        except (TypeError, ValueError):
            pass
    device = backend.current_device()
    return Tensor(to_array(value, dt, device), device)


def is_scalar_value(value: Any) -> bool:
    return isinstance(value, _SCALARS)


# --- integers: sizes, axes, shapes ----------------------------------------------------------------

_MAX_INT64 = 2**63 - 1


def _int_error(value: Any, what: str, opname: str, plural: bool = False) -> Exception:
    if isinstance(value, TensorLike | np.ndarray):
        arr = backend.to_host(value._data) if isinstance(value, TensorLike) else value
        if arr.dtype.kind not in "iub":
            name = dtypes.from_numpy(arr.dtype).name if arr.dtype.kind != "O" else "string"
            return errors.InvalidArgumentError(
                None,
                opname,
                f"{opname}: {what} must be int32 or int64, got a tensor of dtype {name}. Cast "
                "it with tf.cast(..., tf.int32).",
            )
        return TypeError(f"{opname}: {what} must be a scalar, got shape {tuple(arr.shape)}.")
    expected = "integers" if plural else "an integer"
    return TypeError(
        f"{opname}: {what} must be {expected}, got {_short(value)} ({type(value).__name__}). "
        "Sizes, axes and shapes are never rounded: pass int(...) of the value you mean."
    )


def as_int(value: Any, what: str, opname: str) -> int:
    """A size, axis or count as a Python int; floats and strings raise instead of truncating.

    Python ints and bools, NumPy integers and integer scalar tensors are accepted, as in TF;
    a float (Python or NumPy) raises TypeError, a float tensor InvalidArgumentError.

    >>> as_int(3, "depth", "one_hot")
    3
    >>> as_int(2.5, "axis", "reduce_sum")
    Traceback (most recent call last):
    ...
    TypeError: reduce_sum: axis must be an integer, got 2.5 (float). Sizes, axes and shapes ...
    """
    if isinstance(value, int | np.integer | np.bool_):  # bool is an int, as in TF
        return int(value)
    if isinstance(value, TensorLike | np.ndarray):
        arr = backend.to_host(value._data) if isinstance(value, TensorLike) else value
        if arr.shape == () and arr.dtype.kind in "iub":
            return int(arr)
    raise _int_error(value, what, opname)


def as_ints(value: Any, what: str, opname: str) -> tuple[int, ...]:
    """A shape, list of axes or of sizes as a tuple of Python ints (a scalar gives one entry).

    Entries must be integers (see `as_int`); an entry beyond int64 raises ValueError, as TF does.

    >>> as_ints([2, 3], "shape", "zeros")
    (2, 3)
    """
    if isinstance(value, TensorLike | np.ndarray):
        arr = backend.to_host(value._data) if isinstance(value, TensorLike) else value
        if arr.size and arr.dtype.kind not in "iub":
            raise _int_error(value, what, opname, plural=True)
        return tuple(int(d) for d in arr.reshape(-1))
    if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
        return (as_int(value, what, opname),)
    out = []
    for d in value:
        if type(d) is int:
            out.append(d)
        elif isinstance(d, TensorLike | np.ndarray) and tuple(d.shape) != ():
            raise _int_error(d, what, opname)
        elif isinstance(d, int | np.integer | np.bool_ | TensorLike | np.ndarray):
            out.append(as_int(d, what, opname))
        else:
            raise _int_error(value, what, opname, plural=True)
    for d in out:
        if not -(2**63) <= d < 2**63:
            raise ValueError(f"{opname}: {what} {_short(value)} has an entry beyond int64.")
    return tuple(out)
