"""`tf.test`'s functions: gradient checking, device and build queries, benchmarks, decorators.

`compute_gradient` is TF's: for each argument, the theoretical Jacobian (one `GradientTape`
pass per output element) and the numeric one (central differences with `delta`, 1/1024 by
default, in the argument's own dtype), each of shape (y size, x size).

>>> import layerflow as tf
>>> theoretical, numeric = tf.test.compute_gradient(lambda x: x * x, [tf.constant([1.0, 2.0])])
>>> theoretical[0].tolist(), numeric[0].tolist()
([[2.0, 0.0], [0.0, 4.0]], [[2.0, 0.0], [0.0, 4.0]])
"""

from __future__ import annotations

import functools
import inspect
import sys
import time
import unittest
from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.tape import GradientTape
from layerflow._src.backend import device_info
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.indexed_slices import IndexedSlices
from layerflow._src.function import inside_function
from layerflow._src.testing.case import evaluate

_FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


# --- gradients -----------------------------------------------------------------------------
def _dense(grad: Any, shape: tuple) -> np.ndarray:
    if isinstance(grad, IndexedSlices):
        out = np.zeros(shape, dtype=np.float64)
        np.add.at(out, np.asarray(grad.indices.numpy()), np.asarray(grad.values.numpy()))
        return out
    return np.asarray(grad.numpy())


def _theoretical(f: Callable, xs: list, param: int, y_shape: tuple, y_dtype: Any) -> np.ndarray:
    x = xs[param]
    x_size, y_size = int(np.prod(x.shape)), int(np.prod(y_shape))
    jacobian = np.zeros((y_size, x_size), dtype=x.dtype.as_numpy_dtype)
    dy = np.zeros(y_size, dtype=y_dtype.as_numpy_dtype)
    for row in range(y_size):
        dy[row] = 1
        with GradientTape() as tape:
            tape.watch(x)
            y = f(*xs)
        grad = tape.gradient(y, x, output_gradients=convert_to_tensor(dy.reshape(y_shape)))
        if grad is not None:
            jacobian[row, :] = _dense(grad, tuple(x.shape)).ravel()
        dy[row] = 0
    return jacobian


def _numeric(
    f: Callable, xs: list, param: int, y_size: int, y_dtype: Any, delta: float
) -> np.ndarray:
    arrays = [np.array(t.numpy()) for t in xs]
    x = arrays[param]
    flat = x.reshape(-1)  # a view: perturbing it perturbs x, in x's own dtype, as TF
    scale = np.asarray(2 * delta, dtype=y_dtype.as_numpy_dtype)[()]
    jacobian = np.zeros((y_size, x.size), dtype=x.dtype)

    def run() -> np.ndarray:
        return np.asarray(f(*map(convert_to_tensor, arrays)).numpy())

    for col in range(x.size):
        original = flat[col]
        flat[col] += delta
        y_pos = run()
        flat[col] = original
        flat[col] -= delta
        y_neg = run()
        flat[col] = original
        jacobian[:, col] = ((y_pos - y_neg) / scale).ravel()
    return jacobian


def compute_gradient(f: Callable, x: list | tuple, delta: float | None = None) -> tuple:
    """The theoretical and numeric Jacobians of `f` at `x` (a list or tuple of arguments):
    `((theoretical per argument...), (numeric per argument...))`, each (y size, x size)."""
    if not isinstance(x, (list, tuple)):
        raise ValueError(
            "`x` must be a list or tuple of values convertible to a Tensor (arguments to `f`), "
            f"not a {type(x)}; wrap a single argument as [x]."
        )
    delta = 1.0 / 1024 if delta is None else delta
    xs = [convert_to_tensor(v) for v in x]
    y = f(*xs)
    for what, dtype in [*((f"argument {i}", t.dtype) for i, t in enumerate(xs)), ("y", y.dtype)]:
        if dtype.name not in _FLOAT_DTYPES:
            raise TypeError(
                f"compute_gradient: cannot compute gradient for unsupported type "
                f"{dtype.name} of {what}; expected one of {list(_FLOAT_DTYPES)} "
                "(cast the value to a float dtype)."
            )
    y_shape = tuple(y.shape)
    pairs = [
        (
            _theoretical(f, xs, i, y_shape, y.dtype),
            _numeric(f, xs, i, int(np.prod(y_shape)), y.dtype, delta),
        )
        for i in range(len(xs))
    ]
    return tuple(zip(*pairs))


# --- devices and build -------------------------------------------------------------------------
def is_built_with_cuda() -> bool:
    """Whether layerflow can use CUDA here: CuPy is importable (a GPU need not be present)."""
    return device_info.gpu_support_installed()


def is_built_with_gpu_support() -> bool:
    """As `is_built_with_cuda` (CUDA through CuPy is layerflow's only GPU support)."""
    return is_built_with_cuda()


def is_built_with_rocm() -> bool:
    """False: layerflow has no ROCm support."""
    return False


def is_built_with_xla() -> bool:
    """False: layerflow does not compile through XLA (`jit_compile` runs its own planner)."""
    return False


_CPU_TARGETS = ("x86", "x86_64", "aarch64", "arm", "ppc", "s390x")


def is_cpu_target_available(target: str) -> bool:
    """True for a CPU target TF knows (x86, aarch64, arm, ppc, s390x): layerflow is Python on
    NumPy and runs wherever NumPy does. An unknown target raises AssertionError, as TF."""
    if target not in _CPU_TARGETS:
        raise AssertionError(f"Unknown CPU target: {target}")
    return True


def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability: Any = None) -> bool:
    """Whether a GPU is usable (with at least that compute capability, a (major, minor) pair).
    Deprecated in TF: use `tf.config.list_physical_devices('GPU')`."""
    for gpu in backend.list_physical_devices("GPU"):
        cc = device_info.device_details(gpu).get("compute_capability") or (0, 0)
        if not min_cuda_compute_capability or tuple(cc) >= tuple(min_cuda_compute_capability):
            return True
    return False


def gpu_device_name() -> str:
    """The name of the first GPU ("/device:GPU:0"), or "" when there is none."""
    gpus = backend.list_logical_devices("GPU")
    return gpus[0].name if gpus else ""


def sync_devices() -> None:
    """Wait until every device has finished its queued work (GPU kernels run asynchronously);
    call it before reading a clock in a benchmark. Eager only, as TF."""
    if inside_function():
        raise RuntimeError("sync_devices() must only be called in Eager mode, outside tf.functions")
    device_info.synchronize_devices()


# --- decorators and main -------------------------------------------------------------------
def disable_with_predicate(pred: Callable[[], bool], skip_message: str) -> Callable:
    """Decorate a test method so it is skipped with `skip_message` when `pred()` is true."""

    def decorator(func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            if pred():
                self.skipTest(skip_message)
            return func(self, *args, **kwargs)

        return wrapper

    return decorator


def with_eager_op_as_function(cls: type | None = None, only_as_function: bool = False) -> Any:
    """Returns the class unchanged, as TF 2.21 (ops always run as they do eagerly)."""
    if cls is not None:
        return cls
    return lambda c: c


def main(argv: list[str] | None = None) -> Any:
    """Run the tests of `__main__` (`unittest.main`)."""
    return unittest.main(argv=argv)


def benchmark_config() -> dict[str, Any]:
    """TF's benchmark session settings, as a dict of its ConfigProto fields (graph rewrites off).
    layerflow has no sessions to pass it to; it exists so benchmark code written for TF runs."""
    return {"graph_options": {"rewrite_options": {"dependency_optimization": "OFF"}}}


# --- benchmarks ----------------------------------------------------------------------------
def _median(x: list[float]) -> float:
    if not x:
        return -1
    s = sorted(x)
    return (s[len(x) // 2] + s[(len(x) - 1) // 2]) / 2.0


class Benchmark:
    """A benchmark class (TF's `tf.test.Benchmark`): methods named `benchmark*` time code and
    call `report_benchmark`, which prints the entry in TF's text format."""

    def evaluate(self, tensors: Any) -> Any:
        """Tensors (nested) as NumPy values."""
        return evaluate(tensors)

    @classmethod
    def is_abstract(cls) -> bool:
        return len(cls.mro()) <= 2

    def _get_name(self, overwrite_name: str | None = None) -> str:
        name = None
        for frame in reversed(inspect.stack()):  # the outermost method of a Benchmark
            if isinstance(frame.frame.f_locals.get("self"), Benchmark):
                name = frame.function
                break
        return f"{type(self).__name__}.{overwrite_name or name}"

    def report_benchmark(
        self,
        iters: int | None = None,
        cpu_time: float | None = None,
        wall_time: float | None = None,
        throughput: float | None = None,
        extras: dict | None = None,
        name: str | None = None,
        metrics: list[dict] | None = None,
    ) -> None:
        """Print one benchmark entry (`extras` values: numbers or strings; `metrics`: dicts with
        name, value and optional min_value/max_value)."""
        lines = ["entry {", f'  name: "{self._get_name(name)}"']
        for key, value in (
            ("iters", iters),
            ("cpu_time", cpu_time),
            ("wall_time", wall_time),
            ("throughput", throughput),
        ):
            if value is not None:
                lines.append(f"  {key}: {value}")
        for key, value in (extras or {}).items():
            kind = "double_value" if isinstance(value, (int, float)) else "string_value"
            shown = f"{float(value):g}" if kind == "double_value" else f'"{value}"'
            lines += [
                "  extras {",
                f'    key: "{key}"',
                "    value {",
                f"      {kind}: {shown}",
                "    }",
                "  }",
            ]
        for metric in metrics or []:
            lines += ["  metrics {", f'    name: "{metric["name"]}"']
            lines += [
                f"    {k}: {float(metric[k]):g}"
                for k in ("value", "min_value", "max_value")
                if k in metric
            ]
            lines.append("  }")
        lines.append("}")
        print("\n".join(lines), file=sys.stdout)

    def run_op_benchmark(
        self,
        sess: Any,
        op_or_tensor: Any,
        feed_dict: Any = None,
        burn_iters: int = 2,
        min_iters: int = 10,
        store_trace: bool = False,
        store_memory_usage: bool = True,
        name: str | None = None,
        extras: dict | None = None,
        mbs: int = 0,
    ) -> dict[str, Any]:
        """Time `sess.run(op_or_tensor)` (or `op_or_tensor()` when it is callable and `sess` is
        None): `burn_iters` warm-up runs, then the median of `min_iters` timed ones (devices
        synchronized around each). Reports and returns TF's dict of results."""
        if sess is not None:
            step = functools.partial(sess.run, op_or_tensor)
        elif callable(op_or_tensor):
            step = op_or_tensor
        else:
            raise TypeError(
                f"run_op_benchmark got sess=None and a non-callable {type(op_or_tensor).__name__}"
                "; layerflow runs eagerly, so pass a function that runs the op (or a session)."
            )
        for _ in range(burn_iters):
            step()
        deltas = []
        for _ in range(min_iters):
            sync_devices()
            start = time.perf_counter()
            step()
            sync_devices()
            deltas.append(time.perf_counter() - start)
        median = _median(deltas)
        values = {
            "iters": min_iters,
            "wall_time": median,
            "extras": dict(extras or {}),
            "name": name,
            "throughput": mbs / median if median > 0 else 0.0,
        }
        self.report_benchmark(**values)
        mean = float(np.mean(deltas)) if deltas else -1
        std = float(np.std(deltas, ddof=1)) if len(deltas) > 1 else -1
        values["extras"].update(wall_time_mean=mean, wall_time_stdev=std)
        return values
