"""Bidirectional and TimeDistributed; recurrent models saved and loaded, trained, and read
from real Keras weight files."""

import os
import subprocess
import textwrap

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.utils.testing import check_gradients, run_layer_test
from tests.saving import peers

L = tf.keras.layers
RNG = np.random.default_rng(1)
X = RNG.standard_normal((3, 5, 4)).astype(np.float32)
MASK = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], dtype=bool)


def _halves(bi):
    """Stand-alone forward and backward layers with the Bidirectional's weights."""
    fw_cfg, bw_cfg = bi.forward_layer.get_config(), bi.backward_layer.get_config()
    fw_cfg["name"], bw_cfg["name"] = "fw", "bw"
    fw, bw = type(bi.forward_layer).from_config(fw_cfg), type(bi.backward_layer).from_config(bw_cfg)
    fw(X)
    bw(X)
    fw.set_weights(bi.forward_layer.get_weights())
    bw.set_weights(bi.backward_layer.get_weights())
    return fw, bw


@pytest.mark.parametrize("mode", ["concat", "sum", "mul", "ave", None])
def test_bidirectional_merges_forward_and_reversed_backward(mode):
    bi = L.Bidirectional(L.LSTM(3, return_sequences=True), merge_mode=mode)
    out = bi(X, mask=tf.constant(MASK))
    fw, bw = _halves(bi)
    f = fw(X, mask=tf.constant(MASK)).numpy()
    b = bw(X, mask=tf.constant(MASK)).numpy()[:, ::-1]
    want = {"concat": np.concatenate([f, b], -1), "sum": f + b, "mul": f * b,
            "ave": (f + b) / 2, None: [f, b]}[mode]  # fmt: skip
    got = [o.numpy() for o in out] if mode is None else out.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # Keras 2 makes the halves output zeros at masked steps when returning sequences.
    assert bi.forward_layer.zero_output_for_mask
    assert bi.forward_layer.name.startswith("forward_") and bi.backward_layer.go_backwards


def test_bidirectional_return_state_and_initial_state():
    bi = L.Bidirectional(L.LSTM(3, return_state=True))
    out, hf, cf, hb, cb = bi(X)
    assert out.shape == (3, 6) and hf.shape == (3, 3)
    np.testing.assert_array_equal(out.numpy()[:, :3], hf.numpy())
    np.testing.assert_array_equal(out.numpy()[:, 3:], hb.numpy())
    again = bi(X, initial_state=[hf, cf, hb, cb])[0]
    assert not np.allclose(again.numpy(), out.numpy())
    shapes = bi.compute_output_shape((None, 5, 4))
    assert [list(s) for s in shapes] == [[None, 6]] + [[None, 3]] * 4


def test_bidirectional_gradients_match_differences():
    bi = L.Bidirectional(L.GRU(2, return_sequences=True, dtype="float64"), merge_mode="sum",
                         dtype="float64")  # fmt: skip
    x = X[:2, :3].astype(np.float64)
    bi(x)
    check_gradients(lambda t: bi(t), [x], bi.trainable_weights)


def test_bidirectional_config_round_trip_and_errors():
    run_layer_test(L.Bidirectional, {"layer": L.LSTM(2)}, input_shape=(2, 3, 4),
                   check_gradients_=False)  # fmt: skip
    custom = L.Bidirectional(L.GRU(2), backward_layer=L.GRU(2, go_backwards=True, name="back"))
    clone = L.Bidirectional.from_config(custom.get_config())
    assert clone.backward_layer.name == "back" and clone.backward_layer.go_backwards
    assert clone.get_config() == custom.get_config()
    with pytest.raises(ValueError, match="Invalid merge mode"):
        L.Bidirectional(L.LSTM(2), merge_mode="max")
    with pytest.raises(ValueError, match="different `go_backwards`"):
        L.Bidirectional(L.LSTM(2), backward_layer=L.LSTM(2))
    with pytest.raises(ValueError, match="same value for attribute 'return_sequences'"):
        L.Bidirectional(L.LSTM(2), backward_layer=L.LSTM(2, go_backwards=True,
                                                         return_sequences=True))  # fmt: skip
    with pytest.raises(ValueError, match="Layer` instance"):
        L.Bidirectional(L.LSTMCell(2).call)


def test_time_distributed_applies_the_layer_to_every_step():
    td = L.TimeDistributed(L.Dense(2))
    y = td(X).numpy()
    dense = td.layer
    for t in range(5):
        np.testing.assert_allclose(y[:, t], dense(X[:, t]).numpy(), rtol=1e-6)
    assert td.compute_output_shape((None, 5, 4)) == tf.TensorShape([None, 5, 2])
    run_layer_test(L.TimeDistributed, {"layer": L.Dense(3)}, input_shape=(2, 3, 4),
                   check_gradients_=False)  # fmt: skip
    td64 = L.TimeDistributed(L.Dense(2, dtype="float64"), dtype="float64")
    x = X[:2, :3].astype(np.float64)
    td64(x)
    check_gradients(lambda t: td64(t), [x], td64.trainable_weights)
    images = L.TimeDistributed(L.Flatten())(tf.ones((2, 3, 4, 5)))
    assert images.shape == (2, 3, 20)
    with pytest.raises(ValueError, match="rank >= 3"):
        L.TimeDistributed(L.Dense(2))(tf.ones((2, 3)))


# --- models -------------------------------------------------------------------------------------
def _model():
    return tf.keras.Sequential([
        tf.keras.Input((5, 4)),
        L.Bidirectional(L.LSTM(3, return_sequences=True)),
        L.GRU(2, return_sequences=True, reset_after=False),
        L.TimeDistributed(L.Dense(2)),
        L.SimpleRNN(2),
        L.Dense(1),
    ])  # fmt: skip


def test_keras_file_round_trip(tmp_path):
    model = _model()
    y = model(X).numpy()
    model.save(tmp_path / "rnn.keras")
    clone = tf.keras.models.load_model(tmp_path / "rnn.keras")
    np.testing.assert_allclose(clone(X).numpy(), y, rtol=1e-6)
    assert [type(x).__name__ for x in clone.layers] == [type(x).__name__ for x in model.layers]


def test_functional_model_with_initial_states_and_stacked_cells(tmp_path):
    seq = tf.keras.Input((5, 4))
    h0, c0 = tf.keras.Input((3,)), tf.keras.Input((3,))
    lstm = L.LSTM(3, return_sequences=True)
    y = lstm(seq, initial_state=[h0, c0])
    out = L.RNN([L.GRUCell(2), L.SimpleRNNCell(2)])(y)
    model = tf.keras.Model([seq, h0, c0], out)
    h, c = RNG.standard_normal((2, 3, 3)).astype(np.float32)
    got = model([X, h, c]).numpy()
    direct = model.layers[-1](lstm(X, initial_state=[h, c])).numpy()
    np.testing.assert_allclose(got, direct, rtol=1e-6)
    model.save(tmp_path / "f.keras")
    np.testing.assert_allclose(tf.keras.models.load_model(tmp_path / "f.keras")([X, h, c]).numpy(),
                               got, rtol=1e-6)  # fmt: skip


def test_d2l_style_char_rnn_trains_with_a_tape_loop():
    vocab, hidden, steps, batch = 8, 16, 6, 4
    tf.random.set_seed(0)
    rnn = L.RNN(L.LSTMCell(hidden), time_major=True, return_sequences=True, return_state=True)
    dense = L.Dense(vocab)
    opt = tf.keras.optimizers.SGD(1.0)
    data = np.arange(steps * batch + 1) % vocab  # a cyclic sequence: easy to learn
    xs = data[:-1].reshape(batch, steps)
    ys = data[1:].reshape(batch, steps)
    losses = []
    for _ in range(60):
        state = rnn.cell.get_initial_state(batch_size=batch, dtype=tf.float32)
        with tf.GradientTape() as tape:
            x = tf.one_hot(tf.transpose(tf.constant(xs)), vocab)
            y, *state = rnn(x, state)
            logits = dense(tf.reshape(y, (-1, hidden)))
            labels = tf.reshape(tf.transpose(tf.constant(ys)), (-1,))
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
            )
        params = rnn.trainable_variables + dense.trainable_variables
        grads = tape.gradient(loss, params)
        opt.apply_gradients(zip(grads, params))
        losses.append(float(loss))
    assert losses[-1] < 0.2 * losses[0]


def test_masked_bidirectional_classifier_learns_with_fit():
    # Sequences of length 3..8 padded with zeros; the label is whether the first token is
    # greater than the last real token. The model must read through the padding's mask.
    rng = np.random.default_rng(0)
    n, t = 256, 8
    lengths = rng.integers(3, t + 1, n)
    tokens = rng.integers(1, 10, (n, t))
    tokens[np.arange(t)[None, :] >= lengths[:, None]] = 0
    labels = (tokens[:, 0] > tokens[np.arange(n), lengths - 1]).astype(np.float32)
    tf.random.set_seed(0)

    class Classifier(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.embed = L.Embedding(10, 8)
            self.rnn = L.Bidirectional(L.LSTM(8))
            self.out = L.Dense(1, activation="sigmoid")

        def call(self, x):
            return self.out(self.rnn(self.embed(x), mask=tf.not_equal(x, 0)))

    model = Classifier()
    model.compile(optimizer=tf.keras.optimizers.Adam(0.02), loss="binary_crossentropy",
                  metrics=["accuracy"])  # fmt: skip
    history = model.fit(tokens, labels, epochs=15, batch_size=32, verbose=0)
    assert history.history["accuracy"][-1] > 0.9


# --- real Keras files ---------------------------------------------------------------------------
KERAS_WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    import keras
    path, x_path, out = sys.argv[1:4]
    x = np.load(x_path)
    model = keras.Sequential([
        keras.Input((5, 4)),
        keras.layers.LSTM(3, return_sequences=True),
        keras.layers.GRU(3, return_sequences=True),
        keras.layers.GRU(2, return_sequences=True, reset_after=False),
        keras.layers.SimpleRNN(2),
    ])
    rng = np.random.default_rng(0)
    model.set_weights([rng.standard_normal(w.shape) * 0.5 for w in model.get_weights()])
    model.save_weights(path)
    np.save(out, np.asarray(model(x)))
    """
)


@peers.needs_peers
def test_weights_written_by_real_keras_load_and_compute_the_same(tmp_path):
    np.save(tmp_path / "x.npy", X)
    script = tmp_path / "writer.py"
    script.write_text(KERAS_WRITER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    path = tmp_path / "rnn.weights.h5"
    done = subprocess.run(
        [str(peers.python()), str(script), str(path), str(tmp_path / "x.npy"),
         str(tmp_path / "y.npy")],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    model = tf.keras.Sequential([
        tf.keras.Input((5, 4)),
        L.LSTM(3, return_sequences=True),
        L.GRU(3, return_sequences=True),
        L.GRU(2, return_sequences=True, reset_after=False),
        L.SimpleRNN(2),
    ])  # fmt: skip
    model.load_weights(path)
    np.testing.assert_allclose(model(X).numpy(), np.load(tmp_path / "y.npy"), rtol=1e-5,
                               atol=1e-5)  # fmt: skip
