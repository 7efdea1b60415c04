"""`tf.keras.preprocessing.image` array transforms against real tf_keras outputs."""

import numpy as np
import pytest

import layerflow as tf

pytest.importorskip("scipy")
image = tf.keras.preprocessing.image


@pytest.fixture(scope="module")
def img(ref):
    return np.asarray(ref["img"], "float32")


@pytest.mark.parametrize(
    "name", ["rot", "shift", "shear", "zoom", "all_reflect", "const", "wrap_order0"]
)
def test_apply_affine_transform_matches_tf_keras(ref, img, name):
    r = ref["affine"][name]
    got = image.apply_affine_transform(img, row_axis=0, col_axis=1, channel_axis=2, **r["kwargs"])
    assert got.shape == img.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, r["out"], rtol=1e-5, atol=1e-4)


def test_apply_affine_transform_channels_first_default_axes(ref, img):
    chw = np.transpose(img, (2, 0, 1))
    got = image.apply_affine_transform(chw, theta=30, tx=1)
    np.testing.assert_allclose(got, ref["affine"]["chw"]["out"], rtol=1e-5, atol=1e-4)


def test_apply_affine_transform_identity_and_errors(img):
    assert image.apply_affine_transform(img, row_axis=0, col_axis=1, channel_axis=2) is not None
    np.testing.assert_array_equal(
        image.apply_affine_transform(img, row_axis=0, col_axis=1, channel_axis=2), img
    )
    with pytest.raises(ValueError, match="distinct"):
        image.apply_affine_transform(img, row_axis=0, col_axis=0, channel_axis=2)
    with pytest.raises(ValueError, match="rank-3"):
        image.apply_affine_transform(img[0], theta=3)
    with pytest.raises(ValueError, match="fill_mode"):
        image.apply_affine_transform(img, theta=3, fill_mode="mirror")
    with pytest.raises(ValueError, match="first or the last"):
        image.apply_affine_transform(img, row_axis=0, col_axis=2, channel_axis=1, theta=3)


def test_channel_shift_and_brightness_match_tf_keras(ref, img):
    pytest.importorskip("PIL")
    np.testing.assert_allclose(image.apply_channel_shift(img, 40.0, 2), ref["channel_shift"])
    np.testing.assert_allclose(image.apply_brightness_shift(img, 1.4), ref["brightness"])
    np.testing.assert_allclose(
        image.apply_brightness_shift(img * 3 - 100, 0.7, scale=False),
        ref["brightness_noscale"],
        rtol=1e-5,
        atol=1e-3,
    )


def test_random_helpers_draw_like_tf_keras(ref, img):
    chw = np.transpose(img, (2, 0, 1))
    np.random.seed(0)
    rot = image.random_rotation(chw, 30)
    zoom = image.random_zoom(chw, (0.7, 1.2), fill_mode="constant")
    np.testing.assert_allclose(rot, ref["random_rotation"], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(zoom, ref["random_zoom"], rtol=1e-5, atol=1e-4)
    np.random.seed(1)
    shifted = image.random_shift(chw, 0.2, 0.2)
    sheared = image.random_shear(chw, 20)
    shifted_ch = image.random_channel_shift(chw, 10.0)
    np.random.seed(1)
    tx, ty = np.random.uniform(-0.2, 0.2) * 7, np.random.uniform(-0.2, 0.2) * 9
    np.testing.assert_allclose(shifted, image.apply_affine_transform(chw, tx=tx, ty=ty))
    s = np.random.uniform(-20, 20)
    np.testing.assert_allclose(sheared, image.apply_affine_transform(chw, shear=s))
    np.testing.assert_allclose(
        shifted_ch, image.apply_channel_shift(chw, np.random.uniform(-10, 10))
    )
    with pytest.raises(ValueError, match="zoom_range"):
        image.random_zoom(chw, (0.5,))
    with pytest.raises(ValueError, match="brightness_range"):
        image.random_brightness(img, (0.5,))


def test_smart_resize_and_image_utils(ref, img):
    got = image.smart_resize(img, (4, 4))
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, ref["smart_resize"], rtol=1e-5, atol=1e-3)
    assert image.img_to_array is tf.keras.utils.img_to_array
    assert image.array_to_img is tf.keras.utils.array_to_img
    assert image.load_img is tf.keras.utils.load_img and image.save_img is tf.keras.utils.save_img


def test_missing_scipy_and_pillow_give_install_hints(monkeypatch, img):
    import sys

    monkeypatch.setitem(sys.modules, "scipy", None)
    with pytest.raises(ImportError, match="pip install scipy"):
        image.apply_affine_transform(img, theta=10, row_axis=0, col_axis=1, channel_axis=2)
    monkeypatch.setitem(sys.modules, "PIL", None)
    monkeypatch.setitem(sys.modules, "PIL.Image", None)
    with pytest.raises(ImportError, match="Pillow"):
        image.apply_brightness_shift(img, 1.2)
