"""Issue 13's "done when": a text classifier trained end to end from raw strings.

TextVectorization -> Embedding(mask_zero=True) -> Bidirectional(LSTM) -> Dense, `fit` on a
`tf.data.Dataset` of (string, label) pairs. The label is the sentiment keyword in the sentence,
flipped when "not" stands right before it; half the sentences also have a "not" right after the
keyword, which does not flip it, so word order matters (a bag of words cannot separate them).
Sequences are padded with `output_sequence_length` and masked by `mask_zero=True`; ragged input
to Embedding is not used here.
"""

import numpy as np

import layerflow as tf

FILLER = "the a movie film story plot actor scene was is it this that very quite and but".split()
POS, NEG = ["great", "excellent", "wonderful"], ["awful", "terrible", "boring"]


def make(n, rng):
    texts, labels = [], []
    for _ in range(n):
        positive = bool(rng.integers(2))
        negated = bool(rng.integers(2))
        words = list(rng.choice(FILLER, size=int(rng.integers(3, 9))))
        key = [str(rng.choice(POS if positive else NEG))]
        at = int(rng.integers(len(words) + 1))
        distractor = ["not"] if rng.integers(2) else []  # right after the keyword: no flip
        words[at:at] = (["not"] if negated else []) + key + distractor
        texts.append(" ".join(words).capitalize() + "!")
        labels.append(int(positive != negated))
    return texts, np.array(labels, "float32")


def test_text_classifier_from_raw_strings(tmp_path):
    tf.keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x_train, y_train = make(1024, rng)
    x_test, y_test = make(256, rng)
    vectorize = tf.keras.layers.TextVectorization(max_tokens=64, output_sequence_length=12)
    vectorize.adapt(tf.data.Dataset.from_tensor_slices(x_train).batch(128))
    assert "not" in vectorize.get_vocabulary()
    inp = tf.keras.Input(shape=(), dtype="string")
    x = vectorize(inp)
    x = tf.keras.layers.Embedding(vectorize.vocabulary_size(), 16, mask_zero=True)(x)
    x = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(16))(x)
    model = tf.keras.Model(inp, tf.keras.layers.Dense(1, activation="sigmoid")(x))
    model.compile(tf.keras.optimizers.Adam(0.01), "binary_crossentropy", metrics=["accuracy"])
    train = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(1024, seed=0).batch(32)
    test = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(64)
    model.fit(train, epochs=6, verbose=0)
    _, accuracy = model.evaluate(test, verbose=0)
    assert accuracy >= 0.95, accuracy  # stated target: 95% on held-out sentences
    raw = tf.constant(["The film was not great!", "A wonderful story."])
    np.testing.assert_array_equal(model.predict(raw, verbose=0)[:, 0] > 0.5, [False, True])
    path = str(tmp_path / "classifier.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(raw, verbose=0), model.predict(raw, verbose=0),
                               rtol=1e-5)  # fmt: skip
