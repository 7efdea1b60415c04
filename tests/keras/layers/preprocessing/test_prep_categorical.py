"""Discretization, CategoryEncoding, Hashing, HashedCrossing: values against real TF fixtures
(quantile boundaries, farmhash/SipHash buckets), encodings, configs, models, errors."""

import os

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras.utils.testing import run_layer_test
from layerflow._src.ops import fingerprint

L = tf.keras.layers
FIX = np.load(os.path.join(os.path.dirname(__file__), "..", "fixtures", "preprocessing_tf.npz"))
BIG = 2**63 - 1


def test_fingerprint64_and_siphash_are_bit_exact_with_tensorflow():
    # The strings cover every length branch of farmhash's Hash64 (0-16, 17-32, 33-64, > 64).
    for s, fast, strong in zip(FIX["hash_strings"], FIX["fast_strings"], FIX["strong_strings"]):
        assert fingerprint.fingerprint64(str(s)) % BIG == fast, len(s)
        assert fingerprint.siphash24((133, 137), str(s)) % BIG == strong, len(s)
    for v, fast, strong in zip(FIX["hash_ints"], FIX["fast_ints"], FIX["strong_ints"]):
        assert fingerprint.fingerprint64(str(int(v))) % BIG == fast, v
        assert fingerprint.siphash24((7, 7), str(int(v))) % BIG == strong, v


def test_hashing_matches_tf_keras():
    x = FIX["hashing_x"]
    np.testing.assert_array_equal(L.Hashing(7)(x).numpy(), FIX["hashing_int_7"])
    np.testing.assert_array_equal(L.Hashing(7, mask_value=0)(x).numpy(), FIX["hashing_mask_7"])
    np.testing.assert_array_equal(L.Hashing(5, salt=[133, 137])(x).numpy(), FIX["hashing_salt_5"])
    multi = L.Hashing(4, output_mode="multi_hot")(x)
    assert multi.dtype == tf.float32
    np.testing.assert_array_equal(multi.numpy(), FIX["hashing_multi_hot_4"])
    np.testing.assert_array_equal(
        L.Hashing(4, output_mode="count")(x).numpy(), FIX["hashing_count_4"]
    )
    out = L.Hashing(7)(x.astype("int32"))
    assert out.dtype == tf.int64
    np.testing.assert_array_equal(out.numpy(), FIX["hashing_int_7"])
    assert L.Hashing(3, salt=133).salt == [133, 133]


def test_hashing_errors_config_and_models():
    with pytest.raises(TypeError, match="hash_f.*string tensors"):
        L.Hashing(3, name="hash_f")(np.ones((2, 1), "float32"))
    with pytest.raises(ValueError, match="num_bins"):
        L.Hashing(0)
    with pytest.raises(ValueError, match="salt"):
        L.Hashing(3, salt="x")
    with pytest.raises(ValueError, match="output_mode"):
        L.Hashing(3, output_mode="tf_idf")
    with pytest.raises(NotImplementedError, match="SparseTensor"):
        L.Hashing(3, output_mode="one_hot", sparse=True)
    layer = L.Hashing(7, mask_value=0, salt=[1, 2], output_mode="count")
    clone = L.Hashing.from_config(layer.get_config())
    x = FIX["hashing_x"]
    np.testing.assert_array_equal(clone(x).numpy(), layer(x).numpy())
    inp = tf.keras.Input((3,), dtype="int64")
    model = tf.keras.Model(inp, L.Hashing(7)(inp))
    assert model(x).dtype == tf.int64
    np.testing.assert_array_equal(model(x).numpy(), FIX["hashing_int_7"])
    ds = tf.data.Dataset.from_tensor_slices(x).batch(2).map(L.Hashing(7))
    np.testing.assert_array_equal(next(iter(ds)).numpy(), FIX["hashing_int_7"])


def test_hashed_crossing_matches_tf():
    a, b = FIX["cross_a"], FIX["cross_b"]
    np.testing.assert_array_equal(L.HashedCrossing(5)((a, b)).numpy(), FIX["cross_int_5"])
    np.testing.assert_array_equal(L.HashedCrossing(2**62)((a, b)).numpy(), FIX["cross_int_big"])
    one_hot = L.HashedCrossing(5, output_mode="one_hot")
    np.testing.assert_array_equal(one_hot((a, b)).numpy(), FIX["cross_one_hot_5"])
    i1, i2 = tf.keras.Input((1,), dtype="int64"), tf.keras.Input((1,), dtype="int64")
    model = tf.keras.Model([i1, i2], one_hot([i1, i2]))
    assert model.output_shape == (None, 5)
    np.testing.assert_array_equal(model([a[:, None], b[:, None]]).numpy(), FIX["cross_one_hot_5"])
    assert L.HashedCrossing.from_config(one_hot.get_config()).get_config() == one_hot.get_config()
    with pytest.raises(ValueError, match="crosser.*at least two"):
        L.HashedCrossing(3, name="crosser")([a])
    with pytest.raises(ValueError, match="equal shape"):
        L.HashedCrossing(3)((a, b[:2]))
    with pytest.raises(ValueError, match="output_mode"):
        L.HashedCrossing(3, output_mode="count")


def test_discretization_adapt_matches_tf_quantiles():
    d = FIX["disc_data"]
    for nb in (2, 4, 7):
        layer = L.Discretization(num_bins=nb, epsilon=0.01)
        layer.adapt(d)
        np.testing.assert_allclose(layer.bin_boundaries, FIX[f"disc_bins_{nb}"], rtol=1e-6)
    layer = L.Discretization(num_bins=5)
    layer.adapt(tf.data.Dataset.from_tensor_slices(d.reshape(-1, 1)).batch(37))
    np.testing.assert_allclose(layer.bin_boundaries, FIX["disc_bins_ds_5"], rtol=1e-6)
    out = layer(d.reshape(-1, 1))
    assert out.dtype == tf.int64
    counts = np.bincount(out.numpy().ravel(), minlength=5)
    assert counts.min() >= 50 and counts.max() <= 70  # about 60 per quantile bin


def test_discretization_boundaries_and_output_modes():
    x = np.array([[-1.5, 1.0, 3.4, 0.5], [0.0, 3.0, 1.3, 0.0]], "float32")
    layer = L.Discretization(bin_boundaries=[0.0, 1.0, 2.0])
    np.testing.assert_array_equal(layer(x).numpy(), [[0, 2, 3, 1], [1, 3, 2, 1]])
    one_hot = L.Discretization(bin_boundaries=[0.0, 1.0], output_mode="one_hot")
    np.testing.assert_array_equal(one_hot([0.5, -1.0]).numpy(), [[0, 1, 0], [1, 0, 0]])
    count = L.Discretization(bin_boundaries=[0.0, 1.0, 2.0], output_mode="count")
    np.testing.assert_array_equal(count(x).numpy(), [[1, 1, 1, 1], [0, 2, 1, 1]])
    run_layer_test(L.Discretization, {"bin_boundaries": [-0.5, 0.0, 0.5]}, input_shape=(2, 3),
                   check_gradients_=False)  # fmt: skip
    inp = tf.keras.Input((4,))
    model = tf.keras.Model(inp, L.Discretization([0.0, 1.0, 2.0], output_mode="multi_hot")(inp))
    assert model.output_shape == (None, 4)
    np.testing.assert_array_equal(model(x).numpy(), [[1, 1, 1, 1], [0, 1, 1, 1]])
    with pytest.raises(ValueError, match="should not be set"):
        L.Discretization(bin_boundaries=[0.0], num_bins=3)
    with pytest.raises(ValueError, match="Cannot adapt"):
        L.Discretization(bin_boundaries=[0.0]).adapt(x)
    with pytest.raises(ValueError, match="sorted"):
        L.Discretization(bin_boundaries=[1.0, 0.0])


def test_category_encoding_modes_weights_and_errors():
    x = np.array([[0, 1], [0, 0], [1, 2], [3, 1]])
    multi = L.CategoryEncoding(num_tokens=4, output_mode="multi_hot")
    np.testing.assert_array_equal(
        multi(x).numpy(), [[1, 1, 0, 0], [1, 0, 0, 0], [0, 1, 1, 0], [0, 1, 0, 1]]
    )
    one_hot = L.CategoryEncoding(num_tokens=4, output_mode="one_hot")
    np.testing.assert_array_equal(one_hot([3, 2, 0, 1]).numpy(), np.eye(4)[[3, 2, 0, 1]])
    count = L.CategoryEncoding(num_tokens=4, output_mode="count")
    w = np.array([[0.1, 0.2], [0.1, 0.1], [0.2, 0.3], [0.4, 0.2]], "float32")
    np.testing.assert_allclose(
        count(x, count_weights=w).numpy(),
        [[0.1, 0.2, 0, 0], [0.2, 0, 0, 0], [0, 0.2, 0.3, 0], [0, 0.2, 0, 0.4]], rtol=1e-6,
    )  # fmt: skip
    run_layer_test(L.CategoryEncoding, {"num_tokens": 5, "output_mode": "count"},
                   input_data=np.array([[1, 4, 4], [0, 2, 3]]), expected_output_shape=(2, 5),
                   check_gradients_=False)  # fmt: skip
    with pytest.raises(tf.errors.InvalidArgumentError, match="0 <= values < num_tokens"):
        multi(np.array([[4]]))
    with pytest.raises(ValueError, match="count_weights"):
        multi(x, count_weights=w)
    with pytest.raises(ValueError, match="num_tokens"):
        L.CategoryEncoding(output_mode="count")
    with pytest.raises(ValueError, match="maximum supported output rank is 2"):
        one_hot(np.zeros((2, 2), "int64"))
    inp = tf.keras.Input((2,), dtype="int64")
    model = tf.keras.Model(inp, L.Dense(3)(L.CategoryEncoding(4)(inp)))
    assert model(x).shape == (4, 3)


def test_adapted_discretization_survives_config_and_keras_file(tmp_path):
    d = FIX["disc_data"].reshape(-1, 1)
    layer = L.Discretization(num_bins=4, output_mode="one_hot")
    layer.adapt(d)
    clone = L.Discretization.from_config(layer.get_config())
    assert clone.bin_boundaries == layer.bin_boundaries and clone.num_bins == 4
    np.testing.assert_array_equal(clone(d).numpy(), layer(d).numpy())
    clone.adapt(d[:100])  # still adaptable: num_bins is kept
    assert clone.bin_boundaries != layer.bin_boundaries
    inp = tf.keras.Input((1,))
    model = tf.keras.Model(inp, L.Dense(2)(layer(inp)))
    path = str(tmp_path / "disc.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(d, verbose=0), model.predict(d, verbose=0))
    with pytest.raises(ValueError, match="should not be set"):
        L.Discretization(bin_boundaries=[0.0, 1.0], num_bins=2)
