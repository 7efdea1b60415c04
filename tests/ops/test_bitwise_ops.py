"""tf.bitwise against NumPy oracles; shift-count clamping, dtype errors and the absence of
gradients as TF 2.21 (values checked against it)."""

import numpy as np
import pytest

import layerflow as tf

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
rng = np.random.default_rng(13)


def rand(dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def shift_oracle(x, y, left):
    """TF's kernels: count clamped to [0, bits - 1]; left shift on the unsigned pattern."""
    bits = x.dtype.itemsize * 8
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), x.dtype)
    for idx in np.ndindex(out.shape):
        xv = int(np.broadcast_to(x, out.shape)[idx])
        c = min(max(int(np.broadcast_to(y, out.shape)[idx]), 0), bits - 1)
        if left:
            v = (xv << c) & ((1 << bits) - 1)
            if x.dtype.kind == "i" and v >= 1 << (bits - 1):
                v -= 1 << bits
        else:
            v = xv >> c  # Python's >> is arithmetic, as TF's for signed dtypes
        out[idx] = v
    return out


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize(
    "name,oracle",
    [
        ("bitwise_and", np.bitwise_and),
        ("bitwise_or", np.bitwise_or),
        ("bitwise_xor", np.bitwise_xor),
    ],
)
def test_logic_ops_match_numpy_with_broadcasting(dtype, name, oracle):
    x, y = rand(dtype, (3, 1, 4)), rand(dtype, (5, 1))
    out = getattr(tf.bitwise, name)(tf.constant(x), tf.constant(y))
    assert out.dtype == tf.as_dtype(dtype) and out.shape == (3, 5, 4)
    np.testing.assert_array_equal(out.numpy(), oracle(x, y))


@pytest.mark.parametrize("dtype", INTS)
def test_invert_matches_numpy(dtype):
    x = rand(dtype, (7,))
    out = tf.bitwise.invert(tf.constant(x))
    assert out.dtype == tf.as_dtype(dtype)
    np.testing.assert_array_equal(out.numpy(), np.invert(x))


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("left", [True, False])
def test_shifts_clamp_counts_like_tf(dtype, left):
    bits = np.dtype(dtype).itemsize * 8
    x = rand(dtype, (4, 1))
    lo = -3 if np.dtype(dtype).kind == "i" else 0
    counts = np.array([lo, 0, 1, bits - 1, bits, bits + 5, min(100, np.iinfo(dtype).max)])
    y = counts.astype(dtype)[None, :]
    fn = tf.bitwise.left_shift if left else tf.bitwise.right_shift
    out = fn(tf.constant(x), tf.constant(y))
    assert out.dtype == tf.as_dtype(dtype) and out.shape == (4, 7)
    np.testing.assert_array_equal(out.numpy(), shift_oracle(x, y, left))


def test_shift_values_checked_against_tf():
    x = tf.constant([-8, 8, -1])
    lsh, rsh = tf.bitwise.left_shift, tf.bitwise.right_shift
    got = [(lsh(x, s).numpy().tolist(), rsh(x, s).numpy().tolist()) for s in (-1, 31, 32, 64)]
    assert got == [
        ([-8, 8, -1], [-8, 8, -1]),
        ([0, 0, -2147483648], [-1, 0, -1]),
        ([0, 0, -2147483648], [-1, 0, -1]),
        ([0, 0, -2147483648], [-1, 0, -1]),
    ]
    u = tf.constant([5, 250, 1], tf.uint8)
    assert tf.bitwise.left_shift(u, tf.constant([200, 3, 100], tf.uint8)).numpy().tolist() == [
        128,
        208,
        128,
    ]
    assert tf.bitwise.right_shift(u, tf.constant([200, 3, 100], tf.uint8)).numpy().tolist() == [
        0,
        31,
        0,
    ]


def test_python_operands_take_the_tensor_dtype():
    out = tf.bitwise.bitwise_and(tf.constant([3], tf.uint8), 5)
    assert out.dtype == tf.uint8 and out.numpy().tolist() == [1]
    assert tf.bitwise.bitwise_xor(3, 5).numpy() == 6


@pytest.mark.parametrize("value", [[1.0], [True], ["a"], [1 + 2j]])
@pytest.mark.parametrize(
    "name", ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "invert"]
)
def test_non_integer_dtypes_raise_tfs_error(value, name):
    x = tf.constant(value)
    args = (x,) if name == "invert" else (x, x)
    with pytest.raises(tf.errors.InvalidArgumentError, match="not in the list of allowed values"):
        getattr(tf.bitwise, name)(*args)


def test_mixed_dtypes_raise():
    with pytest.raises(tf.errors.InvalidArgumentError, match="int64"):
        tf.bitwise.bitwise_and(tf.constant([1]), tf.constant([1], tf.int64))


def test_incompatible_shapes_raise():
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.bitwise.bitwise_or(tf.constant([1, 2, 3]), tf.constant([1, 2]))


def test_no_gradient_as_tf():
    v = tf.Variable([3, 6])
    with tf.GradientTape() as tape:
        y = tf.bitwise.bitwise_and(v, 1)
    assert tape.gradient(y, v) is None


def test_functional_model_names_the_op():
    inp = tf.keras.Input(shape=(3,), dtype="int32")
    model = tf.keras.Model(inp, tf.bitwise.bitwise_and(inp, 6))
    x = np.array([[1, 2, 7]], np.int32)
    np.testing.assert_array_equal(model(x).numpy(), x & 6)
    assert any("bitwise_and" in layer.name for layer in model.layers[1:])
