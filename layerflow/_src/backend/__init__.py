"""The only layer that knows NumPy from CuPy: array modules, devices, device scopes, host copies.

Everything above this package asks for `Device` objects and their `xp` module; nothing else says
`cupy` or `.get()`.
"""

from layerflow._src.backend.devices import (
    Device,
    DeviceContext,
    LogicalDevice,
    LogicalDeviceConfiguration,
    PhysicalDevice,
    array_device,
    cpu_device,
    current_device,
    default_device,
    device_scope,
    flags,
    get_logical_device_configuration,
    list_logical_devices,
    list_physical_devices,
    parse_device,
    scoped_device,
    set_logical_device_configuration,
    sparse_matrices,
    special_functions,
    to_device,
    to_host,
)

__all__ = [
    "Device",
    "DeviceContext",
    "LogicalDevice",
    "LogicalDeviceConfiguration",
    "PhysicalDevice",
    "cpu_device",
    "current_device",
    "default_device",
    "flags",
    "device_scope",
    "get_logical_device_configuration",
    "list_logical_devices",
    "list_physical_devices",
    "array_device",
    "parse_device",
    "scoped_device",
    "set_logical_device_configuration",
    "sparse_matrices",
    "special_functions",
    "to_device",
    "to_host",
]
