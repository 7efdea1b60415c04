"""`tf.Tensor`: an immutable array on a device.

A Tensor is one backend array (`_data`) plus its logical device (`_device`). Operators are
installed by the ops layer through `register_operator`, so imports keep pointing downward.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes
from layerflow._src.framework.tensor_shape import TensorShape


def plain(array: np.ndarray) -> np.ndarray:
    """The integers of a quantized tensor's one-field structured array (a view); any other
    array as it is. TF shows and hands out a qint8 tensor's values as int8."""
    return array.view(array.dtype[0]) if array.dtype.names else array


def numpy_text(array: np.ndarray, is_repr: bool = False) -> str:
    """The `numpy=` part of TF's repr: `2.5` for a scalar, `array([...], dtype=...)` otherwise.

    A scalar's repr is the Python value's (`numpy=6.0`, `numpy=0.10000000149011612` for a
    float32 0.1, `numpy=b'a'`), its str NumPy's short form (`0.1`), as in TF.
    """
    array = plain(array)
    if array.ndim == 0:
        return repr(array.item()) if is_repr else np.array2string(array)
    text = repr(array) if is_repr else str(array)
    return "\n" + text if "\n" in text else text


class Reference:
    """A hashable reference to a Tensor or Variable (`x.ref()`), compared by identity."""

    __slots__ = ("_obj",)

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def deref(self) -> Any:
        return self._obj

    def __hash__(self) -> int:
        return id(self._obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reference) and other._obj is self._obj

    def __repr__(self) -> str:
        return f"<Reference wrapping {self._obj!r}>"


class ShapedValue:
    """`shape`, `get_shape()`, `dtype` and `ndim` read from `_data`: an array, or the ArraySpec of
    a symbolic tensor (`function/graph.GraphTensor`, which shares this and nothing else)."""

    __slots__ = ()
    _data: Any

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._data.shape)

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def dtype(self) -> dtypes.DType:
        return dtypes.from_numpy(self._data.dtype)

    @property
    def ndim(self) -> int:
        return self._data.ndim


class TensorLike(ShapedValue):
    """What Tensor and Variable share: shape, dtype, device, host copies, Python conversions.

    Subclasses provide `_data` (a NumPy or CuPy array) and `_device` (a backend Device).
    """

    __slots__ = ()
    _device: backend.Device

    @property
    def device(self) -> str:
        return self._device.name

    def numpy(self) -> Any:
        """A NumPy copy of the value (a NumPy scalar for a rank-0 tensor, as in TF)."""
        out = backend.to_host(self._data)
        out = plain(out.copy() if out is self._data else out)
        return out[()] if out.ndim == 0 else out

    # A Variable's buffer changes in place on assign, so NumPy never gets to share it.
    _shares_buffer = True

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy 2 protocol, as TF does it: a Tensor lends a read-only view of its buffer (a
        writable copy with `copy=True`); a Variable always gives a copy.

        >>> import numpy as np, layerflow as tf
        >>> np.asarray(tf.constant([1, 2])).flags.writeable
        False
        """
        raw = backend.to_host(self._data)
        fresh = raw is not self._data  # already a device-to-host copy
        host = plain(raw)
        convert = dtype is not None and host.dtype != dtype
        if copy is False and (convert or not (fresh or self._shares_buffer)):
            raise ValueError(
                f"np.asarray(..., copy=False) of a {type(self).__name__} of dtype "
                f"{self.dtype.name}: a copy cannot be avoided here. Drop copy=False."
            )
        if convert:
            return host.astype(dtype)
        if fresh:
            return host
        if copy or not self._shares_buffer:
            return host.copy()
        view = host.view()
        view.flags.writeable = False
        return view

    def ref(self) -> Reference:
        return Reference(self)

    experimental_ref = ref

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a scalar (rank-0) tensor is not defined.")
        return self._data.shape[0]

    def _scalar(self, what: str) -> Any:
        if self._data.size != 1:
            raise ValueError(
                f"{what} of a tensor needs exactly one element, but this one has shape "
                f"{self.shape}. Reduce it first, e.g. tf.reduce_sum(x) or tf.reduce_any(x)."
            )
        return plain(backend.to_host(self._data)).reshape(()).item()

    def __bool__(self) -> bool:
        return bool(self._scalar("bool()"))

    def __float__(self) -> float:
        return float(self._scalar("float()"))

    def __int__(self) -> int:
        return int(self._scalar("int()"))

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iu":
            raise TypeError(f"Only integer tensors can be used as an index, got {self.dtype.name}.")
        return int(self._scalar("Indexing with a tensor"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex()"))

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return format(self._scalar("format()"), spec)
        return format(str(self), spec)

    # Operators are installed here by the ops layer; see `register_operator`.
    __array_priority__ = 100


class Tensor(TensorLike):
    """An immutable multi-dimensional array with a dtype, a shape and a device.

    >>> t = constant([[1.0, 2.0]])  # doctest: +SKIP
    >>> t.shape, t.dtype, t.device  # doctest: +SKIP
    (TensorShape([1, 2]), tf.float32, '/job:localhost/replica:0/task:0/device:CPU:0')
    """

    # `_src` is set only on a slice of a Variable (`v[0, 0]`), so that `.assign` can write back.
    # `_keras_mask` is set by Keras layers that produce a mask (Embedding(mask_zero=True),
    # Masking, ...), as on TF's EagerTensor; unset otherwise.
    __slots__ = ("_data", "_device", "_src", "_keras_mask")

    # The operators a Tensor overloads (TF's list; `ops/operators.py` installs them).
    OVERLOADABLE_OPERATORS = frozenset({
        "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__div__",
        "__rdiv__", "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
        "__rmod__", "__lt__", "__le__", "__gt__", "__ge__", "__ne__", "__eq__", "__and__",
        "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__getitem__", "__pow__",
        "__rpow__", "__invert__", "__neg__", "__abs__", "__matmul__", "__rmatmul__",
    })  # fmt: skip

    def __init__(self, data: Any, device: backend.Device) -> None:
        self._data = data
        self._device = device

    def assign(self, value: Any, read_value: bool = True) -> Any:
        src = getattr(self, "_src", None)
        if src is None:
            raise AttributeError(
                "A tf.Tensor is immutable and has no assign(). Create a tf.Variable to hold "
                "mutable state, or slice a Variable (`v[0, 0].assign(42)`)."
            )
        variable, key = src
        return variable._assign_slice(key, value)

    @property
    def name(self) -> str:
        # An eager tensor has no graph name; TF raises exactly this.
        raise AttributeError("Tensor.name is undefined when eager execution is enabled.")

    @property
    def backing_device(self) -> str:
        """The device holding the buffer (the same as `device` here)."""
        return self._device.name

    @property
    def is_packed(self) -> bool:
        return False  # packed tensors are a TPU/multi-device runtime feature

    def __dlpack__(self, **kwargs: Any) -> Any:
        """DLPack export (zero-copy): `np.from_dlpack(t)`, `torch.from_dlpack(t)`, ..."""
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._data.__dlpack_device__()

    def set_shape(self, shape: Any) -> None:
        """Check that `shape` is compatible with this eager tensor's shape (nothing to refine).

        >>> Tensor(np.zeros((1, 2)), None).set_shape([None, 2])
        """
        wanted = TensorShape(shape)
        if not wanted.is_compatible_with(self._data.shape):
            raise ValueError(
                f"Tensor's shape {self.shape} is not compatible with supplied shape {wanted}."
            )

    def __repr__(self) -> str:
        return (
            f"<tf.Tensor: shape={self.shape}, dtype={self.dtype.name}, "
            f"numpy={numpy_text(backend.to_host(self._data), is_repr=True)}>"
        )

    def __str__(self) -> str:
        return (
            f"tf.Tensor({numpy_text(backend.to_host(self._data))}, shape={self.shape}, "
            f"dtype={self.dtype.name})"
        )

    def __reduce__(self) -> Any:
        return _rebuild_tensor, (backend.to_host(self._data), self._device.name)

    def __hash__(self) -> int:
        raise TypeError("Tensor is unhashable. Instead, use tensor.ref() as the key.")

    def __iter__(self) -> Any:
        if self._data.ndim == 0:
            raise TypeError("Cannot iterate over a scalar tensor.")
        for i in range(self._data.shape[0]):
            yield self[i]

    def __copy__(self) -> Tensor:
        return self

    def __deepcopy__(self, memo: dict) -> Tensor:
        return self


def _rebuild_tensor(array: np.ndarray, device_name: str) -> Tensor:
    device = backend.parse_device(device_name) or backend.cpu_device()
    return Tensor(backend.to_device(array, device), device)


def register_operator(name: str, fn: Any, *classes: type) -> None:
    """Install an operator (`__add__`, `__getitem__`, ...) on Tensor-like classes.

    Called by the ops layer, which owns the implementations.
    """
    for cls in classes or (Tensor,):
        setattr(cls, name, fn)


def is_tensor(x: Any) -> bool:
    return isinstance(x, TensorLike)
