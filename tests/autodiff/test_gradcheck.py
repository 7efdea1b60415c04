"""The one finite-difference loop of the test tooling (`autodiff.gradcheck.numeric_gradient`)."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff import gradcheck
from layerflow._src.keras.utils import testing


def test_numeric_gradient_of_a_cubic():
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    got = gradcheck.numeric_gradient(lambda a: float((a**3).sum()), x)
    np.testing.assert_allclose(got, 3 * x**2, rtol=1e-8)


def test_numeric_gradient_at_chosen_coordinates_leaves_the_others_nan():
    x = np.arange(6.0).reshape(2, 3)
    got = gradcheck.numeric_gradient(lambda a: float((a**2).sum()), x, coords=[1, 4])
    assert np.isnan(got.reshape(-1)[[0, 2, 3, 5]]).all()
    np.testing.assert_allclose(got.reshape(-1)[[1, 4]], [2.0, 8.0], rtol=1e-8)


def test_numeric_gradient_does_not_change_its_input():
    x = np.array([0.25, 0.5])
    gradcheck.numeric_gradient(lambda a: float(np.sin(a).sum()), x)
    np.testing.assert_array_equal(x, [0.25, 0.5])


def test_the_layer_harness_uses_the_same_finite_differences():
    assert testing.numeric_gradient is gradcheck.numeric_gradient


def test_the_layer_harness_catches_a_wrong_gradient():
    @tf.custom_gradient
    def wrong_square(x):
        return x * x, lambda dy: dy * x  # missing the factor 2

    with pytest.raises(AssertionError, match="finite differences"):
        testing.check_gradients(wrong_square, [np.array([0.5, -1.5])])


def test_the_op_harness_catches_a_wrong_gradient():
    @tf.custom_gradient
    def wrong_exp(x):
        y = tf.exp(x)
        return y, lambda dy: dy * y * 1.01

    with pytest.raises(AssertionError, match="gradient for input 0"):
        gradcheck.check_op(wrong_exp, [np.array([0.1, 0.7])], np.exp)
