"""Silence NumPy's floating-point warnings while an op's kernel runs.

TF's kernels return inf and nan silently (`tf.math.log(0.)` is -inf, `1. / 0.` is inf,
`tf.exp(1000.)` is inf); NumPy's ufuncs also return them but emit `RuntimeWarning: divide by
zero ...`, which leaks out of every op and fails test suites that run with warnings as errors.
The op wrapper (`autodiff/op.py`) brackets each kernel with `quiet()` / `restore(token)`.

`np.errstate(all="ignore")` does this, but builds its state object on every entry (about
1.7 us, twice an eager add). NumPy 2 keeps that state in a context variable, so setting a
state object built once costs about 0.1 us. The fallback (another NumPy) is `np.errstate`.
CuPy's kernels never warn, so the guard is a no-op for them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:  # NumPy >= 2: the context variable that `np.errstate` sets.
    from numpy._core.umath import _extobj_contextvar as _var

    with np.errstate(all="ignore"):
        _QUIET = _var.get()

    def quiet() -> Any:
        """Ignore floating-point errors in this context until `restore(token)`."""
        return _var.set(_QUIET)

    restore = _var.reset

except (ImportError, AttributeError):  # pragma: no cover - NumPy without the context variable

    def quiet() -> Any:
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def restore(token: Any) -> None:
        token.__exit__(None, None, None)
