"""Loss classes keep Keras's constructor contract: default names, configs, attributes, round trip.

These pin what the shared cross-entropy base classes must preserve (names, config keys and
order, `from_logits`, the function each class wraps).
"""

import numpy as np
import pytest

import layerflow as tf

L = tf.keras.losses


@pytest.mark.parametrize(
    ("cls", "fn", "config"),
    [
        (
            L.SparseCategoricalCrossentropy,
            L.sparse_categorical_crossentropy,
            {
                "reduction": "auto",
                "name": "sparse_categorical_crossentropy",
                "from_logits": False,
                "ignore_class": None,
            },
        ),
        (
            L.CategoricalCrossentropy,
            L.categorical_crossentropy,
            {
                "reduction": "auto",
                "name": "categorical_crossentropy",
                "from_logits": False,
                "label_smoothing": 0.0,
                "axis": -1,
            },
        ),
        (
            L.BinaryCrossentropy,
            L.binary_crossentropy,
            {
                "reduction": "auto",
                "name": "binary_crossentropy",
                "from_logits": False,
                "label_smoothing": 0.0,
                "axis": -1,
            },
        ),
    ],
)
def test_crossentropy_defaults_and_round_trip(cls, fn, config):
    loss = cls()
    assert loss.name == config["name"]
    assert loss.from_logits is False
    assert loss.fn is fn
    assert loss.get_config() == config
    assert list(loss.get_config()) == list(config)
    again = L.deserialize(L.serialize(cls(from_logits=True, reduction="sum", name="x")))
    assert type(again) is cls
    assert again.from_logits is True and again.reduction == "sum" and again.name == "x"


def test_crossentropy_options_reach_the_function():
    y_true = np.array([[0.0, 1.0, 0.0]], np.float32)
    logits = np.array([[1.0, 3.0, -1.0]], np.float32)
    smoothed = L.CategoricalCrossentropy(from_logits=True, label_smoothing=0.3)(y_true, logits)
    direct = L.categorical_crossentropy(y_true, logits, from_logits=True, label_smoothing=0.3)
    np.testing.assert_allclose(float(smoothed), float(direct[0]), rtol=1e-6)
    plain = L.CategoricalCrossentropy(from_logits=True)(y_true, logits)
    assert abs(float(plain) - float(smoothed)) > 1e-3  # the option made a difference

    b_true = np.array([[1.0, 0.0]], np.float32)
    b_logits = np.array([[2.0, -1.0]], np.float32)
    got = L.BinaryCrossentropy(from_logits=True, label_smoothing=0.2)(b_true, b_logits)
    smoothed_true = b_true * 0.8 + 0.1
    p = 1 / (1 + np.exp(-b_logits))
    ref = -(smoothed_true * np.log(p) + (1 - smoothed_true) * np.log(1 - p)).mean()
    np.testing.assert_allclose(float(got), ref, rtol=1e-5)

    labels = np.array([0, 2])
    scores = np.array([[2.0, 0.0, 1.0], [0.0, 1.0, 3.0]], np.float32)
    masked = L.SparseCategoricalCrossentropy(from_logits=True, ignore_class=2, reduction="none")
    per_sample = masked(labels, scores).numpy()
    assert per_sample[1] == 0.0 and per_sample[0] > 0.0


def test_crossentropy_classes_are_distinct():
    # A shared base must not make one cross-entropy an instance of another.
    assert not isinstance(L.BinaryCrossentropy(), L.CategoricalCrossentropy)
    assert not isinstance(L.CategoricalCrossentropy(), L.BinaryCrossentropy)
    assert not isinstance(L.SparseCategoricalCrossentropy(), L.CategoricalCrossentropy)
