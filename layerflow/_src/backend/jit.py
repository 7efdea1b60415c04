"""Optional compiled CPU kernels (numba), used only where measured faster than the NumPy path.

numba is an optional extra (`pip install layerflow[fast]`). It is imported the first time a
caller asks `enabled()`, never at `import layerflow` (importing numba costs about 0.3 s), and a
kernel is compiled on its first call (`nopython`, `nogil` so that chunks on Python threads run
in parallel, and `cache` so later processes load the machine code from `__pycache__`).

Every kernel has a NumPy path beside it, and callers pick one with `enabled()`; the NumPy
path is what runs without numba, with `LAYERFLOW_NUMBA=0`, on CuPy arrays, and inside
`use(False)` (tests run both paths and compare them).

>>> from layerflow._src.backend import jit
>>> @jit.kernel(cache=False)  # cache=False: a doctest has no file to cache beside
... def twice(x, out):
...     for i in range(x.size):
...         out[i] = 2 * x[i]
>>> import numpy as np
>>> x = np.arange(3.0); out = np.empty_like(x)
>>> _ = twice(x, out) if jit.enabled() else np.multiply(x, 2, out=out)
>>> out.tolist()
[0.0, 2.0, 4.0]
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

_lock = threading.Lock()
# None: not looked for yet; False: absent or turned off by LAYERFLOW_NUMBA=0; else the module.
_numba: Any = None
# `use(flag)` overrides what the environment says (tests); None: no override.
_forced: bool | None = None


def _load() -> Any:
    global _numba
    with _lock:
        if _numba is None:
            if os.environ.get("LAYERFLOW_NUMBA", "1").strip().lower() in ("0", "false", "no"):
                _numba = False
            else:
                try:
                    import numba
                except ImportError:
                    _numba = False
                else:
                    _register(numba)
                    _numba = numba
    return _numba


def _register(numba: Any) -> None:
    """Let compiled code call a `kernel` it names as a global (one kernel may share another's
    loops): numba types the global as the kernel's own dispatcher, compiled with it."""

    @numba.extending.typeof_impl.register(kernel)
    def _typeof_kernel(val: kernel, c: Any) -> Any:
        return numba.types.Dispatcher(val._dispatcher(numba))


def available() -> bool:
    """Whether numba can be imported and `LAYERFLOW_NUMBA` does not turn it off."""
    return bool(_numba if _numba is not None else _load())


def enabled() -> bool:
    """Whether callers should run the compiled kernels now (`available()`, unless `use` says)."""
    if _forced is not None:
        return _forced and available()
    return available()


@contextlib.contextmanager
def use(flag: bool) -> Iterator[None]:
    """Within the block, `enabled()` is `flag` (and `available()`); for tests and benches."""
    global _forced
    before, _forced = _forced, bool(flag)
    try:
        yield
    finally:
        _forced = before


class kernel:
    """`@kernel` or `@kernel(parallel=True, ...)`: a function compiled by numba on first call.

    Callers must check `enabled()` first: the kernel has no NumPy fallback of its own. A kernel
    may call another kernel of its module (loops that several kernels share).
    """

    def __init__(self, fn: Callable | None = None, **options: Any):
        self._options = {"nopython": True, "nogil": True, "cache": True, **options}
        self._fn = fn
        self._compiled: Callable | None = None
        if fn is not None:
            self.__name__ = fn.__name__
            self.__doc__ = fn.__doc__

    def __call__(self, *args: Any) -> Any:
        if self._fn is None:  # used as @kernel(...): this call receives the function
            (fn,) = args
            return kernel(fn, **self._options)
        compiled = self._compiled
        if compiled is None:
            compiled = self._compile()
        return compiled(*args)

    def _dispatcher(self, numba: Any) -> Callable:
        with _lock:
            if self._compiled is None:
                self._compiled = numba.jit(**self._options)(self._fn)
        return self._compiled

    def _compile(self) -> Callable:
        numba = _numba if _numba else _load()
        if not numba:
            raise RuntimeError(
                f"layerflow kernel {self.__name__!r} needs numba, which is not available "
                "(not installed, or LAYERFLOW_NUMBA=0); callers must check "
                "layerflow._src.backend.jit.enabled() and take the NumPy path. Install it "
                "with `pip install layerflow[fast]`."
            )
        return self._dispatcher(numba)
