"""`tf.config`: devices and runtime settings."""

from layerflow._src.autodiff.function import functions_run_eagerly, run_functions_eagerly
from layerflow._src.autodiff.function import (
    functions_run_eagerly as experimental_functions_run_eagerly,  # TF's deprecated spelling
)
from layerflow._src.autodiff.function import (
    run_functions_eagerly as experimental_run_functions_eagerly,  # TF's deprecated spelling
)
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

# Last: `experimental` re-exports the names above from this partly imported module.
from layerflow.config import experimental, optimizer, threading
