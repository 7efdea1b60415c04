"""TF's errors for inconsistent state, and errors that name the user's lines."""

import logging
import traceback

import pytest

import layerflow as tf


def defined_in_one_branch(x):
    if x > 0:
        y = 1
    return y


def test_undefined_in_the_taken_else_branch():
    g = tf.autograph.to_graph(defined_in_one_branch)
    with pytest.raises(ValueError, match="'y' must also be initialized in the else branch"):
        g(tf.constant(-1))


def test_undefined_in_one_branch_when_both_are_traced(graph_cond):
    with pytest.raises(ValueError, match="'y' must also be initialized in the else branch"):
        tf.autograph.to_graph(defined_in_one_branch)(tf.constant(1))


def test_undefined_on_the_python_path_is_unbound_local():
    assert tf.autograph.to_graph(defined_in_one_branch)(1) == 1
    with pytest.raises(UnboundLocalError, match="'y' is used before assignment"):
        tf.autograph.to_graph(defined_in_one_branch)(-1)


def test_branches_with_different_dtypes(graph_cond):
    def f(x):
        if x > 0:
            y = tf.constant(1)
        else:
            y = tf.constant(1.0)
        return y

    with pytest.raises(
        TypeError, match="'y' has dtype int32 in the main branch, but dtype float32"
    ):
        tf.autograph.to_graph(f)(tf.constant(1))


def test_dtype_change_in_a_loop():
    def f(n):
        s = 0
        i = 0
        while i < n:
            s = s + 0.5
            i += 1
        return s

    with pytest.raises(TypeError, match="'s' has dtype int32 before the loop, but dtype float32"):
        tf.autograph.to_graph(f)(tf.constant(3))


def test_shape_change_in_a_loop_needs_shape_invariants():
    def f(n):
        x = tf.zeros([0])
        i = 0
        while i < n:
            x = tf.concat([x, [1.0]], 0)
            i += 1
        return x

    with pytest.raises(
        ValueError, match="'x' has shape \\(0,\\) before the loop.*set_loop_options"
    ):
        tf.autograph.to_graph(f)(tf.constant(3))


def test_structure_change_in_a_loop():
    def f(n):
        s = (1, 2)
        i = 0
        while i < n:
            s = 3
            i += 1
        return s

    with pytest.raises(TypeError, match="'s' does not have the same nested structure"):
        tf.autograph.to_graph(f)(tf.constant(2))


def test_return_inside_a_tensor_loop_is_not_implemented():
    def f(xs):
        for x in xs:
            if x > 2:
                return x
        return -1

    assert tf.autograph.to_graph(f)([1, 3]) == 3
    with pytest.raises(NotImplementedError, match="a return statement cannot be placed"):
        tf.autograph.to_graph(f)(tf.constant([1, 3]))


def test_non_bool_condition():
    def f(x):
        if x:
            return 1
        return 2

    with pytest.raises(ValueError, match="condition of if statement expected to be `tf.bool`"):
        tf.autograph.to_graph(f)(tf.constant(1.0))


def failing(x):
    y = x + 1
    if x > 0:
        z = y / 0
    else:
        z = y
    return z


def test_errors_name_the_users_line():
    g = tf.autograph.to_graph(failing)
    with pytest.raises(ZeroDivisionError) as info:
        g(1)
    frames = [f for f in traceback.extract_tb(info.tb) if f.filename == __file__]
    line = failing.__code__.co_firstlineno + 3
    assert frames[-1].lineno == line
    assert frames[-1].line == "z = y / 0"


def test_functions_without_source_run_as_is_with_a_warning(caplog):
    namespace = {}
    exec("def made(x):\n    return x + 1\n", namespace)  # noqa: S102 - a function without source
    with caplog.at_level(logging.WARNING, logger="layerflow.autograph"):
        assert tf.autograph.experimental.do_not_convert(namespace["made"])(1) == 2
        g = tf.autograph.to_graph(tf.autograph.experimental.do_not_convert(namespace["made"]))
        assert g(1) == 2
        assert not caplog.records
        from layerflow._src.autograph.conversion import convert

        assert convert(namespace["made"]) is namespace["made"]
    assert "could not transform" in caplog.text and "do_not_convert" in caplog.text
