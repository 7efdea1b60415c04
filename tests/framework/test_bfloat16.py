"""tf.bfloat16 through ml_dtypes (an optional extra): the dtype, conversions, casts and ops."""

import numpy as np
import pytest

import layerflow as tf

ml_dtypes = pytest.importorskip("ml_dtypes")


def test_dtype_facts():
    b = tf.bfloat16
    assert b is tf.dtypes.bfloat16 is tf.as_dtype("bfloat16") is tf.as_dtype(ml_dtypes.bfloat16)
    assert str(b) == "<dtype: 'bfloat16'>" and b.is_floating and not b.is_integer
    assert b.size == 2 and int(b) == b.as_datatype_enum == 14
    assert b.max == ml_dtypes.finfo(ml_dtypes.bfloat16).max and b.min == -b.max
    with pytest.raises(ValueError, match="does not have defined limits"):
        b.limits()


def test_constants_casts_and_rounding():
    x = tf.constant([1.5, 2.25, 3.0], dtype=tf.bfloat16)
    assert x.dtype == tf.bfloat16 and x.numpy().dtype == ml_dtypes.bfloat16
    y = tf.cast(tf.constant([1.0, 3.14159, -2.7]), tf.bfloat16)
    want = np.array([1.0, 3.14159, -2.7], np.float32).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(y.numpy(), want)  # round to nearest even, as TF
    assert float(y[1]) == 3.140625
    np.testing.assert_array_equal(tf.cast(y, tf.int32).numpy(), [1, 3, -2])  # truncation
    assert tf.cast(y, tf.float32).dtype == tf.float32
    t = tf.constant(np.array([0.5, 1.0], dtype=ml_dtypes.bfloat16))
    assert t.dtype == tf.bfloat16


def test_elementwise_ops_keep_bfloat16():
    x = tf.constant([1.5, 2.25, 3.0], dtype=tf.bfloat16)
    xf = x.numpy().astype(np.float32)
    for got, ref in [
        (x + x, xf + xf),
        (x * 2, xf * 2),
        (tf.exp(x), np.exp(xf)),
        (tf.sqrt(x), np.sqrt(xf)),
        (tf.nn.relu(x - 2), np.maximum(xf - 2, 0)),
        (tf.reduce_sum(x), xf.sum()),
    ]:
        assert got.dtype == tf.bfloat16
        np.testing.assert_allclose(got.numpy().astype(np.float32), ref, rtol=1e-2)
    v = tf.Variable(x)
    v.assign_add(x)
    np.testing.assert_array_equal(v.numpy().astype(np.float32), 2 * xf)
    assert tf.zeros([2], tf.bfloat16).dtype == tf.bfloat16
