"""Issue 11's guide-style end-to-end tests: a masked bidirectional LSTM text classifier and a
small Transformer encoder block, each trained with `fit` on synthetic data to a stated accuracy.
"""

import numpy as np

import layerflow as tf

L = tf.keras.layers


def _sequences(n, rng, maxlen=12):
    """Token sequences of lengths 3..10 (tokens 1..9) padded with 0 at the end; the label is
    whether the LAST REAL token is above 5, so a model must find where the padding starts."""
    lengths = rng.integers(3, 11, n)
    x = np.zeros((n, maxlen), "int32")
    for i, length in enumerate(lengths):
        x[i, :length] = rng.integers(1, 10, length)
    y = (x[np.arange(n), lengths - 1] > 5).astype("float32")
    return x, y


def test_masked_bidirectional_lstm_classifier_reaches_95_percent():
    rng = np.random.default_rng(0)
    x, y = _sequences(768, rng)
    x_test, y_test = _sequences(256, rng)
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([
        L.Embedding(10, 8, mask_zero=True),
        L.Bidirectional(L.LSTM(8)),
        L.Dense(1, activation="sigmoid"),
    ])  # fmt: skip
    model.compile(tf.keras.optimizers.Adam(0.02), "binary_crossentropy", metrics=["accuracy"])
    model.fit(x, y, batch_size=32, epochs=8, verbose=0)
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    assert accuracy >= 0.95
    # The mask is honoured: more padding changes nothing (without it, both LSTM directions
    # would run over the extra zeros).
    padded = np.concatenate([x_test, np.zeros((256, 5), "int32")], axis=1)
    np.testing.assert_allclose(
        model.predict(padded, verbose=0), model.predict(x_test, verbose=0), atol=1e-6
    )
    unmasked = tf.keras.Sequential([L.Embedding(10, 8), L.Bidirectional(L.LSTM(8)), L.Dense(1)])
    assert not np.allclose(unmasked.predict(padded, verbose=0), unmasked.predict(x_test, verbose=0))


class TokenAndPosition(L.Layer):
    def __init__(self, maxlen, vocab, dim, **kwargs):
        super().__init__(**kwargs)
        self.tokens = L.Embedding(vocab, dim)
        self.positions = L.Embedding(maxlen, dim)
        self.maxlen = maxlen

    def call(self, x):
        return self.tokens(x) + self.positions(tf.range(self.maxlen))


class EncoderBlock(L.Layer):
    """MultiHeadAttention + residual + LayerNormalization, feed-forward + residual + norm."""

    def __init__(self, dim, heads, hidden, **kwargs):
        super().__init__(**kwargs)
        self.attention = L.MultiHeadAttention(heads, dim // heads)
        self.feed_forward = tf.keras.Sequential([L.Dense(hidden, activation="relu"), L.Dense(dim)])
        self.norm1 = L.LayerNormalization()
        self.norm2 = L.LayerNormalization()

    def call(self, x, training=None):
        h = self.norm1(x + self.attention(x, x, training=training))
        return self.norm2(h + self.feed_forward(h))


def test_transformer_encoder_block_reaches_95_percent():
    # Label: does the first token equal the last one? Needs attention across positions (base
    # rate 0.64: half the samples copy the first token to the end).
    rng = np.random.default_rng(1)

    def data(n):
        x = rng.integers(0, 4, (n, 6)).astype("int32")
        x[: n // 2, -1] = x[: n // 2, 0]
        return x, (x[:, 0] == x[:, -1]).astype("float32")

    x, y = data(1024)
    x_test, y_test = data(256)
    tf.keras.utils.set_random_seed(0)
    inputs = tf.keras.Input((6,), dtype="int32")
    h = EncoderBlock(16, 2, 32)(TokenAndPosition(6, 4, 16)(inputs))
    model = tf.keras.Model(inputs, L.Dense(1, activation="sigmoid")(L.Flatten()(h)))
    model.compile(tf.keras.optimizers.Adam(0.01), "binary_crossentropy", metrics=["accuracy"])
    model.fit(x, y, batch_size=32, epochs=16, verbose=0)
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    assert accuracy >= 0.95
