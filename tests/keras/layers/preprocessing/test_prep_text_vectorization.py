"""TextVectorization against tf_keras 2.21 outputs (fixtures/text_vectorization_tf_keras.json)."""

import json
import os

import numpy as np
import pytest

import layerflow as tf

TV = tf.keras.layers.TextVectorization
with open(os.path.join(os.path.dirname(__file__), "fixtures",
                       "text_vectorization_tf_keras.json")) as f:  # fmt: skip
    FIX = json.load(f)
CORPUS = [
    "The quick brown fox, jumped!",
    "A fox? The DOG's bowl... (quick) [brown] {dog} @home #1 $5 50% a&b c*d e+f g-h i/j",
    "Ünïcode ÉCOLE école naïve -- tabs\tand\nnewlines",
    "the the the dog",
]
QUERY = ["the brown dog sat", "école ÉCOLE zzz", "a&b e+f, fox."]


@pytest.mark.parametrize("std", ["lower_and_strip_punctuation", "lower", "strip_punctuation", None])
def test_standardize_modes_match_tf_keras(std):
    layer = TV(standardize=std)
    layer.adapt(CORPUS)
    assert layer.get_vocabulary() == FIX[f"vocab_{std}"]
    np.testing.assert_array_equal(layer(QUERY).numpy(), FIX[f"int_{std}"])


def test_ngrams_characters_and_sequence_length():
    layer = TV(max_tokens=8, output_sequence_length=5, ngrams=2)
    layer.adapt(CORPUS)
    assert layer.get_vocabulary() == FIX["ngram_vocab"]
    np.testing.assert_array_equal(layer(QUERY).numpy(), FIX["ngram_int"])
    chars = TV(split="character", output_sequence_length=6)
    chars.adapt(CORPUS)
    assert chars.get_vocabulary() == FIX["char_vocab"]
    np.testing.assert_array_equal(chars(QUERY).numpy(), FIX["char_int"])
    nosplit = TV(split=None)
    nosplit.adapt(["a", "b", "b"])
    np.testing.assert_array_equal(nosplit(tf.constant([["b"], ["a"], ["z"]])).numpy(),
                                  FIX["nosplit"])  # fmt: skip


@pytest.mark.parametrize("mode", ["multi_hot", "count", "tf_idf"])
def test_bag_of_words_modes_match_tf_keras(mode):
    layer = TV(output_mode=mode, ngrams=(1, 3), max_tokens=12, pad_to_max_tokens=True)
    layer.adapt(tf.data.Dataset.from_tensor_slices(CORPUS).batch(1))
    assert layer.get_vocabulary() == FIX[f"{mode}_vocab"]
    np.testing.assert_allclose(layer(QUERY).numpy(), FIX[f"{mode}_out"], rtol=1e-6)


def test_unsplit_strings_are_padded_and_truncated():
    # tf_keras 2.21: [[3, 0, 0], [2, 0, 0], [1, 0, 0]] and [[3], [2]]
    pad = TV(split=None, output_sequence_length=3, vocabulary=["a", "b"])
    np.testing.assert_array_equal(pad(tf.constant([["b"], ["a"], ["z"]])).numpy(),
                                  [[3, 0, 0], [2, 0, 0], [1, 0, 0]])  # fmt: skip
    cut = TV(split=None, output_sequence_length=1, vocabulary=["a", "b"])
    np.testing.assert_array_equal(cut(tf.constant([["b", "a"], ["a", "z"]])).numpy(), [[3], [2]])


def test_ragged_callables_and_given_vocabulary():
    layer = TV(ragged=True, split="character", vocabulary=["a", "b"])
    assert layer(["abc", "b"]).to_list() == [[2, 3, 1], [3]]
    upper = TV(standardize=tf.strings.upper, split=lambda x: tf.strings.split(x, sep="-"),
               vocabulary=["A", "B"])  # fmt: skip
    np.testing.assert_array_equal(upper(["a-b-c", "b"]).numpy(), [[2, 3, 1], [3, 0, 0]])
    tfidf = TV(output_mode="tf_idf", vocabulary=["x", "y"], idf_weights=[0.5, 2.0])
    np.testing.assert_allclose(tfidf(["x y y q"]).numpy(), [[1.25, 0.5, 4.0]])
    layer.set_vocabulary(["c"])
    assert layer.get_vocabulary() == ["", "[UNK]", "c"] and layer.vocabulary_size() == 3


def test_errors():
    with pytest.raises(ValueError, match="dtype of string"):
        TV(dtype="int32")
    with pytest.raises(ValueError, match="standardize"):
        TV(standardize="upper")
    with pytest.raises(ValueError, match="output_sequence_length"):
        TV(output_mode="count", output_sequence_length=3)
    with pytest.raises(ValueError, match="ragged"):
        TV(output_mode="count", ragged=True)
    with pytest.raises(ValueError, match="ngrams"):
        TV(ngrams="2")
    with pytest.raises(ValueError, match="last shape dimension must be 1"):
        TV(vocabulary=["a"])(tf.constant([["a", "b"]]))
    with pytest.raises(TypeError, match="string inputs"):
        TV(vocabulary=["a"])(tf.constant([1, 2]))
    with pytest.raises(ValueError, match="Cannot adapt"):
        TV(vocabulary=["a"]).adapt(["a"])


def test_config_and_keras_file_keep_the_vocabulary(tmp_path):
    layer = TV(max_tokens=20, output_sequence_length=6, ngrams=(1, 2))
    layer.adapt(CORPUS)
    clone = TV.from_config(layer.get_config())
    assert clone.get_vocabulary() == layer.get_vocabulary()
    np.testing.assert_array_equal(clone(QUERY).numpy(), layer(QUERY).numpy())
    inp = tf.keras.Input((1,), dtype="string")
    x = layer(inp)
    x = tf.keras.layers.Embedding(layer.vocabulary_size(), 3)(x)
    model = tf.keras.Model(inp, tf.keras.layers.GlobalAveragePooling1D()(x))
    q = tf.constant([[s] for s in QUERY])
    ref = model.predict(q, verbose=0)
    path = str(tmp_path / "tv.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(q, verbose=0), ref, rtol=1e-6)
    tv = [lay for lay in loaded.layers if isinstance(lay, TV)][0]
    assert tv.get_vocabulary() == layer.get_vocabulary()
