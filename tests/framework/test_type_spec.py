"""tf.TypeSpec, tf.TensorSpec, tf.NoneTensorSpec and tf.type_spec_from_value, as in TF 2.21."""

import numpy as np
import pytest

import layerflow as tf

T = tf.TensorSpec


def test_from_spec_and_from_tensor():
    assert T.from_spec(T([2], tf.int32, "a")) == T([2], tf.int32, "a")
    assert T.from_spec(T([2], tf.int32, "a"), name="b").name == "b"
    x = tf.constant([[1.0, 2.0]])
    assert T.from_tensor(x) == T([1, 2], tf.float32)
    assert T.from_tensor(x, name="q").name == "q"
    assert T.from_tensor(tf.Variable([1, 2])) == T([2], tf.int32)
    with pytest.raises(ValueError, match="should be a tf.Tensor, but got type"):
        T.from_tensor(np.zeros(3))


def test_relations():
    assert T([2, 3]).is_subtype_of(T([None, 3]))
    assert not T([None, 3]).is_subtype_of(T([2, 3]))
    assert not T([2, 3], name="a").is_subtype_of(T([2, 3]))
    assert not T([2, 3]).is_subtype_of(T([2, 3], tf.int32))
    assert T([2, 3]).most_specific_common_supertype([T([4, 3])]) == T([None, 3])
    assert T([2]).most_specific_common_supertype([T([2]), T([3])]) == T([None])
    assert T([2, 3]).most_specific_common_supertype([T([4, 3], tf.int32)]) is None
    assert T([2], name="a").most_specific_common_supertype([T([2], name="b")]) is None
    assert T([2, 3]).most_specific_compatible_type(T([4, 3])) == T([None, 3])
    with pytest.raises(ValueError, match="No TypeSpec is compatible with both"):
        T([2, 3]).most_specific_compatible_type(T([4, 3], tf.int32))


def test_components_and_cast():
    spec = T([2])
    value = tf.constant([1.0, 2.0])
    assert spec.value_type is tf.Tensor
    assert spec.flatten() == [spec]
    assert spec.to_tensors(value)[0] is value
    assert spec.from_tensors(iter([value])) is value
    assert spec.cast(value) is value
    with pytest.raises(ValueError, match="Can not cast"):
        spec.cast(tf.constant([1, 2]))
    with pytest.raises(NotImplementedError, match="placeholder"):
        spec.placeholder_value(None)


def test_is_compatible_with_wants_tensors():
    spec = T([2])
    assert spec.is_compatible_with(tf.constant([1.0, 2.0]))
    assert spec.is_compatible_with(T([None]))
    assert not spec.is_compatible_with(np.array([1.0, 2.0], np.float32))  # TF says False
    assert not spec.is_compatible_with(tf.constant([1, 2]))


def test_repr_and_hash():
    assert repr(T(None)) == "TensorSpec(shape=<unknown>, dtype=tf.float32, name=None)"
    assert T(None) != T([])
    assert len({T([2]), T([2]), T([3])}) == 2


def test_type_spec_from_value():
    f = tf.type_spec_from_value
    assert f(tf.constant([[1.0, 2.0]])) == T([1, 2], tf.float32)
    assert f(np.zeros(2)) == T([2], tf.float64)
    assert f(3) == T([], tf.int32)
    assert f("a") == T([], tf.string)
    assert f([1, 2]) == T([2], tf.int32)
    assert f(None) == tf.NoneTensorSpec()
    with pytest.raises(TypeError, match="Could not build a TypeSpec"):
        f(object())


def test_none_tensor_spec():
    spec = tf.NoneTensorSpec()
    assert isinstance(spec, tf.TypeSpec) and repr(spec) == "NoneTensorSpec()"
    assert spec == tf.NoneTensorSpec() and hash(spec) == hash(tf.NoneTensorSpec())
    assert spec.is_compatible_with(None) and not spec.is_compatible_with(1.0)
    assert spec.value_type is type(None)
    assert spec.flatten() == [] and spec.from_tensors(iter([])) is None
    assert spec.most_specific_common_supertype([tf.NoneTensorSpec()]) == spec


def test_type_spec_is_the_base():
    assert issubclass(tf.TensorSpec, tf.TypeSpec)
    with pytest.raises(NotImplementedError):
        tf.TypeSpec().value_type  # noqa: B018
