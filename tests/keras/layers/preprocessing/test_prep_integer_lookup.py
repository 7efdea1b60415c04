"""IntegerLookup: vocabulary list/file/adapt, OOV and mask indices, invert, output modes
(tf_idf against real tf_keras), get_config and .keras round trips, errors."""

import os

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.utils.testing import run_layer_test

L = tf.keras.layers
FIX = np.load(os.path.join(os.path.dirname(__file__), "..", "fixtures", "preprocessing_tf.npz"))
VOCAB = [12, 36, 1138, 42]
X = np.array([[12, 1138, 42], [42, 1000, 36]])


def test_lookup_with_vocabulary_list_and_file(tmp_path):
    layer = L.IntegerLookup(vocabulary=VOCAB)
    out = layer(X)
    assert out.dtype == tf.int64
    np.testing.assert_array_equal(out.numpy(), [[1, 3, 4], [4, 0, 2]])
    assert layer.get_vocabulary() == [-1, 12, 36, 1138, 42]
    assert layer.get_vocabulary(include_special_tokens=False) == VOCAB
    assert layer.vocabulary_size() == 5
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(map(str, VOCAB)) + "\n")
    from_file = L.IntegerLookup(vocabulary=str(path))
    np.testing.assert_array_equal(from_file(X).numpy(), out.numpy())
    assert L.IntegerLookup.from_config(from_file.get_config()).get_vocabulary() == [-1] + VOCAB


def test_mask_oov_buckets_and_invert():
    layer = L.IntegerLookup(vocabulary=VOCAB, mask_token=0, num_oov_indices=2)
    got = layer(np.array([[12, 0, 42], [42, 1000, 1001]])).numpy()
    np.testing.assert_array_equal(got, [[3, 0, 6], [6, 1, 2]])  # OOV: 1 + x % 2
    assert layer.get_vocabulary() == [0, -1, -1, 12, 36, 1138, 42]
    inv = L.IntegerLookup(vocabulary=VOCAB, invert=True)
    np.testing.assert_array_equal(inv(np.array([[1, 3, 4], [4, 0, 2]])).numpy(),
                                  [[12, 1138, 42], [42, -1, 36]])  # fmt: skip
    strict = L.IntegerLookup(vocabulary=VOCAB, num_oov_indices=0, name="strict")
    np.testing.assert_array_equal(strict([12, 42]).numpy(), [0, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="strict.*OOV values \\[7\\]"):
        strict([12, 7])


def test_output_modes():
    multi = L.IntegerLookup(vocabulary=VOCAB, output_mode="multi_hot")
    np.testing.assert_array_equal(multi(X).numpy(), [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]])
    count = L.IntegerLookup(vocabulary=VOCAB, output_mode="count")
    np.testing.assert_array_equal(count([[42, 42, 7]]).numpy(), [[1, 0, 0, 0, 2]])
    one_hot = L.IntegerLookup(vocabulary=VOCAB, output_mode="one_hot")
    np.testing.assert_array_equal(one_hot([12, 7]).numpy(), [[0, 1, 0, 0, 0], [1, 0, 0, 0, 0]])
    masked = L.IntegerLookup(vocabulary=VOCAB, mask_token=0, output_mode="multi_hot")
    np.testing.assert_array_equal(masked([[0, 12]]).numpy(), [[0, 1, 0, 0, 0]])  # mask dropped
    padded = L.IntegerLookup(vocabulary=VOCAB, output_mode="count", max_tokens=8,
                             pad_to_max_tokens=True)  # fmt: skip
    assert padded(X).shape == (2, 8)
    tfidf = L.IntegerLookup(vocabulary=VOCAB, output_mode="tf_idf",
                            idf_weights=[0.25, 0.75, 0.6, 0.4])  # fmt: skip
    np.testing.assert_allclose(tfidf([[12, 42, 42, 7]]).numpy(), [[0.5, 0.25, 0, 0, 0.8]])


def test_adapt_frequency_order_and_tf_idf_match_tf_keras():
    layer = L.IntegerLookup(output_mode="tf_idf")
    layer.adapt(FIX["il_data"])
    assert layer.get_vocabulary() == FIX["il_vocab"].tolist()
    np.testing.assert_allclose(layer(np.array([[12, 42, 42, 7]])).numpy(), FIX["il_idf"],
                               rtol=1e-6)  # fmt: skip
    ds = tf.data.Dataset.from_tensor_slices(FIX["il_data"]).batch(2)
    by_ds = L.IntegerLookup(max_tokens=3)
    by_ds.adapt(ds)
    assert by_ds.get_vocabulary() == [-1, 42, 36]


def test_config_and_keras_file_keep_the_adapted_vocabulary(tmp_path):
    layer = L.IntegerLookup(output_mode="multi_hot")
    layer.adapt(FIX["il_data"])
    clone = L.IntegerLookup.from_config(layer.get_config())
    assert clone.get_vocabulary() == layer.get_vocabulary()
    inp = tf.keras.Input((3,), dtype="int64")
    model = tf.keras.Model(inp, L.Dense(2)(layer(inp)))
    ref = model.predict(X, verbose=0)
    path = str(tmp_path / "lookup.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(X, verbose=0), ref, rtol=1e-6)
    run_layer_test(L.IntegerLookup, {"vocabulary": VOCAB, "output_mode": "count"},
                   input_data=X, expected_output_shape=(2, 5), check_gradients_=False)  # fmt: skip
    ds = tf.data.Dataset.from_tensor_slices(X).batch(2).map(L.IntegerLookup(vocabulary=VOCAB))
    np.testing.assert_array_equal(next(iter(ds)).numpy(), [[1, 3, 4], [4, 0, 2]])


def test_errors():
    with pytest.raises(ValueError, match="repeated"):
        L.IntegerLookup(vocabulary=[1, 2, 1])
    with pytest.raises(ValueError, match="reserved oov_token"):
        L.IntegerLookup(vocabulary=[1, -1, 2])
    with pytest.raises(ValueError, match="Cannot adapt"):
        L.IntegerLookup(vocabulary=VOCAB).adapt(X)
    with pytest.raises(RuntimeError, match="lk.*vocabulary before calling"):
        L.IntegerLookup(output_mode="count", name="lk")(X)
    with pytest.raises(TypeError, match="integer inputs"):
        L.IntegerLookup(vocabulary=VOCAB)(np.ones((2, 2), "float32"))
    with pytest.raises(ValueError, match="max_tokens"):
        L.IntegerLookup(max_tokens=1)
    with pytest.raises(ValueError, match="larger than the maximum"):
        L.IntegerLookup(vocabulary=VOCAB, max_tokens=3)
    with pytest.raises(ValueError, match="does not exist"):
        L.IntegerLookup(vocabulary="/nonexistent/vocab.txt")
