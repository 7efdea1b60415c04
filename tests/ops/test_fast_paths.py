"""Array-level fast paths give what the general forms give: sparse softmax cross-entropy in
class-major layout, reduce_mean's forward and its gradient without an outer tape."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.ops import nn_ops


def _xent_reference(logits, labels):
    z = logits.astype(np.float64)
    z = z - z.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    loss = -logp[np.arange(len(labels)), labels]
    grad = np.exp(logp)
    grad[np.arange(len(labels)), labels] -= 1
    return loss, grad


@pytest.mark.parametrize("n,c", [(256, 10), (64, 3), (40, 10), (8, 10), (100, 40)])
def test_sparse_xent_loss_and_gradient_match_float64(n, c):
    # (256, 10) and (64, 3) take the class-major path; (8, 10) and (100, 40) the row path.
    rng = np.random.default_rng(n + c)
    logits = (rng.standard_normal((n, c)) * 5).astype(np.float32)
    labels = rng.integers(0, c, n)
    x = tf.constant(logits)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, x)
    dy = rng.standard_normal(n).astype(np.float32)
    grad = tape.gradient(loss, x, output_gradients=tf.constant(dy))
    ref_loss, ref_grad = _xent_reference(logits, labels)
    assert loss.dtype == tf.float32 and grad.dtype == tf.float32
    np.testing.assert_allclose(loss.numpy(), ref_loss, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(grad.numpy(), dy[:, None] * ref_grad, rtol=2e-6, atol=2e-6)
    assert grad.numpy().flags.c_contiguous


def test_sparse_xent_class_major_equals_row_layout():
    rng = np.random.default_rng(7)
    logits = rng.standard_normal((512, 10)).astype(np.float32)
    labels = rng.integers(0, 10, 512)
    fast = nn_ops._sparse_xent_class_major(np, logits, labels, True)
    saved, nn_ops._CLASS_MAJOR_MAX = nn_ops._CLASS_MAJOR_MAX, 0
    try:
        with tf.GradientTape():  # a recording tape: the forward computes its residual
            rows = nn_ops._sparse_xent.prim.forward(np, logits, labels)
    finally:
        nn_ops._CLASS_MAJOR_MAX = saved
    assert rows[1] is not None
    for a, b in zip(fast, rows):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("bad", [-1, 10])
def test_sparse_xent_rejects_out_of_range_labels_on_the_fast_path(bad):
    labels = np.zeros(256, np.int64)
    labels[17] = bad
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"label value of {bad}"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels, np.zeros((256, 10), np.float32))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
@pytest.mark.parametrize("shape,axis", [((256,), None), ((7, 300), 1), ((5, 6, 7), (0, 2))])
def test_reduce_mean_is_numpys_mean_bit_for_bit(dtype, shape, axis):
    x = (np.random.default_rng(1).standard_normal(shape) * 1e3).astype(dtype)
    got = tf.reduce_mean(x, axis=axis).numpy()
    if np.dtype(dtype).kind == "f":
        want = np.mean(x, axis=axis, dtype=dtype)
    else:  # TF truncates integer means
        want = np.trunc(np.sum(x, axis=axis, dtype=np.int64) / (x.size // np.size(got)))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.asarray(want).astype(dtype))


def test_reduce_mean_gradient_is_the_same_with_and_without_an_outer_tape():
    x = tf.constant(np.random.default_rng(2).standard_normal((6, 5)).astype(np.float32))
    results = []
    for outer_active in (False, True):
        outer = tf.GradientTape(persistent=True)
        if outer_active:
            outer.__enter__()
        try:
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.reduce_mean(x) * 3.0
            results.append(tape.gradient(y, x).numpy())
        finally:
            if outer_active:
                outer.__exit__(None, None, None)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], np.full((6, 5), 0.1, np.float32), rtol=1e-6)


def test_gradient_returns_the_structure_of_its_sources():
    a, b = tf.Variable(2.0), tf.Variable(3.0)
    with tf.GradientTape(persistent=True) as tape:
        y = a * b
    as_list = tape.gradient(y, [a, b])
    assert type(as_list) is list and [float(g) for g in as_list] == [3.0, 2.0]
    as_dict = tape.gradient(y, {"a": a, "b": b})
    assert float(as_dict["a"]) == 3.0 and float(as_dict["b"]) == 2.0
    assert float(tape.gradient([y, y], a)) == 6.0


def test_sparse_xent_grad_kernel_equals_dy_times_backprop_bitwise():
    # The compiled step's gradient kernel: dy multiplied in the class-major buffer must give
    # the bits of the unfused `dy[:, None] * backprop` (values, signs and zeros alike).
    rng = np.random.default_rng(3)
    logits = (3 * rng.standard_normal((256, 10))).astype(np.float32)
    labels = rng.integers(0, 10, 256)
    dy = rng.standard_normal(256).astype(np.float32)
    dy[:8] = 0.0
    fused = nn_ops._sparse_xent_grad.prim.forward(np, dy, logits, labels, None)
    backprop = nn_ops._sparse_xent_class_major(np, logits, labels, True)[1]
    ref = dy[:, None] * backprop
    assert fused.dtype == np.float32 and fused.flags.c_contiguous
    np.testing.assert_array_equal(fused.view(np.int32), ref.view(np.int32))
    # a dy of another dtype is not multiplied in place (it would be rounded to float32)
    dy64 = dy.astype(np.float64)
    mixed = nn_ops._sparse_xent_grad.prim.forward(np, dy64, logits, labels, None)
    np.testing.assert_array_equal(mixed, dy64[:, None] * backprop)


def test_compiled_sparse_xent_gradient_equals_eager():
    rng = np.random.default_rng(4)
    x = tf.constant(rng.standard_normal((256, 10)).astype(np.float32))
    y = tf.constant(rng.integers(0, 10, 256))

    def grad(x, y):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, x))
        return tape.gradient(loss, x)

    np.testing.assert_array_equal(tf.function(grad)(x, y).numpy(), grad(x, y).numpy())


@pytest.mark.parametrize("bad", [-1, 10])
def test_compiled_gradient_rejects_out_of_range_labels(bad):
    # The compiled step keeps only the gradient (its loss forward is dead code): the gradient
    # kernel checks the labels itself instead of wrapping a negative one to the last class.
    labels = np.zeros(256, np.int64)
    labels[3] = bad
    x = tf.constant(np.zeros((256, 10), np.float32))

    @tf.function
    def grad(x, y):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, x))
        return tape.gradient(loss, x)

    with pytest.raises(tf.errors.InvalidArgumentError, match=f"label value of {bad}"):
        grad(x, tf.constant(labels))
