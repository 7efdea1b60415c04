"""StringLookup against tf_keras 2.21 outputs (fixtures/string_lookup_tf_keras.json) and oracles."""

import json
import os

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.ops import fingerprint

L = tf.keras.layers
with open(os.path.join(os.path.dirname(__file__), "fixtures", "string_lookup_tf_keras.json")) as f:
    FIX = json.load(f)
VOCAB = ["a", "b", "c", "d"]


def test_int_lookup_oov_and_adapt_order():
    layer = L.StringLookup(vocabulary=VOCAB)
    out = layer(tf.constant([["a", "c", "d"], ["d", "z", "b"]]))
    assert out.dtype == tf.int64
    np.testing.assert_array_equal(out.numpy(), [[1, 3, 4], [4, 0, 2]])
    adapted = L.StringLookup()
    adapted.adapt(["b", "a", "b", "c", "c", "c"])
    assert adapted.get_vocabulary() == ["[UNK]", "c", "b", "a"]
    assert adapted.vocabulary_size() == 4
    assert adapted.get_vocabulary(include_special_tokens=False) == ["c", "b", "a"]
    capped = L.StringLookup(max_tokens=4)
    capped.adapt(tf.constant(["x", "y", "y", "z", "z", "w", "w", "v"]))
    assert capped.get_vocabulary() == FIX["adapt_max"]


def test_oov_buckets_hash_like_tf_keras():
    layer = L.StringLookup(vocabulary=VOCAB, num_oov_indices=3, mask_token="")
    x = [["a", "", "x"], ["y", "zz", "b"], ["hello", "world", "é"]]
    np.testing.assert_array_equal(layer(tf.constant(x)).numpy(), FIX["oov3_mask"])
    # the oracle: OOV bucket = 1 (mask) + Fingerprint64(token) % 3
    assert layer(tf.constant(["world"])).numpy()[0] == 1 + fingerprint.fingerprint64(b"world") % 3


def test_invert_and_modes():
    inv = L.StringLookup(vocabulary=VOCAB, invert=True, mask_token="")
    out = inv(tf.constant([[0, 1, 2], [5, 9, 3]]))
    assert out.dtype == tf.string
    assert [[t.decode() for t in r] for r in out.numpy().tolist()] == FIX["invert"]
    count = L.StringLookup(vocabulary=["a", "b"], output_mode="count", mask_token="")
    np.testing.assert_array_equal(count(tf.constant([["a", "a", "", "q"]])).numpy(),
                                  FIX["count_mask"])  # fmt: skip
    one = L.StringLookup(vocabulary=["a", "b"], output_mode="one_hot")
    np.testing.assert_array_equal(one(tf.constant(["a", "q", "b"])).numpy(), FIX["one_hot"])
    tfidf = L.StringLookup(output_mode="tf_idf")
    tfidf.adapt(tf.constant([["a", "b", "a"], ["c", "a", "a"], ["d", "b", "b"]]))
    assert tfidf.get_vocabulary() == FIX["tfidf_vocab"]
    np.testing.assert_allclose(tfidf(tf.constant([["a", "b", "z"]])).numpy(), FIX["tfidf"],
                               rtol=1e-6)  # fmt: skip


def test_vocabulary_file_dataset_adapt_and_encoding(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("a\nb\nc\nd\n", encoding="utf-8")
    layer = L.StringLookup(vocabulary=str(path))
    np.testing.assert_array_equal(layer(tf.constant(["d", "a", "q"])).numpy(), [4, 1, 0])
    ds = tf.data.Dataset.from_tensor_slices(tf.constant(["x", "y", "y", "é", "é", "é"])).batch(2)
    adapted = L.StringLookup()
    adapted.adapt(ds)
    assert adapted.get_vocabulary() == ["[UNK]", "é", "y", "x"]
    latin = L.StringLookup(vocabulary=[b"caf\xe9"], encoding="latin-1")
    assert latin.get_vocabulary() == ["[UNK]", "café"]


def test_set_vocabulary_and_errors():
    layer = L.StringLookup()
    layer.set_vocabulary(["[UNK]", "p", "q"])  # special tokens at the front are recognised
    assert layer.get_vocabulary() == ["[UNK]", "p", "q"]
    with pytest.raises(ValueError, match="repeated"):
        L.StringLookup(vocabulary=["a", "a"])
    with pytest.raises(ValueError, match="reserved oov_token"):
        L.StringLookup(vocabulary=["a", "[UNK]"])
    with pytest.raises(ValueError, match="larger than the maximum"):
        L.StringLookup(vocabulary=VOCAB, max_tokens=3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="num_oov_indices=0"):
        L.StringLookup(vocabulary=VOCAB, num_oov_indices=0)(tf.constant(["zz"]))
    with pytest.raises(TypeError, match="string inputs"):
        L.StringLookup(vocabulary=VOCAB)(tf.constant([1, 2]))
    with pytest.raises(ValueError, match="Cannot adapt"):
        L.StringLookup(vocabulary=VOCAB).adapt(["a"])
    with pytest.raises(RuntimeError, match="set the layer's vocabulary"):
        L.StringLookup(output_mode="multi_hot")(tf.constant(["a"]))


def test_ragged_input():
    layer = L.StringLookup(vocabulary=VOCAB)
    out = layer(tf.strings.split(tf.constant(["a b", "c z d"])))
    assert out.to_list() == [[1, 2], [3, 0, 4]]
    multi = L.StringLookup(vocabulary=VOCAB, output_mode="multi_hot")
    np.testing.assert_array_equal(multi(tf.strings.split(tf.constant(["a b", "c"]))).numpy(),
                                  [[0, 1, 1, 0, 0], [0, 0, 0, 1, 0]])  # fmt: skip


def test_config_and_keras_file_keep_the_adapted_vocabulary(tmp_path):
    layer = L.StringLookup(output_mode="multi_hot")
    layer.adapt(tf.constant([["a", "b"], ["b", "c"], ["d", "b"]]))
    clone = L.StringLookup.from_config(layer.get_config())
    assert clone.get_vocabulary() == layer.get_vocabulary() == ["[UNK]", "b", "d", "c", "a"]
    inp = tf.keras.Input((2,), dtype="string")
    model = tf.keras.Model(inp, L.Dense(2)(layer(inp)))
    x = tf.constant([["a", "q"], ["d", "c"]])
    ref = model.predict(x, verbose=0)
    path = str(tmp_path / "lookup.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), ref, rtol=1e-6)
    lookup = [lay for lay in loaded.layers if isinstance(lay, L.StringLookup)][0]
    assert lookup.get_vocabulary() == layer.get_vocabulary()
