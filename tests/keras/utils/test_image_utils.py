"""load_img / img_to_array / array_to_img / save_img and image_dataset_from_directory
(Pillow; file order and splits checked against tf_keras 2.21 on the same folder)."""

import io

import numpy as np
import pytest

import layerflow as tf

Image = pytest.importorskip("PIL.Image")


def test_save_and_load_round_trip(tmp_path):
    rng = np.random.RandomState(0)
    x = rng.randint(0, 256, (5, 7, 3)).astype("float32")
    tf.keras.utils.save_img(tmp_path / "a.png", x, scale=False)
    img = tf.keras.utils.load_img(tmp_path / "a.png")
    assert img.mode == "RGB" and img.size == (7, 5)
    back = tf.keras.utils.img_to_array(img)
    assert back.dtype == np.float32 and back.shape == (5, 7, 3)
    np.testing.assert_array_equal(back, x)
    first = tf.keras.utils.img_to_array(img, data_format="channels_first", dtype="uint8")
    assert first.shape == (3, 5, 7) and first.dtype == np.uint8
    gray = tf.keras.utils.load_img(str(tmp_path / "a.png"), color_mode="grayscale")
    assert tf.keras.utils.img_to_array(gray).shape == (5, 7, 1)
    rgba = tf.keras.utils.load_img(io.BytesIO((tmp_path / "a.png").read_bytes()), color_mode="rgba")
    assert rgba.mode == "RGBA"


def test_resizing_and_keep_aspect_ratio(tmp_path):
    x = np.zeros((4, 8, 3), "float32")
    x[:, 2:6] = 255  # a white centre, black borders left and right
    tf.keras.utils.save_img(tmp_path / "w.png", x, scale=False)
    small = tf.keras.utils.load_img(tmp_path / "w.png", target_size=(2, 4))
    assert small.size == (4, 2)
    crop = tf.keras.utils.load_img(tmp_path / "w.png", target_size=(4, 4), keep_aspect_ratio=True)
    assert tf.keras.utils.img_to_array(crop).min() == 255  # the centre 4x4 square only
    with pytest.raises(ValueError, match="Invalid interpolation"):
        tf.keras.utils.load_img(tmp_path / "w.png", target_size=(2, 2), interpolation="cubic")
    with pytest.raises(ValueError, match="color_mode"):
        tf.keras.utils.load_img(tmp_path / "w.png", color_mode="cmyk")
    with pytest.raises(TypeError, match="path-like"):
        tf.keras.utils.load_img(42)


def test_array_to_img_scaling_and_modes():
    img = tf.keras.utils.array_to_img(np.array([[[0.0], [0.5]], [[1.0], [0.25]]]))
    assert img.mode == "L" and np.asarray(img).ravel().tolist() == [0, 127, 255, 63]
    assert tf.keras.utils.array_to_img(np.zeros((2, 2, 4))).mode == "RGBA"
    big = tf.keras.utils.array_to_img(np.full((1, 1, 1), 1000.0), scale=False)
    assert big.mode == "I" and big.getpixel((0, 0)) == 1000
    chw = tf.keras.utils.array_to_img(np.zeros((3, 2, 5)), data_format="channels_first")
    assert chw.size == (5, 2)
    with pytest.raises(ValueError, match="rank 3"):
        tf.keras.utils.array_to_img(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="channel number"):
        tf.keras.utils.array_to_img(np.zeros((2, 2, 2)))


def test_save_img_rgba_as_jpeg_warns_and_converts(tmp_path):
    with pytest.warns(UserWarning, match="RGBA"):
        tf.keras.utils.save_img(tmp_path / "a.jpg", np.zeros((2, 2, 4)), file_format="jpeg")
    with Image.open(tmp_path / "a.jpg") as img:
        assert img.mode == "RGB"


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "imgs"
    for c in ["b_dog", "a_cat", "c_eel"]:
        (root / c / "sub").mkdir(parents=True)
        for i in range(4):
            pixels = np.full((5, 6, 3), i * 10 + len(c), np.uint8)
            Image.fromarray(pixels).save(root / c / f"{i}.png")
        Image.fromarray(np.full((5, 6, 3), 99, np.uint8)).save(root / c / "sub" / "z.jpg")
    (root / "a_cat" / "notes.txt").write_text("not an image")
    return root


def test_file_order_split_and_labels_match_keras(folder, capsys):
    train, val = tf.keras.utils.image_dataset_from_directory(
        folder, image_size=(5, 6), batch_size=None, seed=7, validation_split=0.25, subset="both"
    )
    out = capsys.readouterr().out
    assert (
        "Found 15 files belonging to 3 classes." in out and "Using 3 files for validation." in out
    )
    rel = [p.split("imgs/")[1] for p in train.file_paths]
    assert rel == [
        "b_dog/3.png", "b_dog/0.png", "c_eel/0.png", "a_cat/2.png", "c_eel/2.png", "a_cat/0.png",
        "a_cat/1.png", "c_eel/sub/z.jpg", "c_eel/3.png", "b_dog/2.png", "c_eel/1.png",
        "a_cat/3.png",
    ]  # fmt: skip
    assert [p.split("imgs/")[1] for p in val.file_paths] == [
        "b_dog/1.png", "b_dog/sub/z.jpg", "a_cat/sub/z.jpg",
    ]  # fmt: skip
    assert train.class_names == ["a_cat", "b_dog", "c_eel"]
    labels = sorted(int(y) for _, y in val)
    assert labels == [0, 1, 1]
    for x, y in val:
        assert x.shape == (5, 6, 3) and x.dtype == tf.float32 and y.dtype == tf.int32


def test_unshuffled_batches_label_modes_and_pixels(folder):
    ds = tf.keras.utils.image_dataset_from_directory(
        folder, image_size=(5, 6), batch_size=5, shuffle=False, label_mode="categorical"
    )
    x, y = next(iter(ds))
    assert x.shape == (5, 5, 6, 3) and y.shape == (5, 3)
    np.testing.assert_array_equal(x.numpy()[:4, 0, 0, 0], [5, 15, 25, 35])  # a_cat/0..3.png
    np.testing.assert_array_equal(y.numpy()[0], [1, 0, 0])
    small = tf.keras.utils.image_dataset_from_directory(
        folder, image_size=(2, 3), batch_size=4, color_mode="grayscale", label_mode=None,
        shuffle=False,
    )  # fmt: skip
    first = next(iter(small))
    assert isinstance(first, tf.Tensor) and first.shape == (4, 2, 3, 1)  # images only
    named = tf.keras.utils.image_dataset_from_directory(
        folder, image_size=(2, 3), batch_size=15, shuffle=False,
        class_names=["c_eel", "a_cat", "b_dog"],
    )  # fmt: skip
    assert named.class_names == ["c_eel", "a_cat", "b_dog"]
    assert next(iter(named))[1].numpy().tolist() == [0] * 5 + [1] * 5 + [2] * 5


def test_binary_labels_and_explicit_label_lists(folder, tmp_path):
    for name in ("c_eel",):
        for f in (folder / name).rglob("*"):
            if f.is_file():
                f.unlink()
        for f in sorted((folder / name).rglob("*"), reverse=True):
            f.rmdir()
        (folder / name).rmdir()
    ds = tf.keras.utils.image_dataset_from_directory(
        folder, image_size=(5, 6), batch_size=10, label_mode="binary", shuffle=False
    )
    _, y = next(iter(ds))
    assert (
        y.shape == (10, 1)
        and y.dtype == tf.float32
        and y.numpy()[:, 0].tolist() == [0] * 5 + [1] * 5
    )
    flat = tmp_path / "flat"
    flat.mkdir()
    for i in range(3):
        Image.fromarray(np.zeros((2, 2, 3), np.uint8)).save(flat / f"{i}.png")
    ds = tf.keras.utils.image_dataset_from_directory(
        flat, labels=[2, 0, 1], image_size=(2, 2), batch_size=3, shuffle=False
    )
    assert next(iter(ds))[1].numpy().tolist() == [2, 0, 1]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"labels": "folders"}, "`labels` argument"),
        ({"label_mode": "sparse"}, "label_mode"),
        ({"color_mode": "cmyk"}, "color_mode"),
        ({"validation_split": 0.2}, "subset"),
        ({"validation_split": 0.2, "subset": "training"}, "seed"),
        ({"validation_split": 1.5, "subset": "training", "seed": 1}, "between 0 and 1"),
        ({"class_names": ["x", "y"]}, "did not match"),
        ({"label_mode": "binary"}, "exactly 2"),
        ({"labels": [1, 2]}, "lengths of `labels`"),
        ({"interpolation": "cubic"}, "interpolation"),
    ],
)
def test_argument_errors(folder, kwargs, match):
    with pytest.raises(ValueError, match=match):
        tf.keras.utils.image_dataset_from_directory(folder, **kwargs)


def test_an_empty_folder_is_an_error(tmp_path):
    (tmp_path / "empty" / "cls").mkdir(parents=True)
    with pytest.raises(ValueError, match="No images found"):
        tf.keras.utils.image_dataset_from_directory(tmp_path / "empty")
