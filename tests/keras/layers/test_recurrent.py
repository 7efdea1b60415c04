"""Recurrent layers: SimpleRNN, LSTM, GRU, their cells, RNN with custom cells, StackedRNNCells.

The fused whole-sequence path (built-in cells) is checked against the per-step composition
(`RNN` over a subclass of the same cell, which composes ordinary ops on the tape), values and
gradients; both against numbers from tf_keras 2.21; every layer through `run_layer_test`.
"""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.framework import errors
from layerflow._src.keras.utils.testing import check_gradients, run_layer_test

L = tf.keras.layers
RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 5, 4)).astype(np.float32)


class PerStepLSTM(L.LSTMCell):
    def call(self, inputs, states, training=None):
        return super().call(inputs, states, training=training)


class PerStepGRU(L.GRUCell):
    def call(self, inputs, states, training=None):
        return super().call(inputs, states, training=training)


class PerStepSimple(L.SimpleRNNCell):
    def call(self, inputs, states, training=None):
        return super().call(inputs, states, training=training)


PER_STEP = {"LSTM": PerStepLSTM, "GRU": PerStepGRU, "SimpleRNN": PerStepSimple}


def _pair(kind, cell_kwargs=None, **layer_kwargs):
    """A fused layer and a per-step RNN with the same weights."""
    cell_kwargs = cell_kwargs or {}
    fused = getattr(L, kind)(3, **cell_kwargs, **layer_kwargs)
    slow = L.RNN(PER_STEP[kind](3, **cell_kwargs), **layer_kwargs)
    x = X.transpose(1, 0, 2) if layer_kwargs.get("time_major") else X
    fused(x)
    slow(x)
    slow.set_weights([w + 0.1 * RNG.standard_normal(w.shape) for w in fused.get_weights()])
    fused.set_weights(slow.get_weights())
    assert fused.cell._fusable() and not slow.cell._fusable()
    return fused, slow, x


# --- Keras's numbers --------------------------------------------------------------------------
# tf_keras 2.21, return_sequences=True, x = cos(arange(12)).reshape(2, 3, 2) and weight k
# (kernel, recurrent_kernel, bias in order) = 0.5 * sin(arange(size) * 0.7 + k) reshaped
# (scratch script run against /work/peers while this file was written).
KERAS = {
    "lstm": [[[-0.02038, -0.100519], [-0.288484, -0.181421], [-0.230959, -0.056558]],
             [[-0.002971, -0.087988], [-0.253436, -0.193177], [-0.268072, -0.066528]]],
    "gru": [[[-0.007476, -0.120732], [-0.198375, -0.288118], [-0.294233, -0.223696]],
            [[0.020592, -0.089212], [-0.169661, -0.261232], [-0.306059, -0.257366]]],
    "gru_v1": [[[-0.067667, -0.110551], [-0.254544, -0.30545], [-0.350773, -0.18483]],
               [[-0.041871, -0.068178], [-0.230842, -0.273506], [-0.362051, -0.228729]]],
    "simple": [[[0.617447, 0.646345], [0.417721, -0.028045], [0.641486, 0.320417]],
               [[0.678385, 0.69021], [0.480965, 0.123654], [0.60497, 0.184248]]],
}  # fmt: skip


def _keras_weights(layer):
    out = []
    for k, w in enumerate(layer.weights):
        n = int(np.prod(w.shape))
        out.append((0.5 * np.sin(np.arange(n) * 0.7 + k)).reshape(tuple(w.shape)))
    return out


@pytest.mark.parametrize("kind", list(KERAS))
@pytest.mark.parametrize("per_step", [False, True])
def test_outputs_match_tf_keras(kind, per_step):
    x = np.cos(np.arange(12)).reshape(2, 3, 2).astype(np.float32)
    cls, kwargs = {
        "lstm": ("LSTM", {}),
        "gru": ("GRU", {}),
        "gru_v1": ("GRU", {"reset_after": False}),
        "simple": ("SimpleRNN", {}),
    }[kind]
    if per_step:
        layer = L.RNN(PER_STEP[cls](2, **kwargs), return_sequences=True)
    else:
        layer = getattr(L, cls)(2, return_sequences=True, **kwargs)
    layer(x)
    layer.set_weights(_keras_weights(layer))
    np.testing.assert_allclose(layer(x).numpy(), KERAS[kind], atol=2e-6)


def test_weight_layout_and_names_follow_keras():
    lstm, gru, gru1, rnn = L.LSTM(3), L.GRU(3), L.GRU(3, reset_after=False), L.SimpleRNN(3)
    for layer in (lstm, gru, gru1, rnn):
        layer(X)
    assert [tuple(w.shape) for w in lstm.weights] == [(4, 12), (3, 12), (12,)]
    assert [tuple(w.shape) for w in gru.weights] == [(4, 9), (3, 9), (2, 9)]
    assert [tuple(w.shape) for w in gru1.weights] == [(4, 9), (3, 9), (9,)]
    assert [tuple(w.shape) for w in rnn.weights] == [(4, 3), (3, 3), (3,)]
    assert [w.name.split("/")[-1] for w in lstm.weights] == [
        "kernel:0", "recurrent_kernel:0", "bias:0"]  # fmt: skip
    # unit_forget_bias: the forget gate's block (i, f, c, o) starts at one.
    np.testing.assert_array_equal(lstm.weights[2].numpy(), [0] * 3 + [1] * 3 + [0] * 6)
    assert not np.any(L.LSTM(3, unit_forget_bias=False)(X) is None)


# --- fused == per-step composition --------------------------------------------------------------
FLAGS = [
    {},
    {"return_sequences": True},
    {"go_backwards": True, "return_sequences": True},
    {"time_major": True, "return_sequences": True, "return_state": True},
    {"go_backwards": True, "return_state": True},
]


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "SimpleRNN"])
@pytest.mark.parametrize("flags", FLAGS)
def test_fused_equals_the_per_step_composition_values_and_gradients(kind, flags):
    fused, slow, x = _pair(kind, **flags)
    xt = tf.constant(x)
    results = []
    for layer in (fused, slow):
        with tf.GradientTape() as tape:
            tape.watch(xt)
            out = layer(xt)
            outs = out if isinstance(out, list) else [out]
            loss = sum(tf.reduce_sum(o * o) for o in outs)
        grads = tape.gradient(loss, [xt] + layer.trainable_weights)
        results.append(([o.numpy() for o in outs], [g.numpy() for g in grads]))
    (o1, g1), (o2, g2) = results
    for a, b in zip(o1 + g1, o2 + g2):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("cell_kwargs", [{"dropout": 0.3}, {"recurrent_dropout": 0.4},
                                         {"dropout": 0.2, "recurrent_dropout": 0.2},
                                         {"dropout": 0.3, "implementation": 1}])  # fmt: skip
def test_dropout_draws_the_same_masks_on_both_paths(kind, cell_kwargs):
    fused, slow, x = _pair(kind, cell_kwargs, return_sequences=True)
    outs = []
    for layer in (fused, slow):
        tf.random.set_seed(7)
        outs.append(layer(x, training=True).numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6)
    # Training changes the output; inference is deterministic and mask-free.
    assert not np.allclose(outs[0], fused(x).numpy())
    np.testing.assert_array_equal(fused(x).numpy(), fused(x, training=False).numpy())


def test_recurrent_dropout_switches_to_the_per_gate_form():
    assert L.LSTMCell(2, recurrent_dropout=0.1).implementation == 1
    assert L.LSTM(2).implementation == 2
    assert L.GRU(2, implementation=0).implementation == 1


# --- masking ------------------------------------------------------------------------------------
MASK = np.array([[1, 1, 1, 0, 0], [0, 1, 1, 1, 1], [1, 0, 1, 0, 1]], dtype=bool)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "SimpleRNN"])
@pytest.mark.parametrize("zero", [False, True])
def test_masked_steps_carry_the_state_and_repeat_the_output(kind, zero):
    kw = {"return_sequences": True, "return_state": True, "zero_output_for_mask": zero}
    fused, slow, x = _pair(kind, **kw)
    y, *states = fused(x, mask=tf.constant(MASK))
    y2, *states2 = slow(x, mask=tf.constant(MASK))
    np.testing.assert_allclose(y.numpy(), y2.numpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(states, states2):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    y = y.numpy()
    # Row 0: steps 3, 4 masked; row 1: step 0 masked (no previous output: zeros).
    want = np.zeros_like(y[0, 2]) if zero else y[0, 2]
    np.testing.assert_array_equal(y[0, 3], want)
    np.testing.assert_array_equal(y[1, 0], 0.0)
    # The final state is the last unmasked step's, as if the padding were absent.
    np.testing.assert_allclose(states[0].numpy()[0], y2.numpy()[0, 2], rtol=1e-5, atol=1e-6)
    short = getattr(L, kind)(3, return_state=True)
    short(x[:1, :3])
    short.set_weights(fused.get_weights())
    np.testing.assert_allclose(short(x[:1, :3])[1].numpy()[0], states[0].numpy()[0], rtol=1e-5)


def test_compute_mask_passes_the_mask_on_with_sequences_only():
    m = tf.constant(MASK)
    assert L.LSTM(2, return_sequences=True).compute_mask(X, m) is m
    assert L.LSTM(2).compute_mask(X, m) is None
    assert L.GRU(2, return_sequences=True, return_state=True).compute_mask(X, m) == [m, None]


# --- states -------------------------------------------------------------------------------------
def test_initial_state_positional_as_d2l_writes_it():
    cell = L.LSTMCell(3)
    rnn = L.RNN(cell, time_major=True, return_sequences=True, return_state=True)
    state = rnn.cell.get_initial_state(batch_size=3, dtype=tf.float32)
    y, *state = rnn(X.transpose(1, 0, 2), state)
    assert y.shape == (5, 3, 3) and len(state) == 2
    y2, *_ = rnn(X.transpose(1, 0, 2), state)  # continues from the returned state
    y3, *_ = rnn(X.transpose(1, 0, 2))
    assert not np.allclose(y2.numpy(), y3.numpy())
    simple = L.SimpleRNNCell(3).get_initial_state(batch_size=2, dtype=tf.float32)
    assert tuple(simple.shape) == (2, 3)


def test_initial_state_errors_name_the_layer_and_the_expected_shape():
    lstm = L.LSTM(3, name="enc")
    with pytest.raises(ValueError, match="'enc': the cell has 2 state"):
        lstm(X, initial_state=[tf.zeros((3, 3))])
    with pytest.raises(ValueError, match=r"initial state 1 must have shape \(3, 3\)"):
        lstm(X, initial_state=[tf.zeros((3, 3)), tf.zeros((2, 3))])


def test_stateful_carries_state_across_calls_and_reset_states_clears_it():
    layer = L.GRU(3, stateful=True, return_sequences=True)
    whole = L.GRU(3, return_sequences=True)
    whole(X)
    first = layer(X[:, :2])
    layer.set_weights(whole.get_weights())
    layer.reset_states()
    a = layer(X[:, :2]).numpy()
    b = layer(X[:, 2:]).numpy()
    np.testing.assert_allclose(np.concatenate([a, b], 1), whole(X).numpy(), rtol=1e-5, atol=1e-6)
    assert first.shape == (3, 2, 3)
    assert len(layer.weights) == 3  # the states are not weights, as in Keras
    layer.reset_states()
    np.testing.assert_allclose(layer(X[:, :2]).numpy(), a, rtol=1e-6)
    layer.reset_states(np.ones((3, 3), np.float32))
    np.testing.assert_array_equal(layer.states[0].numpy(), 1.0)
    with pytest.raises(ValueError, match="batch size 3"):
        layer(X[:2])
    with pytest.raises(ValueError, match=r"must have shape \(3, 3\)"):
        layer.reset_states(np.ones((2, 3)))
    with pytest.raises(AttributeError, match="must be stateful"):
        L.GRU(3).reset_states()


def test_stateful_needs_a_known_batch_size_symbolically():
    with pytest.raises(ValueError, match="needs to know its batch size"):
        L.LSTM(2, stateful=True)(tf.keras.Input((4, 3)))
    layer = L.LSTM(2, stateful=True)
    out = layer(tf.keras.Input((4, 3), batch_size=5))
    assert out.shape == (5, 2)


def test_return_state_structure_for_stacked_cells():
    cells = [L.LSTMCell(3), L.GRUCell(2)]
    rnn = L.RNN(L.StackedRNNCells(cells), return_state=True)
    out, lstm_state, gru_state = rnn(X)
    assert out.shape == (3, 2) and len(lstm_state) == 2 and gru_state.shape == (3, 2)
    np.testing.assert_array_equal(out.numpy(), gru_state.numpy())
    assert rnn.compute_output_shape((None, 5, 4))[0] == tf.TensorShape([None, 2])


@pytest.mark.parametrize("flags", [{}, {"go_backwards": True, "return_sequences": True}])
def test_stacked_fused_equals_stacked_per_step(flags):
    fused = L.RNN([L.LSTMCell(3), L.GRUCell(2), L.SimpleRNNCell(2)], **flags)
    slow = L.RNN([PerStepLSTM(3), PerStepGRU(2), PerStepSimple(2)], **flags)
    fused(X)
    slow(X)
    slow.set_weights(fused.get_weights())
    for mask in (None, tf.constant(MASK)):
        np.testing.assert_allclose(fused(X, mask=mask).numpy(), slow(X, mask=mask).numpy(),
                                   rtol=1e-5, atol=1e-6)  # fmt: skip


# --- custom cells (Keras 2's cell contract) ----------------------------------------------------
class MinimalRNNCell(L.Layer):
    """The custom cell of Keras's RNN docstring."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", (input_shape[-1], self.units))
        self.recurrent_kernel = self.add_weight("recurrent_kernel", (self.units, self.units))

    def call(self, inputs, states):
        prev = states[0]
        output = tf.matmul(inputs, self.kernel) + tf.matmul(prev, self.recurrent_kernel)
        return output, [output]

    def get_config(self):
        return {**super().get_config(), "units": self.units}


class ConstantsCell(MinimalRNNCell):
    def call(self, inputs, states, constants):
        out, new = super().call(inputs, states)
        return out + constants[0], [new[0] + constants[0]]


def test_custom_cell_runs_step_by_step_with_a_numpy_reference():
    cell = MinimalRNNCell(2)
    rnn = L.RNN(cell, return_sequences=True)
    y = rnn(X).numpy()
    k, u = cell.kernel.numpy(), cell.recurrent_kernel.numpy()
    h = np.zeros((3, 2), np.float32)
    for t in range(5):
        h = X[:, t] @ k + h @ u
        np.testing.assert_allclose(y[:, t], h, rtol=1e-5, atol=1e-6)
    # A list of cells is a StackedRNNCells.
    assert isinstance(L.RNN([MinimalRNNCell(2), MinimalRNNCell(3)]).cell, L.StackedRNNCells)


def test_custom_cell_takes_constants_and_second_derivatives_flow():
    rnn = L.RNN(ConstantsCell(2))
    c = tf.ones((3, 2))
    out = rnn(X, constants=c)
    ref = L.RNN(MinimalRNNCell(2))
    ref(X)
    assert out.shape == (3, 2)
    with pytest.raises(ValueError, match="does not support constants"):
        ref(X, constants=c)
    # The per-step path composes ops with ordinary gradients: second order works.
    x = tf.constant(X[:1, :2])
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(L.RNN(PerStepLSTM(2))(x) ** 2)
        g = inner.gradient(y, x)
        s = tf.reduce_sum(g * g)
    assert outer.gradient(s, x) is not None
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(L.LSTM(2)(x) ** 2)
        s = tf.reduce_sum(inner.gradient(y, x) ** 2)
    with pytest.raises(errors.UnimplementedError, match="not supported"):
        outer.gradient(s, x)


def test_bad_cells_and_inputs_are_reported():
    with pytest.raises(ValueError, match="should have a `call` method"):
        L.RNN(object())
    with pytest.raises(ValueError, match="`state_size` attribute"):
        L.RNN(L.Dense(2))
    with pytest.raises(ValueError, match="rank 3"):
        L.LSTM(2)(tf.ones((2, 3)))
    with pytest.raises(ValueError, match="units must be a positive integer"):
        L.LSTMCell(0)


# --- the layer harness (config round trip, gradients vs differences, InputSpec) -----------------
HARNESS = [
    (L.SimpleRNN, {"units": 3}),
    (L.SimpleRNN, {"units": 3, "activation": "relu", "return_sequences": True}),
    (L.LSTM, {"units": 2, "return_sequences": True, "go_backwards": True}),
    (L.LSTM, {"units": 2, "unroll": True, "recurrent_activation": "hard_sigmoid"}),
    (L.GRU, {"units": 2}),
    (L.GRU, {"units": 2, "reset_after": False, "return_sequences": True, "use_bias": False}),
    (L.GRU, {"units": 2, "time_major": True}),
]


@pytest.mark.parametrize("cls,kwargs", HARNESS)
def test_layer_harness(cls, kwargs):
    run_layer_test(cls, kwargs, input_shape=(2, 3, 4))


CELLS = [
    lambda dt: L.LSTMCell(2, dtype=dt),
    lambda dt: L.GRUCell(2, reset_after=False, dtype=dt),
    lambda dt: [L.SimpleRNNCell(2, dtype=dt), L.LSTMCell(3, dtype=dt)],
    lambda dt: MinimalRNNCell(2, dtype=dt),
]


@pytest.mark.parametrize("cell", CELLS)
def test_rnn_with_cells_through_the_harness(cell):
    objects = {"MinimalRNNCell": MinimalRNNCell}
    run_layer_test(L.RNN, {"cell": cell(None), "return_sequences": True}, input_shape=(2, 3, 4),
                   custom_objects=objects, check_gradients_=False)  # fmt: skip
    rnn = L.RNN(cell("float64"), go_backwards=True, dtype="float64")
    x = X[:2, :3].astype(np.float64)
    rnn(x)
    check_gradients(lambda t: rnn(t), [x], rnn.trainable_weights)


def test_config_matches_keras_keys():
    config = L.LSTM(3, return_state=True).get_config()
    for key in ("units", "activation", "recurrent_activation", "unit_forget_bias", "dropout",
                "recurrent_dropout", "implementation", "return_sequences", "return_state",
                "go_backwards", "stateful", "unroll", "time_major"):  # fmt: skip
        assert key in config
    assert "cell" not in config and config["activation"] == "tanh"
    assert L.GRU(2).get_config()["reset_after"] is True
    assert L.deserialize(L.serialize(L.GRU(2, reset_after=False))).reset_after is False
