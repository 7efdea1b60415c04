"""`tf.math.special` (and the Bessel names of `tf.math`) against SciPy, with TF's gradients."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op, check_second_derivative

sp = pytest.importorskip("scipy.special")

SIGNED = np.array([-2.0, -0.4, 0.0, 0.7, 3.0])  # includes 0, where I1' and J1' are 1/2
POSITIVE = np.array([0.3, 1.2, 2.5, 7.0])


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e", "j0", "j1"])
def test_bessel_functions_defined_on_the_whole_line(name):
    fn = getattr(tf.math.special, "bessel_" + name)
    check_op(fn, [SIGNED], getattr(sp, name))
    check_second_derivative(fn, SIGNED[SIGNED != 0])


@pytest.mark.parametrize("name", ["k0", "k0e", "k1", "k1e", "y0", "y1"])
def test_bessel_functions_of_positive_arguments(name):
    fn = getattr(tf.math.special, "bessel_" + name)
    check_op(fn, [POSITIVE], getattr(sp, name))
    check_second_derivative(fn, POSITIVE)


def test_tf_math_bessel_names_are_the_special_ones():
    for name in ("bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e"):
        assert getattr(tf.math, name) is getattr(tf.math.special, name)


def test_integrals():
    s = tf.math.special
    check_op(s.dawsn, [SIGNED], sp.dawsn)
    check_op(s.expint, [POSITIVE], sp.expi)
    check_op(s.fresnel_sin, [SIGNED], lambda v: sp.fresnel(v)[0])
    check_op(s.fresnel_cos, [SIGNED], lambda v: sp.fresnel(v)[1])
    check_op(s.spence, [np.array([0.2, 1.0, 2.5])], sp.spence)  # the gradient is -1 at x = 1
    check_second_derivative(s.dawsn, SIGNED)


def test_integer_inputs_are_refused():
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
        tf.math.special.bessel_j0(tf.constant([1, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
        tf.math.special.fresnel_cos(tf.constant([1]))
