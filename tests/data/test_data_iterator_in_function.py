"""An iterator passed to a tf.function yields a new element at every call (TF's IteratorGetNext),
never one frozen when the function was traced."""

import pytest

import layerflow as tf


def test_get_next_and_next_advance_at_every_call():
    it = iter(tf.data.Dataset.range(5))

    @tf.function
    def take(it):
        return it.get_next()

    @tf.function
    def double(it):
        return next(it) * 2

    assert [int(take(it)) for _ in range(3)] == [0, 1, 2]
    assert [int(double(it)) for _ in range(2)] == [6, 8]
    assert take.experimental_get_tracing_count() == 1
    with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
        take(it)


def test_structured_elements_and_partial_batches():
    ds = tf.data.Dataset.from_tensor_slices(
        ({"a": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]}, [1, 2, 3])
    )
    it = iter(ds.batch(2))

    @tf.function
    def step(it):
        x, y = next(it)
        return tf.reduce_sum(x["a"]) + tf.cast(tf.reduce_sum(y), tf.float32)

    assert float(step(it)) == 13.0
    assert float(step(it)) == 14.0  # the last, smaller batch
