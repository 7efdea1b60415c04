"""`tf.debugging.experimental`: TF's Debugger V2 dump (not provided; see the error)."""


def __getattr__(name: str):  # noqa: ANN202 - module hook
    if name in ("enable_dump_debug_info", "disable_dump_debug_info"):
        raise AttributeError(
            f"layerflow has no tf.debugging.experimental.{name}: it writes TF's Debugger V2 "
            "event files for TensorBoard's debugger plugin, which layerflow does not produce. "
            "Use tf.debugging.enable_check_numerics() to find the op that makes NaN/Inf, and "
            "tf.debugging.set_log_device_placement(True) to see where ops run."
        )
    raise AttributeError(f"module 'layerflow.debugging.experimental' has no attribute {name!r}")
