"""Public names of ops and the symbolic-dispatch registry."""

import pytest

import layerflow as tf
from layerflow._src.autodiff import dispatch
from layerflow._src.framework import convert
from layerflow._src.framework.convert import SymbolicRegistry
from layerflow._src.ops import core_ops, math_ops


def test_public_names_come_from_definitions_and_the_facade_registry():
    assert dispatch.name_of(tf.nn.relu) == "tf.nn.relu"
    assert dispatch.name_of(tf.reduce_sum) == "tf.math.reduce_sum"
    assert dispatch.name_of(core_ops._reduce_sum) == "tf.math.reduce_sum"  # by its @op name
    assert dispatch.name_of(math_ops._matmul) == "tf.linalg.matmul"
    assert dispatch.name_of(tf.expand_dims) == "tf.expand_dims"  # declared by @public_api
    assert tf.expand_dims.public_name == "tf.expand_dims"


def test_public_api_declares_a_name_and_dispatches_one_call():
    calls = []

    @dispatch.public_api("test.twice", spec=lambda x: x)
    def twice(x):
        calls.append(x)
        return x * 2

    assert dispatch.name_of(twice) == "tf.test.twice"
    assert float(twice(tf.constant(2.0))) == 4.0 and len(calls) == 1
    x = tf.keras.Input((3,))
    y = twice(x)
    assert len(calls) == 1  # the symbolic call computed its spec from the rule
    model = tf.keras.Model(x, y)
    assert [layer.name for layer in model.layers[1:]] == ["tf.test.twice"]
    assert model(tf.ones((2, 3))).numpy().tolist() == [[2.0] * 3] * 2


def test_layer_names_need_no_stack_frames():
    import layerflow._src.keras.engine.functional as functional

    assert not hasattr(functional, "_public_name")
    with open(functional.__file__) as f:
        source = f.read()
    assert "sys._getframe" not in source and "sys.modules" not in source


def test_the_symbolic_registry_is_explicit():
    class Sym:
        pass

    registry = SymbolicRegistry()
    assert registry.types == () and registry.handler_for(Sym()) is None
    registry.register(Sym, lambda op, args, kwargs: ("handled", op, args))
    assert registry.types == (Sym,)
    assert registry.handler_for(Sym())("op", (1,), {}) == ("handled", "op", (1,))
    assert registry.state[0] == (Sym,)
    registry.unregister(Sym)
    assert registry.state == [(), None]
    with pytest.raises(TypeError, match="class and a callable"):
        registry.register("Sym", print)


def test_ops_hand_calls_with_a_registered_type_to_its_handler():
    class Probe:
        _data = None

    seen = []

    def handler(op, args, kwargs):
        seen.append((op, args))
        return "symbolic result"

    convert.symbolic_registry.register(Probe, handler)
    try:
        probe = Probe()
        assert tf.nn.relu(probe) == "symbolic result"
        assert seen[0][0] is tf.nn.relu and seen[0][1] == (probe,)
        assert convert.convert_to_tensor(probe) is probe
        # Two types with different handlers: each call reaches its own type's handler.
        assert tf.nn.relu(tf.keras.Input((2,))).shape == [None, 2]
    finally:
        convert.symbolic_registry.unregister(Probe)
    assert float(tf.nn.relu(tf.constant(-1.0))) == 0.0
