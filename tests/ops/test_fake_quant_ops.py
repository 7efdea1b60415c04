"""tf.quantization.fake_quant_* and quantize_and_dequantize(_v2) against TensorFlow 2.21's
outputs and gradients (tests/ops/fixtures/quantization.json), errors as TF's, and the
straight-through gradients against coarse finite differences."""

import numpy as np
import pytest
from quant_fixtures import DATA, arr, label, tf_error

import layerflow as tf

Q = tf.quantization
X = arr(DATA["inputs"]["X"])
DY = arr(DATA["inputs"]["DY"])


def _exact(got, rec, what):
    expected = arr(rec)
    got = np.asarray(got.numpy())
    assert got.dtype == expected.dtype and got.shape == expected.shape, what
    np.testing.assert_array_equal(got, expected, err_msg=what)


def _sum_close(got, rec, what):
    # A reduction over the inputs: TF's summation order differs in the last bits.
    np.testing.assert_allclose(got.numpy(), arr(rec), rtol=1e-6, atol=1e-6, err_msg=what)


@pytest.mark.parametrize("case", DATA["fake_quant_args"], ids=label)
def test_fake_quant_args_matches_tf(case):
    attrs = (case["min"], case["max"], case["num_bits"], case["narrow_range"])
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = Q.fake_quant_with_min_max_args(x, *attrs)
    _exact(y, case["y"], "output")
    _exact(tape.gradient(y, x, output_gradients=tf.constant(DY)), case["dx"], "gradient")
    _exact(Q.fake_quant_with_min_max_args_gradient(DY, X, *attrs), case["grad_op"], "grad op")


@pytest.mark.parametrize("case", DATA["fake_quant_vars"], ids=label)
def test_fake_quant_vars_matches_tf(case):
    x, lo, hi = tf.constant(X), tf.constant(case["min"]), tf.constant(case["max"])
    bits, narrow = case["num_bits"], case["narrow_range"]
    with tf.GradientTape() as tape:
        tape.watch([x, lo, hi])
        y = Q.fake_quant_with_min_max_vars(x, lo, hi, bits, narrow)
    dx, dlo, dhi = tape.gradient(y, [x, lo, hi], output_gradients=tf.constant(DY))
    _exact(y, case["y"], "output")
    _exact(dx, case["dx"], "d inputs")
    _sum_close(dlo, case["dmin"], "d min")
    _sum_close(dhi, case["dmax"], "d max")
    grads = Q.fake_quant_with_min_max_vars_gradient(DY, x, lo, hi, bits, narrow)
    assert grads._fields == ("backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max")
    _exact(grads.backprops_wrt_input, case["grad_op"][0], "grad op")
    _sum_close(grads.backprop_wrt_min, case["grad_op"][1], "grad op min")


@pytest.mark.parametrize("case", DATA["fake_quant_per_channel"], ids=label)
def test_fake_quant_per_channel_matches_tf(case):
    x, lo, hi, dy = (tf.constant(arr(case[k])) for k in ("x", "min", "max", "dy"))
    bits, narrow = case["num_bits"], case["narrow_range"]
    with tf.GradientTape() as tape:
        tape.watch([x, lo, hi])
        y = Q.fake_quant_with_min_max_vars_per_channel(x, lo, hi, bits, narrow)
    dx, dlo, dhi = tape.gradient(y, [x, lo, hi], output_gradients=dy)
    _exact(y, case["y"], "output")
    _exact(dx, case["dx"], "d inputs")
    _sum_close(dlo, case["dmin"], "d min")
    _sum_close(dhi, case["dmax"], "d max")
    g = Q.fake_quant_with_min_max_vars_per_channel_gradient(dy, x, lo, hi, bits, narrow)
    _exact(g[0], case["grad_op"][0], "grad op")
    _sum_close(g[2], case["grad_op"][2], "grad op max")


def test_fake_quant_gradient_ops_have_no_gradient_as_in_tf():
    x = tf.constant([0.5, 9.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        g = Q.fake_quant_with_min_max_args_gradient(x, x)
    assert tape.gradient(g, x) is None  # TF: NotDifferentiable


def _coarse_fd(f, x, i, eps):
    hi, lo = x.copy(), x.copy()
    hi[i] += eps
    lo[i] -= eps
    return (float(np.sum(f(hi))) - float(np.sum(f(lo)))) / (2 * eps)


def test_straight_through_gradients_follow_coarse_finite_differences():
    # Over many quantization steps the staircase has slope 1 inside the range and 0 outside;
    # the output below the range follows `min` (above: `max`) with slope 1. The step (12/255)
    # bounds the error of a difference over 2 * 0.6.
    x = np.array([-9.0, -2.0, 0.3, 4.0, 9.0], np.float32)
    lo, hi = np.float32(-6.0), np.float32(6.0)
    xt, lot, hit = tf.constant(x), tf.constant(lo), tf.constant(hi)
    with tf.GradientTape() as tape:
        tape.watch([xt, lot, hit])
        total = tf.reduce_sum(Q.fake_quant_with_min_max_vars(xt, lot, hit))
    dx, dlo, dhi = tape.gradient(total, [xt, lot, hit])
    tol = (12 / 255) / 0.6
    fq = lambda a, b=lo, c=hi: Q.fake_quant_with_min_max_vars(a, b, c).numpy()  # noqa: E731
    for i in range(x.size):
        assert abs(dx.numpy()[i] - _coarse_fd(fq, x, i, 0.6)) <= tol
    fd_lo = (fq(x, lo + 0.6).sum() - fq(x, lo - 0.6).sum()) / 1.2
    fd_hi = (fq(x, lo, hi + 0.6).sum() - fq(x, lo, hi - 0.6).sum()) / 1.2
    assert float(dlo) == 1.0 and abs(fd_lo - 1.0) <= tol
    assert float(dhi) == 1.0 and abs(fd_hi - 1.0) <= tol


@pytest.mark.parametrize("case", DATA["quantize_and_dequantize"], ids=label)
def test_quantize_and_dequantize_matches_tf(case):
    x = tf.constant(arr(case["x"]))
    dy = tf.constant(arr(case["dy"]).astype(x.dtype.name))
    lo = tf.constant(np.asarray(case["input_min"], x.dtype.name))
    hi = tf.constant(np.asarray(case["input_max"], x.dtype.name))
    kw = {"range_given": case["range_given"]}
    if "axis" in case:
        kw.update(axis=case["axis"], narrow_range=True)
    else:
        kw.update({k: case[k] for k in ("signed_input", "num_bits", "round_mode", "narrow_range")})
    for fname in ("quantize_and_dequantize", "quantize_and_dequantize_v2"):
        rec = case[fname]
        if "error" in rec:
            # TF 2.21 refuses range_given=True with an axis (it wants min/max both scalars and
            # vectors); layerflow quantizes per slice, checked in the test below.
            assert "axis" in case and case["range_given"]
            continue
        with tf.GradientTape() as tape:
            tape.watch([x, lo, hi])
            y = getattr(Q, fname)(x, lo, hi, **kw)
        grads = tape.gradient(y, [x, lo, hi], output_gradients=dy)
        _exact(y, rec["y"], f"{fname} output")
        _exact(grads[0], rec["dx"], f"{fname} gradient")
        for g, k in zip(grads[1:], ("dmin", "dmax"), strict=True):
            if rec[k] is None:
                assert g is None, (fname, k)
            else:
                _exact(g, rec[k], f"{fname} {k}")


def test_quantize_and_dequantize_per_axis_range_is_the_scalar_op_per_slice():
    x = np.linspace(-2.5, 2.5, 18, dtype=np.float32).reshape(3, 6)
    lo, hi = np.array([-1.0, 0.0, -2.0], np.float32), np.array([1.0, 2.0, 0.5], np.float32)
    got = Q.quantize_and_dequantize_v2(x, lo, hi, range_given=True, axis=0, num_bits=4)
    for i in range(3):
        row = Q.quantize_and_dequantize_v2(x[i], lo[i], hi[i], range_given=True, num_bits=4)
        np.testing.assert_array_equal(got.numpy()[i], row.numpy())
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = Q.quantize_and_dequantize_v2(xt, lo, hi, range_given=True, axis=0)
    inside = (x >= lo[:, None]) & (x <= hi[:, None])
    np.testing.assert_array_equal(tape.gradient(y, xt).numpy(), inside.astype(np.float32))


ERRORS = {
    "args_min_ge_max": lambda x: Q.fake_quant_with_min_max_args(x, 1.0, 1.0),
    "args_num_bits_1": lambda x: Q.fake_quant_with_min_max_args(x, -1.0, 1.0, num_bits=1),
    "args_num_bits_17": lambda x: Q.fake_quant_with_min_max_args(x, -1.0, 1.0, num_bits=17),
    "vars_num_bits_1": lambda x: Q.fake_quant_with_min_max_vars(x, -1.0, 1.0, num_bits=1),
    "vars_vector_min": lambda x: Q.fake_quant_with_min_max_vars(x, [-1.0, -1.0], [1.0, 1.0]),
    "channel_bad_depth": lambda x: Q.fake_quant_with_min_max_vars_per_channel(
        x, [-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]
    ),
    "qad_num_bits_0": lambda x: Q.quantize_and_dequantize_v2(
        x, -1.0, 1.0, num_bits=0, range_given=True
    ),
    "qad_num_bits_63": lambda x: Q.quantize_and_dequantize_v2(
        x, -1.0, 1.0, num_bits=63, range_given=True
    ),
    "qad_min_gt_max": lambda x: Q.quantize_and_dequantize_v2(x, 1.0, -1.0, range_given=True),
    "qad_v1_min_gt_max": lambda x: Q.quantize_and_dequantize(x, 1.0, -1.0, range_given=True),
    "qad_bad_round": lambda x: Q.quantize_and_dequantize_v2(
        x, -1.0, 1.0, round_mode="HALF_AWAY_FROM_ZERO"
    ),
    "qad_axis_out_of_range": lambda x: Q.quantize_and_dequantize_v2(x, [-1.0], [1.0], axis=2),
    "qad_int": lambda x: Q.quantize_and_dequantize_v2(tf.constant([1, 2]), 0, 2),
}


@pytest.mark.parametrize("key", sorted(ERRORS))
def test_errors_are_tf_s(key):
    cls, message = tf_error(key)
    assert cls == "InvalidArgumentError"
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        ERRORS[key](tf.constant([0.5, -0.5]))
    assert "Op:" not in str(info.value)  # layerflow's message, which names the op itself


@pytest.mark.parametrize("key", ["vars_min_gt_max", "vars_min_eq_max", "channel_min_gt_max"])
def test_unchecked_ranges_run_as_in_tf(key):
    assert tf_error(key)[0] is None  # TF computes (nan for min == max)
    x = tf.constant([0.5, -0.5])
    if key == "channel_min_gt_max":
        y = Q.fake_quant_with_min_max_vars_per_channel(x, [1.0, -1.0], [-1.0, 1.0])
        np.testing.assert_allclose(y.numpy(), [0.9960785, -0.5019608], rtol=1e-6)
    elif key == "vars_min_gt_max":
        np.testing.assert_allclose(
            Q.fake_quant_with_min_max_vars(x, 1.0, -1.0).numpy(), [0.9960785, 0.9960785], rtol=1e-6
        )
    else:
        assert np.isnan(Q.fake_quant_with_min_max_vars(x, 1.0, 1.0).numpy()).all()


def test_fake_quant_refuses_float64_as_tf():
    assert tf_error("args_float64")[0] == "ValueError"  # TF: conversion to float32 refused
    with pytest.raises(tf.errors.InvalidArgumentError, match="float32"):
        Q.fake_quant_with_min_max_args(tf.constant([0.5], tf.float64))


def test_quantization_aware_training_pattern():
    # Variables as the learned range, in a functional model and under tf.function.
    lo, hi = tf.Variable(-1.0), tf.Variable(1.0)
    x = tf.constant([-2.0, 0.3, 0.9, 3.0])
    with tf.GradientTape() as tape:
        total = tf.reduce_sum(Q.fake_quant_with_min_max_vars(x, lo, hi))
    assert [float(g) for g in tape.gradient(total, [lo, hi])] == [1.0, 1.0]
    inp = tf.keras.Input((3,))
    out = Q.quantize_and_dequantize_v2(
        Q.fake_quant_with_min_max_args(inp, -1.0, 1.0), -1.0, 1.0, range_given=True
    )
    model = tf.keras.Model(inp, out)
    data = np.array([[0.3, -2.0, 0.5]], np.float32)
    eager = Q.quantize_and_dequantize_v2(
        Q.fake_quant_with_min_max_args(data, -1.0, 1.0), -1.0, 1.0, range_given=True
    )
    np.testing.assert_array_equal(model(data).numpy(), eager.numpy())
    traced = tf.function(lambda a: Q.fake_quant_with_min_max_vars(a, lo, hi))
    np.testing.assert_array_equal(traced(x).numpy(), Q.fake_quant_with_min_max_vars(x, lo, hi))
