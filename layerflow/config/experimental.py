"""`tf.config.experimental`: the older spellings the book uses."""

from layerflow._src.backend import (
    LogicalDeviceConfiguration,
    get_logical_device_configuration,
    list_logical_devices,
    list_physical_devices,
    set_logical_device_configuration,
)
from layerflow._src.backend.devices import (
    get_memory_growth,
    get_visible_devices,
    set_memory_growth,
    set_visible_devices,
)

VirtualDeviceConfiguration = LogicalDeviceConfiguration
set_virtual_device_configuration = set_logical_device_configuration
get_virtual_device_configuration = get_logical_device_configuration
