"""tf.config runtime settings, tf.DeviceSpec, tf.get_logger / get_current_name_scope, with TF
2.21's defaults and answers."""

import logging

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.framework import runtime_config


@pytest.fixture(autouse=True)
def _restore_settings():
    saved = {
        k: (dict(v) if isinstance(v, dict) else v) for k, v in runtime_config._settings.items()
    }
    yield
    runtime_config._settings.update(saved)
    tf.config.threading.set_intra_op_parallelism_threads(saved["intra_op"])


def test_defaults_are_tfs():
    assert tf.config.threading.get_intra_op_parallelism_threads() == 0
    assert tf.config.threading.get_inter_op_parallelism_threads() == 0
    assert tf.config.optimizer.get_jit() == ""
    assert tf.config.optimizer.get_experimental_options() == {
        "disable_model_pruning": False,
        "disable_meta_optimizer": False,
    }
    assert tf.config.experimental.tensor_float_32_execution_enabled() is True
    assert tf.config.experimental.get_device_policy() == "silent"
    assert tf.config.experimental.get_synchronous_execution() is True
    assert tf.config.get_soft_device_placement() is True


def test_round_trips_and_validation():
    tf.config.threading.set_inter_op_parallelism_threads(3)
    assert tf.config.threading.get_inter_op_parallelism_threads() == 3
    with pytest.raises(ValueError, match="integer >= 0"):
        tf.config.threading.set_intra_op_parallelism_threads(-1)
    tf.config.optimizer.set_jit(True)
    assert tf.config.optimizer.get_jit() == "autoclustering"
    tf.config.optimizer.set_jit(False)
    assert tf.config.optimizer.get_jit() == ""
    with pytest.raises(ValueError, match="autoclustering"):
        tf.config.optimizer.set_jit("xla")
    tf.config.optimizer.set_experimental_options({"layout_optimizer": False})
    assert tf.config.optimizer.get_experimental_options() == {
        "layout_optimizer": False,
        "disable_model_pruning": False,
        "disable_meta_optimizer": False,
    }
    with pytest.raises(ValueError, match="unknown options"):
        tf.config.optimizer.set_experimental_options({"warp_speed": True})
    tf.config.experimental.enable_tensor_float_32_execution(False)
    assert tf.config.experimental.tensor_float_32_execution_enabled() is False
    tf.config.experimental.set_device_policy("explicit")
    assert tf.config.experimental.get_device_policy() == "explicit"
    tf.config.experimental.set_device_policy(None)
    assert tf.config.experimental.get_device_policy() == "silent"
    with pytest.raises(ValueError, match="Invalid argument `device_policy`"):
        tf.config.experimental.set_device_policy("bogus")
    tf.config.experimental.set_synchronous_execution(False)
    assert tf.config.experimental.get_synchronous_execution() is False
    tf.config.experimental.enable_op_determinism()
    assert runtime_config.is_op_determinism_enabled()


def test_intra_op_threads_cap_blas():
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads():
        return [
            p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"
        ]

    np.ones((2, 2)) @ np.ones((2, 2))  # BLAS loaded
    tf.config.threading.set_intra_op_parallelism_threads(1)
    assert tf.config.threading.get_intra_op_parallelism_threads() == 1
    assert blas_threads() and all(n == 1 for n in blas_threads())
    tf.config.threading.set_intra_op_parallelism_threads(0)
    assert tf.config.threading.get_intra_op_parallelism_threads() == 0


def test_memory_info_and_device_details_on_cpu():
    assert tf.config.experimental.get_memory_info("CPU:0") == {"current": 0, "peak": 0}
    assert tf.config.experimental.get_memory_usage("CPU:0") == 0
    tf.config.experimental.reset_memory_stats("CPU:0")
    with pytest.raises(ValueError, match="No matching devices found for 'GPU:7'"):
        tf.config.experimental.get_memory_info("GPU:7")
    cpu = tf.config.list_physical_devices("CPU")[0]
    assert tf.config.experimental.get_device_details(cpu) == {}
    with pytest.raises(ValueError, match="PhysicalDevice"):
        tf.config.experimental.get_device_details("CPU:0")


def test_memory_info_on_gpu():
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        pytest.skip("no GPU")
    before = tf.config.experimental.get_memory_info("GPU:0")
    with tf.device("/GPU:0"):
        x = tf.ones((1024, 1024))
    after = tf.config.experimental.get_memory_info("GPU:0")
    assert (
        after["current"] >= before["current"] + 4 * 1024 * 1024
        and after["peak"] >= after["current"]
    )
    details = tf.config.experimental.get_device_details(gpus[0])
    assert isinstance(details["device_name"], str) and len(details["compute_capability"]) == 2
    del x


def test_deprecated_spellings():
    assert tf.config.experimental_functions_run_eagerly is tf.config.functions_run_eagerly
    assert tf.config.experimental_run_functions_eagerly is tf.config.run_functions_eagerly


def test_device_spec():
    D = tf.DeviceSpec
    spec = D.from_string("/job:w/replica:0/task:1/device:CPU:0")
    assert repr(spec) == "<DeviceSpec(job=w, replica=0, task=1, device_type=CPU, device_index=0)>"
    assert D(job="w", device_type="gpu", device_index=1).to_string() == "/job:w/device:GPU:1"
    assert D.from_string("/gpu:1").to_string() == "/device:GPU:1"
    assert D.from_string("/job:w/task:1").to_string() == "/job:w/task:1"
    assert D.from_string("/device:CPU:*").to_string() == "/device:CPU:*"
    assert D.from_string("/GPU:1") == D.from_string("/device:GPU:1")
    assert hash(D(job="a")) == hash(D(job="a")) and D().to_string() == ""
    merged = D.from_string("/job:a/GPU:1").make_merged_spec(D(job="b"))
    assert merged.to_string() == "/job:b/device:GPU:1"
    assert D.from_string("/gpu:1").replace(device_index=3).to_string() == "/device:GPU:3"
    assert D(job="a").parse_from_string("/task:2").to_string() == "/job:a/task:2"
    with pytest.raises(ValueError, match="Unknown attribute 'foo'"):
        D.from_string("/job:a/foo:1")
    with pytest.raises(ValueError):
        D(device_type="GPU", device_index="x")


def test_logger_and_name_scope():
    assert isinstance(tf.get_logger(), logging.Logger) and tf.get_logger().name == "layerflow"
    assert tf.get_current_name_scope() == ""
    with tf.name_scope("a"):
        with tf.name_scope("b"):
            assert tf.get_current_name_scope() == "a/b"
