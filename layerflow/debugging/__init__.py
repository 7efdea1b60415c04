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
from layerflow._src.utils import traceback_filter as _traceback_filter
from layerflow.debugging import experimental


def is_traceback_filtering_enabled() -> bool:
    """Whether uncaught errors hide layerflow's own frames (off by default; see
    `enable_traceback_filtering`)."""
    return _traceback_filter.is_enabled()


def enable_traceback_filtering() -> None:
    """Hide layerflow's frames from the tracebacks of uncaught errors, as TF hides its own
    (layerflow leaves this off by default)."""
    _traceback_filter.enable()


def disable_traceback_filtering() -> None:
    """Show every frame of uncaught errors' tracebacks again."""
    _traceback_filter.disable()
