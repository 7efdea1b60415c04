"""get_concrete_function: a callable trace with its signature and outputs."""

import pytest

import layerflow as tf


def test_concrete_function_signature_and_outputs():
    @tf.function
    def p(x, y=2):
        return {"a": x * y}

    cf = p.get_concrete_function(tf.TensorSpec([2], tf.float32))
    # TF 2.21: ((TensorSpec(shape=(2,), dtype=tf.float32, name='x'), 2), {})
    args, kwargs = cf.structured_input_signature
    assert args[0] == tf.TensorSpec([2], tf.float32, name="x")
    assert kwargs == {}
    out = cf.structured_outputs["a"]
    assert tf.is_symbolic_tensor(out) and out.shape.as_list() == [2]
    assert cf.pretty_printed_signature() == (
        "Input Parameters:\n"
        "  x (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(2,), dtype=tf.float32, name=None)\n"
        "Output Type:\n"
        "  Dict[['a', TensorSpec(shape=(2,), dtype=tf.float32, name=None)]]\n"
        "Captures:\n"
        "  None"
    )
    assert [t.shape.as_list() for t in cf.inputs] == [[2]]
    assert len(cf.outputs) == 1


def test_concrete_function_is_callable_and_shares_the_trace():
    f = tf.function(lambda x: x + 1.0)
    cf = f.get_concrete_function(tf.TensorSpec([None], tf.float32))
    assert cf(tf.constant([1.0, 2.0])).numpy().tolist() == [2.0, 3.0]
    assert f.experimental_get_tracing_count() == 1
    f(tf.constant([5.0]))  # covered by the (None,) trace
    assert f.experimental_get_tracing_count() == 1
    assert f.get_concrete_function(tf.constant([1.0, 2.0, 3.0])) is cf


def test_concrete_function_rejects_other_signatures():
    cf = tf.function(lambda x: x).get_concrete_function(tf.TensorSpec([2], tf.float32))
    with pytest.raises(TypeError, match="do not match its input signature"):
        cf(tf.constant([1, 2]))


def test_input_signature_concrete_function_without_arguments():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def s(x):
        return x

    cf = s.get_concrete_function()
    assert cf.pretty_printed_signature().splitlines()[1] == (
        "  x (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(None,), dtype=tf.float32, name=None)"
    )
    assert "ConcreteFunction (x: TensorSpec(shape=(None,)" in repr(cf)


def test_captured_variables_listed():
    v = tf.Variable(2.0)
    cf = tf.function(lambda x: x * v).get_concrete_function(tf.TensorSpec([], tf.float32))
    assert cf.variables == (v,) and cf.trainable_variables == (v,)
