"""Turning Python values, NumPy arrays, Tensors and Variables into backend arrays (TF's rules)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes
from layerflow._src.framework.tensor import Tensor, TensorLike

_SCALARS = (bool, int, float, complex)


def _cast_checked(arr: np.ndarray, dtype: dtypes.DType, value: Any) -> np.ndarray:
    """Cast a host array to `dtype` the way TF converts constants: never float -> int silently."""
    if arr.dtype == dtype.np:
        return arr
    src, dst = arr.dtype.kind, dtype.np.kind
    lossy = (src == "f" and dst in "iub") or (src == "c" and dst != "c") or (src in "US")
    if lossy or (src == "b" and dst != "b") or (src != "b" and dst == "b"):
        raise TypeError(
            f"Cannot convert {_short(value)} to a tensor of dtype {dtype.name}: a "
            f"{dtypes.from_numpy(arr.dtype).name} value does not fit. Use tf.cast(...) to "
            "convert explicitly."
        )
    if src in "iu" and dst in "iu" and arr.size:
        info = np.iinfo(dtype.np)
        if arr.max() > info.max or arr.min() < info.min:
            raise ValueError(f"{_short(value)} is out of range for dtype {dtype.name}.")
    return arr.astype(dtype.np)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def host_array(value: Any, dtype: dtypes.DType | None = None) -> np.ndarray:
    """A NumPy array for a non-tensor value, with TF's dtype inference."""
    if isinstance(value, np.ndarray | np.generic):
        arr = np.asarray(value)
        if arr.dtype.kind in "US":
            arr = arr.astype(object)
        if dtype is None:
            return arr
        if arr.dtype.kind == "f" and dtype.np.kind == "f":
            return arr.astype(dtype.np, copy=False)
        return _cast_checked(arr, dtype, value)
    if isinstance(value, list | tuple) and any(isinstance(v, TensorLike) for v in _flat(value)):
        value = _unwrap(value)
    if dtype is None:
        if isinstance(value, str | bytes):
            return np.asarray(value, dtype=object)
        try:
            inferred = dtypes.infer_python(value)
        except Exception as err:  # ragged lists and the like
            raise ValueError(f"Cannot convert {_short(value)} to a tensor: {err}") from None
        arr = np.asarray(value)
        if arr.dtype == object:
            raise ValueError(
                f"Cannot convert {_short(value)} to a tensor: it is not a rectangular nested "
                "list of numbers."
            )
        return arr.astype(inferred, copy=False)
    arr = np.asarray(value)
    if arr.dtype == object:
        raise ValueError(
            f"Cannot convert {_short(value)} to a tensor: it is not a rectangular nested list "
            "of numbers."
        )
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        return _cast_checked(arr, dtype, value)
    return (
        _cast_checked(arr, dtype, value)
        if arr.dtype.kind != dtype.np.kind
        else arr.astype(dtype.np, copy=False)
    )


def _flat(value: Any) -> list[Any]:
    out: list[Any] = []
    for v in value:
        if isinstance(v, list | tuple):
            out.extend(_flat(v))
        else:
            out.append(v)
    return out


def _unwrap(value: Any) -> Any:
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
        return Tensor(value._data.copy(), value._device)
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
