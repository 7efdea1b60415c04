"""psnr, ssim, ssim_multiscale, sobel_edges, total_variation and image_gradients against real
TF 2.21, gradients included."""

import numpy as np
import pytest
from image_b_fixtures import F, assert_close, finite_difference, tape_grads

import layerflow as tf

A, B = F["ma"], F["mb"]
A8, B8 = (A * 255).astype(np.uint8), (B * 255).astype(np.uint8)


def test_psnr():
    assert_close(tf.image.psnr(A, B, 1.0), "psnr")
    assert_close(tf.image.psnr(A8, B8, 255), "psnr_u8")
    with pytest.raises(ValueError, match="same last three dimensions"):
        tf.image.psnr(A, B[:, :5], 1.0)


def test_ssim_values():
    assert_close(tf.image.ssim(A, B, 1.0), "ssim")
    out = tf.image.ssim(A, B, 1.0, filter_size=7, filter_sigma=1.0, k1=0.02, k2=0.05)
    assert_close(out, "ssim_7_1")
    assert_close(tf.image.ssim(A, B, 1.0, return_index_map=True), "ssim_map")
    assert_close(tf.image.ssim(A8, B8, 255), "ssim_u8")
    # batch dimensions broadcast, as TF's
    assert tf.image.ssim(A[None], B[:1], 1.0).shape == (1, 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least filter_size"):
        tf.image.ssim(A[:, :8, :8], B[:, :8, :8], 1.0)


def test_ssim_gradients():
    ga, gb = tape_grads(lambda x, y: tf.image.ssim(x, y, 1.0), [A, B], F["ssim_w"])
    assert_close(ga, "ssim_ga", rtol=1e-4, atol=1e-6)
    assert_close(gb, "ssim_gb", rtol=1e-4, atol=1e-6)
    x, y = A[:1, :12, :12, :1], B[:1, :12, :12, :1]
    w = np.ones((1,))

    def fn(p, q):
        return tf.image.ssim(p, q, 1.0, filter_size=5).numpy()

    (g,) = tape_grads(
        lambda p: tf.image.ssim(p, y, 1.0, filter_size=5), [x], np.ones(1, np.float32)
    )
    np.testing.assert_allclose(g.numpy(), finite_difference(fn, [x, y], 0, w), atol=2e-3)


def test_ssim_multiscale_and_gradients():
    kw = dict(power_factors=(0.3, 0.3, 0.4), filter_size=5)
    assert_close(tf.image.ssim_multiscale(F["msa"], F["msb"], 1.0, **kw), "msssim")
    ga, gb = tape_grads(lambda x, y: tf.image.ssim_multiscale(x, y, 1.0, **kw),
                        [F["msa"], F["msb"]], F["msssim_w"])  # fmt: skip
    assert_close(ga, "msssim_ga", rtol=1e-3, atol=1e-6)
    assert_close(gb, "msssim_gb", rtol=1e-3, atol=1e-6)


def test_sobel_total_variation_image_gradients():
    assert_close(tf.image.sobel_edges(A), "sobel")
    (g,) = tape_grads(tf.image.sobel_edges, [A], F["sobel_w"])
    assert_close(g, "sobel_g", atol=1e-5)
    assert_close(tf.image.total_variation(A), "tv4", rtol=1e-5)
    assert_close(tf.image.total_variation(A[0]), "tv3", rtol=1e-5)
    (g,) = tape_grads(tf.image.total_variation, [A], F["tv_w"])
    assert_close(g, "tv_g")
    dy, dx = tf.image.image_gradients(A)
    assert_close(dy, "ig_dy", atol=0)
    assert_close(dx, "ig_dx", atol=0)
    with pytest.raises(ValueError, match="image_gradients expects a 4D tensor"):
        tf.image.image_gradients(A[0])
    with pytest.raises(ValueError, match="3 or 4-dimensional"):
        tf.image.total_variation(A[0, 0])
