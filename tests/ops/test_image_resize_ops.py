"""tf.image.resize (every method, antialias, preserve_aspect_ratio) against real TF 2.21."""

import numpy as np
import pytest
from image_b_fixtures import F, assert_close, finite_difference, tape_grads

import layerflow as tf

METHODS = ["bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
           "mitchellcubic"]  # fmt: skip
SIZES = [(14, 18), (3, 4), (7, 9), (5, 13), (1, 1), (16, 2)]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("antialias", [False, True])
def test_resize_matches_tf(method, antialias):
    for h, w in SIZES:
        out = tf.image.resize(F["img"], (h, w), method, antialias=antialias)
        assert out.dtype == tf.float32
        assert_close(out, f"resize_{method}_{h}x{w}_{antialias}")
    # a 40x33 -> 9x7 downscale, where antialiasing widens the kernels
    assert_close(tf.image.resize(F["big"], (9, 7), method, antialias=antialias),
                 f"resize_big_{method}_{antialias}")  # fmt: skip


@pytest.mark.parametrize("method", METHODS)
def test_resize_integer_images_and_dtypes(method):
    out = tf.image.resize(F["u8"], (5, 6), method)
    assert out.dtype == (tf.uint8 if method == "nearest" else tf.float32)
    assert_close(out, f"resize_u8_{method}", atol=1e-3)


def test_resize_float64_input():
    assert tf.image.resize(F["img"].astype(np.float64), (5, 6)).dtype == tf.float32
    assert_close(tf.image.resize(F["img"].astype(np.float64), (5, 6)), "resize_f64_bilinear")
    near = tf.image.resize(F["img"].astype(np.float64), (5, 6), "nearest")
    assert near.dtype == tf.float64
    assert_close(near, "resize_f64_nearest")


@pytest.mark.parametrize("size", [(20, 20), (4, 30), (3, 3), (11, 7)])
def test_resize_preserve_aspect_ratio(size):
    out = tf.image.resize(F["img"], size, preserve_aspect_ratio=True)
    assert_close(out, f"resize_par_{size[0]}x{size[1]}")


@pytest.mark.parametrize("method", [m for m in METHODS if m != "area"])
@pytest.mark.parametrize("antialias", [False, True])
def test_resize_gradient_matches_tf(method, antialias):
    key = f"resize_grad_{method}_{antialias}"
    (g,) = tape_grads(lambda t: tf.image.resize(t, (4, 13), method, antialias=antialias),
                      [F["img"]], F[key + "_w"])  # fmt: skip
    assert_close(g, key, atol=1e-5)


@pytest.mark.parametrize("method", ["bilinear", "bicubic", "area", "lanczos5"])
def test_resize_gradient_finite_differences(method):
    x = F["img"][:1, :5, :6, :1]
    w = np.random.default_rng(0).standard_normal((1, 3, 4, 1))

    def fn(t):
        return tf.image.resize(t, (3, 4), method, antialias=True).numpy()

    (g,) = tape_grads(lambda t: tf.image.resize(t, (3, 4), method, antialias=True), [x],
                      w.astype(np.float32))  # fmt: skip
    np.testing.assert_allclose(g.numpy(), finite_difference(fn, [x], 0, w), atol=2e-3)


def test_resize_errors():
    with pytest.raises(ValueError, match="unknown method 'cubic'"):
        tf.image.resize(F["img"], (3, 3), method="cubic")
    with pytest.raises(ValueError, match="size must be two positive ints"):
        tf.image.resize(F["img"], (0, 3))
    with pytest.raises(ValueError, match=r"\[N, H, W, C\] or \[H, W, C\]"):
        tf.image.resize(np.ones((3, 3)), (2, 2))
