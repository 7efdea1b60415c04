"""tf.config's device records are named tuples, as TF's."""

import layerflow as tf


def test_device_records_are_named_tuples():
    cpu = tf.config.list_physical_devices("CPU")[0]
    assert isinstance(cpu, tuple) and tuple(cpu) == ("/physical_device:CPU:0", "CPU")
    assert repr(cpu) == "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')"
    config = tf.config.LogicalDeviceConfiguration(memory_limit=5)
    assert isinstance(config, tuple) and config.memory_limit == 5
    assert repr(config) == (
        "LogicalDeviceConfiguration(memory_limit=5, experimental_priority=None, "
        "experimental_device_ordinal=None)"
    )
    logical = tf.config.list_logical_devices("CPU")[0]
    assert isinstance(logical, tuple) and logical.device_type == "CPU"
