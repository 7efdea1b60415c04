"""Keras layers on RaggedTensor input (as tf_keras: Embedding maps the values, recurrent layers
pad with the row-length mask), keras.Input(ragged=True), and the issue's end-to-end text
classifier trained from raw strings."""

import time

import numpy as np
import pytest

import layerflow as tf


def _ids():
    return tf.ragged.constant([[1, 2, 3], [4], [5, 6]], dtype=tf.int64)


def test_embedding_on_ragged_gives_ragged():
    emb = tf.keras.layers.Embedding(10, 3)
    out = emb(_ids())
    assert isinstance(out, tf.RaggedTensor) and out.shape.as_list() == [3, None, 3]
    np.testing.assert_array_equal(
        out.flat_values.numpy(), tf.gather(emb.embeddings, [1, 2, 3, 4, 5, 6]).numpy()
    )


@pytest.mark.parametrize("make", [
    lambda rs: tf.keras.layers.LSTM(4, return_sequences=rs),
    lambda rs: tf.keras.layers.GRU(4, return_sequences=rs),
    lambda rs: tf.keras.layers.SimpleRNN(4, return_sequences=rs),
    lambda rs: tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(4, return_sequences=rs)),
])  # fmt: skip
@pytest.mark.parametrize("return_sequences", [False, True])
def test_recurrent_layers_on_ragged_match_padded_with_mask(make, return_sequences):
    x = tf.keras.layers.Embedding(10, 3)(_ids())
    layer = make(return_sequences)
    got = layer(x)
    padded = x.to_tensor()
    mask = tf.sequence_mask(x.row_lengths(), maxlen=padded.shape[1])
    want = layer(padded, mask=mask)
    if return_sequences:
        assert isinstance(got, tf.RaggedTensor)
        assert got.row_lengths().numpy().tolist() == [3, 1, 2]
        lengths = [3, 1, 2]
        for i, n in enumerate(lengths):
            np.testing.assert_allclose(got[i].numpy(), want.numpy()[i, :n], rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    # A sequence's result does not depend on the padding other rows impose on it.
    alone = layer(x[1:2])
    row = alone[0].numpy() if return_sequences else alone.numpy()[0]
    np.testing.assert_allclose(row, (got[1].numpy() if return_sequences else got.numpy()[1]),
                               rtol=1e-5, atol=1e-6)  # fmt: skip


def test_functional_model_with_ragged_input_predicts_and_fits():
    inp = tf.keras.Input(shape=(None,), dtype="int64", ragged=True)
    assert inp.node.layer.get_config()["ragged"] is True
    h = tf.keras.layers.Embedding(10, 4)(inp)
    h = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(5))(h)
    model = tf.keras.Model(inp, tf.keras.layers.Dense(1)(h))
    direct = model(_ids()).numpy()
    np.testing.assert_allclose(model.predict(_ids(), verbose=0), direct, rtol=1e-5)
    model.compile("adam", "mse")
    history = model.fit(_ids(), np.ones((3, 1), "float32"), epochs=3, batch_size=2, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def _sentences(n, seed):
    rng = np.random.default_rng(seed)
    pos = ["good", "great", "fine", "happy", "love", "superb"]
    neg = ["bad", "awful", "sad", "hate", "poor", "boring"]
    filler = ["the", "a", "movie", "was", "it", "and", "very", "plot", "actors", "really",
              "film", "story"]  # fmt: skip
    texts, labels = [], []
    for i in range(n):
        label = i % 2
        words = list(rng.choice(filler, rng.integers(2, 14)))
        words.insert(int(rng.integers(0, len(words) + 1)), rng.choice(pos if label else neg))
        texts.append(" ".join(words))
        labels.append(label)
    return np.array(texts), np.array(labels, dtype="float32")


def test_text_classifier_end_to_end_from_raw_strings():
    """TextVectorization(ragged=True) -> Embedding on ragged ids -> Bidirectional(LSTM) ->
    Dense, trained from raw strings of varying length: >= 0.9 held-out accuracy in < 20 s."""
    tf.keras.utils.set_random_seed(0)
    x, y = _sentences(400, seed=1)
    x_test, y_test = _sentences(200, seed=2)
    vectorize = tf.keras.layers.TextVectorization(ragged=True)
    vectorize.adapt(x)
    ids = vectorize(x[:4])
    assert isinstance(ids, tf.RaggedTensor)
    assert ids.row_lengths().numpy().tolist() == [len(s.split()) for s in x[:4]]
    model = tf.keras.Sequential([
        vectorize,
        tf.keras.layers.Embedding(vectorize.vocabulary_size(), 16),
        tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(16)),
        tf.keras.layers.Dense(1, activation="sigmoid"),
    ])  # fmt: skip
    model.compile(tf.keras.optimizers.Adam(0.01), "binary_crossentropy", metrics=["accuracy"])
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(400, seed=0).batch(32)
    start = time.perf_counter()
    model.fit(ds, epochs=10, verbose=0)
    elapsed = time.perf_counter() - start
    _, accuracy = model.evaluate(tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(64),
                                 verbose=0)  # fmt: skip
    print(f"text classifier: held-out accuracy {accuracy:.3f}, fit {elapsed:.2f} s")
    assert accuracy >= 0.9, accuracy
    assert elapsed < 20, elapsed


def test_dense_and_global_pooling_on_ragged_as_tf_keras():
    r = tf.ragged.constant([[[1.0], [2.0]], [[3.0]]], ragged_rank=1)
    avg = tf.keras.layers.GlobalAveragePooling1D()(r)
    assert avg.numpy().tolist() == [[1.5], [3.0]]
    assert tf.keras.layers.GlobalMaxPooling1D()(r).numpy().tolist() == [[2.0], [3.0]]
    dense = tf.keras.layers.Dense(2)
    out = dense(r)
    assert isinstance(out, tf.RaggedTensor) and out.shape.as_list() == [2, None, 2]
    np.testing.assert_allclose(
        out.flat_values.numpy(), r.flat_values.numpy() @ dense.kernel.numpy() + dense.bias.numpy()
    )
