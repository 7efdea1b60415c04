"""tf.debugging: TF 2.21's eager results (None on success), error classes and messages (checked
against real TF), NumPy oracles for the conditions, and check_numerics' gradient check."""

import numpy as np
import pytest

import layerflow as tf

D = tf.debugging
rng = np.random.default_rng(5)


@pytest.mark.parametrize("fn,op", [(D.assert_equal, np.equal), (D.assert_none_equal, np.not_equal),
                                   (D.assert_less, np.less), (D.assert_less_equal, np.less_equal),
                                   (D.assert_greater, np.greater),
                                   (D.assert_greater_equal, np.greater_equal)])  # fmt: skip
def test_binary_asserts_agree_with_numpy(fn, op):
    for _ in range(20):
        x, y = rng.integers(0, 3, (2, 3)), rng.integers(0, 3, (3,))
        if op(x, y).all():
            assert fn(tf.constant(x), tf.constant(y)) is None
        else:
            with pytest.raises(tf.errors.InvalidArgumentError, match="did not hold"):
                fn(tf.constant(x), tf.constant(y))


def test_binary_assert_message_lists_the_first_failing_indices_and_values():
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        D.assert_equal(tf.constant([1, 2, 3]), tf.constant([1, 5, 6]), message="msg")
    text = str(e.value)
    assert text.startswith("msg\nCondition x == y did not hold.")
    assert "Indices of first 2 different values:\n[[1]\n [2]]" in text
    assert "Corresponding x values:\n[2 3]" in text and "First 3 elements of y:\n[1 5 6]" in text
    with pytest.raises(tf.errors.InvalidArgumentError, match="Indices of first 2 different"):
        D.assert_less_equal(tf.range(10), tf.zeros([10], tf.int32), summarize=2)
    assert D.assert_equal(tf.constant([1, 1]), 1) is None  # Python value, broadcast
    with pytest.raises(tf.errors.InvalidArgumentError):  # shapes that do not broadcast
        D.assert_equal(tf.constant([1, 2]), tf.constant([1, 2, 3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype"):
        D.assert_equal(tf.constant([1, 2]), tf.constant([1.0, 2.0]))
    assert tf.assert_less is D.assert_less and tf.assert_equal is D.assert_equal


@pytest.mark.parametrize("fn,ok", [(D.assert_positive, lambda a: a > 0),
                                   (D.assert_negative, lambda a: a < 0),
                                   (D.assert_non_negative, lambda a: a >= 0),
                                   (D.assert_non_positive, lambda a: a <= 0)])  # fmt: skip
def test_sign_asserts(fn, ok):
    for x in [np.array([1, 2]), np.array([-1, -2]), np.array([0, 1]), np.array([0, -1])]:
        if ok(x).all():
            assert fn(tf.constant(x)) is None
        else:
            with pytest.raises(tf.errors.InvalidArgumentError, match="did not hold element-wise"):
                fn(tf.constant(x))
    assert fn(tf.constant([], tf.float32)) is None


def test_assert_near_tolerances_and_dtypes():
    assert D.assert_near(tf.constant([1.0]), tf.constant([1.0 + 1e-7])) is None
    with pytest.raises(tf.errors.InvalidArgumentError, match="not equal to tolerance"):
        D.assert_near(tf.constant([1.0]), tf.constant([1.1]))
    assert D.assert_near(tf.constant([1.0]), tf.constant([1.1]), atol=0.2) is None
    assert D.assert_near(tf.constant([100.0]), tf.constant([101.0]), rtol=0.011) is None
    with pytest.raises(ValueError, match="floating"):
        D.assert_near(tf.constant([1]), tf.constant([1]))


def test_rank_type_and_scalar_asserts():
    x = tf.zeros([2, 3])
    assert D.assert_rank(x, 2) is None and tf.assert_rank(x, tf.constant(2)) is None
    with pytest.raises(ValueError, match=r"m\.  Tensor must have rank 3.  Received rank 2"):
        D.assert_rank(x, 3, message="m")
    assert D.assert_rank_at_least(x, 1) is None
    with pytest.raises(ValueError, match="rank at least 3"):
        D.assert_rank_at_least(x, 3)
    assert D.assert_rank_in(x, [1, 2]) is None
    with pytest.raises(ValueError, match=r"rank in \(0, 1\)"):
        D.assert_rank_in(x, [0, 1])
    assert D.assert_integer(tf.constant([1])) is None
    with pytest.raises(TypeError, match="integer type"):
        D.assert_integer(x)
    assert D.assert_type(x, tf.float32) is None
    with pytest.raises(TypeError, match="must be of type tf.int32; got tf.float32"):
        D.assert_type(x, tf.int32)
    assert D.assert_scalar(tf.constant(1.0)) is None
    with pytest.raises(ValueError, match=r"Expected scalar shape, saw shape: \(2, 3\)"):
        D.assert_scalar(x)


def test_assert_same_float_dtype_and_proper_iterable_and_is_numeric():
    assert D.assert_same_float_dtype([tf.zeros([2])]) == tf.float32
    assert D.assert_same_float_dtype(None) == tf.float32
    assert D.assert_same_float_dtype([tf.zeros([1], tf.float64)]) == tf.float64
    with pytest.raises(ValueError, match="same type"):
        D.assert_same_float_dtype([tf.zeros([2]), tf.zeros([2], tf.float64)])
    with pytest.raises(ValueError, match="floating point"):
        D.assert_same_float_dtype([tf.constant([1])])
    assert D.assert_proper_iterable([1, 2]) is None
    for bad in ["abc", b"x", tf.constant([1]), np.zeros(2)]:
        with pytest.raises(TypeError, match="proper"):
            D.assert_proper_iterable(bad)
    with pytest.raises(TypeError, match="iterable"):
        D.assert_proper_iterable(3)
    assert D.is_numeric_tensor(tf.zeros([1])) and not D.is_numeric_tensor(tf.constant([True]))
    assert not D.is_numeric_tensor(np.zeros(1))


def test_assert_shapes_names_ints_and_ranks():
    a, b = tf.zeros([2, 3]), tf.zeros([2])
    assert D.assert_shapes([(a, ("N", "Q")), (b, ("N",))]) is None
    assert D.assert_shapes([(a, (2, 3)), (a, (None, 3))]) is None
    with pytest.raises(ValueError, match="dimension 0 must have size 2.  Received size 3"):
        D.assert_shapes([(a, ("N", "Q")), (tf.zeros([3]), ("N",))])
    with pytest.raises(ValueError, match="must have size 4"):
        D.assert_shapes([(a, (2, 4))])
    with pytest.raises(ValueError, match=r"rank in \(0, 1\)"):
        D.assert_shapes([(a, ("N",))])
    with pytest.raises(ValueError, match="must have rank 3"):
        D.assert_shapes([(a, ("N", "Q", "R"))])


def test_Assert_lists_its_data():
    assert D.Assert(tf.constant(True), ["x is"]) is None
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Summarized data: b'x is'\n1, 2"):
        D.Assert(tf.constant(False), ["x is", tf.constant([1, 2])])
    assert tf.Assert is D.Assert


def test_check_numerics_forward_and_gradient():
    x = tf.constant([1.0, 2.0])
    np.testing.assert_array_equal(D.check_numerics(x, "m").numpy(), [1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="boom : Tensor had NaN values"):
        D.check_numerics(tf.constant([1.0, np.nan]), "boom")
    with pytest.raises(tf.errors.InvalidArgumentError, match="boom : Tensor had Inf values"):
        D.assert_all_finite(tf.constant([1.0, np.inf]), "boom")
    with pytest.raises(tf.errors.InvalidArgumentError, match="floating point"):
        D.check_numerics(tf.constant([1]), "m")
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = D.check_numerics(x * 3.0, "fwd")
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [3.0, 3.0])
    z = tf.constant([2.0, 1.0])
    with tf.GradientTape() as tape:
        tape.watch(z)
        y = D.check_numerics(z, "scaled input") * tf.constant([np.inf, 1.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="in gradient. scaled input"):
        tape.gradient(y, z)
