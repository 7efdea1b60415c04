import numpy as np
import pytest

import layerflow as tf
from layerflow._src.keras import constraints as C
from layerflow._src.keras import regularizers as R

W = np.array([[1.0, -2.0, 0.5], [-0.25, 3.0, 0.0]])


def test_l1_l2_values():
    assert float(R.L1(0.1)(tf.constant(W))) == pytest.approx(0.1 * np.abs(W).sum())
    assert float(R.L2(0.1)(tf.constant(W))) == pytest.approx(0.1 * (W**2).sum())
    both = R.l1_l2(l1=0.1, l2=0.2)(tf.constant(W))
    assert float(both) == pytest.approx(0.1 * np.abs(W).sum() + 0.2 * (W**2).sum())
    assert float(R.L1L2()(tf.constant(W))) == 0.0
    assert R.l2().get_config() == {"l2": 0.01}


def test_regularizer_is_differentiable():
    v = tf.Variable(W)
    with tf.GradientTape() as tape:
        loss = R.L1L2(l1=0.1, l2=0.2)(v)
    np.testing.assert_allclose(tape.gradient(loss, v).numpy(), 0.1 * np.sign(W) + 0.4 * W)


def test_regularizer_validation_get_and_round_trip():
    with pytest.raises(ValueError, match="non-negative"):
        R.L2(-1.0)
    with pytest.raises(ValueError, match="non-negative"):
        R.L1("a lot")
    assert isinstance(R.get("l1"), R.L1)
    assert isinstance(R.get("l1_l2"), R.L1L2)
    assert R.get(None) is None
    for reg in [R.L1(0.3), R.L2(0.2), R.L1L2(0.1, 0.4)]:
        again = R.deserialize(R.serialize(reg))
        assert type(again) is type(reg) and again.get_config() == reg.get_config()
    with pytest.raises(ValueError, match="Unknown regularizer"):
        R.get("l3")


def test_max_norm_unit_norm_min_max_norm():
    w = np.array([[3.0, 0.1], [4.0, 0.2]])  # column norms 5 and ~0.2236
    out = C.MaxNorm(2.0)(tf.constant(w)).numpy()
    norms = np.linalg.norm(out, axis=0)
    np.testing.assert_allclose(norms, [2.0, np.linalg.norm(w[:, 1])], rtol=1e-5)
    unit = C.UnitNorm()(tf.constant(w)).numpy()
    np.testing.assert_allclose(np.linalg.norm(unit, axis=0), [1, 1], rtol=1e-5)
    unit_rows = C.UnitNorm(axis=1)(tf.constant(w)).numpy()
    np.testing.assert_allclose(np.linalg.norm(unit_rows, axis=1), [1, 1], rtol=1e-5)
    mm = C.MinMaxNorm(1.0, 2.0)(tf.constant(w)).numpy()
    np.testing.assert_allclose(np.linalg.norm(mm, axis=0), [2.0, 1.0], rtol=1e-5)
    half = C.MinMaxNorm(1.0, 2.0, rate=0.5)(tf.constant(w)).numpy()
    np.testing.assert_allclose(np.linalg.norm(half, axis=0)[0], 3.5, rtol=1e-5)
    with pytest.raises(ValueError, match="must not exceed"):
        C.MinMaxNorm(3.0, 1.0)


def test_non_neg_and_zero_column_stays_finite():
    np.testing.assert_array_equal(C.NonNeg()(tf.constant(W)).numpy(), np.maximum(W, 0))
    zero = C.UnitNorm()(tf.zeros((3, 2))).numpy()
    assert np.all(zero == 0)


def test_constraints_get_and_round_trip():
    assert isinstance(C.get("non_neg"), C.NonNeg)
    assert isinstance(C.get("MaxNorm"), C.MaxNorm)
    assert C.get(None) is None
    for c in [C.MaxNorm(3, axis=1), C.NonNeg(), C.UnitNorm(axis=[0, 1]), C.MinMaxNorm(0.5, 2)]:
        again = C.deserialize(C.serialize(c))
        assert type(again) is type(c) and again.get_config() == c.get_config()
    with pytest.raises(ValueError, match="Could not interpret"):
        C.get(1.5)


def test_facade_names():
    assert tf.keras.regularizers.l2 is R.L2
    assert tf.keras.constraints.max_norm is C.MaxNorm
