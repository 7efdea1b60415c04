"""Conv2D adds its bias inside the fused convolution op for every activation (not only relu
and linear): the same values as conv2d + bias + activation, the same gradients, one op."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.ops import conv_ops

rng = np.random.default_rng(2)


@pytest.mark.parametrize("activation", ["sigmoid", "tanh", lambda t: t * t])
@pytest.mark.parametrize("padding", ["same", "valid"])
def test_values_and_gradients_match_the_unfused_layer(activation, padding, monkeypatch):
    calls = []
    real = conv_ops.fused_conv2d
    monkeypatch.setattr(conv_ops, "fused_conv2d",
                        lambda *a, **k: calls.append(k["activation"]) or real(*a, **k))  # fmt: skip
    layer = tf.keras.layers.Conv2D(4, 3, padding=padding, activation=activation)
    x = tf.constant(rng.standard_normal((3, 7, 6, 2)).astype(np.float32))
    layer.build(x.shape)
    layer.bias.assign(rng.standard_normal(4).astype(np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
    assert calls == [None]  # the fused op, its activation applied after it
    act = tf.keras.activations.get(activation)
    with tf.GradientTape() as ref_tape:
        ref_tape.watch(x)
        ref = act(tf.nn.conv2d(x, layer.kernel, 1, padding.upper()) + layer.bias)
    np.testing.assert_array_equal(y.numpy(), ref.numpy())  # the same float32 adds
    w = tf.constant(rng.standard_normal(y.shape).astype(np.float32))  # one cotangent for both
    got = tape.gradient(y, [x, layer.kernel, layer.bias], output_gradients=w)
    want = ref_tape.gradient(ref, [x, layer.kernel, layer.bias], output_gradients=w)
    for g, e in zip(got, want):  # sums in another order: float32 rounding
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=2e-5, atol=2e-5)


def test_lenet_layers_train_as_with_the_bias_added_apart(monkeypatch):
    """The book's LeNet layers (sigmoid), compiled fit: the fused bias trains as the separate
    bias add did (its gradient summed in another order: float32 rounding)."""
    from layerflow._src.keras.layers import convolutional

    def run():
        tf.keras.utils.set_random_seed(4)
        model = tf.keras.Sequential([
            tf.keras.layers.Conv2D(6, 5, activation="sigmoid", padding="same"),
            tf.keras.layers.AvgPool2D(2, 2),
            tf.keras.layers.Conv2D(16, 5, activation="sigmoid"),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(10),
        ])  # fmt: skip
        model.compile(tf.keras.optimizers.SGD(0.1),
                      tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))  # fmt: skip
        x = np.random.default_rng(1).random((40, 28, 28, 1)).astype(np.float32)
        y = np.arange(40) % 10
        h = model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
        return h.history["loss"], [v.numpy() for v in model.weights]

    fused = run()
    monkeypatch.setattr(convolutional.Conv2D, "call", convolutional._Conv.call)
    apart = run()
    np.testing.assert_allclose(fused[0], apart[0], rtol=1e-5)
    for a, b in zip(fused[1], apart[1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
