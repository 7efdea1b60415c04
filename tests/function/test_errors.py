"""Errors inside a traced function: TF's classes, and the user's line in the traceback."""

import traceback

import pytest

import layerflow as tf


def _user_line_in(exc_info, fn_name):
    frames = traceback.extract_tb(exc_info.tb)
    return [f for f in frames if f.name == fn_name and f.filename == __file__]


def test_shape_error_points_at_the_users_line():
    @tf.function
    def bad(x):
        return tf.matmul(x, x)  # (2, 3) @ (2, 3)

    # As TF: a static shape mismatch is a ValueError while tracing.
    with pytest.raises(ValueError, match="inner dimensions differ") as info:
        bad(tf.zeros((2, 3)))
    frames = _user_line_in(info, "bad")
    assert frames and "tf.matmul(x, x)" in frames[-1].line


def test_python_error_in_body_is_raised_unwrapped():
    @tf.function
    def bad(x):
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine") as info:
        bad(tf.constant(1))
    assert _user_line_in(info, "bad")


def test_numpy_of_a_symbolic_tensor_is_an_attribute_error():
    @tf.function
    def f(x):
        return x.numpy()

    with pytest.raises(AttributeError, match="numpy"):
        f(tf.constant(1.0))


def test_np_asarray_of_a_symbolic_tensor_says_why():
    import numpy as np

    @tf.function
    def f(x):
        return np.asarray(x)

    with pytest.raises(NotImplementedError, match="symbolic tf.Tensor"):
        f(tf.constant(1.0))


def test_dtype_mismatch_raises_at_trace_time():
    @tf.function
    def f(x, y):
        return x + y

    with pytest.raises(tf.errors.InvalidArgumentError, match="same dtype"):
        f(tf.constant(1.0), tf.constant(1))


def test_a_failed_trace_leaves_nothing_behind():
    calls = []

    @tf.function
    def f(x, fail):
        calls.append(1)
        if fail:
            raise ValueError("boom")
        return x

    with pytest.raises(ValueError):
        f(tf.constant(1), True)
    assert float(f(tf.constant(1), False)) == 1
    assert not tf.inside_function() and tf.executing_eagerly()


def test_graph_tensor_escaping_the_trace_is_an_error():
    leaked = []

    @tf.function
    def f(x):
        leaked.append(x)
        return x

    f(tf.constant(1.0))
    with pytest.raises(tf.errors.InvalidArgumentError, match="outside that trace"):
        tf.reduce_sum(leaked[0])


def test_int_and_float_of_a_symbolic_tensor_say_why():
    # Without AutoGraph (which turns `int(x)` into a cast), as TF's graph mode.
    @tf.function(autograph=False)
    def f(x):
        return tf.zeros((int(x),))

    with pytest.raises(TypeError, match=r"int\(\) of a symbolic tf.Tensor"):
        f(tf.constant(3))


def test_run_time_error_names_the_users_line():
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def mm(x):
        return tf.matmul(x, tf.ones((3, 2)))  # the inner size is known only at run time

    assert mm(tf.ones((4, 3))).shape.as_list() == [4, 2]
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        mm(tf.ones((4, 5)))
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "in user code:" in notes and __file__ in notes and "in mm" in notes
