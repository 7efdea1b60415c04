"""tf.image cropping/padding, crop_and_resize (with gradients), extract_patches and
extract_glimpse against real TF 2.21."""

import numpy as np
import pytest
from image_b_fixtures import F, assert_close, finite_difference, tape_grads

import layerflow as tf

IMG = F["img"]


@pytest.mark.parametrize("th, tw", [(10, 10), (4, 12), (9, 5), (7, 9)])
def test_resize_with_pad_and_crop_or_pad(th, tw):
    assert_close(tf.image.resize_with_pad(IMG[0], th, tw), f"rwp_{th}x{tw}")
    out = tf.image.resize_with_pad(IMG[0], th, tw, method="lanczos3", antialias=True)
    assert_close(out, f"rwp_{th}x{tw}_area_aa")
    assert_close(tf.image.resize_with_crop_or_pad(IMG, th, tw), f"rwcop_{th}x{tw}")


@pytest.mark.parametrize("frac", [0.5, 0.33, 0.9, 1.0])
def test_central_crop(frac):
    assert_close(tf.image.central_crop(IMG, frac), f"central_{frac}")
    assert_close(tf.image.central_crop(IMG[0], frac), f"central3_{frac}")


def test_crop_and_pad_to_bounding_box():
    crop = tf.image.crop_to_bounding_box(IMG, 2, 3, 4, 5)
    np.testing.assert_array_equal(crop.numpy(), IMG[:, 2:6, 3:8])
    padded = tf.image.pad_to_bounding_box(IMG[0], 1, 2, 10, 12)
    assert padded.shape == (10, 12, 3)
    np.testing.assert_array_equal(padded.numpy()[1:8, 2:11], IMG[0])
    assert float(tf.reduce_sum(padded)) == pytest.approx(float(IMG[0].sum()), rel=1e-5)
    with pytest.raises(ValueError, match=r"width must be >= target \+ offset"):
        tf.image.crop_to_bounding_box(IMG, 0, 5, 2, 5)
    with pytest.raises(ValueError, match="offset_height must be >= 0"):
        tf.image.pad_to_bounding_box(IMG, -1, 0, 10, 10)
    with pytest.raises(ValueError, match="central_fraction must be within"):
        tf.image.central_crop(IMG, 0.0)


CROP_CASES = [(m, cs) for m in ("bilinear", "nearest") for cs in [(4, 5), (1, 1), (3, 1)]]


@pytest.mark.parametrize("method, size", CROP_CASES)
def test_crop_and_resize_and_its_gradients_match_tf(method, size):
    key = f"cr_{method}_{size[0]}x{size[1]}"
    boxes, bidx = F["cr_boxes"], F["cr_bidx"]
    assert_close(tf.image.crop_and_resize(IMG, boxes, bidx, size, method, 0.5), key)
    gi, gb = tape_grads(
        lambda t, b: tf.image.crop_and_resize(t, b, bidx, size, method, 0.5),
        [IMG, boxes],
        F[key + "_w"],
    )
    assert_close(gi, key + "_gimg", atol=1e-4)
    assert_close(gb, key + "_gbox", rtol=1e-4, atol=1e-4)


def test_crop_and_resize_integer_image_and_box_gradient_finite_differences():
    out = tf.image.crop_and_resize(F["u8"], F["cr_boxes"], F["cr_bidx"], (4, 5))
    assert out.dtype == tf.float32
    assert_close(out, "cr_u8", atol=1e-3)
    img = IMG[:1, :5, :5, :1]
    boxes = np.array([[0.12, 0.23, 0.71, 0.64]], np.float32)
    w = np.random.default_rng(1).standard_normal((1, 3, 3, 1))

    def fn(t, b):
        return tf.image.crop_and_resize(t, b, [0], (3, 3)).numpy()

    _, gb = tape_grads(lambda t, b: tf.image.crop_and_resize(t, b, [0], (3, 3)), [img, boxes],
                       w.astype(np.float32))  # fmt: skip
    np.testing.assert_allclose(gb.numpy(), finite_difference(fn, [img, boxes], 1, w), atol=2e-2)


def test_crop_and_resize_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="box_index has values outside"):
        tf.image.crop_and_resize(IMG, F["cr_boxes"][:1], [2], (2, 2))
    with pytest.raises(tf.errors.InvalidArgumentError, match="not finite"):
        tf.image.crop_and_resize(IMG, [[0.0, np.nan, 1.0, 1.0]], [0], (2, 2))
    with pytest.raises(ValueError, match="method must be 'bilinear' or 'nearest'"):
        tf.image.crop_and_resize(IMG, F["cr_boxes"], F["cr_bidx"], (2, 2), "bicubic")


@pytest.mark.parametrize("i, k, s, r, p", [
    (0, (2, 3), (1, 1), (1, 1), "VALID"),
    (1, (3, 3), (2, 3), (1, 1), "SAME"),
    (2, (2, 2), (2, 2), (2, 3), "VALID"),
    (3, (3, 2), (3, 2), (2, 2), "SAME"),
])  # fmt: skip
def test_extract_patches(i, k, s, r, p):
    out = tf.image.extract_patches(IMG, [1, *k, 1], [1, *s, 1], [1, *r, 1], p)
    assert_close(out, f"patches_{i}", atol=0)


@pytest.mark.parametrize("centered", [True, False])
@pytest.mark.parametrize("normalized", [True, False])
def test_extract_glimpse(centered, normalized):
    key = f"glimpse_{centered}_{normalized}"
    out = tf.image.extract_glimpse(IMG, [3, 4], F[key + "_offs"], centered=centered,
                                   normalized=normalized, noise="zero")  # fmt: skip
    assert_close(out, key, atol=0)


def test_extract_glimpse_noise_stays_in_the_image_range():
    out = tf.image.extract_glimpse(IMG, [5, 5], [[-1.0, -1.0], [1.0, 1.0]]).numpy()
    assert out.min() >= IMG.min() and out.max() <= IMG.max()
    np.testing.assert_array_equal(out[0, 2:, 2:], IMG[0, :3, :3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="noise must be"):
        tf.image.extract_glimpse(IMG, [3, 3], [[0.0, 0.0]] * 2, noise="pink")
