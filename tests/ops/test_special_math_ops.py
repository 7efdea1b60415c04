"""Special functions against SciPy (the oracle and, for most, the optional backend), with
float64 gradients, TF's domain values (NaN/inf) and TF's dtype errors."""

import math

import numpy as np
import pytest

import layerflow as tf
from layerflow._src import backend
from layerflow._src.autodiff.gradcheck import check_op, check_second_derivative


@pytest.fixture
def sp():
    return pytest.importorskip("scipy.special")


POS = np.array([0.3, 1.2, 2.5, 7.0, 15.0])
P01 = np.array([0.02, 0.3, 0.5, 0.8, 0.97])


def test_erfc_needs_no_scipy_and_keeps_tail_precision():
    x = np.array([-4.0, -1.0, -0.2, 0.0, 0.4, 1.5, 3.0, 6.0, 9.0])
    check_op(tf.math.erfc, [x], np.vectorize(math.erfc), rtol=1e-6)
    # 1 - erf(9) is 0 in float64; erfc keeps ~1e-36 to full relative precision.
    np.testing.assert_allclose(tf.math.erfc(tf.constant(9.0, tf.float64)).numpy(), math.erfc(9.0),
                               rtol=1e-12)  # fmt: skip
    check_second_derivative(tf.math.erfc, x[:6])


def test_a_missing_scipy_says_how_to_install_it(monkeypatch):
    import sys

    # A None entry in sys.modules makes `import scipy.special` raise ImportError.
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.special", None)
    with pytest.raises(ImportError, match=r"pip install scipy.*layerflow\[special\]"):
        tf.math.lgamma([1.5])
    with pytest.raises(ImportError, match="pip install scipy"):
        backend.special_functions(np)


@pytest.mark.parametrize("name,ref,x", [
    ("lgamma", "gammaln", np.array([-2.5, -0.5, 0.3, 1.2, 2.5, 7.0])),
    ("digamma", "psi", np.array([-2.5, -0.5, 0.3, 1.2, 2.5, 7.0])),
    ("erfinv", "erfinv", np.array([-0.95, -0.3, 0.0, 0.4, 0.9])),
    ("ndtri", "ndtri", P01),
    ("erfcinv", "erfcinv", np.array([0.05, 0.5, 1.0, 1.5, 1.9])),
])  # fmt: skip
def test_unary_special_functions(sp, name, ref, x):
    fn = getattr(tf.math, name)
    check_op(fn, [x], getattr(sp, ref), rtol=2e-6)
    check_second_derivative(fn, x)


def test_special_function_edges_match_tf(sp):
    inf = np.inf
    np.testing.assert_array_equal(tf.math.lgamma([0.0, -1.0]).numpy(), [inf, inf])
    np.testing.assert_array_equal(tf.math.erfinv([-1.0, 1.0]).numpy(), [-inf, inf])
    np.testing.assert_array_equal(tf.math.erfcinv([0.0, 2.0]).numpy(), [inf, -inf])
    assert np.isnan(tf.math.ndtri([1.5]).numpy()[0])


def test_float_dtypes_are_kept_and_integers_refused(sp):
    for dt in (tf.float16, tf.float32, tf.float64):
        assert tf.math.lgamma(tf.constant([1.5], dt)).dtype == dt
    for fn in (tf.math.lgamma, tf.math.digamma, tf.math.erfinv, tf.math.ndtri, tf.math.erfc):
        with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
            fn(tf.constant([1, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
        tf.math.igamma(tf.constant([1]), tf.constant([1]))


def test_polygamma_orders_and_gradient(sp):
    n = np.array([0.0, 1.0, 2.0, 3.0, 1.0])
    check_op(tf.math.polygamma, [n, POS], lambda n, x: sp.polygamma(n.astype(int), x),
             grad=[1], rtol=2e-6)  # fmt: skip
    # Non-integer or negative orders are NaN, as in TF.
    got = tf.math.polygamma([1.5, -1.0], [2.0, 2.0]).numpy()
    assert np.isnan(got).all()
    x = tf.constant([2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.math.digamma(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), sp.polygamma(1, 2.0), rtol=1e-6)


def test_zeta_and_its_q_gradient(sp):
    s = np.array([2.0, 3.0, 4.5, 2.5, 6.0])
    check_op(tf.math.zeta, [s, POS], sp.zeta, grad=[1], rtol=2e-6)
    got = tf.math.zeta([0.5, 1.0], [1.0, 1.0]).numpy()
    assert np.isnan(got[0]) and got[1] == np.inf


def test_incomplete_gamma_with_both_gradients(sp):
    a = np.array([0.5, 1.5, 3.0, 4.0, 10.0])
    x = np.array([0.2, 1.0, 2.5, 9.0, 7.0])
    check_op(tf.math.igamma, [a, x], sp.gammainc, grad_rtol=1e-4, rtol=2e-6)
    check_op(tf.math.igammac, [a, x], sp.gammaincc, grad_rtol=1e-4, rtol=2e-6)
    check_op(tf.math.igamma, [a[:1], x], sp.gammainc, grad_rtol=1e-4, rtol=2e-6)  # broadcast
    # The x-gradient is exp(-x) x^(a-1) / Gamma(a), and composes to second order.
    check_second_derivative(lambda t: tf.math.igamma(tf.constant(a), t), x)
    got = tf.math.igamma([1.0, -1.0], [0.5, 1.0]).numpy()
    np.testing.assert_allclose(got[0], 1 - np.exp(-0.5), rtol=1e-6)
    assert np.isnan(got[1])


def test_betainc_gradient_flows_to_x_only(sp):
    a, b = np.array([0.5, 1.5, 3.0, 2.0]), np.array([2.0, 0.7, 3.0, 5.0])
    x = np.array([0.1, 0.4, 0.6, 0.9])
    check_op(tf.math.betainc, [a, b, x], sp.betainc, grad=[2], rtol=2e-6)
    ta, tb, tx = (tf.constant(v) for v in (a, b, x))
    with tf.GradientTape() as tape:
        tape.watch([ta, tb, tx])
        y = tf.math.betainc(ta, tb, tx)
    ga, gb, gx = tape.gradient(y, [ta, tb, tx])
    assert ga is None and gb is None and gx is not None  # as TF
    assert np.isnan(tf.math.betainc(2.0, 3.0, 1.5).numpy())


def test_lbeta_over_the_last_axis(sp):
    x = np.array([[1.0, 2.0], [3.0, 4.0], [0.5, 7.0]])
    ref = lambda v: sp.gammaln(v).sum(-1) - sp.gammaln(v.sum(-1))  # noqa: E731
    check_op(tf.math.lbeta, [x], ref, rtol=2e-6)
    np.testing.assert_array_equal(tf.math.lbeta(tf.zeros([2, 0])).numpy(), [-np.inf, -np.inf])
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank"):
        tf.math.lbeta(2.0)
