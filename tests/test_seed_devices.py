"""The seed's last part ("4 GPU加速"), run as written, and again with the physical CPU split
into two logical devices so that the multi-device code really runs.

Every expectation is stated relative to `tf.config.list_physical_devices("GPU")`, so the file
passes on a CPU-only machine and on a GPU machine alike (`make gpu-check` runs it there)."""

import logging

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.backend import devices as _devices
from layerflow._src.distribute.values import MirroredVariable

pytestmark = pytest.mark.gpu

PREFIX = "/job:localhost/replica:0/task:0/device:"
CPU0, CPU1 = PREFIX + "CPU:0", PREFIX + "CPU:1"


@pytest.fixture
def fresh_devices():
    _devices._reset_for_tests()
    yield
    _devices._reset_for_tests()


def try_gpu(i=0):
    # 如果存在，则返回gpu(i)，否则返回cpu()
    if len(tf.config.experimental.list_logical_devices("GPU")) >= i + 1:
        return tf.device(f"/GPU:{i}")
    return tf.device("/CPU:0")


def try_all_gpus():
    # 返回所有可用的GPU，如果没有GPU，则返回CPU
    num_gpus = len(tf.config.experimental.list_logical_devices("GPU"))
    devices = [tf.device(f"/GPU:{i}") for i in range(num_gpus)]
    return devices if devices else [tf.device("/CPU:0")]


def test_seed_gpu_section(fresh_devices, caplog):
    assert tf.__version__ and tf.keras.__version__ == "2.10.0"
    gpus = tf.config.experimental.list_physical_devices("GPU")
    has_gpu = bool(gpus)
    cpu_ctx, gpu_ctx = tf.device("/CPU:0"), tf.device("/GPU:0")

    # The seed splits the first GPU in two before it creates any tensor.
    split = [
        tf.config.experimental.VirtualDeviceConfiguration(memory_limit=9182),
        tf.config.experimental.VirtualDeviceConfiguration(memory_limit=9182),
    ]
    if has_gpu:
        tf.config.experimental.set_virtual_device_configuration(gpus[0], split)
    else:
        with pytest.raises(IndexError):  # as in TF: the seed's split needs a GPU to split
            tf.config.experimental.set_virtual_device_configuration(gpus[0], split)
    n_logical = len(tf.config.experimental.list_logical_devices("GPU"))
    assert n_logical == (len(gpus) + 1 if has_gpu else 0)
    assert len(tf.config.experimental.list_physical_devices("GPU")) == len(gpus)
    # Where "/GPU:0" and "/GPU:1" land: the logical GPUs, else the CPU (soft placement).
    gpu0 = PREFIX + "GPU:0" if n_logical >= 1 else CPU0
    gpu1 = PREFIX + "GPU:1" if n_logical >= 2 else CPU0

    x = tf.constant([1, 2, 3])
    assert x.device == gpu0  # ops run on the first GPU when there is one, as in TF
    with gpu_ctx:
        assert tf.ones(()).device == gpu0
    with cpu_ctx:
        assert tf.ones(()).device == CPU0

    a, b, all_gpus = try_gpu(), try_gpu(10), try_all_gpus()
    want_all = [f"/GPU:{i}" for i in range(n_logical)] or ["/CPU:0"]
    assert [d.spec for d in all_gpus] == want_all
    assert (a.spec, b.spec) == ("/GPU:0" if has_gpu else "/CPU:0", "/CPU:0")

    with try_gpu():
        X = tf.ones((2, 3))
    assert X.device == gpu0
    np.testing.assert_array_equal(X.numpy(), np.ones((2, 3), np.float32))
    with try_gpu(1):
        Y = tf.random.uniform((2, 3))
    assert Y.device == gpu1 and Y.dtype == tf.float32
    with try_gpu(1):
        Z = X
    assert (
        str(Z) == str(X) == ("tf.Tensor(\n[[1. 1. 1.]\n [1. 1. 1.]], shape=(2, 3), dtype=float32)")
    )
    total = Y + Z
    assert total.device in (Y.device, Z.device)
    np.testing.assert_allclose(total.numpy(), Y.numpy() + 1.0)
    with try_gpu(1):
        Z2 = Z
    assert Z2 is Z

    with caplog.at_level(logging.INFO, logger="layerflow"):
        strategy = tf.distribute.MirroredStrategy()
    replicas = tuple(PREFIX + f"GPU:{i}" for i in range(n_logical)) or (CPU0,)
    assert f"Using MirroredStrategy with devices {replicas}" in caplog.text
    with strategy.scope():
        net = tf.keras.models.Sequential([tf.keras.layers.Dense(1)])
    out = net(X)
    assert out.shape == (2, 1) and out.dtype == tf.float32
    # Both rows of X are ones, so both outputs are equal (the seed shows two equal numbers).
    assert out.numpy()[0, 0] == out.numpy()[1, 0]
    assert (net.layers[0].weights[0].device, net.layers[0].weights[1].device) == (gpu0, gpu0)
    # Built at net(X), after the scope closed: the layer kept its strategy, as TF's does.
    assert all(isinstance(w, MirroredVariable) for w in net.weights)
    assert net.layers[0].weights[0].devices == replicas


def test_seed_multi_device_code_on_two_logical_cpus(fresh_devices):
    cpus = tf.config.experimental.list_physical_devices("CPU")
    tf.config.experimental.set_virtual_device_configuration(
        cpus[0],
        [
            tf.config.experimental.VirtualDeviceConfiguration(),
            tf.config.experimental.VirtualDeviceConfiguration(),
        ],
    )
    assert len(tf.config.experimental.list_logical_devices("CPU")) == 2

    def try_cpu(i=0):  # the seed's try_gpu, for the device kind this machine has
        if len(tf.config.experimental.list_logical_devices("CPU")) >= i + 1:
            return tf.device(f"/CPU:{i}")
        return tf.device("/CPU:0")

    with try_cpu():
        X = tf.ones((2, 3))
    with try_cpu(1):
        Y = tf.random.uniform((2, 3))
    assert (X.device, Y.device) == (CPU0, CPU1)
    with try_cpu(1):
        Z = X
        Z2 = Z
    assert Z2 is Z and Z.device == CPU0  # assignment copies nothing, wherever it happens
    with try_cpu(1):
        S = Y + Z  # an op across devices runs on the scoped device
    assert S.device == CPU1
    np.testing.assert_allclose(S.numpy(), Y.numpy() + 1.0)

    strategy = tf.distribute.MirroredStrategy(["/CPU:0", "/CPU:1"])
    with strategy.scope():
        net = tf.keras.models.Sequential([tf.keras.layers.Dense(1)])
        net(X)  # built inside the scope: every weight is mirrored on both devices
    kernel, bias = net.layers[0].weights
    assert isinstance(kernel, MirroredVariable) and isinstance(kernel, tf.Variable)
    assert (kernel.device, bias.device) == (CPU0, CPU0)
    assert kernel.devices == (CPU0, CPU1)

    def forward(x):
        return net(x)

    dist = strategy.experimental_distribute_dataset([np.arange(12, dtype=np.float32).reshape(4, 3)])
    out = strategy.run(forward, args=(next(iter(dist)),))
    assert [t.device for t in out.values] == [CPU0, CPU1]
    with tf.device("/CPU:0"):  # beside the weights, also when a GPU is the default device
        whole = net(tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3)))
    np.testing.assert_allclose(strategy.gather(out, axis=0).numpy(), whole.numpy(), rtol=1e-6)


def test_seed_model_built_outside_scope_still_gets_mirrored_weights(fresh_devices):
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        cpus[0], [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
    )
    strategy = tf.distribute.MirroredStrategy(["/CPU:0", "/CPU:1"])
    with strategy.scope():
        net = tf.keras.models.Sequential([tf.keras.layers.Dense(1)])
    with tf.device("/CPU:0"):
        net(tf.ones((2, 5)))  # the seed calls the model after leaving the scope
    kernel = net.layers[0].weights[0]
    assert isinstance(kernel, MirroredVariable) and kernel.devices == (CPU0, CPU1)
