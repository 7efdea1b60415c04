"""`check_op`: one harness for every op's forward, gradient, dtype and device.

- forward against a NumPy reference, in float32 and float64;
- gradient through `GradientTape` against float64 central differences of the op itself;
- the output keeps the input's dtype and device.

Tests call it once per op; a GPU run would pass `device="/GPU:0"`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.tape import GradientTape
from layerflow._src.framework.tensor import Tensor, TensorLike


def _to_tensor(a: np.ndarray, device: backend.Device) -> Tensor:
    return Tensor(backend.to_device(np.array(a), device), device)


def numeric_gradient(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float = 1e-6,
                     coords: Sequence[int] | None = None) -> np.ndarray:  # fmt: skip
    """Central differences of a scalar function of a float64 array (at `coords` only, if given:
    the other entries are NaN). The one finite-difference loop of the package's test tooling.

    >>> import numpy as np
    >>> numeric_gradient(lambda a: float((a ** 2).sum()), np.array([1.0, 2.0])).round(6)
    array([2., 4.])
    """
    x = np.array(x, dtype=np.float64)
    grad = np.full(x.size, np.nan)
    flat = x.reshape(-1)
    for i in range(x.size) if coords is None else coords:
        old = flat[i]
        flat[i] = old + eps
        hi = f(x)
        flat[i] = old - eps
        lo = f(x)
        flat[i] = old
        grad[i] = (hi - lo) / (2 * eps)
    return grad.reshape(x.shape)


def numerical_gradient(fn: Callable[..., Any], arrays: Sequence[np.ndarray], index: int,
                       eps: float = 1e-6, device: Any = None) -> np.ndarray:  # fmt: skip
    """d sum(fn(*arrays) * w) / d arrays[index] by central differences, with a fixed random
    weighting `w` so that every output element matters (float64 throughout)."""
    dev = backend.parse_device(device) or backend.current_device()
    base = [np.array(a, dtype=np.float64) for a in arrays]
    out0 = backend.to_host(fn(*[_to_tensor(a, dev) for a in base])._data)
    w = np.random.default_rng(0).standard_normal(out0.shape)

    def weighted(x: np.ndarray) -> float:
        args = [x if i == index else a for i, a in enumerate(base)]
        return float((backend.to_host(fn(*[_to_tensor(a, dev) for a in args])._data) * w).sum())

    return numeric_gradient(weighted, base[index], eps=eps)


def check_op(fn: Callable[..., Any], inputs: Sequence[Any], reference: Callable[..., Any] | None,
             *, grad: Sequence[int] | bool = True, dtypes: Sequence[str] = ("float32", "float64"),
             rtol: float | None = None, atol: float | None = None, grad_rtol: float = 1e-5,
             grad_atol: float = 1e-6, eps: float = 1e-6, device: Any = None) -> None:  # fmt: skip
    """Check `fn(*tensors)` against `reference(*arrays)` and its gradients numerically.

    `inputs` are NumPy arrays (float inputs are cast to each dtype in `dtypes`; integer ones
    are passed unchanged). `grad` is True (every float input), False, or the indices to check.
    Raises AssertionError with the op, dtype and the worst element on a mismatch.

    >>> import numpy as np, layerflow as tf
    >>> check_op(tf.exp, [np.array([0.5, -1.0])], np.exp)
    """
    dev = backend.parse_device(device) or backend.current_device()
    name = getattr(fn, "__name__", repr(fn))
    for dt in dtypes:
        arrays = [np.asarray(a, dtype=dt) if np.asarray(a).dtype.kind == "f" else np.asarray(a)
                  for a in inputs]  # fmt: skip
        out = fn(*[_to_tensor(a, dev) for a in arrays])
        outs = out if isinstance(out, list | tuple) else [out]
        for o in outs:
            if not isinstance(o, TensorLike):
                raise AssertionError(f"{name} returned {type(o).__name__}, not a tensor")
            if o._device is not dev:
                raise AssertionError(f"{name}: output on {o.device}, inputs on {dev.name}")
        if reference is not None:
            expected = reference(*arrays)
            exps = expected if isinstance(expected, list | tuple) else [expected]
            tol_r = rtol if rtol is not None else (1e-5 if dt == "float32" else 1e-10)
            tol_a = atol if atol is not None else (1e-6 if dt == "float32" else 1e-12)
            for o, e in zip(outs, exps):
                e = np.asarray(e)
                got = backend.to_host(o._data)
                # A float result keeps the inputs' float dtype (TF never promotes).
                if e.dtype.kind == "f" and got.dtype != np.dtype(dt):
                    raise AssertionError(f"{name}[{dt}]: output dtype {got.dtype}, expected {dt}")
                np.testing.assert_allclose(got, e, rtol=tol_r, atol=tol_a,
                                           err_msg=f"{name} forward, {dt}")  # fmt: skip
    if grad is False:
        return
    arrays = [np.asarray(a, dtype=np.float64) if np.asarray(a).dtype.kind == "f" else np.asarray(a)
              for a in inputs]  # fmt: skip
    indices = [i for i, a in enumerate(arrays) if a.dtype.kind == "f"] if grad is True else grad
    tensors = [_to_tensor(a, dev) for a in arrays]
    with GradientTape(persistent=True) as tape:
        for i in indices:
            tape.watch(tensors[i])
        out = fn(*tensors)
        w = np.random.default_rng(0).standard_normal(tuple(out._data.shape))
        target = out * _to_tensor(w.astype(out._data.dtype), dev)
    grads = tape.gradient(target, [tensors[i] for i in indices])
    for i, g in zip(indices, grads):
        numeric = numerical_gradient(fn, arrays, i, eps=eps, device=dev)
        if g is None:
            if np.allclose(numeric, 0, atol=grad_atol):
                continue
            raise AssertionError(f"{name}: no gradient for input {i}, numerically {numeric}")
        got = backend.to_host(g._data)
        if got.dtype != np.float64:
            raise AssertionError(f"{name}: gradient dtype {got.dtype} for a float64 input")
        np.testing.assert_allclose(got, numeric, rtol=grad_rtol, atol=grad_atol,
                                   err_msg=f"{name} gradient for input {i}")  # fmt: skip


def check_second_derivative(fn: Callable[[Any], Any], x: np.ndarray, *, rtol: float = 1e-4,
                            atol: float = 1e-6, eps: float = 1e-5) -> None:  # fmt: skip
    """d/dx of (d sum fn(x) / dx) through nested tapes, against differences of the first
    derivative (elementwise ops: the Hessian's diagonal, summed over rows for others)."""
    dev = backend.current_device()

    def first(arr: np.ndarray) -> np.ndarray:
        t = _to_tensor(arr, dev)
        with GradientTape() as tape:
            tape.watch(t)
            y = fn(t)
        return backend.to_host(tape.gradient(y, t)._data)

    x = np.asarray(x, dtype=np.float64)
    t = _to_tensor(x, dev)
    with GradientTape() as outer:
        outer.watch(t)
        with GradientTape() as inner:
            inner.watch(t)
            y = fn(t)
        g = inner.gradient(y, t)
    h = outer.gradient(g, t)
    numeric = numeric_gradient(lambda arr: float(first(arr).sum()), x, eps=eps)
    got = np.zeros_like(x) if h is None else backend.to_host(h._data)
    np.testing.assert_allclose(got, numeric, rtol=rtol, atol=atol, err_msg="second derivative")
