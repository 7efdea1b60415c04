"""Devices on the CPU: TF's device strings, nesting, soft placement, two logical CPUs."""

import logging

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.backend import devices

PREFIX = "/job:localhost/replica:0/task:0/device:"
CPU0, CPU1 = PREFIX + "CPU:0", PREFIX + "CPU:1"


def test_one_physical_and_one_logical_cpu_by_default():
    (phys,) = tf.config.list_physical_devices("CPU")
    assert phys.name == "/physical_device:CPU:0" and phys.device_type == "CPU"
    # One logical device per physical one until something splits them (GPUs only with CuPy).
    gpus = tf.config.list_physical_devices("GPU")
    assert [d.name for d in tf.config.list_logical_devices("GPU")] == [
        PREFIX + f"GPU:{i}" for i in range(len(gpus))
    ]
    logical = tf.config.list_logical_devices("CPU")[0]
    assert len(tf.config.list_logical_devices()) == 1 + len(gpus)
    assert logical.name == CPU0 and logical.device_type == "CPU"
    assert tf.config.experimental.list_physical_devices("cpu") == [phys]
    assert tf.config.experimental.list_logical_devices("CPU") == [logical]


@pytest.mark.parametrize(
    "spelling",
    ["/CPU:1", "/cpu:1", "CPU:1", "cpu:1", "/device:CPU:1", "device:CPU:1",
     "/job:localhost/replica:0/task:0/device:CPU:1", "/job:localhost/device:CPU:1"],
)  # fmt: skip
def test_tf_spellings_name_the_same_logical_device(two_cpus, spelling):
    with tf.device(spelling):
        t = tf.constant([1.0, 2.0])
        v = tf.Variable(1.0)
    assert t.device == v.device == CPU1


def test_a_device_without_an_index_is_index_zero(two_cpus):
    with tf.device("/CPU:1"), tf.device("/CPU"):
        assert tf.constant(1).device == CPU0


@pytest.mark.parametrize("bad", ["/TPU:0", "CPU:zero", "/device:", "not a device"])
def test_unparseable_device_strings_raise_value_error_showing_valid_spellings(bad):
    with pytest.raises(ValueError, match="CPU"):
        with tf.device(bad):
            pass


def test_device_names_must_be_strings():
    with pytest.raises(TypeError, match="'/GPU:0'.*int"):
        with tf.device(0):
            pass


def test_device_scopes_nest_and_restore(two_cpus):
    with tf.device("/CPU:1"):
        assert tf.constant(1).device == CPU1
        with tf.device("/CPU:0"):
            assert tf.constant(1).device == CPU0
        assert tf.constant(1).device == CPU1
    assert tf.constant(1).device == CPU0


def test_a_device_context_is_reusable(two_cpus):
    ctx = tf.device("/CPU:1")
    for _ in range(2):
        with ctx:
            assert tf.constant(1).device == CPU1
        assert tf.constant(1).device == CPU0


def test_ops_follow_their_inputs_device_and_the_scope_wins(two_cpus):
    with tf.device("/CPU:1"):
        a = tf.constant([1.0, 2.0])
    b = tf.constant([10.0, 20.0])
    assert (a * 2.0).device == CPU1  # no scope: an op runs where its input lives
    mixed = a + b
    assert mixed.device in (CPU0, CPU1)
    np.testing.assert_array_equal(mixed.numpy(), [11.0, 22.0])
    with tf.device("/CPU:0"):
        moved = a + b
    assert moved.device == CPU0
    np.testing.assert_array_equal(moved.numpy(), [11.0, 22.0])
    with tf.device("/CPU:1"):
        assert tf.matmul(tf.reshape(b, (1, 2)), tf.reshape(a, (2, 1))).device == CPU1


def test_gradients_flow_across_devices(two_cpus):
    with tf.device("/CPU:1"):
        w = tf.Variable([1.0, 2.0])
    x = tf.constant([3.0, 4.0])
    with tf.GradientTape() as tape:
        with tf.device("/CPU:0"):
            y = tf.reduce_sum(w * x)
    g = tape.gradient(y, w)
    np.testing.assert_array_equal(g.numpy(), [3.0, 4.0])
    w.assign_sub(g)  # a gradient made on CPU:0 updates a variable on CPU:1
    assert w.device == CPU1
    np.testing.assert_array_equal(w.numpy(), [-2.0, -2.0])


def test_a_value_used_on_two_devices_gets_the_sum_of_both_gradients(two_cpus):
    w = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            with tf.device("/CPU:1"):
                y = tf.reduce_sum(w * w * w)
            y = y + tf.reduce_sum(3.0 * w)
        g = inner.gradient(y, w)  # 3 w^2 + 3
    np.testing.assert_array_equal(g.numpy(), [6.0, 15.0])
    np.testing.assert_array_equal(outer.gradient(g, w).numpy(), [6.0, 12.0])  # 6 w


def test_logical_devices_cannot_change_after_first_use(two_cpus):
    tf.constant(1.0)
    cpu = tf.config.list_physical_devices("CPU")[0]
    with pytest.raises(RuntimeError, match="before creating the first tensor"):
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()])
    assert len(tf.config.list_logical_devices("CPU")) == 2


def test_a_missing_gpu_falls_back_to_the_cpu_and_says_so_once_at_debug(caplog):
    devices._reset_for_tests()
    try:
        with caplog.at_level(logging.DEBUG):
            for _ in range(3):
                with tf.device("/GPU:3"):
                    t = tf.constant(1.0)
        assert t.device == CPU0
        notes = [r for r in caplog.records if "/GPU:3" in r.getMessage()]
        assert len(notes) == 1 and notes[0].levelno == logging.DEBUG
        assert "soft placement" in notes[0].getMessage()
    finally:
        devices._reset_for_tests()


def test_an_index_beyond_the_logical_cpus_falls_back_to_cpu0(two_cpus):
    with tf.device("/CPU:5"):
        assert tf.constant(1).device == CPU0
