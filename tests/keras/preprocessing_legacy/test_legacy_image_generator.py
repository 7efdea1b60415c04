"""`ImageDataGenerator` and its iterators against real tf_keras outputs; `fit` trains on a flow."""

import os
import warnings

import numpy as np
import pytest

import layerflow as tf

pytest.importorskip("scipy")
image = tf.keras.preprocessing.image


def _augmenting():
    return image.ImageDataGenerator(
        rotation_range=40, width_shift_range=0.2, height_shift_range=3, shear_range=15,
        zoom_range=0.3, channel_shift_range=20.0, horizontal_flip=True, vertical_flip=True,
        brightness_range=(0.5, 1.5), fill_mode="nearest",
    )  # fmt: skip


def test_get_random_transform_matches_tf_keras(ref):
    gen = _augmenting()
    for seed, expect in zip((1, 2, 3), ref["random_transform"]):
        got = gen.get_random_transform((7, 9, 3), seed=seed)
        assert set(got) == set(expect)
        for k, v in expect.items():
            assert float(got[k]) == pytest.approx(v, rel=1e-12), k
    gen2 = image.ImageDataGenerator(width_shift_range=[-2, 1, 3], height_shift_range=0.5)
    got = gen2.get_random_transform((7, 9, 3), seed=5)
    for k, v in ref["random_transform_list"].items():
        assert float(got[k]) == pytest.approx(v, rel=1e-12), k


def test_random_transform_image_matches_tf_keras(ref):
    pytest.importorskip("PIL")
    img = np.asarray(ref["img"], "float32")
    got = _augmenting().random_transform(img, seed=4)
    np.testing.assert_allclose(got, ref["random_transform_img"], rtol=1e-4, atol=1e-2)


@pytest.mark.parametrize("name", ["feat", "zca", "samplewise"])
def test_fit_and_standardize_match_tf_keras(ref, name):
    xs = np.asarray(ref["xs"], "float32")
    r = ref["std_" + name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zca / std options override featurewise_center
        gen = image.ImageDataGenerator(**r["kwargs"])
    gen.fit(xs)
    np.testing.assert_allclose(gen.standardize(np.copy(xs[0])), r["out"], rtol=1e-4, atol=1e-4)


def test_fit_with_augmentation_matches_tf_keras(ref):
    xs = np.asarray(ref["xs"], "float32")
    np.random.seed(3)
    gen = image.ImageDataGenerator(featurewise_center=True, featurewise_std_normalization=True,
                                   rotation_range=30, horizontal_flip=True)  # fmt: skip
    gen.fit(xs, augment=True, rounds=2, seed=9)
    np.testing.assert_allclose(gen.mean, ref["fit_augment"]["mean"], rtol=1e-5)
    np.testing.assert_allclose(gen.std, ref["fit_augment"]["std"], rtol=1e-5)


def test_generator_errors_and_warnings():
    with pytest.raises(ValueError, match="zoom_range"):
        image.ImageDataGenerator(zoom_range=(1, 2, 3))
    with pytest.raises(ValueError, match="validation_split"):
        image.ImageDataGenerator(validation_split=1.5)
    with pytest.raises(ValueError, match="data_format"):
        image.ImageDataGenerator(data_format="channels_middle")
    with pytest.raises(ValueError, match="brightness_range"):
        image.ImageDataGenerator(brightness_range=0.5)
    with pytest.raises(ValueError, match="fill_mode"):
        image.ImageDataGenerator(fill_mode="mirror")
    with pytest.warns(UserWarning, match="featurewise_center"):
        gen = image.ImageDataGenerator(featurewise_std_normalization=True)
    with pytest.warns(UserWarning, match="hasn't been fit"):
        gen.standardize(np.ones((2, 2, 3), "float32"))
    with pytest.raises(ValueError, match="rank 4"):
        gen.fit(np.ones((2, 2, 3)))


def test_flow_matches_tf_keras(ref):
    xs = np.asarray(ref["xs"], "float32")
    np.random.seed(0)
    it = image.ImageDataGenerator(horizontal_flip=True).flow(
        xs, np.arange(6), batch_size=4, shuffle=True, seed=11
    )
    assert isinstance(it, image.NumpyArrayIterator) and isinstance(it, image.Iterator)
    assert isinstance(it, tf.keras.utils.Sequence) and len(it) == 2
    (b0x, b0y), (b1x, b1y) = it[0], it[1]
    r = ref["flow"]
    np.testing.assert_allclose(b0x, r["b0x"])
    np.testing.assert_array_equal(b0y, r["b0y"])
    np.testing.assert_allclose(b1x, r["b1x"])
    np.testing.assert_array_equal(b1y, r["b1y"])


def test_flow_iteration_weights_misc_subset_and_errors(tmp_path):
    xs = np.arange(5 * 2 * 2 * 1, dtype="float32").reshape(5, 2, 2, 1)
    gen = image.ImageDataGenerator(validation_split=0.4)
    it = gen.flow(xs, np.arange(5), batch_size=2, shuffle=False, sample_weight=np.ones(5) * 2)
    batches = [next(it) for _ in range(4)]  # endless: wraps after 3 batches
    assert [len(b[0]) for b in batches] == [2, 2, 1, 2]
    np.testing.assert_array_equal(batches[3][1], [0, 1])
    np.testing.assert_array_equal(batches[0][2], [2, 2])
    x_list, y = gen.flow((xs, np.arange(5) * 10), np.arange(5), shuffle=False, batch_size=5)[0]
    np.testing.assert_array_equal(x_list[1], np.arange(5) * 10)
    val = gen.flow(xs, None, subset="validation", shuffle=False, batch_size=8)[0]
    np.testing.assert_array_equal(val, xs[:2])
    with pytest.raises(ValueError, match="different number of classes"):
        gen.flow(xs, np.array([0, 0, 1, 1, 1]), subset="training")
    with pytest.raises(ValueError, match="same length"):
        gen.flow(xs, np.arange(4))
    with pytest.raises(ValueError, match="rank 4"):
        gen.flow(xs[0])
    with pytest.raises(ValueError, match="length 3"):
        it[3]
    pytest.importorskip("PIL")
    gen.flow(np.ones((2, 4, 4, 3)), batch_size=2, save_to_dir=str(tmp_path), save_prefix="p")[0]
    assert sorted(f.split("_")[:2] for f in os.listdir(tmp_path)) == [["p", "0"], ["p", "1"]]


def _write_dir(root, pix):
    from PIL import Image

    files = [("cat", "a.png"), ("cat", "b.png"), ("dog", "c.png"), ("dog", "sub/d.png"),
             ("zebra", "e.png")]  # fmt: skip
    for k, (cls, name) in enumerate(files):
        path = root / cls / name
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pix[k]).save(path)


def test_flow_from_directory_matches_tf_keras(ref, tmp_path, capsys):
    pytest.importorskip("PIL")
    _write_dir(tmp_path, np.asarray(ref["dir_pixels"], "uint8"))
    r = ref["dir"]
    gen = image.ImageDataGenerator(rescale=1 / 255.0, rotation_range=20)
    it = gen.flow_from_directory(str(tmp_path), target_size=(4, 5), batch_size=3, shuffle=False,
                                 seed=2, class_mode="categorical")  # fmt: skip
    assert "Found 5 images belonging to 3 classes." in capsys.readouterr().out
    assert isinstance(it, image.DirectoryIterator)
    assert [f.replace(os.sep, "/") for f in it.filenames] == r["filenames"]
    assert it.classes.tolist() == r["classes"] and it.class_indices == r["class_indices"]
    bx, by = it[0]
    np.testing.assert_allclose(bx, r["bx"], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(by, r["by"])
    it2 = gen.flow_from_directory(str(tmp_path), target_size=(6, 8), color_mode="grayscale",
                                  batch_size=5, shuffle=False, class_mode="sparse",
                                  classes=["dog", "cat"])  # fmt: skip
    gx, gy = it2[0]
    assert gx.shape == (4, 6, 8, 1)
    np.testing.assert_allclose(gx, r["gray_x"], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(gy, r["gray_y"])
    vs = image.ImageDataGenerator(validation_split=0.5)
    tr = vs.flow_from_directory(str(tmp_path), target_size=(6, 8), subset="training")
    va = vs.flow_from_directory(str(tmp_path), target_size=(6, 8), subset="validation")
    assert [f.replace(os.sep, "/") for f in tr.filenames] == r["train_files"]
    assert [f.replace(os.sep, "/") for f in va.filenames] == r["val_files"]
    only_x = vs.flow_from_directory(str(tmp_path), target_size=(2, 2), class_mode=None)[0]
    assert isinstance(only_x, np.ndarray) and only_x.shape == (5, 2, 2, 3)
    x_in, y_in = vs.flow_from_directory(str(tmp_path), target_size=(2, 2), class_mode="input")[0]
    np.testing.assert_array_equal(x_in, y_in)
    with pytest.raises(ValueError, match="class_mode"):
        vs.flow_from_directory(str(tmp_path), class_mode="multi")
    with pytest.raises(ValueError, match="color mode"):
        vs.flow_from_directory(str(tmp_path), color_mode="cmyk")
    with pytest.raises(FileNotFoundError, match="not a directory"):
        vs.flow_from_directory(str(tmp_path / "missing"))


def test_model_fit_trains_on_image_data_generator_flow():
    rng = np.random.RandomState(0)
    y = (np.arange(32) % 2).astype("float32")  # bright images are class 1
    x = (rng.uniform(0, 120, size=(32, 6, 6, 1)) + 120 * y[:, None, None, None]).astype("float32")
    gen = image.ImageDataGenerator(rescale=1 / 255.0, horizontal_flip=True, vertical_flip=True)
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential(
        [tf.keras.layers.Flatten(), tf.keras.layers.Dense(1, activation="sigmoid")]
    )
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="binary_crossentropy")
    history = model.fit(gen.flow(x, y, batch_size=8, seed=1), epochs=5, verbose=0)
    losses = history.history["loss"]
    assert len(losses) == 5 and losses[-1] < 0.8 * losses[0]
    assert model.evaluate(gen.flow(x, y, batch_size=8, shuffle=False), verbose=0) < losses[0]
