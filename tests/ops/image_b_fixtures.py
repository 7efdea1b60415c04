"""Shared access to tests/ops/fixtures/image_b/image_b.npz (real TF 2.21 values, made by
tests/ops/fixtures/image_b/make_image_b_fixtures.py) for the tf.image part-B tests."""

import pathlib

import numpy as np

import layerflow as tf

F = np.load(pathlib.Path(__file__).parent / "fixtures" / "image_b" / "image_b.npz")


def assert_close(got, key, rtol=2e-5, atol=2e-5):
    ref = F[key]
    got = np.asarray(got)
    assert got.shape == ref.shape, f"{key}: shape {got.shape} != TF's {ref.shape}"
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=rtol, atol=atol, err_msg=key)


def tape_grads(fn, arrays, cotangent):
    """Gradients of sum(fn(*arrays) * cotangent) through tf.GradientTape."""
    ts = [tf.constant(a) for a in arrays]
    with tf.GradientTape() as tape:
        tape.watch(ts)
        y = fn(*ts)
    return tape.gradient(y, ts, output_gradients=tf.constant(cotangent))


def finite_difference(fn, arrays, index, cotangent, eps=1e-3):
    """Central differences (float64 arithmetic on the outputs) of sum(fn(*arrays) * w)."""
    base = [np.array(a, np.float32) for a in arrays]
    x = base[index]
    grad = np.zeros(x.shape, np.float64)
    flat, gflat = x.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        hi = float(np.sum(np.asarray(fn(*base), np.float64) * cotangent))
        flat[i] = old - eps
        lo = float(np.sum(np.asarray(fn(*base), np.float64) * cotangent))
        flat[i] = old
        gflat[i] = (hi - lo) / (2 * eps)
    return grad
