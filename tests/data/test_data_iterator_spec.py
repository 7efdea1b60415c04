"""tf.data.IteratorSpec: the TypeSpec of an iterator, its relations over the element structure,
type_spec_from_value, and tf.function input signatures (checked against TF 2.21)."""

import pytest

import layerflow as tf

D = tf.data.Dataset
S = tf.TensorSpec


def test_spec_of_an_iterator():
    it = iter(D.range(3))
    spec = tf.data.IteratorSpec(S([], tf.int64))
    assert repr(spec) == "IteratorSpec(TensorSpec(shape=(), dtype=tf.int64, name=None),)"
    assert tf.type_spec_from_value(it) == spec and it._type_spec == spec
    assert tf.data.IteratorSpec.from_value(it) == spec
    assert hash(spec) == hash(tf.data.IteratorSpec(S([], tf.int64)))
    assert spec.element_spec == S([], tf.int64) and isinstance(spec, tf.TypeSpec)
    assert spec.value_type is tf.data.Iterator and isinstance(it, spec.value_type)
    assert spec.is_compatible_with(it)
    floats = iter(D.from_tensor_slices([1.0, 2.0]))
    assert not spec.is_compatible_with(floats) and not spec.is_compatible_with(3)


def test_relations_follow_the_element_structure():
    a = tf.data.IteratorSpec((S([3], tf.float32), {"y": S([], tf.int32)}))
    b = tf.data.IteratorSpec((S([None], tf.float32), {"y": S([], tf.int32)}))
    assert a.is_subtype_of(b) and not b.is_subtype_of(a)
    c = tf.data.IteratorSpec((S([4], tf.float32), {"y": S([], tf.int32)}))
    assert a.most_specific_common_supertype([c]) == b
    other = tf.data.IteratorSpec((S([3], tf.float32), {"z": S([], tf.int32)}))
    assert a.most_specific_common_supertype([other]) is None
    assert a.most_specific_common_supertype([S([3], tf.float32)]) is None
    with pytest.raises(TypeError, match="structure of TypeSpecs"):
        tf.data.IteratorSpec([1, 2])
