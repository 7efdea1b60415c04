"""CNN layers through the shared layer contract (shapes, config, float64 gradients) plus
NumPy references for what each computes."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.utils.testing import run_layer_test

L = tf.keras.layers
RNG = np.random.default_rng(0)


@pytest.mark.parametrize(
    ("cls", "kwargs", "in_shape", "out_shape", "n_weights"),
    [
        (L.Conv2D, {"filters": 3, "kernel_size": 3}, (2, 6, 5, 2), (2, 4, 3, 3), 2),
        (L.Conv2D, {"filters": 2, "kernel_size": 3, "padding": "same", "strides": 2,
                    "activation": "sigmoid"}, (2, 5, 5, 1), (2, 3, 3, 2), 2),
        (L.Conv2D, {"filters": 2, "kernel_size": (2, 3), "use_bias": False}, (1, 4, 4, 2),
         (1, 3, 2, 2), 1),
        (L.Conv1D, {"filters": 4, "kernel_size": 3}, (2, 7, 3), (2, 5, 4), 2),
        (L.Conv1D, {"filters": 2, "kernel_size": 3, "padding": "causal"}, (2, 6, 1), (2, 6, 2), 2),
        (L.DepthwiseConv2D, {"kernel_size": 3, "depth_multiplier": 2}, (1, 5, 5, 3),
         (1, 3, 3, 6), 2),
        (L.ZeroPadding2D, {"padding": ((1, 0), (2, 1))}, (1, 3, 3, 2), (1, 4, 6, 2), 0),
        (L.MaxPool2D, {"pool_size": 2}, (2, 4, 5, 3), (2, 2, 2, 3), 0),
        (L.AvgPool2D, {"pool_size": 2, "strides": 2}, (1, 5, 5, 2), (1, 2, 2, 2), 0),
        (L.AveragePooling2D, {"pool_size": 3, "strides": 2, "padding": "same"}, (1, 5, 5, 1),
         (1, 3, 3, 1), 0),
        (L.GlobalAveragePooling2D, {}, (2, 3, 4, 5), (2, 5), 0),
        (L.GlobalMaxPooling2D, {"keepdims": True}, (2, 3, 4, 5), (2, 1, 1, 5), 0),
    ],
)  # fmt: skip
def test_layer_contract(cls, kwargs, in_shape, out_shape, n_weights):
    run_layer_test(cls, kwargs, input_shape=in_shape, expected_output_shape=out_shape,
                   expected_num_weights=n_weights)  # fmt: skip


def _conv_ref(x, w, stride=1):
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride : i * stride + kh, j * stride : j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return out


def test_conv2d_computes_a_correlation_plus_bias():
    x = RNG.standard_normal((2, 6, 6, 2)).astype(np.float32)
    layer = L.Conv2D(3, 3, strides=2, bias_initializer="ones")
    y = layer(x).numpy()
    ref = _conv_ref(x, layer.kernel.numpy(), stride=2) + 1.0
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    assert [w.name for w in layer.weights] == [f"{layer.name}/kernel:0", f"{layer.name}/bias:0"]


def test_pooling_values():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    np.testing.assert_array_equal(L.MaxPool2D(2)(x).numpy()[0, :, :, 0], [[5, 7], [13, 15]])
    np.testing.assert_array_equal(L.AvgPool2D(2)(x).numpy()[0, :, :, 0], [[2.5, 4.5], [10.5, 12.5]])
    np.testing.assert_allclose(L.GlobalAveragePooling2D()(x).numpy(), [[7.5]])


def test_batch_norm_training_and_inference():
    x = RNG.standard_normal((32, 4)).astype(np.float32) * 3 + 2
    bn = L.BatchNormalization(momentum=0.9)
    y = bn(x, training=True).numpy()
    ref = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.1 * x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.9 + 0.1 * x.var(0), rtol=1e-5)
    assert [w.trainable for w in bn.weights] == [True, True, False, False]
    # inference (the default) uses the moving statistics and leaves them alone
    y_inf = bn(x).numpy()
    mm, mv = bn.moving_mean.numpy(), bn.moving_variance.numpy()
    np.testing.assert_allclose(y_inf, (x - mm) / np.sqrt(mv + 1e-3), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), mm)
    # a frozen layer runs in inference mode even with training=True (Keras 2)
    bn.trainable = False
    np.testing.assert_allclose(bn(x, training=True).numpy(), y_inf, rtol=1e-6)


def test_batch_norm_images_and_contract():
    run_layer_test(L.BatchNormalization, {}, input_shape=(4, 3, 3, 2), expected_num_weights=4,
                   training=True)  # fmt: skip
    # axis=1: the harness's wrong-size probe grows the last axis, which BN does not constrain.
    run_layer_test(L.BatchNormalization, {"axis": 1}, input_shape=(4, 3, 2),
                   expected_num_weights=4, check_input_spec=False)  # fmt: skip


def test_fit_updates_batch_norm_moving_statistics():
    x = RNG.standard_normal((64, 3)).astype(np.float32) + 5.0
    y = RNG.integers(0, 2, 64)
    m = tf.keras.Sequential([L.BatchNormalization(), L.Dense(2)])
    m.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    m.fit(x, y, batch_size=64, epochs=3, verbose=0)
    bn = m.layers[0]
    assert np.all(bn.moving_mean.numpy() > 0.1)  # moved from 0 towards the batch mean of ~5
    assert len(m.trainable_weights) == 4 and len(m.non_trainable_weights) == 2


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="filters"):
        L.Conv2D(0, 3)
    with pytest.raises(ValueError, match="kernel_size"):
        L.Conv2D(2, (3, 0))
    with pytest.raises(ValueError, match="padding"):
        L.Conv2D(2, 3, padding="full")
    with pytest.raises(ValueError, match="pool_size"):
        L.MaxPool2D(pool_size=-1)
