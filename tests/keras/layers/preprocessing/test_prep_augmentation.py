"""Image augmentation layers: the projective-transform kernel against TF, exact geometry for
known parameters, training-only behaviour (direct calls, fit, predict), seeds, configs."""

import os

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.ops.image_transform_ops import transform

L = tf.keras.layers
FIX = np.load(os.path.join(os.path.dirname(__file__), "..", "fixtures", "preprocessing_tf.npz"))
X = np.random.default_rng(0).uniform(0, 255, (4, 6, 6, 3)).astype("float32")

ALL = [
    (L.RandomFlip, {"seed": 1}),
    (L.RandomRotation, {"factor": 0.2, "seed": 1}),
    (L.RandomZoom, {"height_factor": 0.3, "seed": 1}),
    (L.RandomTranslation, {"height_factor": 0.2, "width_factor": 0.1, "seed": 1}),
    (L.RandomCrop, {"height": 4, "width": 5, "seed": 1}),
    (L.RandomContrast, {"factor": 0.5, "seed": 1}),
    (L.RandomBrightness, {"factor": 0.2, "seed": 1}),
    (L.RandomHeight, {"factor": 0.3, "seed": 2}),
    (L.RandomWidth, {"factor": 0.3, "seed": 2}),
]


@pytest.mark.parametrize("fill_mode", ["reflect", "wrap", "constant", "nearest"])
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
def test_transform_matches_tensorflow(fill_mode, interpolation):
    got = transform(FIX["transform_images"], FIX["transform_matrices"], interpolation, fill_mode,
                    0.5)  # fmt: skip
    np.testing.assert_allclose(got.numpy(), FIX[f"transform_{fill_mode}_{interpolation}"],
                               atol=1e-5)  # fmt: skip


def test_transform_gradient_flows_to_images():
    img = tf.constant(FIX["transform_images"])
    with tf.GradientTape() as tape:
        tape.watch(img)
        y = tf.reduce_sum(transform(img, FIX["transform_matrices"], "bilinear", "constant"))
    g = tape.gradient(y, img).numpy()
    assert g.shape == img.shape and np.abs(g).sum() > 0


@pytest.mark.parametrize("cls,kwargs", ALL)
def test_training_only_seeded_and_config(cls, kwargs):
    layer = cls(**kwargs)
    augmented = layer(X)  # a direct call trains by default, as in tf_keras
    again = cls.from_config(layer.get_config())(X)
    np.testing.assert_allclose(again.numpy(), augmented.numpy(), rtol=1e-6)
    inference = layer(X, training=False)
    if cls is L.RandomCrop:
        assert inference.shape == (4, 4, 5, 3)  # a centre crop + resize at inference
    else:
        np.testing.assert_array_equal(inference.numpy(), X)
        if cls not in (L.RandomHeight, L.RandomWidth):
            assert not np.allclose(augmented.numpy(), X)
    predicted = tf.keras.Sequential([tf.keras.Input((6, 6, 3)), cls(**kwargs)]).predict(
        X, verbose=0
    )
    np.testing.assert_allclose(predicted, inference.numpy())
    unbatched = cls(**kwargs)(X[0])
    assert len(unbatched.shape) == 3


def test_known_geometry():
    img = np.arange(16, dtype="float32").reshape(1, 4, 4, 1)
    quarter = L.RandomRotation((0.25, 0.25), interpolation="nearest")(img)
    # A positive angle turns counter-clockwise, as in TF.
    np.testing.assert_allclose(quarter.numpy()[0, :, :, 0], np.rot90(img[0, :, :, 0], 1),
                               atol=1e-5)  # fmt: skip
    shift = L.RandomTranslation((0.25, 0.25), (0.0, 0.0), fill_mode="constant",
                                fill_value=-1.0)(img)  # fmt: skip
    np.testing.assert_allclose(shift.numpy()[0, :, :, 0],
                               np.vstack([-np.ones((1, 4)), img[0, :3, :, 0]]))  # fmt: skip
    wrapped = L.RandomTranslation((0.0, 0.0), (-0.25, -0.25), fill_mode="wrap")(img)
    np.testing.assert_allclose(wrapped.numpy()[0, :, :, 0], np.roll(img[0, :, :, 0], -1, 1))
    zoom_in = L.RandomZoom((-0.5, -0.5), interpolation="nearest")(img)
    assert zoom_in.numpy()[0, :, :, 0].max() <= 15 and np.unique(zoom_in.numpy()).size == 4
    flips = L.RandomFlip("horizontal", seed=0)(np.repeat(img, 200, axis=0)).numpy()
    flipped = (flips[:, 0, 0, 0] == 3).mean()
    assert 0.4 < flipped < 0.6
    bright = L.RandomBrightness((0.1, 0.1), value_range=(0, 1))(np.full((1, 2, 2, 1), 0.95, "f"))
    np.testing.assert_allclose(bright.numpy(), 1.0)  # clipped to the value range
    contrast = L.RandomContrast((0.5, 0.5))  # factor drawn from [0.5, 1.5]
    out = contrast(np.array([[[[10.0]], [[30.0]]]], "float32")).numpy().ravel()
    assert abs(out.mean() - 20) < 1e-4 and 0.5 * 20 - 1e-4 <= out[1] - out[0] <= 1.5 * 20 + 1e-4


def test_training_honoured_inside_fit_and_errors():
    seen = []

    class Record(L.Layer):
        def call(self, x):
            seen.append(np.array(x.numpy()))
            return x

    model = tf.keras.Sequential(
        [tf.keras.Input((6, 6, 3)), L.RandomBrightness(0.5, seed=0), Record(), L.Flatten(),
         L.Dense(1)]
    )  # fmt: skip
    model.compile("sgd", "mse")
    model.fit(X, np.ones((4, 1)), epochs=1, batch_size=4, verbose=0)
    assert not np.allclose(seen[-1], X)  # augmented while training
    model.predict(X, batch_size=4, verbose=0)
    np.testing.assert_array_equal(seen[-1], X)  # identity at inference
    with pytest.raises(ValueError, match="flipper.*unknown mode"):
        L.RandomFlip("diagonal", name="flipper")
    with pytest.raises(NotImplementedError, match="fill_mode"):
        L.RandomRotation(0.1, fill_mode="mirror")
    with pytest.raises(ValueError, match="rot.*rank 3"):
        L.RandomRotation(0.1, name="rot")(np.ones((2, 3), "float32"))
    with pytest.raises(ValueError, match="between \\[-1, 1\\]"):
        L.RandomTranslation(1.5, 0.1)
    with pytest.raises(ValueError, match="negative"):
        L.RandomContrast(-0.1)
    ds = tf.data.Dataset.from_tensor_slices(X).batch(2).map(lambda x: L.RandomFlip(seed=1)(x))
    assert next(iter(ds)).shape == (2, 6, 6, 3)


# RandomHeight/RandomWidth declare the resized axis unknown (None), as tf_keras does.
@pytest.mark.parametrize(
    "cls,kwargs",
    [c for c in ALL if c[0] not in (L.RandomCrop, L.RandomHeight, L.RandomWidth)],
)
def test_layer_harness_at_inference(cls, kwargs):
    from layerflow._src.keras.utils.testing import run_layer_test

    out = run_layer_test(cls, kwargs, input_shape=(2, 6, 6, 3), training=False)
    assert out.shape == (2, 6, 6, 3)
