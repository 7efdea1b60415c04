"""The elementwise ops beyond the basics: NumPy oracles, float64 gradients, TF's dtype rules."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op, check_second_derivative

rng = np.random.default_rng(7)
S = rng.uniform(-0.9, 0.9, (3, 4))  # inside (-1, 1): atanh
B = rng.uniform(1.2, 3.0, (3, 4))  # above 1: acosh
Y = rng.uniform(0.5, 2.0, (3, 4))

UNARY = [
    (tf.asinh, np.arcsinh, S * 3),
    (tf.math.acosh, np.arccosh, B),
    (tf.math.atanh, np.arctanh, S),
    (tf.math.asinh, np.arcsinh, S),
]


@pytest.mark.parametrize("fn,ref,x", UNARY, ids=["asinh", "acosh", "atanh", "math.asinh"])
def test_inverse_hyperbolic_forward_gradient_and_second_order(fn, ref, x):
    check_op(fn, [x], ref)
    check_second_derivative(fn, x[0])


def test_top_level_aliases_are_the_tf_math_ops():
    for name in ["acos", "asin", "atan", "cosh", "sinh", "tan", "floor", "round", "atan2",
                 "asinh", "acosh", "atanh"]:  # fmt: skip
        assert getattr(tf, name) is getattr(tf.math, name), name


def test_atan2_quadrants_broadcasting_and_gradient():
    y = np.array([1.0, 1.0, -1.0, -1.0, 0.0])
    x = np.array([1.0, -1.0, -1.0, 1.0, -2.0])
    np.testing.assert_allclose(tf.atan2(y, x).numpy(), np.arctan2(y, x).astype(np.float32))
    check_op(tf.math.atan2, [S, Y], np.arctan2)
    check_op(tf.math.atan2, [S, Y[0]], np.arctan2)  # x broadcast over the rows


@pytest.mark.parametrize("fn", [tf.math.atan2, tf.math.xlogy, tf.math.xdivy,
                                tf.math.multiply_no_nan, tf.math.nextafter])  # fmt: skip
def test_float_only_binary_ops_refuse_integers(fn):
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
        fn(tf.constant([1, 2]), tf.constant([1, 2]))


@pytest.mark.parametrize("fn", [tf.math.rint, tf.math.asinh, tf.math.acosh, tf.math.atanh,
                                tf.math.reciprocal_no_nan])  # fmt: skip
def test_float_only_unary_ops_refuse_integers(fn):
    with pytest.raises(tf.errors.InvalidArgumentError, match="float32"):
        fn(tf.constant([1, 2]))


def test_rint_rounds_half_to_even_and_has_no_gradient():
    x = tf.constant([-1.5, -0.5, 0.5, 1.5, 2.5, 2.7])
    np.testing.assert_array_equal(tf.math.rint(x).numpy(), [-2.0, -0.0, 0.0, 2.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.math.rint(x)
    assert tape.gradient(y, x) is None  # TF: no gradient for Rint


def test_nextafter_values_and_gradient_passes_to_x1():
    x1, x2 = np.array([1.0, 1.0, 0.0]), np.array([2.0, 0.0, -1.0])
    got = tf.math.nextafter(tf.constant(x1), tf.constant(x2)).numpy()
    np.testing.assert_array_equal(got, np.nextafter(x1, x2))
    check_op(tf.math.nextafter, [x1, x2], np.nextafter, grad=[0])
    a = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(a)
        y = tf.math.nextafter(a, 3.0)
    np.testing.assert_array_equal(tape.gradient(y, a).numpy(), [1.0, 1.0])


def test_truncatediv_and_truncatemod_round_toward_zero():
    x = np.array([-7, 7, -7, 7, 6])
    y = np.array([2, 2, -2, -2, 3])
    np.testing.assert_array_equal(tf.truncatediv(x, y).numpy(), [-3, 3, 3, -3, 2])
    np.testing.assert_array_equal(tf.truncatemod(x, y).numpy(), np.fmod(x, y))
    xf = np.array([-7.5, 7.5])
    np.testing.assert_array_equal(tf.truncatediv(xf, 2.0).numpy(), [-3.0, 3.0])
    np.testing.assert_array_equal(tf.truncatemod(xf, 2.0).numpy(), [-1.5, 1.5])
    with pytest.raises(tf.errors.InvalidArgumentError, match="division by zero"):
        tf.truncatediv([1, 2], [1, 0])


def test_realdiv_floats_and_refuses_integers():
    np.testing.assert_allclose(tf.realdiv([3.0, 1.0], [2.0, 4.0]).numpy(), [1.5, 0.25])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.realdiv(tf.constant([3]), tf.constant([2]))


def test_multiply_no_nan_zero_wherever_y_is_zero_and_gradients():
    x = tf.constant([np.inf, np.nan, 2.0, -1.0])
    y = tf.constant([0.0, 0.0, 3.0, 0.0])
    np.testing.assert_array_equal(tf.math.multiply_no_nan(x, y).numpy(), [0.0, 0.0, 6.0, 0.0])
    yz = Y.copy()
    yz[0, :2] = 0.0
    check_op(tf.math.multiply_no_nan, [S, yz], lambda a, b: np.where(b == 0, 0.0, a * b))
    check_op(tf.math.multiply_no_nan, [S, Y[0]], lambda a, b: a * b)  # broadcasting


def test_reciprocal_no_nan():
    x = np.array([0.0, 2.0, -4.0])
    np.testing.assert_array_equal(tf.math.reciprocal_no_nan(x).numpy(), [0.0, 0.5, -0.25])
    check_op(tf.math.reciprocal_no_nan, [Y], np.reciprocal)


@pytest.mark.parametrize("fn,ref", [
    (tf.math.xlogy, lambda x, y: x * np.log(y)),
    (tf.math.xlog1py, lambda x, y: x * np.log1p(y)),
    (tf.math.xdivy, lambda x, y: x / y),
])  # fmt: skip
def test_x_op_y_family(fn, ref):
    check_op(fn, [S, Y], ref)
    check_op(fn, [S, Y[:1]], ref)  # broadcasting
    # 0 wherever x is 0, whatever y is (even 0, where log or division would give inf/NaN).
    got = fn(tf.constant([0.0, 0.0, 1.0]), tf.constant([0.0, np.nan, 2.0])).numpy()
    np.testing.assert_allclose(got, [0.0, 0.0, ref(1.0, 2.0)], rtol=1e-6)


def test_xlogy_gradient_wrt_x_is_zero_where_x_is_zero():
    x = tf.constant([0.0, 2.0])
    y = tf.constant([3.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = tf.math.xlogy(x, y)
    gx, gy = tape.gradient(z, [x, y])
    np.testing.assert_allclose(gx.numpy(), [0.0, np.log(3.0)], rtol=1e-6)
    np.testing.assert_allclose(gy.numpy(), [0.0, 2.0 / 3.0], rtol=1e-6)


def test_scalar_mul_needs_a_scalar():
    np.testing.assert_array_equal(tf.math.scalar_mul(2.0, [1.0, 2.0]).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(tf.scalar_mul(tf.constant(3), [1, 2]).numpy(), [3, 6])
    with pytest.raises(ValueError, match="0-D"):
        tf.math.scalar_mul(tf.constant([2.0, 1.0]), [1.0, 2.0])


def test_crelu_concatenates_both_halves_with_gradient():
    x = S
    check_op(tf.nn.crelu, [x], lambda a: np.concatenate([np.maximum(a, 0), np.maximum(-a, 0)], -1))
    out = tf.nn.crelu(tf.constant(x), axis=0)
    assert out.shape == (6, 4)


def test_polyval_horner_dtype_and_gradient():
    np.testing.assert_allclose(tf.math.polyval([1.0, 2.0, 3.0], [1.0, 2.0]).numpy(), [6.0, 11.0])
    assert tf.math.polyval([1, 2], 3).numpy() == 5
    empty = tf.math.polyval([], tf.constant([1.0, 2.0]))
    np.testing.assert_array_equal(empty.numpy(), [0.0, 0.0])
    c = [0.5, -1.0, 2.0]  # Python numbers take x's dtype
    check_op(lambda x: tf.math.polyval(c, x), [S], lambda x: 0.5 * x**2 - x + 2.0)
    with pytest.raises(ValueError, match="list"):
        tf.math.polyval(tf.constant([1.0, 2.0]), 1.0)


def test_accumulate_n_checks_shapes():
    a, b = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    np.testing.assert_array_equal(tf.math.accumulate_n([a, b]).numpy(), [4.0, 6.0])
    with pytest.raises(ValueError, match="not compatible"):
        tf.math.accumulate_n([a, tf.constant([1.0])])
    with pytest.raises(ValueError, match="non-empty"):
        tf.math.accumulate_n([])
    with pytest.raises(ValueError, match="not compatible"):
        tf.math.accumulate_n([a, b], shape=[3])


def test_zero_fraction():
    assert float(tf.math.zero_fraction([0, 1, 0, 2])) == 0.5
    assert tf.nn.zero_fraction(tf.zeros([2, 2])).dtype == tf.float32
    assert np.isnan(tf.math.zero_fraction(tf.zeros([0])).numpy())


def test_monotonic_predicates():
    assert bool(tf.math.is_non_decreasing([1, 2, 2]))
    assert not bool(tf.math.is_strictly_increasing([1, 2, 2]))
    assert bool(tf.math.is_strictly_increasing([[1.0, 2.0], [3.0, 4.0]]))  # row-major
    assert not bool(tf.math.is_non_decreasing([[1.0, 2.0], [0.0, 4.0]]))
    assert bool(tf.math.is_non_decreasing(tf.zeros([0])))
    with pytest.raises(TypeError, match="numeric"):
        tf.math.is_strictly_increasing(["a", "b"])


def test_invert_permutation_and_its_errors():
    perm = rng.permutation(7)
    got = tf.math.invert_permutation(perm).numpy()
    np.testing.assert_array_equal(got, np.argsort(perm))
    assert tf.math.invert_permutation(tf.constant([1, 0], tf.int64)).dtype == tf.int64
    with pytest.raises(tf.errors.InvalidArgumentError, match="duplicated"):
        tf.math.invert_permutation([0, 0, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="between"):
        tf.math.invert_permutation([0, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="1-D"):
        tf.math.invert_permutation([[0]])


def test_reduce_euclidean_norm():
    x = np.array([[1, 2, 3], [1, 1, 1]])
    assert int(tf.math.reduce_euclidean_norm(x)) == 4  # sqrt(17), truncated as TF does
    np.testing.assert_array_equal(tf.math.reduce_euclidean_norm(x, 1).numpy(), [3, 1])
    check_op(lambda a: tf.math.reduce_euclidean_norm(a, axis=1, keepdims=True), [Y],
             lambda a: np.sqrt((a**2).sum(1, keepdims=True)))  # fmt: skip
    check_op(tf.math.reduce_euclidean_norm, [Y], lambda a: np.sqrt((a**2).sum()))


def test_saturate_cast_clamps_to_the_target_range():
    got = tf.dtypes.saturate_cast(tf.constant([-300.0, 3.7, 300.0, np.nan]), tf.uint8)
    assert got.dtype == tf.uint8
    np.testing.assert_array_equal(got.numpy(), [0, 3, 255, 0])
    # float32 cannot hold int32's max: TF steps to the largest float32 below it.
    big = tf.saturate_cast(tf.constant([-3e9, 3e9]), tf.int32).numpy()
    np.testing.assert_array_equal(big, [-2147483648, 2147483520])
    np.testing.assert_array_equal(tf.saturate_cast([1000, -1000], tf.int8).numpy(), [127, -128])
    np.testing.assert_array_equal(tf.saturate_cast([-5, 300], tf.uint8).numpy(), [0, 255])
    f32 = tf.saturate_cast(tf.constant([1e300, -1e300], tf.float64), tf.float32).numpy()
    np.testing.assert_array_equal(f32, [np.finfo(np.float32).max, np.finfo(np.float32).min])
    assert tf.saturate_cast(tf.constant([1 + 2j]), tf.float32).numpy().tolist() == [1.0]
    x = tf.constant([-1e6, 1.0, 1e6])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.saturate_cast(x, tf.float16)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0.0, 1.0, 0.0])
