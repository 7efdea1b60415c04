"""tf.image colour adjustments, colour spaces and convert_image_dtype against real TensorFlow's
values (fixtures/image.npz, made by fixtures/make_image_fixtures.py), with numerical gradients."""

import pathlib

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op, numerical_gradient

F = np.load(pathlib.Path(__file__).parent / "fixtures" / "image.npz")
X, XI = F["x"], F["xi"]
I = tf.image  # noqa: E741


def close(got, key, atol=2e-6):
    ref = F[key]
    got = np.asarray(got)
    assert got.shape == ref.shape and got.dtype == ref.dtype, (key, got.shape, got.dtype)
    if ref.dtype.kind in "iu":
        np.testing.assert_array_equal(got, ref, err_msg=key)
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=atol, err_msg=key)


def test_adjustments_match_tf_on_float_and_uint8_images():
    close(I.adjust_brightness(X, 0.2), "brightness")
    close(I.adjust_brightness(XI, 0.2), "brightness_u8")
    close(I.adjust_contrast(X, 1.7), "contrast")
    close(I.adjust_contrast(XI, 0.5), "contrast_u8")
    close(I.adjust_gamma(X, 0.5, 1.5), "gamma")
    close(I.adjust_gamma(XI, 2.0), "gamma_u8")
    for i, d in enumerate([-0.7, -0.2, 0.1, 0.45, 1.0]):
        close(I.adjust_hue(X, d), f"hue_{i}")
    close(I.adjust_hue(XI, 0.3), "hue_u8")
    for i, f in enumerate([0.0, 0.5, 2.0, 10.0]):
        close(I.adjust_saturation(X, f), f"saturation_{i}")
    close(I.adjust_saturation(XI, 1.5), "saturation_u8")


def test_colour_spaces_match_tf():
    close(I.rgb_to_hsv(X), "rgb_to_hsv")
    close(I.hsv_to_rgb(X), "hsv_to_rgb")
    close(I.rgb_to_grayscale(X), "grayscale")
    close(I.rgb_to_grayscale(XI), "grayscale_u8")
    for name in ("rgb_to_yiq", "yiq_to_rgb", "rgb_to_yuv", "yuv_to_rgb"):
        close(getattr(I, name)(X), name)
    close(I.per_image_standardization(X), "standardization")
    close(I.per_image_standardization(XI), "standardization_u8")
    close(I.per_image_standardization(tf.fill((2, 2, 3), 0.5)), "standardization_flat")
    np.testing.assert_allclose(I.hsv_to_rgb(I.rgb_to_hsv(X)).numpy(), X, atol=1e-6)
    # TF's YIQ/YUV matrices invert each other to about 1e-4.
    np.testing.assert_allclose(I.yiq_to_rgb(I.rgb_to_yiq(X)).numpy(), X, atol=1e-4)
    np.testing.assert_allclose(I.yuv_to_rgb(I.rgb_to_yuv(X)).numpy(), X, atol=1e-4)
    assert I.grayscale_to_rgb(I.rgb_to_grayscale(X)).shape == X.shape
    np.testing.assert_array_equal(I.grayscale_to_rgb([[[1.0], [2.0]]]).numpy(),
                                  [[[1, 1, 1], [2, 2, 2]]])  # fmt: skip


def test_float64_stays_float64():
    x64 = X.astype(np.float64)
    for fn in (lambda t: I.adjust_brightness(t, 1e-9), lambda t: I.adjust_hue(t, 0.1),
               I.rgb_to_grayscale, I.rgb_to_hsv):  # fmt: skip
        assert fn(x64).dtype == tf.float64
    np.testing.assert_allclose(I.adjust_brightness(x64, 1e-9).numpy() - x64, 1e-9, rtol=1e-6)
    assert I.per_image_standardization(x64).dtype == tf.float32  # TF's documented dtype


CONVERT = {"u8": XI, "u16": XI.astype(np.uint16) * 250,
           "i8": (XI.astype(np.int16) - 128).astype(np.int8), "i32": XI.astype(np.int32) * 8000000,
           "f": F["convert_f_in"]}  # fmt: skip


@pytest.mark.parametrize("src", sorted(CONVERT))
@pytest.mark.parametrize("dst", ["uint8", "uint16", "int8", "int32", "float32", "float16"])
@pytest.mark.parametrize("saturate", [False, True])
def test_convert_image_dtype_matches_tf(src, dst, saturate):
    arr = CONVERT[src]
    got = I.convert_image_dtype(arr, dst, saturate).numpy()
    ref = F[f"convert_{src}_{dst}_{saturate}"]
    if src == "i32" and dst == "float16":
        # TF casts to float16 first (inf) and multiplies by a scale that underflows to 0: NaN.
        assert np.isnan(ref[arr != 0]).all()
        np.testing.assert_allclose(got, arr / np.float32(2**31 - 1), rtol=1e-3)
        return
    keep = np.ones(arr.shape, bool)
    if src == "f" and not saturate and dst != "float16" and dst != "float32":
        keep = (arr >= 0) & (arr <= 1)  # TF's unsaturated cast of out-of-range floats is undefined
        assert (got[~keep] == ref[~keep]).mean() > 0.5 or dst == "int32"
    assert got.dtype == ref.dtype
    np.testing.assert_allclose(got[keep].astype(np.float64), ref[keep].astype(np.float64),
                               rtol=1e-3, atol=1e-7)  # fmt: skip


def test_convert_image_dtype_errors_and_identity():
    with pytest.raises(AttributeError, match="image dtype must be either floating point"):
        I.convert_image_dtype(np.zeros(2, bool), tf.float32)
    with pytest.raises(AttributeError, match="dtype must be either floating point"):
        I.convert_image_dtype(np.zeros(2, np.float32), tf.string)
    t = tf.constant([1, 2], tf.uint8)
    assert I.convert_image_dtype(t, tf.uint8) is t


W = F["w"]


def _weighted_grad(fn, x):
    t = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(t)
        y = fn(t)
        loss = tf.reduce_sum(y * W[1:, ..., : y.shape[-1]])
    return tape.gradient(loss, t).numpy()


def test_gradients_match_tf_where_tf_has_them():
    x = X[1:]
    np.testing.assert_allclose(_weighted_grad(I.rgb_to_grayscale, x), F["grad_grayscale"],
                               rtol=1e-5, atol=1e-6)  # fmt: skip
    np.testing.assert_allclose(_weighted_grad(I.rgb_to_hsv, x), F["grad_rgb_to_hsv"],
                               rtol=1e-4, atol=1e-5)  # fmt: skip
    np.testing.assert_allclose(_weighted_grad(I.per_image_standardization, x),
                               F["grad_standardization"], rtol=1e-4, atol=1e-5)  # fmt: skip


SMALL = np.random.default_rng(2).uniform(0.05, 0.95, (2, 3, 2, 3))


def test_numerical_gradients_of_colour_ops():
    check_op(lambda t: I.adjust_brightness(t, 0.3), [SMALL], lambda a: a + 0.3)
    check_op(lambda t, d: I.adjust_brightness(t, d), [SMALL, np.array(0.1)], None)
    mean = SMALL.mean(axis=(1, 2), keepdims=True)
    check_op(lambda t: I.adjust_contrast(t, 1.7), [SMALL], lambda a: (a - mean) * 1.7 + mean)
    check_op(lambda t, f: I.adjust_contrast(t, f), [SMALL, np.array(0.6)], None)
    check_op(I.rgb_to_grayscale, [SMALL], lambda a: a @ np.array([[0.2989], [0.587], [0.114]]),
             dtypes=("float64",))  # fmt: skip
    check_op(I.rgb_to_hsv, [SMALL], None)
    check_op(I.hsv_to_rgb, [SMALL], None)
    check_op(lambda t: I.adjust_saturation(t, 0.6), [SMALL], None)
    check_op(lambda t: I.adjust_hue(t, 0.2), [SMALL], None)
    check_op(lambda t: I.adjust_gamma(t, 0.7, 1.3), [SMALL], lambda a: 1.3 * a**0.7)
    check_op(I.rgb_to_yiq, [SMALL], None)


def test_per_image_standardization_gradient_numerically():
    # TF computes in float32 whatever the input: differences with a step that float32 resolves.
    fn = I.per_image_standardization
    numeric = numerical_gradient(lambda t: fn(t), [SMALL], 0, eps=1e-3)
    w = np.random.default_rng(0).standard_normal(SMALL.shape)
    t = tf.constant(SMALL)
    with tf.GradientTape() as tape:
        tape.watch(t)
        loss = tf.reduce_sum(fn(t) * w.astype(np.float32))
    np.testing.assert_allclose(tape.gradient(loss, t).numpy(), numeric, rtol=2e-2, atol=2e-3)


def test_errors_name_the_op_and_the_problem():
    with pytest.raises(tf.errors.InvalidArgumentError, match="adjust_hue.*3 channels.*has 4"):
        I.adjust_hue(np.zeros((2, 2, 4), np.float32), 0.1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least 3-D"):
        I.adjust_saturation(np.zeros((2, 3), np.float32), 0.1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least 3-D"):
        I.adjust_contrast(np.zeros((2, 3), np.float32), 0.1)
    with pytest.raises(ValueError, match="delta must be in the interval \\[-1, 1\\]"):
        I.adjust_hue(np.zeros((2, 2, 3), np.float32), 2.0)
    with pytest.raises(ValueError, match="Gamma should be a non-negative real number"):
        I.adjust_gamma(np.zeros((2, 2, 3), np.float32), -1)
    with pytest.raises(ValueError, match="Last dimension of a grayscale image should be size 1"):
        I.grayscale_to_rgb(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="must be at least two-dimensional"):
        I.grayscale_to_rgb(np.zeros((1,)))
    with pytest.raises(ValueError, match="must be at least three-dimensional"):
        I.per_image_standardization(np.zeros((2, 2)))
    with pytest.raises(TypeError, match="must be a float tensor"):
        I.rgb_to_yiq(np.zeros((2, 2, 3), np.int32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="3 channels"):
        I.rgb_to_hsv(np.zeros((2, 4), np.float32))
    assert I.rgb_to_hsv(np.zeros((2, 3), np.int32)).dtype == tf.float32  # as TF


def test_random_adjustments_stay_in_range_and_stateless_ones_repeat():
    img = np.full((2, 2, 3), 0.5, np.float32)
    tf.random.set_seed(3)
    deltas = [float(I.random_brightness(img, 0.2).numpy()[0, 0, 0] - 0.5) for _ in range(30)]
    assert min(deltas) >= -0.2 and max(deltas) < 0.2 and max(deltas) - min(deltas) > 0.1
    rgb = np.array([[[0.2, 0.4, 0.8], [0.5, 0.3, 0.1]]], np.float32)
    cases = [
        (I.stateless_random_brightness, (0.3,)),
        (I.stateless_random_contrast, (0.2, 1.8)),
        (I.stateless_random_hue, (0.4,)),
        (I.stateless_random_saturation, (0.2, 1.8)),
    ]
    for fn, args in cases:
        a = fn(rgb, *args, seed=[1, 2]).numpy()
        tf.random.set_seed(11)
        np.testing.assert_array_equal(a, fn(rgb, *args, seed=[1, 2]).numpy())
        assert not np.array_equal(a, fn(rgb, *args, seed=[2, 1]).numpy())
    hues = {I.random_hue(rgb, 0.5).numpy().tobytes() for _ in range(5)}
    assert len(hues) > 1
    sat = I.random_saturation(rgb, 0.0, 0.01, seed=1).numpy()
    np.testing.assert_allclose(sat, [[[0.8] * 3, [0.5] * 3]], atol=0.01)  # grey at the max
    con = I.random_contrast(np.array([[[0.0], [1.0]]], np.float32), 0.0, 0.01).numpy()
    np.testing.assert_allclose(con, 0.5, atol=0.01)


def test_random_adjustment_argument_checks():
    img = np.zeros((2, 2, 3), np.float32)
    with pytest.raises(ValueError, match="max_delta must be non-negative"):
        I.random_brightness(img, -0.1)
    with pytest.raises(ValueError, match="max_delta must be <= 0.5"):
        I.random_hue(img, 0.6)
    with pytest.raises(ValueError, match="upper must be > lower"):
        I.random_contrast(img, 0.5, 0.5)
    with pytest.raises(ValueError, match="lower must be non-negative"):
        I.stateless_random_saturation(img, -0.5, 0.5, seed=[1, 2])


def test_random_colour_ops_trace_and_draw_per_call():
    f = tf.function(lambda t: I.random_brightness(t, 0.5))
    x = tf.zeros((1, 1, 1))
    assert len({float(f(x).numpy().ravel()[0]) for _ in range(5)}) > 1
