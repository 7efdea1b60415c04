"""`tf.config`: devices and runtime settings."""

from layerflow._src.backend import (
    LogicalDevice,
    LogicalDeviceConfiguration,
    PhysicalDevice,
    get_logical_device_configuration,
    list_logical_devices,
    list_physical_devices,
    set_logical_device_configuration,
)
from layerflow._src.backend.devices import (
    get_memory_growth,
    get_visible_devices,
    set_memory_growth,
    set_soft_device_placement,
    set_visible_devices,
)
from layerflow._src.framework.runtime_config import get_soft_device_placement
from layerflow._src.function import functions_run_eagerly, run_functions_eagerly

experimental_functions_run_eagerly = functions_run_eagerly
experimental_run_functions_eagerly = run_functions_eagerly

# Last: `experimental` re-exports the names above from this partly imported module.
from layerflow.config import experimental, optimizer, threading  # noqa: E402
