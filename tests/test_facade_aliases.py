"""Facade twins are one set of objects: `tf.initializers` is `tf.keras.initializers`' names, and
`tf.config.experimental` spells `tf.config`'s functions the older way."""

import layerflow as tf


def _public(module):
    return {n for n in dir(module) if not n.startswith("_")}


def test_tf_initializers_are_the_keras_initializers():
    names = _public(tf.keras.initializers)
    assert {"GlorotUniform", "Zeros", "get", "serialize", "deserialize", "he_normal"} <= names
    assert _public(tf.initializers) == names
    for name in names:
        assert getattr(tf.initializers, name) is getattr(tf.keras.initializers, name), name


def test_config_experimental_spells_config_functions():
    shared = [
        "LogicalDeviceConfiguration",
        "get_logical_device_configuration",
        "get_memory_growth",
        "get_visible_devices",
        "list_logical_devices",
        "list_physical_devices",
        "set_logical_device_configuration",
        "set_memory_growth",
        "set_visible_devices",
    ]
    for name in shared:
        assert getattr(tf.config.experimental, name) is getattr(tf.config, name), name
    exp = tf.config.experimental
    assert exp.VirtualDeviceConfiguration is tf.config.LogicalDeviceConfiguration
    assert exp.set_virtual_device_configuration is tf.config.set_logical_device_configuration
    assert exp.get_virtual_device_configuration is tf.config.get_logical_device_configuration
