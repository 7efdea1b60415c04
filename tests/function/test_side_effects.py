"""Python side effects happen while tracing; tf.print and variable updates at every call."""

import io
import sys

import layerflow as tf


def test_python_print_at_trace_time_tf_print_every_call(capsys):
    @tf.function
    def f(x):
        print("traced")
        tf.print("value:", x, output_stream=sys.stdout)
        return x

    f(tf.constant(1))
    f(tf.constant(2))
    assert capsys.readouterr().out == "traced\nvalue: 1\nvalue: 2\n"


def test_tf_print_formats_as_tf(capsys):
    tf.print(
        tf.constant([1.5, 2.0, 3.0, 4, 5, 6, 7]), "abc", 5, tf.constant(7),
        tf.constant([[1, 2], [3, 4]]), [1, 2], tf.constant(True), tf.constant("s"),
    )  # fmt: skip
    tf.print(tf.constant(1e-5), tf.constant(123456789.0), tf.constant([0.1, 1e10]))
    tf.print({"a": tf.constant(1.0)})
    err = capsys.readouterr().err
    assert err == (  # TF 2.21's output, byte for byte
        '[1.5 2 3 ... 5 6 7] abc 5 7 [[1 2]\n [3 4]] [1, 2] 1 "s"\n'
        "1e-05 123456792 [0.1 1e+10]\n"
        "{'a': 1}\n"
    )


def test_tf_print_summarize_and_3d(capsys):
    tf.print(tf.range(12), summarize=-1, output_stream=sys.stdout)
    tf.print(tf.reshape(tf.range(8), (2, 2, 2)), output_stream=sys.stdout)
    assert capsys.readouterr().out == (
        "[0 1 2 3 4 5 6 7 8 9 10 11]\n[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]\n"
    )


def test_tf_print_sep_end_and_stream_object():
    buf = io.StringIO()
    f = tf.function(lambda x: tf.print(x, x + 1, sep=",", end=";", output_stream=buf))
    f(tf.constant(1))
    f(tf.constant(5))
    assert buf.getvalue() == "1,2;5,6;"


def test_python_list_append_happens_once():
    seen = []

    @tf.function
    def f(x):
        seen.append(x)
        return x + 1

    f(tf.constant(1))
    f(tf.constant(2))
    assert len(seen) == 1 and tf.is_symbolic_tensor(seen[0])


def test_unused_ops_are_not_run_but_state_changes_are():
    v = tf.Variable(0)

    @tf.function
    def f():
        tf.constant(1) + 2  # dead code
        v.assign_add(1)
        return tf.constant(0)

    f()
    f()
    assert int(v.numpy()) == 2


def test_print_at_trace_time_shows_the_symbolic_tensor(capsys):
    # TF's run_functions_eagerly docstring: `a: Tensor("a:0", shape=(), dtype=int32)`.
    def my_func(a):
        print(f"a: {a}")
        return a + a

    a_fn = tf.function(my_func)
    assert int(a_fn(tf.constant(1))) == 2
    assert int(a_fn(tf.constant(2))) == 4
    assert capsys.readouterr().out == 'a: Tensor("a:0", shape=(), dtype=int32)\n'
    tf.config.run_functions_eagerly(True)
    try:
        a_fn(tf.constant(2))
    finally:
        tf.config.run_functions_eagerly(False)
    assert capsys.readouterr().out == "a: 2\n"


def test_symbolic_tensor_repr():
    seen = []

    @tf.function
    def f(x):
        seen.append(repr(x))
        return x

    f(tf.constant([1.0, 2.0]))
    assert seen == ["<tf.Tensor 'x:0' shape=(2,) dtype=float32>"]
