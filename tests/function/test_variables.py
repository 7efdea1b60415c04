"""Variables: created on the first trace only, captured by reference."""

import numpy as np
import pytest

import layerflow as tf


def test_assign_is_replayed_at_every_call():
    v = tf.Variable(1.0)

    @tf.function
    def f(x):
        v.assign_add(x)
        return v.read_value()

    assert float(f(tf.constant(2.0))) == 3.0
    assert float(f(tf.constant(2.0))) == 5.0
    assert float(v.numpy()) == 5.0
    assert f.experimental_get_tracing_count() == 1


def test_outside_change_is_seen_by_the_next_call():
    v = tf.Variable([1.0, 2.0])
    f = tf.function(lambda x: x * v)
    assert f(tf.constant(2.0)).numpy().tolist() == [2.0, 4.0]
    v.assign([10.0, 20.0])
    assert f(tf.constant(2.0)).numpy().tolist() == [20.0, 40.0]


def test_read_after_assign_sees_the_new_value_in_order():
    v = tf.Variable(1.0)

    @tf.function
    def f():
        a = v * 1.0
        v.assign(5.0)
        b = v * 1.0
        return a, b

    a, b = f()
    assert (float(a), float(b)) == (1.0, 5.0)
    a, b = f()
    assert (float(a), float(b)) == (5.0, 5.0)


def test_slice_assign_and_assign_sub():
    v = tf.Variable(np.zeros((2, 2), np.float32))

    @tf.function
    def f(x):
        v[0, 1].assign(x)
        v.assign_sub(tf.ones((2, 2)))

    f(tf.constant(3.0))
    np.testing.assert_array_equal(v.numpy(), [[-1.0, 2.0], [-1.0, -1.0]])


def test_variable_created_every_call_raises_tfs_error():
    @tf.function
    def f(x):
        v = tf.Variable(1.0)
        return x * v

    with pytest.raises(ValueError, match="tf.function only supports singleton tf.Variables "
                                         "created on the first call"):  # fmt: skip
        f(tf.constant(1.0))


def test_variable_created_once_on_the_first_trace():
    class Counter(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = None

        @tf.function
        def __call__(self, x):
            if self.v is None:
                self.v = tf.Variable(tf.random.uniform(()) * 0.0 + 2.0)
            self.v.assign_add(1.0)
            return x * self.v

    c = Counter()
    assert float(c(tf.constant(1.0))) == 3.0
    assert float(c(tf.constant(1.0))) == 4.0
    assert float(c.v.numpy()) == 4.0


def test_assign_dtype_and_shape_checked_at_trace_time():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(TypeError, match="Cannot assign a int32 value to variable"):
        tf.function(lambda x: v.assign(x))(tf.constant([1, 2]))
    with pytest.raises(ValueError, match="shapes must match"):
        tf.function(lambda x: v.assign(x))(tf.constant([1.0, 2.0, 3.0]))
    assert v.numpy().tolist() == [1.0, 2.0]


def test_convert_to_tensor_of_a_variable_reads_at_every_call():
    v = tf.Variable(1.0)
    f = tf.function(lambda: tf.convert_to_tensor(v) + 0.0)
    assert float(f()) == 1.0
    v.assign(7.0)
    assert float(f()) == 7.0


def test_host_method_runs_at_every_call():
    from layerflow._src.function import host_method

    class Acc:
        def __init__(self):
            self.total = 0.0

        @host_method
        def add(self, x):
            self.total += float(x)

    acc = Acc()

    @tf.function
    def f(x):
        acc.add(x * 2.0)
        return x

    f(tf.constant(1.0))
    f(tf.constant(2.0))
    assert acc.total == 6.0
