"""tf.experimental.ExtensionType: the extension-type guide's examples and TF 2.21's behaviour
(reprs, error wordings and results below were read off TF 2.21 running the same code)."""

import pickle
import typing

import numpy as np
import pytest

import layerflow as tf


class MaskedTensor(tf.experimental.ExtensionType):
    """The guide's MaskedTensor, with its validation and a nested Spec."""

    values: tf.Tensor
    mask: tf.Tensor

    def __validate__(self):
        self.values.shape.assert_is_compatible_with(self.mask.shape)
        if not self.mask.dtype.is_bool:
            raise ValueError("mask.dtype must be bool")

    @property
    def shape(self):
        return self.values.shape

    def with_default(self, default):
        return tf.where(self.mask, self.values, default)

    class Spec:
        def __init__(self, shape, dtype=tf.float32):
            self.values = tf.TensorSpec(shape, dtype)
            self.mask = tf.TensorSpec(shape, tf.bool)

        shape = property(lambda self: self.values.shape)


class Toy(tf.experimental.ExtensionType):
    name: str
    price: tf.Tensor
    features: typing.Mapping[str, tf.Tensor]
    n: int = 3
    t: typing.Tuple[int, ...] = ()  # noqa: UP006 - the guide's spelling
    o: typing.Optional[tf.Tensor] = None  # noqa: UP045 - the guide's spelling


class Pair(tf.experimental.ExtensionType):
    a: MaskedTensor
    b: float


class Batched(tf.experimental.BatchableExtensionType):
    v: tf.Tensor
    w: tf.Tensor
    tag: str = "x"


def _mt(values, mask):
    return MaskedTensor(values=values, mask=mask)


def test_fields_are_converted_and_repr_matches_tf():
    mt = _mt([1, 2, 3], [True, False, True])
    assert isinstance(mt.values, tf.Tensor) and mt.values.dtype == tf.int32
    assert repr(mt) == (
        "MaskedTensor(values=<tf.Tensor: shape=(3,), dtype=int32, numpy=array([1, 2, 3], "
        "dtype=int32)>, mask=<tf.Tensor: shape=(3,), dtype=bool, numpy=array([ True, False,  "
        "True])>)"
    )
    assert mt.shape == (3,)
    np.testing.assert_array_equal(mt.with_default(0).numpy(), [1, 0, 3])
    toy = Toy("ball", 1.5, {"a": [1, 2], "b": 3.0})
    assert toy.price.dtype == tf.float32 and toy.n == 3 and toy.o is None
    assert repr(toy).startswith("Toy(name='ball', price=<tf.Tensor: shape=(), dtype=float32")
    assert "features=ImmutableDict({'a': <tf.Tensor: shape=(2,)" in repr(toy)
    with pytest.raises(TypeError):
        toy.features["c"] = 1  # the mapping field is immutable
    assert Toy("x", 1.0, {}, t=[1, 2]).t == (1, 2)  # lists become tuples


@pytest.mark.parametrize(
    "make,error,text",
    [
        (lambda: Toy(3, 1.0, {}), TypeError, "name: expected 'str', got 'int'"),
        (lambda: Toy("x", 1.0, {}, n=2.5), TypeError, "n: expected 'int', got 'float'"),
        (lambda: Toy("x", 1.0, {}, t=(1, "a")), TypeError, r"t\[1\]: expected 'int', got 'str'"),
        (lambda: Pair(_mt([1], [True]), 2), TypeError, "b: expected 'float', got 'int'"),
        (lambda: Pair(3, 2.0), TypeError, "a: expected 'MaskedTensor', got 'int'"),
        (lambda: MaskedTensor([1, 2]), TypeError, "missing a required argument: 'mask'"),
        (lambda: _mt([1, 2], [1, 0]), ValueError, "mask.dtype must be bool"),
        (lambda: _mt([1, 2], [True]), ValueError, "incompatible"),
    ],
)
def test_bad_fields_raise_tf_errors(make, error, text):
    with pytest.raises(error, match=text):
        make()


def test_values_are_immutable_and_unhashable():
    mt = _mt([1, 2], [True, False])
    with pytest.raises(AttributeError, match="Cannot mutate attribute `mask`"):
        mt.mask = [False, False]
    with pytest.raises(AttributeError, match="Cannot mutate attribute `mask`"):
        del mt.mask
    with pytest.raises(TypeError, match="unhashable"):
        hash(mt)
    np.testing.assert_array_equal(mt.mask.numpy(), [True, False])


def test_unsupported_annotations_fail_at_class_creation():
    with pytest.raises(TypeError, match="In field x: Unsupported type annotation"):

        class Bad(tf.experimental.ExtensionType):
            x: list


def test_custom_init_sets_fields_then_conversion_and_validation_run():
    class Custom(tf.experimental.ExtensionType):
        x: tf.Tensor
        y: int

        def __init__(self, x, scale=1):
            self.x = x * scale
            self.y = 7

    c = Custom(tf.constant(2.0), 3)
    assert float(c.x) == 6.0 and c.y == 7
    with pytest.raises(AttributeError):
        c.y = 1

    class Forgetful(tf.experimental.ExtensionType):
        x: tf.Tensor

        def __init__(self):
            pass

    with pytest.raises(ValueError, match="Missing required fields: {'x'}"):
        Forgetful()


def test_equality_is_a_bool_tensor_for_equal_specs():
    a = _mt([1, 2, 3], [True, False, True])
    eq = a == _mt([1, 2, 3], [True, False, True])
    assert isinstance(eq, tf.Tensor) and eq.dtype == tf.bool and bool(eq)
    assert not bool(a == _mt([1, 2, 3], [True, True, True]))
    assert bool(a != _mt([1, 2, 3], [True, True, True]))
    assert (a == _mt([1, 2], [True, True])) is False  # another spec: Python False, as TF
    assert (a == 3) is False and (a != 3) is True


def test_spec_class_from_value_equality_and_relations():
    mt = _mt([1, 2, 3], [True, False, True])
    spec = mt._type_spec
    assert type(spec) is MaskedTensor.Spec and MaskedTensor.Spec.__qualname__ == "MaskedTensor.Spec"
    assert isinstance(spec, tf.experimental.ExtensionTypeSpec) and isinstance(spec, tf.TypeSpec)
    assert repr(spec) == (
        "MaskedTensor.Spec(values=TensorSpec(shape=(3,), dtype=tf.int32, name=None), "
        "mask=TensorSpec(shape=(3,), dtype=tf.bool, name=None))"
    )
    assert tf.type_spec_from_value(mt) == spec and spec.value_type is MaskedTensor
    assert hash(spec) == hash(MaskedTensor.Spec.from_value(_mt([4, 5, 6], [True] * 3)))
    # the body's `class Spec` provides the constructor and properties
    custom = MaskedTensor.Spec([3], tf.int32)
    assert custom == spec and custom.shape == (3,)
    assert spec.is_compatible_with(_mt([7, 8, 9], [True] * 3))
    assert not spec.is_compatible_with(_mt([1.0, 2.0, 3.0], [True] * 3))
    sup = spec.most_specific_common_supertype([_mt([1, 2], [True, True])._type_spec])
    assert sup.values == tf.TensorSpec([None], tf.int32) and sup.mask.shape.as_list() == [None]
    assert MaskedTensor.Spec([None], tf.int32).is_subtype_of(sup)
    assert spec.is_subtype_of(sup) and not sup.is_subtype_of(spec)
    assert pickle.loads(pickle.dumps(spec)) == spec
    toy_spec = Toy("ball", 1.5, {"a": [1, 2]})._type_spec
    assert repr(toy_spec) == (
        "Toy.Spec(name='ball', price=TensorSpec(shape=(), dtype=tf.float32, name=None), "
        "features={'a': TensorSpec(shape=(2,), dtype=tf.int32, name=None)}, n=3, t=(), o=None)"
    )
    assert toy_spec != Toy("car", 1.5, {"a": [1, 2]})._type_spec  # Python fields are in the spec


def test_generated_spec_constructor_checks_its_fields():
    class Plain(tf.experimental.ExtensionType):
        values: tf.Tensor
        k: int

    s = Plain.Spec(values=tf.TensorSpec([2], tf.float32), k=1)
    assert s == Plain([1.0, 2.0], 1)._type_spec
    with pytest.raises(TypeError, match="values: expected a TensorSpec, got 'int'"):
        Plain.Spec(values=3, k=1)


def test_nest_expands_composites_in_declaration_order():
    mt = _mt([1, 2, 3], [True, False, True])
    assert tf.nest.flatten(mt) == [mt]
    flat = tf.nest.flatten(mt, expand_composites=True)
    assert [t.dtype for t in flat] == [tf.int32, tf.bool]  # values before mask, as TF
    packed = tf.nest.pack_sequence_as(
        mt, [tf.constant([7, 8, 9]), tf.constant([False] * 3)], expand_composites=True
    )
    assert type(packed) is MaskedTensor
    np.testing.assert_array_equal(packed.values.numpy(), [7, 8, 9])
    pair = Pair(mt, 2.0)
    assert len(tf.nest.flatten(pair, expand_composites=True)) == 2
    doubled = tf.nest.map_structure(lambda t: t, {"p": pair, "z": 1}, expand_composites=True)
    assert doubled["p"].b == 2.0 and bool(doubled["p"].a == mt)
    toy = Toy("ball", 1.5, {"b": 3.0, "a": [1, 2]}, o=4)
    dts = [t.dtype for t in tf.nest.flatten(toy, expand_composites=True)]
    assert dts == [tf.float32, tf.int32, tf.float32, tf.int32]  # price, features a, b, o
    spec = toy._type_spec
    assert [s.dtype for s in spec.flatten()] == dts
    rebuilt = spec.from_tensors(iter(spec.to_tensors(toy)))
    assert rebuilt.name == "ball" and float(rebuilt.features["b"]) == 3.0


def test_tf_function_takes_and_returns_extension_types_reusing_the_trace():
    traces = []

    @tf.function
    def double(x):
        traces.append(1)
        return MaskedTensor(values=x.values * 2, mask=x.mask)

    out = double(_mt([1, 2, 3], [True, False, True]))
    assert type(out) is MaskedTensor and isinstance(out.values, tf.Tensor)
    np.testing.assert_array_equal(out.values.numpy(), [2, 4, 6])
    again = double(_mt([4, 5, 6], [True, True, False]))  # same spec: the same trace
    np.testing.assert_array_equal(again.values.numpy(), [8, 10, 12])
    np.testing.assert_array_equal(again.mask.numpy(), [True, True, False])
    assert len(traces) == 1 and double.experimental_get_tracing_count() == 1
    double(_mt([1.0, 2.0], [True, False]))  # another spec: a new trace
    assert len(traces) == 2

    @tf.function
    def scaled(p):
        return tf.reduce_sum(p.a.values) * p.b

    assert float(scaled(Pair(_mt([1.0, 2.0], [True, True]), 2.0))) == 6.0
    assert float(scaled(Pair(_mt([1.0, 2.0], [True, True]), 3.0))) == 9.0  # Python field: retrace
    assert scaled.experimental_get_tracing_count() == 2


def test_gradients_flow_through_extension_type_fields_in_tf_function():
    v = tf.Variable([1.0, 2.0, 3.0])

    @tf.function
    def loss(x):
        return tf.reduce_sum(x.with_default(0.0) ** 2)

    with tf.GradientTape() as tape:
        value = loss(_mt(v * 1.0, [True, False, True]))
    np.testing.assert_allclose(float(value), 10.0)
    np.testing.assert_allclose(tape.gradient(value, v).numpy(), [2.0, 0.0, 6.0])


def test_batchable_specs_batch_and_unbatch_with_the_encoder():
    b = Batched(tf.range(6), tf.ones([6, 2]))
    spec = b._type_spec
    assert type(spec).__qualname__ == "Batched.Spec"
    assert repr(spec._batch(3)) == (
        "Batched.Spec(v=TensorSpec(shape=(3, 6), dtype=tf.int32, name=None), "
        "w=TensorSpec(shape=(3, 6, 2), dtype=tf.float32, name=None), tag='x')"
    )
    assert repr(spec._unbatch()) == (
        "Batched.Spec(v=TensorSpec(shape=(), dtype=tf.int32, name=None), "
        "w=TensorSpec(shape=(2,), dtype=tf.float32, name=None), tag='x')"
    )
    assert spec._batch(None)._unbatch() == spec
    enc = tf.experimental.ExtensionTypeBatchEncoder()
    assert type(Batched.Spec.__batch_encoder__) is tf.experimental.ExtensionTypeBatchEncoder
    parts = enc.encode(spec, b)
    assert [p.shape for p in parts] == [(6,), (6, 2)]
    assert [s.shape for s in enc.encoding_specs(spec)] == [(6,), (6, 2)]
    back = enc.decode(spec, parts)
    assert type(back) is Batched and back.tag == "x" and bool(back == b)
    with pytest.raises(ValueError, match="only supported for rank >= 1"):
        Batched(1, 2)._type_spec._unbatch()


def test_builtin_generic_and_union_annotations():
    class Modern(tf.experimental.ExtensionType):
        sizes: tuple[int, int]
        scale: float | tf.Tensor
        shape: tf.TensorShape
        dtype: tf.DType = tf.float32

    m = Modern([2, 3], 1.5, [None, 4], "int32")
    assert m.sizes == (2, 3) and m.scale == 1.5 and m.shape.as_list() == [None, 4]
    assert m.dtype == tf.int32
    assert isinstance(Modern((2, 3), [1.0], [1]).scale, tf.Tensor)  # the union's second type
    with pytest.raises(TypeError, match="expected a tuple of length 2"):
        Modern((1, 2, 3), 1.0, [1])


def test_abstract_base_cannot_be_instantiated():
    with pytest.raises(TypeError, match="abstract"):
        tf.experimental.ExtensionType()


def test_dispatch_decorators_are_absent_with_a_reason():
    with pytest.raises(AttributeError, match="public decorators, with TF's signature matching"):
        tf.experimental.dispatch_for_api  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        tf.experimental.nope  # noqa: B018


def test_spec_in_input_signature_and_get_concrete_function():
    class Scaled(tf.experimental.ExtensionType):
        values: tf.Tensor
        mask: tf.Tensor
        n: int = 1

    spec = Scaled.Spec(
        values=tf.TensorSpec([None], tf.float32), mask=tf.TensorSpec([None], tf.bool), n=1
    )

    @tf.function(input_signature=[spec])
    def total(x):
        return tf.reduce_sum(tf.where(x.mask, x.values, 0.0)) * x.n

    assert float(total(Scaled([1.0, 2.0], [True, False]))) == 1.0
    assert float(total(Scaled([1.0, 2.0, 4.0], [True, False, True]))) == 5.0
    assert total.experimental_get_tracing_count() == 1  # one trace for every length
    with pytest.raises(TypeError, match="Can not cast"):
        total(Scaled([1, 2], [True, False]))  # int32 values
    with pytest.raises(TypeError, match="Can not cast"):
        total(Scaled([1.0], [True], n=2))  # another Python field

    @tf.function
    def plus_one(x):
        return x.values + 1.0

    concrete = plus_one.get_concrete_function(spec)
    (traced_spec,), _ = concrete.structured_input_signature
    assert type(traced_spec) is Scaled.Spec and traced_spec.values.shape.as_list() == [None]
    out = concrete(Scaled([1.0, 2.0, 3.0], [True] * 3))
    np.testing.assert_array_equal(out.numpy(), [2.0, 3.0, 4.0])
    # nest treats specs as TF does: their components are specs, packing gives a value
    assert tf.nest.flatten(spec, expand_composites=True) == [spec.values, spec.mask]
    packed = tf.nest.pack_sequence_as(
        spec, [tf.constant([1.0]), tf.constant([True])], expand_composites=True
    )
    assert type(packed) is Scaled and packed.n == 1


def test_tf_cond_in_a_function_returns_extension_types():
    a, b = _mt([1.0, 2.0], [True, False]), _mt([3.0, 4.0], [False, True])

    @tf.function
    def pick(p, x, y):
        return tf.cond(p, lambda: x, lambda: y)

    np.testing.assert_array_equal(pick(tf.constant(False), a, b).values.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(pick(tf.constant(True), a, b).mask.numpy(), [True, False])
    assert pick.experimental_get_tracing_count() == 1
