"""`tf.math.sobol_sample`: points of the Sobol low-discrepancy sequence (Joe and Kuo's
direction numbers, through SciPy's `qmc.Sobol`, an optional dependency imported on first use).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.tensor import Tensor


def sobol_sample(dim: Any, num_results: Any, skip: Any = 0, dtype: Any = "float32",
                 name: str | None = None) -> Any:  # fmt: skip
    """`num_results` points of the `dim`-dimensional Sobol sequence, after skipping `skip`;
    TF's sequence starts at its second point (0.5, ..., 0.5), not at the origin.

    >>> import layerflow as tf
    >>> tf.math.sobol_sample(2, 3).numpy()
    array([[0.5 , 0.5 ],
           [0.75, 0.25],
           [0.25, 0.75]], dtype=float32)
    """
    d, n, s = int(dim), int(num_results), int(skip)
    if d < 1 or n < 0 or s < 0:
        raise errors.InvalidArgumentError(
            None,
            "sobol_sample",
            f"sobol_sample: dim must be >= 1 and num_results, skip >= 0; got dim={d}, "
            f"num_results={n}, skip={s}.",
        )
    dt = dtypes.as_dtype(dtype)
    if dt.name not in ("float32", "float64"):
        raise TypeError(f"sobol_sample: dtype must be float32 or float64, got {dt.name}.")
    try:
        from scipy.stats import qmc
    except ImportError as err:
        raise ImportError(
            "tf.math.sobol_sample needs SciPy, which is not installed. Install it with "
            "`pip install scipy` (or `pip install layerflow[special]`)."
        ) from err
    engine = qmc.Sobol(d, scramble=False)
    engine.fast_forward(1 + s)
    with warnings.catch_warnings():  # SciPy warns unless n is a power of 2; TF does not care
        warnings.simplefilter("ignore", UserWarning)
        points = engine.random(n) if n else np.zeros((0, d))
    device = backend.current_device()
    return Tensor(backend.to_device(points.astype(dt.np), device), device)


__all__ = ["sobol_sample"]
