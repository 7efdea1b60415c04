"""tf.quantization.quantize / dequantize / quantized_concat against TensorFlow 2.21's values
(tests/ops/fixtures/quantization.json), TF's errors, and tensors of the quantized dtypes."""

import numpy as np
import pytest
from quant_fixtures import DATA, QX, arr, label, tf_error

import layerflow as tf

Q = tf.quantization
D = tf.dtypes


@pytest.mark.parametrize("case", DATA["quantize"], ids=label)
def test_quantize_matches_tf(case):
    x = arr(case["x"]) if "x" in case else QX
    kw = {
        k: case[k]
        for k in ("mode", "round_mode", "narrow_range", "axis", "ensure_minimum_range")
        if k in case
    }
    lo = np.array(case["min_range"], np.float32)
    hi = np.array(case["max_range"], np.float32)
    T = getattr(D, case["T"])
    if "error" in case:
        with pytest.raises(getattr(tf.errors, case["error"])):
            Q.quantize(x, lo, hi, T, **kw)
        return
    out = Q.quantize(x, lo, hi, T, **kw)
    assert out._fields == ("output", "output_min", "output_max")
    assert out.output.dtype == T and out.output.dtype.name == case["out_dtype"]
    np.testing.assert_array_equal(out.output.numpy(), arr(case["output"]))
    assert out.output.numpy().dtype == arr(case["output"]).dtype  # plain integers, as TF's
    np.testing.assert_array_equal(out.output_min.numpy(), arr(case["output_min"]))
    np.testing.assert_array_equal(out.output_max.numpy(), arr(case["output_max"]))


@pytest.mark.parametrize("case", DATA["dequantize"], ids=label)
def test_dequantize_matches_tf(case):
    q = tf.constant(np.array(case["values"]), getattr(D, case["T"]))
    kw = {k: case[k] for k in ("mode", "narrow_range", "axis") if k in case}
    if "dtype" in case:
        kw["dtype"] = getattr(tf.dtypes, case["dtype"])
    lo = np.array(case["min_range"], np.float32)
    hi = np.array(case["max_range"], np.float32)
    if "error" in case:
        with pytest.raises(getattr(tf.errors, case["error"])):
            Q.dequantize(q, lo, hi, **kw)
        return
    out = Q.dequantize(q, lo, hi, **kw)
    assert out.dtype.name == case.get("out_dtype", "float32")
    np.testing.assert_array_equal(tf.cast(out, tf.float32).numpy(), arr(case["output"]))


def test_quantize_then_dequantize_round_trips_within_a_step():
    x = np.linspace(-1.0, 2.0, 31, dtype=np.float32)
    for T, mode in [(D.quint8, "MIN_COMBINED"), (D.qint8, "SCALED"), (D.quint16, "MIN_FIRST")]:
        q = Q.quantize(x, -1.0, 2.0, T, mode=mode)
        back = Q.dequantize(q.output, q.output_min, q.output_max, mode=mode).numpy()
        step = 3.0 / 255 if T.size == 1 else 3.0 / 65535
        assert np.abs(back - x).max() <= step, (T, mode)


@pytest.mark.parametrize("case", DATA["quantized_concat"], ids=label)
def test_quantized_concat_matches_tf(case):
    T = getattr(D, case["T"])
    values = [tf.constant(np.array(v), T) for v in case["values"]]
    out = Q.quantized_concat(case["concat_dim"], values, case["mins"], case["maxes"])
    assert type(out).__name__ == "QuantizedConcat" and out.output.dtype == T
    np.testing.assert_array_equal(out.output_min.numpy(), arr(case["output_min"]))
    np.testing.assert_array_equal(out.output_max.numpy(), arr(case["output_max"]))
    np.testing.assert_array_equal(out.output.numpy(), arr(case["output"]))


def test_quantized_concat_copies_inputs_in_the_output_range():
    a = tf.constant(np.array([[0, 9], [255, 3]]), D.quint8)
    b = tf.constant(np.array([[7, 8]]), D.quint8)
    out = Q.quantized_concat(0, [a, b], [-1.0, -1.0], [1.0, 1.0])
    np.testing.assert_array_equal(out.output.numpy(), [[0, 9], [255, 3], [7, 8]])


QERRORS = {
    "quantize_max_lt_min": lambda: Q.quantize([0.5], 1.0, -1.0, D.quint8),
    "quantize_half_even_combined": lambda: Q.quantize(
        [0.5], -1.0, 1.0, D.quint8, round_mode="HALF_TO_EVEN"
    ),
    "quantize_bad_mode": lambda: Q.quantize([0.5], -1.0, 1.0, D.quint8, mode="NOPE"),
    "quantize_bad_round": lambda: Q.quantize([0.5], -1.0, 1.0, D.quint8, round_mode="UP"),
    "quantize_min_first_axis": lambda: Q.quantize(
        [0.5, -0.5], [-1.0, -1.0], [1.0, 1.0], D.quint8, mode="MIN_FIRST", axis=0
    ),
    "quantize_axis_bad_len": lambda: Q.quantize(
        [0.5, -0.5], [-1.0, -1.0, 0.0], [1.0, 1.0, 1.0], D.quint8, axis=0
    ),
    "quantize_axis_out_of_range": lambda: Q.quantize([0.5, -0.5], [-1.0], [1.0], D.quint8, axis=3),
    "quantize_int_T": lambda: Q.quantize([0.5], -1.0, 1.0, tf.int8),
    "quantize_float64": lambda: Q.quantize(tf.constant([0.5], tf.float64), -1.0, 1.0, D.quint8),
    "dequantize_float_input": lambda: Q.dequantize(tf.constant([0.5]), -1.0, 1.0),
    "dequantize_int32_dtype": lambda: Q.dequantize(
        tf.constant([1], D.quint8), -1.0, 1.0, dtype=tf.float64
    ),
    "qconcat_bad_shapes": lambda: Q.quantized_concat(
        0, [tf.constant([1, 2], D.quint8), tf.constant([[1]], D.quint8)], [0.0, 0.0], [1.0, 1.0]
    ),
    "qconcat_bad_dim": lambda: Q.quantized_concat(
        2, [tf.constant([1, 2], D.quint8)] * 2, [0.0, 0.0], [1.0, 1.0]
    ),
    "qconcat_mixed_types": lambda: Q.quantized_concat(
        0, [tf.constant([1], D.quint8), tf.constant([1], D.qint8)], [0.0, 0.0], [1.0, 1.0]
    ),
    "qconcat_qint8": lambda: Q.quantized_concat(
        0, [tf.constant([1], D.qint8)] * 2, [0.0, 0.0], [1.0, 1.0]
    ),
    "qconcat_bad_min_count": lambda: Q.quantized_concat(
        0, [tf.constant([1], D.quint8)] * 2, [0.0], [1.0, 1.0]
    ),
}


@pytest.mark.parametrize("key", sorted(QERRORS))
def test_errors_are_tf_s(key):
    cls, _ = tf_error(key)
    with pytest.raises(getattr(tf.errors, cls)):
        QERRORS[key]()


def test_dequantize_accepts_max_below_min_as_tf():
    assert tf_error("dequantize_max_lt_min")[0] is None
    out = Q.dequantize(tf.constant([1, 2], D.quint8), 1.0, -1.0)
    np.testing.assert_allclose(out.numpy(), [0.99215686, 0.9843137], rtol=1e-6)


def test_quantized_tensors_behave_as_tf_s():
    q = tf.constant([-3, 5, 7, 127], D.qint8)
    assert q.dtype == D.qint8 and q.numpy().dtype == np.int8
    assert (
        repr(q) == "<tf.Tensor: shape=(4,), dtype=qint8, numpy=array([ -3,   5,   7, 127], "
        "dtype=int8)>"
    )
    assert tf.reshape(q, [2, 2]).dtype == D.qint8  # shape ops keep the dtype
    assert tf.concat([q, q], 0).dtype == D.qint8 and q[1:].dtype == D.qint8
    np.testing.assert_array_equal(tf.cast(q, tf.float32).numpy(), [-3.0, 5.0, 7.0, 127.0])
    assert int(q[1]) == 5
    np.testing.assert_array_equal(tf.bitcast(q, tf.uint8).numpy(), [253, 5, 7, 127])
    assert tf.bitcast(tf.constant([1, 2], tf.int8), D.qint8).dtype == D.qint8
    with pytest.raises(ValueError, match="out of range for dtype qint8"):
        tf.constant([300], D.qint8)
    view = np.asarray(q)
    assert view.dtype == np.int8 and not view.flags.writeable  # a read-only view, as ints


@pytest.mark.parametrize(
    "fn",
    [lambda q: q + q, lambda q: q * 2, lambda q: tf.reduce_sum(q), lambda q: tf.abs(q)],
    ids=["add", "multiply", "reduce_sum", "abs"],
)
def test_no_arithmetic_on_quantized_tensors_as_tf(fn):
    # TF: "Value for attr 'T' of qint8 is not in the list of allowed values".
    with pytest.raises(tf.errors.InvalidArgumentError, match="quantized dtype qint8.*dequantize"):
        fn(tf.constant([1, 2], D.qint8))
