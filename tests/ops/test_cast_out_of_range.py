"""tf.cast of NaN, inf and out-of-range floats, as TF 2.21's CPU kernel gives them (no warning).

Expected values read from TensorFlow 2.21 on x86 for these (short) tensors.
"""

import numpy as np
import pytest

import layerflow as tf

VALS = [np.nan, np.inf, -np.inf, 300.7, -300.7, -1.5, 255.5, 3e9, -3e9, 1e20, -1e20, 2.5, -0.5]
I32_MIN, I64_MIN = -(2**31), -(2**63)
TF = {
    "uint8": [0, 0, 0, 44, 212, 255, 255, 0, 0, 0, 0, 2, 0],
    "int8": [0, 0, 0, 44, -44, -1, -1, 0, 0, 0, 0, 2, 0],
    "uint16": [0, 0, 0, 300, 65236, 65535, 255, 0, 0, 0, 0, 2, 0],
    "int16": [0, 0, 0, 300, -300, -1, 255, 0, 0, 0, 0, 2, 0],
    "int32": [I32_MIN] * 3 + [300, -300, -1, 255] + [I32_MIN] * 4 + [2, 0],
    "int64": [I64_MIN] * 3 + [300, -300, -1, 255, 3000000000, -3000000000, I64_MIN, I64_MIN, 2, 0],
    "uint32": [2**31] * 3
    + [300, 2**32 - 300, 2**32 - 1, 255, 3000000000, 2**32 - 3000000000]
    + [0, 0, 2, 0],
    "uint64": [2**63] * 3
    + [300, 2**64 - 300, 2**64 - 1, 255, 3000000000, 2**64 - 3000000000]
    + [2**63, 2**63, 2, 0],
}


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("dst", sorted(TF))
def test_float_to_int_matches_tf(src, dst):
    got = tf.cast(tf.constant(np.array(VALS, dtype=src)), dst).numpy()
    assert got.dtype == np.dtype(dst)
    assert got.tolist() == TF[dst]


def test_float_to_bool_and_complex_to_real():
    x = tf.constant(np.array([np.nan, 0.0, -0.0, 1e-30, -2.0], np.float32))
    assert tf.cast(x, tf.bool).numpy().tolist() == [True, False, False, True, True]
    c = tf.constant(np.array([1 + 2j, np.nan + 1j, 3e9 - 1j], np.complex64))
    np.testing.assert_array_equal(tf.cast(c, tf.float32).numpy(), [1.0, np.nan, 3e9])
    assert tf.cast(c, tf.int32).numpy().tolist() == [1, I32_MIN, I32_MIN]
    assert tf.cast(c, tf.uint8).numpy().tolist() == [1, 0, 0]


def test_narrowing_float_and_int_casts_are_silent():
    big = tf.constant([1e6, -1e6, 1e-10], tf.float64)
    assert tf.cast(big, tf.float16).numpy().tolist() == [np.inf, -np.inf, 0.0]
    ints = tf.constant([-1, 300, 70000])
    assert tf.cast(ints, tf.uint8).numpy().tolist() == [255, 44, 112]
    assert tf.cast(ints, tf.float16).numpy().tolist() == [-1.0, 300.0, np.inf]


def test_saturate_cast_clamps():
    x = tf.constant([np.inf, -np.inf, 300.7, -300.7, 2.5])
    assert tf.saturate_cast(x, tf.uint8).numpy().tolist() == [255, 0, 255, 0, 2]
    assert tf.saturate_cast(x, tf.int8).numpy().tolist() == [127, -128, 127, -128, 2]


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("dst", sorted(TF))
def test_the_explicit_rule_matches_tf_too(src, dst):
    # Another array module (CuPy) takes the explicit rule instead of NumPy's own cast: run it
    # through a stand-in module on the CPU, in and out of the in-range fast path.
    from types import SimpleNamespace

    from layerflow._src.ops.compare_ops import _float_to_int

    xp = SimpleNamespace(trunc=np.trunc, where=np.where, isfinite=np.isfinite)
    x = np.array(VALS, dtype=src)
    with np.errstate(all="ignore"):
        assert _float_to_int(xp, x, np.dtype(dst)).tolist() == TF[dst]
        finite = np.array([2.7, -2.7, 0.0, 100.0], dtype=src)
        assert _float_to_int(xp, finite, np.dtype(dst)).tolist() == finite.astype(dst).tolist()
