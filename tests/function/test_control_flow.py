"""tf.cond, tf.while_loop, tf.switch_case and tf.case on symbolic values inside a trace."""

import pytest

import layerflow as tf


def test_cond_traces_both_branches_once_and_picks_at_run_time():
    traced = []

    @tf.function
    def f(x):
        def big():
            traced.append("big")
            return x * 10.0

        def small():
            traced.append("small")
            return -x

        return tf.cond(x > 1.0, big, small)

    assert float(f(tf.constant(2.0))) == 20.0
    assert float(f(tf.constant(0.5))) == -0.5
    assert sorted(traced) == ["big", "small"]


def test_cond_with_structures_and_python_values():
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: (x, 1), lambda: (x * 0.0, 2))

    a, b = f(tf.constant(3.0))
    assert (float(a), int(b)) == (3.0, 1)
    a, b = f(tf.constant(-3.0))
    assert (float(a), int(b)) == (0.0, 2)


def test_cond_branches_must_match():
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: (x, x), lambda: x)

    with pytest.raises(ValueError, match="must have the same number, type, and overall structure"):
        f(tf.constant(1.0))


def test_cond_updates_variables_only_in_the_taken_branch():
    v = tf.Variable(0)

    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: v.assign_add(1).read_value(),
                       lambda: v.assign_sub(1).read_value())  # fmt: skip

    f(tf.constant(1))
    f(tf.constant(1))
    f(tf.constant(-1))
    assert int(v.numpy()) == 1


def test_while_loop_runs_at_call_time():
    @tf.function
    def f(n):
        i, s = tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + i), (0, 0))
        return i, s

    i, s = f(tf.constant(5))
    assert (int(i), int(s)) == (5, 10)
    i, s = f(tf.constant(3))
    assert (int(i), int(s)) == (3, 3)
    assert f.experimental_get_tracing_count() == 1


def test_while_loop_maximum_iterations_and_shape_error():
    @tf.function
    def f(x):
        return tf.while_loop(lambda x: x < 100.0, lambda x: [x * 2.0], [x],
                             maximum_iterations=3)  # fmt: skip

    assert float(f(tf.constant(1.0))[0]) == 8.0

    @tf.function
    def g(x):
        return tf.while_loop(lambda x: tf.size(x) < 3, lambda x: [tf.concat([x, x], 0)], [x])

    with pytest.raises(ValueError, match="enters the loop with shape"):
        g(tf.constant([1.0]))


def test_switch_case_and_case_traced():
    @tf.function
    def f(i):
        return tf.switch_case(i, [lambda: tf.constant(10), lambda: tf.constant(20)])

    assert [int(f(tf.constant(k))) for k in (0, 1, 7)] == [10, 20, 20]

    @tf.function
    def g(x):
        return tf.case([(x < 0, lambda: tf.constant(-1)), (x > 0, lambda: tf.constant(1))],
                       default=lambda: tf.constant(0))  # fmt: skip

    assert [int(g(tf.constant(v))) for v in (-5, 5, 0)] == [-1, 1, 0]


def test_python_bool_of_a_symbolic_tensor_raises():
    @tf.function(autograph=False)
    def f(x):
        if x > 0:
            return x
        return -x

    text = "Using a symbolic `tf.Tensor` as a Python `bool` is not allowed"
    with pytest.raises(tf.errors.OperatorNotAllowedInGraphError, match=text):
        f(tf.constant(1.0))


def test_iterating_a_symbolic_tensor_raises():
    @tf.function(autograph=False)
    def f(x):
        return [y for y in x]

    with pytest.raises(tf.errors.OperatorNotAllowedInGraphError,
                       match="Iterating over a symbolic `tf.Tensor` is not allowed"):  # fmt: skip
        f(tf.constant([1.0]))


def test_autograph_converter_hook_is_applied():
    from layerflow._src.function import tf_function

    seen = []

    def converter(fn):
        seen.append(fn.__name__)
        return fn

    saved = tf_function._autograph[0]
    tf_function.set_autograph_converter(converter)
    try:
        tf.function(lambda x: x)(tf.constant(1))
        tf.function(lambda x: x, autograph=False)(tf.constant(1))
    finally:
        tf_function.set_autograph_converter(saved)
    assert seen == ["<lambda>"]


def test_tf_range_with_a_tensor_bound_runs_at_call_time():
    @tf.function
    def f(n):
        r = tf.range(n)
        return r, tf.range(1, n, 2), tf.range(0.0, tf.cast(n, tf.float32))

    r, odd, fl = f(tf.constant(5, tf.int64))
    assert r.dtype == tf.int64 and r.numpy().tolist() == [0, 1, 2, 3, 4]
    assert odd.dtype == tf.int64 and odd.numpy().tolist() == [1, 3]
    assert fl.dtype == tf.float32 and fl.numpy().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert f(tf.constant(2, tf.int64))[0].numpy().tolist() == [0, 1]
    assert f.experimental_get_tracing_count() == 1
