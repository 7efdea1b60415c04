"""TensorShape, DType and Tensor methods with TF 2.21's answers (looked up on real TF)."""

import numpy as np
import pytest

import layerflow as tf

S = tf.TensorShape


def test_bool_is_known_rank():
    assert bool(S([])) is True and bool(S([0])) is True
    assert bool(S(None)) is False


def test_radd_and_add():
    assert [1] + S([2]) == S([1, 2]) and isinstance([1] + S([2]), S)
    assert (1,) + S([2]) == [1, 2]


def test_unknown_shape_is_not_scalar_shape():
    assert S(None) != S([]) and S([]) != S(None)
    assert S(None) == S(None)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: S([1, 2]).assert_has_rank(3), r"Shape \(1, 2\) must have rank 3"),
        (lambda: S([1, 2]).assert_is_compatible_with([1, 3]), "are incompatible"),
        (lambda: S([1, None]).assert_is_fully_defined(), r"Shape \(1, None\) is not fully"),
        (lambda: S([1, 2]).assert_same_rank([1]), "must have the same rank"),
        (lambda: S([1, 2]).with_rank(3), "must have rank 3"),
        (lambda: S([1, 2]).with_rank_at_least(3), "must have rank at least 3"),
        (lambda: S([1, 2]).with_rank_at_most(1), "must have rank at most 1"),
    ],
)
def test_shape_checks_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_shape_checks_pass():
    S([1, 2]).assert_has_rank(2)
    S(None).assert_has_rank(5)
    S([1, None]).assert_is_compatible_with([1, 7])
    S([1, 2]).assert_is_fully_defined()
    S(None).assert_same_rank([1, 2])
    assert S(None).with_rank(2) == [None, None]
    assert S([1, 2]).with_rank_at_least(1) == [1, 2]
    assert S(None).with_rank_at_most(2).rank is None


def test_shape_lattice():
    assert S([1, 2]).most_specific_compatible_shape([1, 3]) == [1, None]
    assert S([1, 2]).most_specific_compatible_shape([1, 2, 3]).rank is None
    assert S([1, 2]).most_specific_common_supertype([S([1, 3])]) == [1, None]
    assert S([1, 2]).most_specific_common_supertype([S([1, 3, 4])]).rank is None
    assert S([1, 2]).most_specific_common_supertype([]) == [1, 2]
    assert S([1]).most_specific_common_supertype([[1]]) is None
    assert S([1, 2]).is_subtype_of(S([1, None]))
    assert not S([1, None]).is_subtype_of(S([1, 2]))
    assert S([1, 2]).is_subtype_of(S(None))
    assert not S([1, 2]).is_subtype_of([1, 2])  # a list is not a TraceType


def test_shape_trace_type_has_no_components():
    s = S([1, 2])
    assert s.flatten() == [] and s.to_tensors(s) == [] and s.from_tensors(iter([])) is None
    assert s.placeholder_value(None) is None
    assert s.cast(S([1, 2])) == s
    with pytest.raises(ValueError, match="Can not cast"):
        S([1, 2]).cast(S([1, 3]))


# TF's DataType enum numbers and limits, read from TF 2.21.
ENUMS = {"float16": 19, "float32": 1, "float64": 2, "int8": 6, "int16": 5, "int32": 3,
         "int64": 9, "uint8": 4, "uint16": 17, "uint32": 22, "uint64": 23, "bool": 10,
         "complex64": 8, "complex128": 18, "string": 7}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ENUMS))
def test_dtype_enum(name):
    d = tf.as_dtype(name)
    assert int(d) == d.as_datatype_enum == ENUMS[name]
    assert d.is_quantized is False and d.is_numpy_compatible is True


def test_dtype_limits():
    assert tf.float32.limits() == (0, 1)
    assert tf.float64.limits(clip_negative=False) == (-1, 1)
    assert tf.int8.limits(clip_negative=False) == (-128, 127)
    assert tf.uint64.limits() == (0, 2**64 - 1)
    assert tf.bool.limits() == (0, True)
    for d in (tf.float16, tf.complex64, tf.string):
        with pytest.raises(ValueError, match="does not have defined limits"):
            d.limits()


def test_dtype_str_and_trace_type():
    assert str(tf.float32) == "<dtype: 'float32'>" and repr(tf.float32) == "tf.float32"
    assert tf.float32.is_subtype_of(tf.float32) and not tf.float32.is_subtype_of(tf.int32)
    assert tf.float32.most_specific_common_supertype([tf.float32]) is tf.float32
    assert tf.float32.most_specific_common_supertype([tf.int32]) is None
    assert tf.float32.flatten() == [] and tf.float32.to_tensors(1.0) == []
    assert tf.float32.from_tensors(iter([])) is None and tf.float32.placeholder_value() is None
    assert tf.float32.cast(tf.float32) is tf.float32
    with pytest.raises(ValueError, match="Can not cast"):
        tf.float32.cast(1.0)


def test_tensor_set_shape():
    x = tf.constant([[1.0, 2.0]])
    x.set_shape([1, 2])
    x.set_shape([None, 2])
    x.set_shape(None)
    with pytest.raises(ValueError, match=r"shape \(1, 2\) is not compatible with supplied shape"):
        x.set_shape([2, 1])
    with pytest.raises(ValueError, match="not compatible"):
        x.set_shape([1])
    with pytest.raises(ValueError, match=r"Shapes \(\) and \(2,\) are not compatible"):
        tf.Variable(1.0).set_shape([2])


def test_tensor_name_is_undefined_eagerly():
    x = tf.constant(1.0)
    with pytest.raises(AttributeError, match="Tensor.name is undefined when eager execution"):
        x.name  # noqa: B018
    assert not hasattr(x, "name")


def test_tensor_device_facts_and_copies():
    x = tf.constant([1.0, 2.0])
    assert x.backing_device == x.device and x.is_packed is False
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x.cpu() * 3.0
    assert y.device.endswith("CPU:0")
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [3.0, 3.0])
    if not tf.config.list_logical_devices("GPU"):
        with pytest.raises(RuntimeError, match="GPU:0 unknown device"):
            x.gpu()


def test_overloadable_operators():
    ops = tf.Tensor.OVERLOADABLE_OPERATORS
    assert len(ops) == 34 and "__matmul__" in ops and "__rpow__" in ops
    assert all(hasattr(tf.Tensor, name) for name in ops if name not in ("__div__", "__rdiv__"))


def test_scalar_repr_shows_the_python_value():
    assert repr(tf.constant(6.0)).endswith("numpy=6.0>")
    assert repr(tf.constant(0.1)).endswith("numpy=0.10000000149011612>")  # TF's float32 0.1
    assert str(tf.constant(0.1)) == "tf.Tensor(0.1, shape=(), dtype=float32)"
    assert repr(tf.constant("a")).endswith("numpy=b'a'>")
    assert repr(tf.Variable(2)).endswith("numpy=2>")
