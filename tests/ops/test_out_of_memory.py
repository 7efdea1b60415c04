"""An allocation that cannot succeed raises TF's ResourceExhaustedError, which is also a
MemoryError, naming the op and the shape: never a raw NumPy error."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.op import op

HUGE = 2**50  # 4 PiB of float32: beyond any address space


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("zeros", lambda: tf.zeros([HUGE])),
        ("ones", lambda: tf.ones([HUGE], tf.float64)),
        ("fill", lambda: tf.fill([HUGE], 1.0)),
        ("eye", lambda: tf.eye(2**26)),
        ("random_normal", lambda: tf.random.normal([HUGE])),
        ("random_uniform", lambda: tf.random.uniform([HUGE])),
    ],
)
def test_creation_ops_raise_resource_exhausted_naming_op_and_shape(name, make):
    with pytest.raises(tf.errors.ResourceExhaustedError, match=name) as info:
        make()
    assert isinstance(info.value, MemoryError)
    assert "out of memory" in str(info.value) and "shape [" in str(info.value)


def test_an_op_running_out_of_memory_names_the_op_and_its_inputs():
    with pytest.raises(tf.errors.ResourceExhaustedError, match=r"tile.*float32\(2,\)") as info:
        tf.tile(tf.ones([2]), [HUGE])
    assert isinstance(info.value, MemoryError)


def test_a_memory_error_in_any_forward_is_mapped_centrally():
    @op("greedy_test")
    def greedy(xp, x):
        raise MemoryError("Unable to allocate 1 PiB")

    with pytest.raises(MemoryError) as info:
        greedy(tf.ones([3]))
    assert isinstance(info.value, tf.errors.ResourceExhaustedError)
    assert "greedy_test" in str(info.value) and "float32(3,)" in str(info.value)


def test_memory_errors_can_be_caught_as_memory_error():
    try:
        tf.zeros([HUGE])
    except MemoryError as err:
        assert err.op == "zeros"
    else:  # pragma: no cover
        pytest.fail("no error")


def test_small_allocations_still_work():
    assert tf.zeros([3]).numpy().sum() == 0
    assert np.array_equal(tf.eye(2).numpy(), np.eye(2, dtype=np.float32))
