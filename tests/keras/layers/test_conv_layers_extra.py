"""The transposed, 3-D, separable, depthwise-1D and locally-connected convolutions and the 3-D
pooling layers through run_layer_test (config round trip, gradients, InputSpec), plus their
aliases, serialization, summary, argument errors and the equivalence of LocallyConnected's three
implementations."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.utils.testing import run_layer_test

L = tf.keras.layers
rng = np.random.default_rng(2)

CASES = [
    (L.Conv1DTranspose, {"filters": 2, "kernel_size": 3, "strides": 2}, (2, 4, 3), [2, 9, 2]),
    (L.Conv1DTranspose, {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same",
                         "output_padding": 1, "data_format": "channels_first"}, (2, 3, 4),
     [2, 2, 8]),
    (L.Conv2DTranspose, {"filters": 2, "kernel_size": (2, 3), "strides": (2, 1),
                         "padding": "same", "activation": "tanh"}, (1, 3, 4, 2), [1, 6, 4, 2]),
    (L.Conv2DTranspose, {"filters": 3, "kernel_size": 3, "strides": 2,
                         "data_format": "channels_first", "kernel_regularizer": "l2"},
     (1, 2, 3, 3), [1, 3, 7, 7]),
    (L.Conv3D, {"filters": 2, "kernel_size": 2, "padding": "same", "strides": 2}, (1, 3, 4, 4, 2),
     [1, 2, 2, 2, 2]),
    (L.Conv3D, {"filters": 2, "kernel_size": (1, 2, 2), "data_format": "channels_first",
                "groups": 2}, (1, 4, 2, 3, 3), [1, 2, 2, 2, 2]),
    (L.Conv3DTranspose, {"filters": 2, "kernel_size": 2, "strides": (1, 2, 2),
                         "output_padding": (0, 1, 1)}, (1, 2, 2, 2, 2), [1, 3, 5, 5, 2]),
    (L.Conv3DTranspose, {"filters": 1, "kernel_size": 2, "padding": "same",
                         "data_format": "channels_first"}, (1, 2, 2, 3, 2), [1, 1, 2, 3, 2]),
    (L.SeparableConv1D, {"filters": 3, "kernel_size": 2, "depth_multiplier": 2,
                         "padding": "causal"}, (2, 5, 2), [2, 5, 3]),
    (L.SeparableConv1D, {"filters": 2, "kernel_size": 3, "data_format": "channels_first"},
     (2, 3, 6), [2, 2, 4]),
    (L.SeparableConv2D, {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same",
                         "depthwise_regularizer": "l1"}, (1, 5, 5, 3), [1, 3, 3, 2]),
    (L.SeparableConv2D, {"filters": 2, "kernel_size": 2, "data_format": "channels_first",
                         "use_bias": False}, (1, 2, 4, 4), [1, 2, 3, 3]),
    (L.DepthwiseConv1D, {"kernel_size": 3, "depth_multiplier": 2}, (2, 6, 3), [2, 4, 6]),
    (L.DepthwiseConv1D, {"kernel_size": 2, "data_format": "channels_first", "strides": 2},
     (2, 3, 6), [2, 3, 3]),
    (L.MaxPooling3D, {"pool_size": 2, "padding": "same"}, (1, 3, 4, 5, 2), [1, 2, 2, 3, 2]),
    (L.AveragePooling3D, {"pool_size": (1, 2, 2), "data_format": "channels_first"},
     (1, 2, 3, 4, 4), [1, 2, 3, 2, 2]),
    (L.GlobalMaxPooling3D, {}, (2, 2, 3, 2, 4), [2, 4]),
    (L.GlobalAveragePooling3D, {"keepdims": True}, (2, 2, 3, 2, 4), [2, 1, 1, 1, 4]),
    (L.LocallyConnected1D, {"filters": 2, "kernel_size": 2, "implementation": 1}, (2, 4, 3),
     [2, 3, 2]),
    (L.LocallyConnected1D, {"filters": 2, "kernel_size": 2, "implementation": 3,
                            "data_format": "channels_first"}, (2, 3, 5), [2, 2, 4]),
    (L.LocallyConnected2D, {"filters": 2, "kernel_size": 2, "implementation": 2}, (2, 3, 3, 2),
     [2, 2, 2, 2]),
]  # fmt: skip


@pytest.mark.parametrize("cls,kwargs,shape,expected", CASES,
                         ids=[f"{c.__name__}-{i}" for i, (c, *_) in enumerate(CASES)])  # fmt: skip
def test_layer_contract(cls, kwargs, shape, expected):
    # The harness widens the last axis, a spatial one for channels_first (legitimately accepted).
    run_layer_test(cls, kwargs, input_shape=shape, expected_output_shape=expected,
                   check_input_spec=kwargs.get("data_format") != "channels_first")  # fmt: skip


def test_aliases_are_the_keras_classes():
    pairs = {"Convolution1D": "Conv1D", "Convolution2D": "Conv2D", "Convolution3D": "Conv3D",
             "Convolution1DTranspose": "Conv1DTranspose",
             "Convolution2DTranspose": "Conv2DTranspose",
             "Convolution3DTranspose": "Conv3DTranspose",
             "SeparableConvolution1D": "SeparableConv1D",
             "SeparableConvolution2D": "SeparableConv2D", "MaxPool3D": "MaxPooling3D",
             "AvgPool3D": "AveragePooling3D", "GlobalMaxPool3D": "GlobalMaxPooling3D",
             "GlobalAvgPool3D": "GlobalAveragePooling3D"}  # fmt: skip
    for alias, name in pairs.items():
        assert getattr(L, alias) is getattr(L, name)


def test_serialize_deserialize_and_tf_keras_style_configs():
    layer = L.SeparableConv2D(4, 3, depth_multiplier=2, pointwise_initializer="ones")
    again = L.deserialize(L.serialize(layer))
    assert type(again) is L.SeparableConv2D and again.depth_multiplier == 2
    assert type(again.pointwise_initializer).__name__ == "Ones"
    # tf_keras's SeparableConv config carries kernel_* and groups too: accepted.
    cfg = dict(layer.get_config(), kernel_initializer="zeros", groups=1)
    L.SeparableConv2D.from_config(cfg)
    t = L.deserialize(
        {
            "class_name": "Conv3DTranspose",
            "config": {"filters": 2, "kernel_size": 2, "output_padding": None},
        }
    )
    assert t(np.zeros((1, 2, 2, 2, 1), "float32")).shape == (1, 3, 3, 3, 2)
    lc = L.deserialize(L.serialize(L.LocallyConnected2D(2, 2, implementation=3)))
    assert lc.implementation == 3


def test_summary_lists_the_new_layers():
    model = tf.keras.Sequential([
        L.Conv3D(2, 2, input_shape=(4, 4, 4, 1)), L.MaxPooling3D(), L.Conv3DTranspose(1, 2),
        L.GlobalAveragePooling3D(),
    ])  # fmt: skip
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    for name in ("conv3d", "max_pooling3d", "conv3d_transpose", "global_average_pooling3d"):
        assert name in text
    assert "(None, 3, 3, 3, 2)" in text and "(None, 1, 1, 1, 2)" in text


def test_conv2d_transpose_matches_the_input_gradient_of_conv2d():
    """Conv2DTranspose with kernel k is the input gradient of conv2d with the same kernel."""
    layer = L.Conv2DTranspose(3, 3, strides=2, padding="same", use_bias=False)
    y = rng.standard_normal((1, 3, 3, 2)).astype("float32")
    out = layer(y)
    x = tf.Variable(tf.zeros((1, 6, 6, 3)))
    with tf.GradientTape() as tape:
        z = tf.reduce_sum(tf.nn.conv2d(x, layer.kernel, 2, "SAME") * y)
    np.testing.assert_allclose(out.numpy(), tape.gradient(z, x).numpy(), rtol=1e-5, atol=1e-6)


def test_argument_errors():
    with pytest.raises(ValueError, match="output_padding.*smaller than its stride"):
        L.Conv2DTranspose(2, 3, strides=2, output_padding=2)
    with pytest.raises(ValueError, match="groups"):
        L.Conv2DTranspose(2, 3, groups=2)
    with pytest.raises(ValueError, match="causal"):
        L.Conv2DTranspose(2, 3, padding="causal")
    with pytest.raises(ValueError, match="causal padding is only supported"):
        L.DepthwiseConv1D(3, padding="causal")
    with pytest.raises(ValueError, match="only padding='valid'"):
        L.LocallyConnected2D(2, 3, padding="same")
    with pytest.raises(ValueError, match="implementation must be 1, 2 or 3"):
        L.LocallyConnected1D(2, 3, implementation=4)
    with pytest.raises(ValueError, match="output would be empty"):
        L.LocallyConnected1D(2, 5)(np.zeros((1, 3, 2), "float32"))
    with pytest.raises(ValueError, match="depth_multiplier"):
        L.SeparableConv1D(2, 3, depth_multiplier=0)


def _dense_from_impl1(k1, in_sp, out_sp, ks, st, c, f):
    """Implementation 1's kernel as implementation 2's (channels last)."""
    k2 = np.zeros((*in_sp, c, *out_sp, f), k1.dtype)
    for p, pos in enumerate(np.ndindex(*out_sp)):
        patch = k1[p].reshape(*ks, c, f)
        for tap in np.ndindex(*ks):
            src = tuple(q * s + t for q, s, t in zip(pos, st, tap))
            k2[(*src, slice(None), *pos, slice(None))] = patch[tap]
    return k2


@pytest.mark.parametrize("rank", [1, 2])
def test_locally_connected_implementations_agree(rank):
    cls = L.LocallyConnected1D if rank == 1 else L.LocallyConnected2D
    shape, ks, st = ((2, 7, 3), (3,), (2,)) if rank == 1 else ((2, 4, 6, 3), (2, 3), (1, 2))
    x = rng.standard_normal(shape).astype("float32")
    l1, l2, l3 = (cls(2, ks, strides=st, implementation=i) for i in (1, 2, 3))
    for layer in (l1, l2, l3):
        layer(x)
    k1, b = l1.get_weights()
    in_sp, out_sp = shape[1:-1], l1.output_spatial
    k2 = _dense_from_impl1(k1, in_sp, out_sp, ks, st, 3, 2)
    l2.set_weights([k2, b])
    # Implementation 3 stores the connected entries in sorted (output, input) flat order.
    dense = k2.reshape(int(np.prod(in_sp)) * 3, -1)
    ii, oo = np.nonzero(np.broadcast_to(l2._mask, k2.shape).reshape(dense.shape))
    idx = sorted(zip(oo, ii))
    l3.set_weights([np.array([dense[i, o] for o, i in idx], "float32"), b])
    y1 = l1(x).numpy()
    np.testing.assert_allclose(l2(x).numpy(), y1, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(l3(x).numpy(), y1, rtol=1e-5, atol=1e-5)


def test_weights_file_round_trip(tmp_path):
    def make():
        return tf.keras.Sequential([
            L.SeparableConv2D(3, 2, input_shape=(6, 6, 2)), L.Conv2DTranspose(2, 2, strides=2),
            L.LocallyConnected2D(2, 3, implementation=3), L.Flatten(), L.Dense(1),
        ])  # fmt: skip

    x = rng.standard_normal((2, 6, 6, 2)).astype("float32")
    a, b = make(), make()
    path = str(tmp_path / "conv.weights.h5")
    a.save_weights(path)
    b.load_weights(path)
    np.testing.assert_allclose(b(x).numpy(), a(x).numpy(), rtol=1e-6)
