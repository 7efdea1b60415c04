"""Tracing: the body runs once per signature on symbolic tensors, then the plan runs
(TF's guide, "Tracing" and "Rules of tracing")."""

import numpy as np
import pytest

import layerflow as tf


def test_body_runs_once_then_the_plan():
    calls = []

    @tf.function
    def f(x):
        calls.append(1)
        return x * 2.0 + 1.0

    assert f(tf.constant([1.0, 2.0])).numpy().tolist() == [3.0, 5.0]
    assert f(tf.constant([4.0, 5.0])).numpy().tolist() == [9.0, 11.0]
    assert len(calls) == 1
    assert f.experimental_get_tracing_count() == 1


def test_body_sees_symbolic_tensors_and_not_eager():
    seen = {}

    @tf.function
    def f(x):
        seen["eager"] = tf.executing_eagerly()
        seen["inside"] = tf.inside_function()
        seen["symbolic"] = tf.is_symbolic_tensor(x)
        seen["shape"] = tuple(x.shape)
        return x

    f(tf.constant([[1.0, 2.0]]))
    assert seen == {"eager": False, "inside": True, "symbolic": True, "shape": (1, 2)}
    assert tf.executing_eagerly() and not tf.inside_function()
    assert not tf.is_symbolic_tensor(tf.constant(1.0))


def test_python_values_are_part_of_the_signature():
    @tf.function
    def f(x, n):
        return x * n

    assert float(f(tf.constant(2.0), 3.0)) == 6.0
    assert float(f(tf.constant(2.0), 4.0)) == 8.0
    assert float(f(tf.constant(5.0), 4.0)) == 20.0
    assert f.experimental_get_tracing_count() == 2


def test_numpy_arrays_are_tensor_arguments():
    @tf.function
    def f(x):
        return x + 1

    assert f(np.ones(2, np.float32)).numpy().tolist() == [2.0, 2.0]
    assert f(np.zeros(2, np.float32)).numpy().tolist() == [1.0, 1.0]
    assert f.experimental_get_tracing_count() == 1


def test_outputs_are_converted_to_tensors_and_keep_structure():
    @tf.function
    def f(x):
        return {"a": x, "b": [1, 2.5], "c": None, "d": (x * 2, "s")}

    out = f(tf.constant(1.0))
    assert isinstance(out["a"], tf.Tensor) and float(out["a"]) == 1.0
    assert isinstance(out["b"][0], tf.Tensor) and out["b"][0].dtype == tf.int32
    assert out["b"][1].dtype == tf.float32
    assert out["c"] is None
    assert float(out["d"][0]) == 2.0 and out["d"][1].numpy() == b"s"


def test_random_ops_draw_at_every_call():
    @tf.function
    def f():
        return tf.random.uniform((4,))

    a, b = f().numpy(), f().numpy()
    assert not np.array_equal(a, b)
    assert f.experimental_get_tracing_count() == 1


def test_dropout_mask_is_redrawn_at_every_call():
    @tf.function
    def f(x):
        return tf.nn.dropout(x, rate=0.5)

    x = tf.ones((200,))
    assert not np.array_equal(f(x).numpy(), f(x).numpy())


def test_python_function_and_input_signature_attributes():
    def body(x):
        return x

    f = tf.function(body)
    assert f.python_function is body
    assert f.input_signature is None
    g = tf.function(body, input_signature=[tf.TensorSpec([None], tf.float32)])
    assert g.input_signature == (tf.TensorSpec([None], tf.float32),)


def test_nested_tf_function_is_inlined():
    @tf.function
    def inner(x):
        return x * 3.0

    @tf.function
    def outer(x):
        return inner(x) + 1.0

    assert float(outer(tf.constant(2.0))) == 7.0
    assert float(outer(tf.constant(3.0))) == 10.0
    assert outer.experimental_get_tracing_count() == 1


def test_methods_get_a_function_per_instance():
    class Scale(tf.Module):
        def __init__(self, k):
            super().__init__()
            self.k = k
            self.traces = 0

        @tf.function
        def __call__(self, x):
            self.traces += 1
            return x * self.k

    a, b = Scale(2.0), Scale(3.0)
    assert float(a(tf.constant(1.0))) == 2.0
    assert float(b(tf.constant(1.0))) == 3.0
    assert float(a(tf.constant(5.0))) == 10.0
    assert (a.traces, b.traces) == (1, 1)
    assert a.__call__ is a.__call__


def test_jit_compile_accepted_same_results():
    f = tf.function(lambda x: tf.reduce_sum(x * x), jit_compile=True)
    assert float(f(tf.constant([1.0, 2.0]))) == 5.0


def test_run_functions_eagerly_runs_the_body_every_call():
    calls = []

    @tf.function
    def f(x):
        calls.append(1)
        return x.numpy() if tf.executing_eagerly() else x

    tf.config.run_functions_eagerly(True)
    try:
        assert tf.config.functions_run_eagerly()
        assert tf.config.experimental_functions_run_eagerly()
        f(tf.constant(1.0))
        f(tf.constant(1.0))
        assert len(calls) == 2
    finally:
        tf.config.run_functions_eagerly(False)
    assert not tf.config.functions_run_eagerly()
    f(tf.constant(1.0))
    f(tf.constant(1.0))
    assert len(calls) == 3


def test_init_scope_runs_eagerly_inside_a_trace():
    seen = []

    @tf.function
    def f(x):
        with tf.init_scope():
            seen.append(tf.executing_eagerly())
        return x

    f(tf.constant(1.0))
    assert seen == [True]


def test_multi_output_ops_and_slicing_inside_a_trace():
    @tf.function
    def f(x):
        a, b = tf.split(x, 2)
        return a[0] + b[-1], tf.shape(x)

    s, shape = f(tf.constant([1.0, 2.0, 3.0, 4.0]))
    assert float(s) == 5.0 and shape.numpy().tolist() == [4]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dtype_preserved(dtype):
    f = tf.function(lambda x: tf.exp(x))
    out = f(tf.constant([0.0, 1.0], dtype=dtype))
    assert out.dtype.name == dtype
    np.testing.assert_allclose(out.numpy(), np.exp([0.0, 1.0]), rtol=1e-6)


def test_tf_shape_and_size_are_dynamic_for_unknown_dimensions():
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def f(x):
        assert x.shape.as_list() == [None, 3]
        return tf.shape(x), tf.size(x), x

    for n in (1, 4):
        shape, size, _ = f(tf.zeros((n, 3)))
        assert shape.numpy().tolist() == [n, 3] and int(size) == 3 * n


def test_map_fn_and_scan_inside_a_trace():
    f = tf.function(lambda x: tf.map_fn(lambda r: r * 2.0, x))
    assert f(tf.constant([[1.0, 2.0], [3.0, 4.0]])).numpy().tolist() == [[2.0, 4.0], [6.0, 8.0]]
    g = tf.function(lambda x: tf.scan(lambda a, r: a + r, x))
    assert g(tf.constant([1.0, 2.0, 3.0])).numpy().tolist() == [1.0, 3.0, 6.0]


def test_reshape_with_symbolic_sizes():
    @tf.function(input_signature=[tf.TensorSpec([None, 2, 3], tf.float32)])
    def f(x):
        flat = tf.reshape(x, [tf.shape(x)[0], -1])
        assert flat.shape.rank == 2  # TF infers [None, 6]; layerflow leaves -1 unknown
        return flat

    x = tf.reshape(tf.range(12.0), (2, 2, 3))
    assert f(x).numpy().tolist() == tf.reshape(x, (2, 6)).numpy().tolist()


def test_other_threads_run_eagerly_while_one_traces():
    import threading

    started, release = threading.Event(), threading.Event()
    results = {}

    @tf.function
    def slow(x):
        started.set()
        release.wait(5)
        return x + 1

    def other():
        started.wait(5)
        y = tf.constant(2.0) * 3.0  # runs eagerly in this thread
        results["other"] = (type(y).__name__, float(y), tf.executing_eagerly())
        release.set()

    t = threading.Thread(target=other)
    t.start()
    assert float(slow(tf.constant(1.0))) == 2.0
    t.join()
    assert results["other"] == ("Tensor", 6.0, True)
