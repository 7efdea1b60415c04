import pytest

from layerflow._src.backend import devices


@pytest.fixture
def two_cpus():
    """Two logical CPU devices for the test, the plain single-CPU setup again afterwards."""
    import layerflow as tf

    devices._reset_for_tests()
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
    )
    yield tf.config.list_logical_devices("CPU")
    devices._reset_for_tests()
