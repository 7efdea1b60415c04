"""ConvLSTM1D/2D/3D beyond the tf_keras parity cases: the layer contract (config round trip,
gradients), states, masks, dropout while training, initial states and argument errors."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.utils.testing import run_layer_test

L = tf.keras.layers
rng = np.random.default_rng(43)


@pytest.mark.parametrize("cls,kwargs,shape,expected", [
    (L.ConvLSTM1D, {"filters": 2, "kernel_size": 2, "return_sequences": True}, (2, 3, 4, 2),
     [2, 3, 3, 2]),
    (L.ConvLSTM2D, {"filters": 2, "kernel_size": 2, "padding": "same"}, (1, 2, 3, 3, 2),
     [1, 3, 3, 2]),
    (L.ConvLSTM3D, {"filters": 1, "kernel_size": 2, "data_format": "channels_first"},
     (1, 2, 1, 3, 3, 2), [1, 1, 2, 2, 1]),
])  # fmt: skip
def test_layer_contract(cls, kwargs, shape, expected):
    run_layer_test(cls, kwargs, input_shape=shape, expected_output_shape=expected,
                   check_input_spec=kwargs.get("data_format") != "channels_first")  # fmt: skip


def test_return_state_is_the_last_step():
    x = rng.standard_normal((2, 4, 5, 5, 3)).astype("float32")
    layer = L.ConvLSTM2D(2, 3, padding="same", return_sequences=True, return_state=True)
    seq, h, c = layer(x)
    np.testing.assert_allclose(seq.numpy()[:, -1], h.numpy(), rtol=1e-6)
    assert c.shape == h.shape == (2, 5, 5, 2)
    shapes = layer.compute_output_shape((2, 4, 5, 5, 3))
    assert [tuple(s) for s in shapes] == [(2, 4, 5, 5, 2), (2, 5, 5, 2), (2, 5, 5, 2)]
    # Continuing from the returned states equals running the longer sequence.
    first = L.ConvLSTM2D(2, 3, padding="same", return_state=True)
    _, h2, c2 = first(x[:, :2])
    second = L.ConvLSTM2D(2, 3, padding="same")
    second(x[:, 2:], initial_state=[h2, c2])
    second.set_weights(first.get_weights())
    np.testing.assert_allclose(second(x[:, 2:], initial_state=[h2, c2]).numpy(),
                               first(x)[0].numpy(), rtol=1e-5, atol=1e-6)  # fmt: skip


def test_masked_steps_keep_the_state():
    x = rng.standard_normal((2, 4, 3, 3, 1)).astype("float32")
    layer = L.ConvLSTM2D(2, 2)
    mask = np.array([[True, True, False, False], [True, True, True, True]])
    y = layer(x, mask=tf.constant(mask)).numpy()
    np.testing.assert_allclose(y[0], layer(x[:1, :2]).numpy()[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y[1], layer(x[1:]).numpy()[0], rtol=1e-5, atol=1e-6)


def test_dropout_only_while_training():
    x = rng.standard_normal((2, 3, 4, 4, 2)).astype("float32")
    layer = L.ConvLSTM2D(2, 2, dropout=0.5, recurrent_dropout=0.5)
    a, b = layer(x).numpy(), layer(x).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(layer(x, training=True).numpy(), a)


def test_unit_forget_bias_and_errors():
    layer = L.ConvLSTM1D(3, 2)
    layer(np.zeros((1, 2, 4, 1), "float32"))
    np.testing.assert_array_equal(layer.get_weights()[2], [0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    assert [tuple(w.shape) for w in layer.weights] == [(2, 1, 12), (2, 3, 12), (12,)]
    assert layer.filters == 3 and layer.kernel_size == (2,)
    with pytest.raises(ValueError, match="stateful=True is not supported"):
        L.ConvLSTM2D(2, 2, stateful=True)
    with pytest.raises(ValueError, match="initial_state must be"):
        layer(np.zeros((1, 2, 4, 1), "float32"), initial_state=[tf.zeros((1, 3, 3))])
