"""`tf.debugging`: assertions on values, shapes and dtypes, and `check_numerics`."""

from layerflow._src.autodiff.debug_hooks import (
    disable_check_numerics,
    enable_check_numerics,
    get_log_device_placement,
    set_log_device_placement,
)
from layerflow._src.ops.debugging_ops import (
    Assert,
    assert_all_finite,
    assert_equal,
    assert_greater,
    assert_greater_equal,
    assert_integer,
    assert_less,
    assert_less_equal,
    assert_near,
    assert_negative,
    assert_non_negative,
    assert_non_positive,
    assert_none_equal,
    assert_positive,
    assert_proper_iterable,
    assert_rank,
    assert_rank_at_least,
    assert_rank_in,
    assert_same_float_dtype,
    assert_scalar,
    assert_shapes,
    assert_type,
    check_numerics,
    is_numeric_tensor,
)
from layerflow.debugging import experimental


def is_traceback_filtering_enabled() -> bool:
    """False: layerflow never filters tracebacks (every frame of an error is shown)."""
    return False


def disable_traceback_filtering() -> None:
    """Nothing to do: layerflow never filters tracebacks."""


def __getattr__(name: str):  # noqa: ANN202 - module hook
    if name == "enable_traceback_filtering":
        raise AttributeError(
            "layerflow has no tf.debugging.enable_traceback_filtering: it never hides frames "
            "from tracebacks, and cannot filter them as TF does (TF drops its own C++/graph "
            "frames). Errors name the op and the fix instead."
        )
    raise AttributeError(f"module 'layerflow.debugging' has no attribute {name!r}")
