"""`tf.config.experimental`: the older spellings the book uses, the same objects as `tf.config`."""

# ruff: noqa: F401 - a facade re-exports

from layerflow._src.framework.runtime_config import (
    enable_op_determinism,
    enable_tensor_float_32_execution,
    get_device_details,
    get_device_policy,
    get_memory_info,
    get_memory_usage,
    get_synchronous_execution,
    reset_memory_stats,
    set_device_policy,
    set_synchronous_execution,
    tensor_float_32_execution_enabled,
)
from layerflow.config import (
    LogicalDeviceConfiguration,
    get_logical_device_configuration,
    get_memory_growth,
    get_visible_devices,
    list_logical_devices,
    list_physical_devices,
    set_logical_device_configuration,
    set_memory_growth,
    set_visible_devices,
)

VirtualDeviceConfiguration = LogicalDeviceConfiguration
set_virtual_device_configuration = set_logical_device_configuration
get_virtual_device_configuration = get_logical_device_configuration
