"""The metric kernels' scalar fast paths (a loss tracker's update and every metric's result at
each training step) give the array paths' values bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from layerflow._src.ops import metric_ops

_sum_and_count = metric_ops._sum_and_count.prim.forward
_ratio = metric_ops._ratio.prim.forward

VALUES = [0.0, -0.0, 1.0, 2.3, -7.25, 1e-30, 3.4e38, np.inf, -np.inf, np.nan, 1 / 3]


def _bits(a: np.ndarray) -> bytes:
    return np.asarray(a).tobytes()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sum_and_count_scalar_matches_array_path(dtype):
    for v in VALUES:
        for w in [None, 256.0, 0.0, 1 / 3, 3.0e38]:
            scalar = [np.asarray(v, np.float32)]
            scalar += [] if w is None else [np.asarray(w, np.float32)]
            assert all(a.ndim == 0 for a in scalar) and metric_ops._host_scalars(*scalar)
            vector = [a.reshape(1) for a in scalar]  # the same values through the array path
            with np.errstate(all="ignore"):
                got = _sum_and_count(np, scalar, dtype)
                want = _sum_and_count(np, vector, dtype)
            for g, e in zip(got, want):
                assert g.shape == () and g.dtype == np.dtype(dtype)
                assert _bits(g) == _bits(e), (v, w, g, e)


@pytest.mark.parametrize("wide", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_ratio_scalar_matches_array_path(wide, dtype):
    values = [0, 1, 7, -3] if np.dtype(dtype).kind == "i" else VALUES
    for n in values:
        for d in values:
            num, den = np.asarray(n, dtype), np.asarray(d, dtype)
            with np.errstate(all="ignore"):
                got = _ratio(np, num, den, wide)
                want = _ratio(np, num.reshape(1), den.reshape(1), wide)
            assert got.shape == () and got.dtype == want.dtype
            assert _bits(got) == _bits(want), (n, d, wide, got, want)


def test_scalar_paths_only_for_host_numbers():
    assert metric_ops._host_scalars(np.asarray(1.0, np.float32), np.asarray(3, np.int64))
    assert not metric_ops._host_scalars(np.ones(1, np.float32))  # not 0-d
    assert not metric_ops._host_scalars(np.float32(1.0))  # a NumPy scalar, not an array
    assert not metric_ops._host_scalars(np.asarray(True))  # bool: the array path
    assert not metric_ops._host_scalars(np.asarray(1 + 2j))


def test_mean_metric_results_unchanged():
    import layerflow as tf

    m = tf.keras.metrics.Mean()
    for loss, n in [(2.5, 256.0), (1.25, 256.0), (0.5, 96.0)]:
        m.update_state(tf.constant(loss), sample_weight=n)
    want = (2.5 * 256 + 1.25 * 256 + 0.5 * 96) / (256 + 256 + 96)
    assert float(m.result()) == np.float32(want)
    empty = tf.keras.metrics.Mean()
    assert float(empty.result()) == 0.0
