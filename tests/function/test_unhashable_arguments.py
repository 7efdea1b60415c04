"""An unhashable Python argument keys a trace by identity, and the trace keeps it alive: a new
object never reuses a trace made for a dead one at the same address (TF keys such objects by a
weak reference)."""

import gc

import layerflow as tf


class Box:
    __hash__ = None  # unhashable, as a mutable user object

    def __init__(self, value):
        self.value = value


def test_each_unhashable_object_gets_its_own_values():
    @tf.function(autograph=False)
    def scale(box, x):
        return x * box.value

    got = []
    for i in range(40):  # short-lived boxes: their addresses are reused
        got.append(float(scale(Box(float(i)), tf.constant(1.0))))
        gc.collect()
    assert got == [float(i) for i in range(40)]


def test_the_same_object_reuses_its_trace():
    @tf.function(autograph=False)
    def scale(box, x):
        return x * box.value

    box = Box(2.0)
    assert float(scale(box, tf.constant(3.0))) == 6.0
    assert float(scale(box, tf.constant(4.0))) == 8.0
    assert scale.experimental_get_tracing_count() == 1


def test_sparse_arguments_run_eagerly_without_keeping_traces():
    @tf.function(autograph=False)
    def total(st, k):
        return tf.sparse.reduce_sum(st) * k

    got = [
        float(total(tf.sparse.SparseTensor([[0, i % 2]], [float(i)], [2, 2]), tf.constant(2.0)))
        for i in range(8)
    ]
    assert got == [2.0 * i for i in range(8)]
    assert total.experimental_get_tracing_count() == 0  # no trace per call is kept
    pair = (tf.sparse.SparseTensor([[1, 1]], [3.0], [2, 2]), tf.constant(1.0))
    assert float(total(*pair)) == 3.0 and total.experimental_get_tracing_count() == 0
