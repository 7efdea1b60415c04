"""`tf.math`: elementwise math, reductions and their aliases."""

from layerflow import _lazy_facade as _lazy
from layerflow._src.ops.complex_ops import angle, conj, imag, real
from layerflow._src.ops.cumulative_ops import cumulative_logsumexp
from layerflow._src.ops.elementwise_more_ops import (
    accumulate_n,
    acosh,
    asinh,
    atan2,
    atanh,
    invert_permutation,
    is_non_decreasing,
    is_strictly_increasing,
    multiply_no_nan,
    nextafter,
    polyval,
    reciprocal_no_nan,
    reduce_euclidean_norm,
    rint,
    scalar_mul,
    truncatediv,
    truncatemod,
    xdivy,
    xlog1py,
    xlogy,
    zero_fraction,
)
from layerflow._src.ops.elementwise_ops import (
    acos,
    asin,
    atan,
    ceil,
    cos,
    cosh,
    erf,
    expm1,
    floor,
    is_finite,
    is_inf,
    is_nan,
    log1p,
    log_sigmoid,
    reciprocal,
    round,
    rsqrt,
    sin,
    sinh,
    tan,
)
from layerflow._src.ops.math_ops import (
    abs,
    add,
    divide,
    divide_no_nan,
    equal,
    exp,
    floordiv,
    floormod,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    pow,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_sum,
    sigmoid,
    sign,
    sqrt,
    square,
    squared_difference,
    subtract,
    tanh,
    truediv,
)
from layerflow._src.ops.nn_ops import log_softmax, softmax, softplus, softsign
from layerflow._src.ops.normalization_ops import l2_normalize
from layerflow._src.ops.ordering_ops import approx_max_k, approx_min_k, top_k
from layerflow._src.ops.reduce_ops import (
    add_n,
    argmax,
    argmin,
    count_nonzero,
    cumprod,
    cumsum,
    reduce_all,
    reduce_any,
    reduce_logsumexp,
    reduce_prod,
    reduce_std,
    reduce_variance,
)
from layerflow._src.ops.segment_ops import (
    bincount,
    in_top_k,
    segment_sum,
    unsorted_segment_sum,
)
from layerflow._src.ops.special_math_ops import (
    betainc,
    digamma,
    erfc,
    erfcinv,
    erfinv,
    igamma,
    igammac,
    lbeta,
    lgamma,
    ndtri,
    polygamma,
    zeta,
)

# Imported on first use, to keep `import layerflow` fast (the op-name registry resolves them
# at its first lookup: autodiff/dispatch.py), as is `special`.
_LAZY_NAMES = {
    "bessel_i0": "layerflow._src.ops.bessel_ops",
    "bessel_i0e": "layerflow._src.ops.bessel_ops",
    "bessel_i1": "layerflow._src.ops.bessel_ops",
    "bessel_i1e": "layerflow._src.ops.bessel_ops",
    "confusion_matrix": "layerflow._src.ops.segment_reduce_ops",
    "segment_max": "layerflow._src.ops.segment_reduce_ops",
    "segment_mean": "layerflow._src.ops.segment_reduce_ops",
    "segment_min": "layerflow._src.ops.segment_reduce_ops",
    "segment_prod": "layerflow._src.ops.segment_reduce_ops",
    "unsorted_segment_max": "layerflow._src.ops.segment_reduce_ops",
    "unsorted_segment_mean": "layerflow._src.ops.segment_reduce_ops",
    "unsorted_segment_min": "layerflow._src.ops.segment_reduce_ops",
    "unsorted_segment_prod": "layerflow._src.ops.segment_reduce_ops",
    "unsorted_segment_sqrt_n": "layerflow._src.ops.segment_reduce_ops",
    "sobol_sample": "layerflow._src.ops.sobol_ops",
}


def _special(name: str):  # noqa: ANN202 - the submodule
    if name != "special":
        raise AttributeError(f"module 'layerflow.math' has no attribute {name!r}")
    import importlib

    module = importlib.import_module("layerflow.math.special")
    globals()[name] = module
    return module


__getattr__ = _lazy.lazy_getattr("layerflow.math", _LAZY_NAMES, globals(), _special)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_NAMES) | {"special"})
