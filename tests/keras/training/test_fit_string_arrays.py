"""`fit`/`predict` take NumPy arrays of str, as TF does (the strings reach a TextVectorization or
StringLookup as a tf.string batch), with the same results as the same strings as a tf.string
tensor; arrays that are neither numbers nor strings are refused with TypeError."""

import numpy as np
import pytest

import layerflow as tf

TEXTS = np.array(["a b", "c d e", "f", "g h", "a c", "e e f"])


def _model():
    tf.keras.utils.set_random_seed(3)
    tv = tf.keras.layers.TextVectorization(max_tokens=20, output_sequence_length=4)
    tv.adapt(TEXTS)
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(1,), dtype=tf.string), tv, tf.keras.layers.Embedding(20, 3),
        tf.keras.layers.GlobalAveragePooling1D(), tf.keras.layers.Dense(1),
    ])  # fmt: skip
    model.compile("sgd", "mse")
    return model


def test_fit_and_predict_on_numpy_strings_as_on_string_tensors():
    y = np.arange(6.0, dtype=np.float32)
    a, b = _model(), _model()
    ha = a.fit(TEXTS, y, epochs=2, batch_size=2, shuffle=False, verbose=0).history["loss"]
    hb = b.fit(tf.constant(TEXTS), y, epochs=2, batch_size=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(ha, hb.history["loss"], rtol=1e-6)
    np.testing.assert_allclose(
        a.predict(TEXTS, verbose=0), b.predict(tf.constant(TEXTS), verbose=0)
    )


def test_arrays_of_other_objects_are_refused():
    model = _model()
    with pytest.raises(TypeError, match="numeric or string arrays"):
        model.fit(np.array([object()] * 6), np.zeros(6), verbose=0)
