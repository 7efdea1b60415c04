"""The same checks on every kind of device: the CPU always, the first GPU when CuPy sees one.

STYLE.md: GPU tests are the CPU tests run with a device parameter. On a machine without a GPU
the GPU cases are skipped (and say so); `make gpu-check` runs this file where one exists.
"""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

pytestmark = pytest.mark.gpu

PREFIX = "/job:localhost/replica:0/task:0/device:"
RNG = np.random.default_rng(0)


def _device(kind):
    if kind == "GPU" and not tf.config.list_logical_devices("GPU"):
        pytest.skip("no GPU: CuPy is not importable or sees no CUDA device")
    return f"/{kind}:0"


DEVICES = ["CPU", "GPU"]
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((4, 2))
IMG = RNG.standard_normal((2, 5, 5, 2))
KER = RNG.standard_normal((3, 3, 2, 3))


@pytest.mark.parametrize("kind", DEVICES)
@pytest.mark.parametrize(
    "fn, inputs, reference",
    [
        (tf.matmul, [A, B], np.matmul),
        (tf.nn.relu, [A], lambda a: np.maximum(a, 0)),
        (tf.exp, [A], np.exp),
        (lambda a: tf.reduce_sum(a, axis=1), [A], lambda a: a.sum(1)),
        (lambda a: tf.nn.softmax(a), [A], lambda a: np.exp(a) / np.exp(a).sum(1, keepdims=True)),
        (
            lambda x, k: tf.nn.conv2d(x, k, 1, "VALID"),
            [IMG, KER],
            lambda x, k: np.einsum(
                "nhwijc,ijcd->nhwd",
                np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(1, 2)).transpose(
                    0, 1, 2, 4, 5, 3
                ),
                k,
            ),
        ),
    ],
    ids=["matmul", "relu", "exp", "reduce_sum", "softmax", "conv2d"],
)
def test_op_forward_gradient_dtype_and_device(kind, fn, inputs, reference):
    check_op(fn, inputs, reference, device=_device(kind), grad_rtol=1e-4, grad_atol=1e-6)


@pytest.mark.parametrize("kind", DEVICES)
def test_tensors_and_variables_report_their_device_and_copy_to_the_host(kind):
    with tf.device(_device(kind)):
        t = tf.constant([[1.0, 2.0]])
        v = tf.Variable(t * 2)
    assert t.device == v.device == PREFIX + f"{kind}:0"
    host = v.numpy()
    assert isinstance(host, np.ndarray)
    np.testing.assert_array_equal(host, [[2.0, 4.0]])


@pytest.mark.parametrize("kind", DEVICES)
def test_a_few_training_steps_match_the_cpu(kind):
    x = RNG.standard_normal((32, 6)).astype("float32")
    y = RNG.integers(0, 3, 32)

    def train(device):
        with tf.device(device):
            tf.keras.utils.set_random_seed(5)
            model = tf.keras.Sequential(
                [tf.keras.Input((6,)), tf.keras.layers.Dense(8, "relu"), tf.keras.layers.Dense(3)]
            )
            model.compile(
                optimizer=tf.keras.optimizers.Adam(0.01),
                loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            )
            history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
            assert {w.device for w in model.weights} == {PREFIX + device[1:]}
        return history.history["loss"], [w.numpy() for w in model.weights]

    device = _device(kind)
    losses, weights = train(device)
    cpu_losses, cpu_weights = train("/CPU:0")
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-4)
    for got, want in zip(weights, cpu_weights):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
