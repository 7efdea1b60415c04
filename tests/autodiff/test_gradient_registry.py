"""tf.RegisterGradient and tf.no_gradient: gradients chosen by op name (TF's signature
`fn(op, *grads)`), in tapes, nested tapes and tf.function."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff import gradient_registry


@pytest.fixture
def registry():
    names = []
    yield names
    for name in names:
        gradient_registry._unregister(name)


def _grad(f, x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


def test_register_gradient_replaces_a_builtin_op_gradient(registry):
    seen = {}
    registry.append("Square")

    @tf.RegisterGradient("Square")
    def _square_grad(op, grad):
        seen["type"], seen["inputs"], seen["outputs"] = op.type, op.inputs, op.outputs
        return grad * 10.0 * op.inputs[0]

    g = _grad(lambda x: tf.reduce_sum(tf.square(x)), [1.0, 2.0])
    np.testing.assert_allclose(g.numpy(), [10.0, 20.0])
    assert seen["type"] == "square"
    np.testing.assert_allclose(seen["inputs"][0].numpy(), [1.0, 2.0])
    np.testing.assert_allclose(seen["outputs"][0].numpy(), [1.0, 4.0])
    # Inside tf.function too.
    x = tf.constant([3.0])

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.square(x))
        return tape.gradient(y, x)

    np.testing.assert_allclose(step(x).numpy(), [30.0])
    # Undone, the built-in gradient is back.
    gradient_registry._unregister("Square")
    np.testing.assert_allclose(_grad(lambda x: tf.reduce_sum(tf.square(x)), [1.0]).numpy(), [2.0])


def test_registered_gradient_sees_attributes_and_returns_one_gradient_per_input(registry):
    registry.append("MatMul")
    attrs = []

    @tf.RegisterGradient("MatMul")
    def _matmul_grad(op, grad):
        attrs.append(op.get_attr("transpose_b"))
        with pytest.raises(ValueError, match="no attr named 'nope'"):
            op.get_attr("nope")
        a, b = op.inputs
        return tf.ones_like(a), None

    a, b = tf.constant([[1.0, 2.0]]), tf.constant([[3.0, 4.0]])
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = tf.matmul(a, b, transpose_b=True)
    ga, gb = tape.gradient(y, [a, b])
    np.testing.assert_allclose(ga.numpy(), [[1.0, 1.0]])
    assert gb is None and attrs == [True]


def test_second_order_through_a_registered_gradient(registry):
    registry.append("Sinh")

    @tf.RegisterGradient("Sinh")
    def _sinh_grad(op, grad):
        return grad * tf.cosh(op.inputs[0]) * 2.0

    x = tf.constant(0.5, tf.float64)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.sinh(x)
        g = inner.gradient(y, x)
    np.testing.assert_allclose(g.numpy(), 2 * np.cosh(0.5))
    np.testing.assert_allclose(outer.gradient(g, x).numpy(), 2 * np.sinh(0.5))


def test_wrong_number_of_gradients_is_reported(registry):
    registry.append("Exp")

    @tf.RegisterGradient("Exp")
    def _exp_grad(op, grad):
        return grad, grad

    with pytest.raises(ValueError, match="returned 2 value.*1 input"):
        _grad(lambda x: tf.reduce_sum(tf.exp(x)), [1.0])


def test_no_gradient_makes_an_op_non_differentiable(registry):
    registry.append("Floor")
    assert _grad(lambda x: tf.reduce_sum(tf.floor(x) * 1.0), [1.5]) is not None
    tf.no_gradient("Floor")
    x = tf.constant([1.5])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.floor(x) + x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [1.0])  # only the direct path
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.floor(x))
    assert tape.gradient(y, x) is None


def test_registration_errors_match_tf(registry):
    with pytest.raises(TypeError, match="op_type must be a string"):
        tf.RegisterGradient(3)
    with pytest.raises(TypeError, match="op_type must be a string"):
        tf.no_gradient(None)
    registry.append("MyCustomOp")

    @tf.RegisterGradient("MyCustomOp")
    def _first(op, grad):
        return grad

    with pytest.raises(KeyError, match="Registering two gradient with name 'MyCustomOp'"):
        tf.RegisterGradient("MyCustomOp")(_first)
    with pytest.raises(KeyError, match="Registering two gradient"):
        tf.no_gradient("my_custom_op")  # the same op, by layerflow's spelling


def test_registered_gradient_sees_outputs_of_ops_whose_builtin_gradient_does_not(registry):
    from layerflow._src.autodiff import op as op_module

    seen = []

    @tf.RegisterGradient("max_pool")
    def _pool_grad(op, grad):
        seen.append(op.outputs[0].shape)
        return tf.zeros_like(op.inputs[0])

    registry.append("max_pool")
    x = tf.constant(np.arange(16.0).reshape(1, 4, 4, 1))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.nn.max_pool2d(x, 2, 2, "VALID"))
    assert float(tf.reduce_sum(tape.gradient(y, x))) == 0.0
    assert seen == [(1, 2, 2, 1)]
    gradient_registry._unregister("max_pool")
    prim = op_module.primitives["maxpool"][0]
    assert prim.grad_uses_out is False  # restored
