"""Reading a Variable is differentiable, as TF's ReadVariableOp: `tf.convert_to_tensor(v)`,
`v.read_value()` and `v.value()` under a tape pass gradients to `v`, and each read is a
snapshot that later assigns do not change."""

import numpy as np
import pytest

import layerflow as tf

READS = {
    "convert_to_tensor": tf.convert_to_tensor,
    "read_value": lambda v: v.read_value(),
    "value": lambda v: v.value(),
}


@pytest.mark.parametrize("read", READS.values(), ids=READS.keys())
def test_reads_pass_gradients(read):
    v = tf.Variable([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(read(v) ** 2)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [2.0, 4.0, 6.0])


@pytest.mark.parametrize("read", READS.values(), ids=READS.keys())
def test_reads_are_snapshots(read):
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape():
        taped = read(v)
    plain = read(v)
    v.assign([5.0, 6.0])
    np.testing.assert_array_equal(taped.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(plain.numpy(), [1.0, 2.0])


def test_reads_inside_a_function_see_each_call():
    v = tf.Variable(2.0)

    @tf.function
    def grad():
        with tf.GradientTape() as tape:
            y = tf.convert_to_tensor(v) * v.read_value()
        return tape.gradient(y, v)

    assert float(grad()) == 4.0
    v.assign(5.0)
    assert float(grad()) == 10.0
