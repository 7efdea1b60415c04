"""tf.nn.RNNCellDropoutWrapper / RNNCellResidualWrapper / RNNCellDeviceWrapper: Keras 2's cell
wrappers, run one step directly and over sequences by tf.keras.layers.RNN."""

import numpy as np
import pytest

import layerflow as tf

L = tf.keras.layers
rng = np.random.default_rng(41)


class Echo(L.AbstractRNNCell):
    """Outputs its inputs; its state is its inputs too (to see what the wrapper did)."""

    state_size = 3
    output_size = 3

    def call(self, inputs, states):
        return inputs, [inputs]


def test_dropout_wrapper_drops_and_scales_inputs_outputs_and_states():
    x = tf.constant(rng.random((50, 3)).astype("float32") + 1.0)
    state = [tf.zeros((50, 3))]
    out, _ = tf.nn.RNNCellDropoutWrapper(Echo(), input_keep_prob=0.5, seed=3)(x, state)
    o = out.numpy()
    kept = o != 0
    np.testing.assert_allclose(o[kept], x.numpy()[kept] * 2, rtol=1e-6)
    assert 0.3 < kept.mean() < 0.7
    out, new = tf.nn.RNNCellDropoutWrapper(Echo(), state_keep_prob=0.25, seed=3)(x, state)
    np.testing.assert_array_equal(out.numpy(), x.numpy())  # only the state is dropped
    s = new[0].numpy()
    np.testing.assert_allclose(s[s != 0], x.numpy()[s != 0] * 4, rtol=1e-6)
    w = tf.nn.RNNCellDropoutWrapper(Echo(), output_keep_prob=0.5, seed=3,
                                    dropout_state_filter_visitor=lambda s: False)  # fmt: skip
    out, new = w(x, state)
    assert (out.numpy() == 0).any()


def test_dropout_wrapper_seeded_masks_repeat_after_set_seed():
    x, state = tf.ones((20, 3)), [tf.zeros((20, 3))]
    tf.random.set_seed(5)
    a = tf.nn.RNNCellDropoutWrapper(Echo(), output_keep_prob=0.5, seed=7)(x, state)[0].numpy()
    tf.random.set_seed(5)
    b = tf.nn.RNNCellDropoutWrapper(Echo(), output_keep_prob=0.5, seed=7)(x, state)[0].numpy()
    np.testing.assert_array_equal(a, b)


def test_variational_dropout_uses_one_mask_for_every_step_and_row():
    cell = tf.nn.RNNCellDropoutWrapper(Echo(), output_keep_prob=0.5, variational_recurrent=True,
                                       dtype=tf.float32, seed=2)  # fmt: skip
    ys = tf.keras.layers.RNN(cell, return_sequences=True)(tf.ones((4, 6, 3))).numpy()
    assert set(np.unique(ys).tolist()) <= {0.0, 2.0}
    np.testing.assert_array_equal(ys, np.broadcast_to(ys[:1, :1], ys.shape))
    with pytest.raises(ValueError, match="dtype must be provided"):
        tf.nn.RNNCellDropoutWrapper(Echo(), variational_recurrent=True)
    with pytest.raises(ValueError, match="input_size must be provided"):
        tf.nn.RNNCellDropoutWrapper(Echo(), input_keep_prob=0.5, variational_recurrent=True,
                                    dtype=tf.float32)  # fmt: skip
    with pytest.raises(ValueError, match="between 0 and 1"):
        tf.nn.RNNCellDropoutWrapper(Echo(), output_keep_prob=0.0)


def test_residual_wrapper_adds_the_inputs():
    inner = L.SimpleRNNCell(3)
    wrapped = tf.nn.RNNCellResidualWrapper(inner)
    x, h = tf.constant(rng.standard_normal((2, 3)), "float32"), [tf.zeros((2, 3))]
    out, new = wrapped(x, h)
    base, _ = inner(x, h)
    np.testing.assert_allclose(out.numpy(), x.numpy() + base.numpy(), rtol=1e-6)
    custom = tf.nn.RNNCellResidualWrapper(inner, residual_fn=lambda i, o: i * o)
    np.testing.assert_allclose(custom(x, h)[0].numpy(), x.numpy() * base.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="same shape"):
        tf.nn.RNNCellResidualWrapper(L.SimpleRNNCell(4))(x, [tf.zeros((2, 4))])
    # Trains through RNN: the wrapped cell's weights get gradients.
    rnn = L.RNN(wrapped)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(rnn(tf.ones((2, 4, 3))) ** 2)
    grads = tape.gradient(loss, rnn.trainable_weights)
    assert len(grads) == 3 and all(g is not None for g in grads)


def test_device_wrapper_and_configs():
    dev = tf.nn.RNNCellDeviceWrapper(L.GRUCell(3), "/CPU:0")
    y = L.RNN(dev)(tf.ones((2, 4, 3)))
    assert y.device.endswith("CPU:0") and len(dev.weights) == 3
    for wrapper in (
        dev,
        tf.nn.RNNCellResidualWrapper(L.SimpleRNNCell(2)),
        tf.nn.RNNCellDropoutWrapper(L.LSTMCell(2), output_keep_prob=0.7, seed=4),
    ):
        config = wrapper.get_config()
        clone = type(wrapper).from_config(config)
        assert type(clone.cell) is type(wrapper.cell) and clone.get_config() == config
    with pytest.raises(NotImplementedError, match="residual_fn"):
        tf.nn.RNNCellResidualWrapper(L.SimpleRNNCell(2), residual_fn=lambda i, o: o).get_config()
    with pytest.raises(TypeError, match="RNN cell"):
        tf.nn.RNNCellDeviceWrapper(3, "/CPU:0")
