"""tf.types.experimental: isinstance answers as in TF 2.21 for tf.function objects, concrete
functions, specs, tensors and distribute values."""

import numpy as np
import pytest

import layerflow as tf

E = tf.types.experimental


def test_function_types_match_tf():
    f = tf.function(lambda x: x * 2)
    c = f.get_concrete_function(tf.TensorSpec([], tf.float32))
    table = {  # name: (isinstance of tf.function, of its ConcreteFunction), TF 2.21's answers
        "Callable": (True, True),
        "ConcreteFunction": (False, True),
        "GenericFunction": (True, False),
        "PolymorphicFunction": (True, False),
        "AtomicFunction": (False, False),
        "SupportsTracingProtocol": (True, False),
        "TraceType": (False, False),
    }
    for name, want in table.items():
        cls = getattr(E, name)
        assert (isinstance(f, cls), isinstance(c, cls)) == want, name
    assert E.GenericFunction is E.PolymorphicFunction
    assert not isinstance(lambda: 0, E.Callable)


@pytest.mark.parametrize(
    "value,want",
    [(1.0, True), (3, True), ("s", True), (b"b", True), ([1], True), ((1,), True),
     (np.zeros(2), True), (np.float32(1), True), ({}, False), (None, False), (object(), False)],
)  # fmt: skip
def test_tensor_like(value, want):
    assert isinstance(value, E.TensorLike) is want


def test_tensors_specs_and_distribute_values():
    assert isinstance(tf.constant(1.0), E.TensorLike)
    assert isinstance(tf.Variable(1.0), E.TensorLike)
    for spec in [tf.TensorSpec([2]), tf.data.IteratorSpec(tf.TensorSpec([]))]:
        assert isinstance(spec, E.TraceType)
    assert not isinstance(tf.constant(1.0), E.TraceType)

    class Traced:
        def __tf_tracing_type__(self, context):
            return None

    assert isinstance(Traced(), E.SupportsTracingProtocol)
    from layerflow._src.distribute import values

    assert E.distributed.Mirrored is values.Mirrored
    assert E.distributed.PerReplica is values.PerReplica
    assert E.FunctionType.from_callable(lambda a, b=1: a).parameters["b"].default == 1
    assert tf.types.experimental is E
