"""tf.debugging.enable_check_numerics and set_log_device_placement (TF's messages), and the
names that are absent on purpose."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.tape import _state


@pytest.fixture(autouse=True)
def _off():
    yield
    tf.debugging.disable_check_numerics()
    tf.debugging.set_log_device_placement(False)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_check_numerics_names_the_op():
    tf.debugging.enable_check_numerics()
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.math.log(tf.constant([-1.0, 1.0]))
    text = str(info.value)
    assert 'output 0 of eagerly-executing op "log"' in text
    assert "# of +NaN elements: 1" in text and "Tensor had NaN values" in text
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Input tensors \(2\)") as info:
        tf.constant([1.0]) / tf.constant([0.0])
    assert "# of +Inf elements: 1" in str(info.value)
    assert float(tf.reduce_sum(tf.constant([1.0, 2.0]))) == 3.0  # finite values pass


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_check_numerics_sees_gradients_and_turns_off_cleanly():
    x = tf.constant(0.0)
    tf.debugging.enable_check_numerics()
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.sqrt(x)  # finite forward, infinite gradient
    with pytest.raises(tf.errors.InvalidArgumentError, match="Detected Infinity or NaN"):
        tape.gradient(y, x)
    tf.debugging.disable_check_numerics()
    assert _state.tapes == []  # nothing left behind: ops pay nothing when it is off
    assert np.isnan(tf.math.log(tf.constant(-1.0)).numpy())


def test_log_device_placement(capsys):
    assert tf.debugging.get_log_device_placement() is False
    tf.debugging.set_log_device_placement(True)
    assert tf.debugging.get_log_device_placement() is True
    tf.exp(tf.constant(1.0))
    tf.debugging.set_log_device_placement(False)
    tf.exp(tf.constant(1.0))
    err = capsys.readouterr().err
    assert err.count("Executing op exp in device /job:localhost/replica:0/task:0/device:CPU:0") == 1
    assert _state.tapes == []
