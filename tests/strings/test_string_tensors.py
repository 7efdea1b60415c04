"""String tensors: bytes elements (str encoded UTF-8), manipulation ops, TF's errors for math."""

import numpy as np
import pytest

import layerflow as tf


def test_constant_holds_bytes_and_repr_matches_tf():
    t = tf.constant("abc")
    assert t.dtype == tf.string
    assert t.numpy() == b"abc" and isinstance(t.numpy(), bytes)
    assert repr(t) == "<tf.Tensor: shape=(), dtype=string, numpy=b'abc'>"
    v = tf.constant(["a", "bc", "é"]).numpy()
    assert v.dtype == object and list(v) == [b"a", b"bc", "é".encode()]
    assert tf.constant([b"x"]).numpy().tolist() == [b"x"]


def test_object_array_of_non_strings_is_refused():
    with pytest.raises(ValueError, match="element 1 has type"):
        tf.constant(np.array([b"a", 3.5], dtype=object))


def test_manipulation_ops_on_strings():
    s = tf.constant(["a", "b", "c", "d"])
    assert tf.reshape(s, [2, 2]).numpy().tolist() == [[b"a", b"b"], [b"c", b"d"]]
    assert tf.gather(s, [3, 0]).numpy().tolist() == [b"d", b"a"]
    assert tf.concat([s, s[:1]], 0).numpy().tolist() == [b"a", b"b", b"c", b"d", b"a"]
    assert tf.stack([s[0], s[1]]).numpy().tolist() == [b"a", b"b"]
    w = tf.where([True, False, True, False], s, tf.constant(["x"] * 4))
    assert w.numpy().tolist() == [b"a", b"x", b"c", b"x"]
    assert s[2].numpy() == b"c"
    assert tf.equal(s, "b").numpy().tolist() == [False, True, False, False]
    assert (s == tf.constant(["a", "x", "c", "x"])).numpy().tolist() == [True, False, True, False]
    # TF's string Add concatenates
    assert (s[:2] + s[2:]).numpy().tolist() == [b"ac", b"bd"]


def test_zeros_of_string_dtype_are_empty_bytes():
    assert tf.zeros([2], tf.string).numpy().tolist() == [b"", b""]
    assert tf.zeros_like(tf.constant(["a"])).numpy().tolist() == [b""]
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.ones_like(tf.constant(["a"]))
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.ones([2], tf.string)


@pytest.mark.parametrize(
    "fn",
    [
        lambda s: s * s,
        lambda s: s - s,
        lambda s: -s,
        lambda s: tf.abs(s),
        lambda s: s < s,
        lambda s: tf.maximum(s, s),
        lambda s: tf.reduce_sum(s),
        lambda s: tf.argmax(s),
        lambda s: tf.matmul(tf.reshape(s, [1, 2]), tf.reshape(s, [2, 1])),
    ],
)
def test_arithmetic_on_strings_raises_tf_error(fn):
    with pytest.raises(tf.errors.InvalidArgumentError, match="string"):
        fn(tf.constant(["a", "b"]))


def test_cast_between_strings_and_numbers_is_unimplemented():
    with pytest.raises(tf.errors.UnimplementedError, match="Cast string to float32"):
        tf.cast(tf.constant("1"), tf.float32)
    with pytest.raises(tf.errors.UnimplementedError, match="Cast int32 to string"):
        tf.cast(tf.constant(1), tf.string)


def test_dataset_of_strings_and_no_gradient():
    got = [t.numpy() for t in tf.data.Dataset.from_tensor_slices(["a", "bc"])]
    assert got == [b"a", b"bc"]
    x = tf.Variable(["a"])
    with tf.GradientTape() as g:
        y = tf.identity(x)
    assert g.gradient(y, x) is None
