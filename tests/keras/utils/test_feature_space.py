"""tf.keras.utils.FeatureSpace, checked against tf_keras 2.21's outputs."""

import numpy as np
import pytest

import layerflow as tf

FS = tf.keras.utils.FeatureSpace
RAW = {
    "f": [0.0, 0.1, 0.2, 0.3, 0.7],
    "s": ["zero", "one", "two", "three", "one"],
    "i": [0, 1, 2, 3, 3],
    "h": ["a", "b", "c", "d", "e"],
    "d": [0.1, 0.5, 0.9, 0.3, 0.2],
    "k": [5, 6, 7, 8, 9],
}
# tf_keras 2.21's FeatureSpace on RAW (adapted on it), output_mode="dict" with every kind of
# feature, then output_mode="concat" of f, s, i with a cross, batched and for one sample.
TF_KERAS_DICT = {
    "d": [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0]],
    "f": [
        [-1.075887680053711],
        [-0.662084698677063],
        [-0.24828173220157623],
        [0.1655212789773941],
        [1.8207330703735352],
    ],
    "h": [
        [0.0, 0.0, 0.0, 1.0],
        [0.0, 0.0, 1.0, 0.0],
        [1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
    ],
    "i": [
        [0.0, 0.0, 0.0, 0.0, 1.0],
        [0.0, 0.0, 0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0, 0.0],
    ],
    "k": [[1], [2], [3], [2], [0]],
    "s": [
        [0.0, 0.0, 1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 1.0, 0.0],
        [0.0, 0.0, 0.0, 0.0, 1.0],
        [0.0, 1.0, 0.0, 0.0, 0.0],
    ],
    "s_X_i": [
        [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    ],
}
TF_KERAS_CONCAT = [
    [
        -1.075887680053711,
        0.0,
        0.0,
        0.0,
        0.0,
        1.0,
        0.0,
        0.0,
        1.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        1.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    [
        -0.662084698677063,
        0.0,
        0.0,
        0.0,
        1.0,
        0.0,
        0.0,
        1.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        1.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    [
        -0.24828173220157623,
        0.0,
        0.0,
        1.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        1.0,
        0.0,
        0.0,
        0.0,
        0.0,
        1.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    [
        0.1655212789773941,
        0.0,
        1.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        1.0,
        0.0,
        0.0,
        0.0,
        0.0,
        1.0,
        0.0,
        0.0,
        0.0,
    ],
    [
        1.8207330703735352,
        0.0,
        1.0,
        0.0,
        0.0,
        0.0,
        0.0,
        1.0,
        0.0,
        0.0,
        0.0,
        0.0,
        1.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
]
TF_KERAS_ONE = [
    -0.662084698677063,
    0.0,
    0.0,
    0.0,
    1.0,
    0.0,
    0.0,
    1.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    1.0,
    0.0,
    0.0,
    0.0,
    0.0,
]


def _dict_space():
    return FS(
        features={
            "f": "float_normalized",
            "s": "string_categorical",
            "i": "integer_categorical",
            "h": FS.string_hashed(num_bins=4),
            "d": FS.float_discretized(num_bins=3),
            "k": FS.integer_hashed(num_bins=5, output_mode="int"),
        },
        crosses=[FS.cross(("s", "i"), crossing_dim=8)],
        output_mode="dict",
    )


def _concat_space():
    return FS(
        features={"f": "float_normalized", "s": "string_categorical", "i": "integer_categorical"},
        crosses=[("s", "i")],
        crossing_dim=8,
    )


def test_dict_output_matches_tf_keras():
    space = _dict_space()
    space.adapt(tf.data.Dataset.from_tensor_slices(RAW))
    out = space(RAW)
    assert sorted(out) == sorted(TF_KERAS_DICT)
    for name, want in TF_KERAS_DICT.items():
        np.testing.assert_allclose(out[name].numpy(), want, rtol=1e-5, atol=1e-6, err_msg=name)
    assert out["k"].dtype == tf.int64


def test_concat_output_matches_tf_keras_batched_and_single():
    space = _concat_space()
    space.adapt(tf.data.Dataset.from_tensor_slices(RAW).batch(2))  # batched data adapts too
    raw = {k: RAW[k] for k in "fsi"}
    np.testing.assert_allclose(space(raw).numpy(), TF_KERAS_CONCAT, rtol=1e-5, atol=1e-6)
    one = space({"f": 0.1, "s": "one", "i": 1})
    np.testing.assert_allclose(one.numpy(), TF_KERAS_ONE, rtol=1e-5, atol=1e-6)
    ds = tf.data.Dataset.from_tensor_slices(raw).batch(5).map(space)
    np.testing.assert_allclose(next(iter(ds)).numpy(), TF_KERAS_CONCAT, rtol=1e-5, atol=1e-6)


def test_functional_model_on_encoded_features_trains():
    rng = np.random.default_rng(0)
    n = 200
    raw = {
        "x": rng.normal(size=n).astype("float32"),
        "c": rng.choice(["red", "green", "blue"], size=n),
    }
    y = ((raw["x"] > 0) ^ (raw["c"] == "red")).astype("float32")
    space = FS({"x": "float_normalized", "c": "string_categorical"})
    space.adapt(tf.data.Dataset.from_tensor_slices(raw))
    inputs = space.get_inputs()
    assert sorted(inputs) == ["c", "x"] and inputs["c"].dtype == tf.string
    encoded = space.get_encoded_features()
    assert tuple(encoded.shape) == (None, 5)  # 4 string indices (OOV + 3) + x
    hidden = tf.keras.layers.Dense(16, activation="relu")(encoded)
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(1, activation="sigmoid")(hidden))
    model.compile(tf.keras.optimizers.Adam(0.05), "binary_crossentropy", metrics=["accuracy"])
    data = tf.data.Dataset.from_tensor_slices(
        ({k: np.asarray(v)[:, None] for k, v in raw.items()}, y)
    ).batch(32)
    hist = model.fit(data, epochs=30, verbose=0)
    assert hist.history["accuracy"][-1] > 0.9


def test_config_round_trip():
    space = _dict_space()
    config = space.get_config()
    again = FS.from_config(config)
    assert again.output_mode == "dict" and [c.name for c in again.crosses] == ["s_X_i"]
    assert type(again.features["h"].preprocessor) is tf.keras.layers.Hashing
    assert again.features["k"].output_mode == "int"
    again.adapt(tf.data.Dataset.from_tensor_slices(RAW))
    np.testing.assert_allclose(again(RAW)["s"].numpy(), TF_KERAS_DICT["s"])


def test_errors():
    with pytest.raises(ValueError, match="cannot be None or empty"):
        FS({})
    with pytest.raises(ValueError, match="Invalid feature type"):
        FS({"a": "complex_number"})
    with pytest.raises(ValueError, match="unknown features"):
        FS({"a": "float"}, crosses=[("a", "b")])
    with pytest.raises(ValueError, match="output_mode"):
        FS({"a": "float"}, output_mode="list")
    space = FS({"a": "float_normalized"})
    with pytest.raises(ValueError, match="call `.adapt"):
        space({"a": [1.0]})
    with pytest.raises(ValueError, match="can only be called on a tf.data.Dataset"):
        space.adapt({"a": [1.0]})
    with pytest.raises(ValueError, match="has not been encoded"):
        FS({"a": FS.integer_hashed(4, output_mode="int")}).get_encoded_features()
    plain = FS({"a": "float"})  # nothing to adapt: usable at once
    assert plain({"a": [1.0, 2.0]}).numpy().tolist() == [[1.0], [2.0]]
    with pytest.raises(ValueError, match="only be called with a dict"):
        plain([1.0])
    with pytest.raises(NotImplementedError, match="get_config"):
        plain.save("space.keras")
