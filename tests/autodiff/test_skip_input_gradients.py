"""The tape computes only the gradients that lead to a requested source (TF's skip_input_indices).

Counted work (GEMMs, col2im calls) shows the skipping happens; NumPy references and float64
central differences show the gradients that are computed stay right, nested tapes included.
"""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.tape import input_needed
from layerflow._src.ops import conv_kernels

rng = np.random.default_rng(11)


@pytest.fixture
def gemm_count(monkeypatch):
    """Counts calls of the matmul primitive's GEMM (it calls `xp.matmul`, here NumPy's)."""
    calls = []
    real = np.matmul

    def counting(a, b, *args, **kwargs):
        calls.append((a.shape, b.shape))
        return real(a, b, *args, **kwargs)

    monkeypatch.setattr(np, "matmul", counting)
    return calls


def _seed_mlp():
    net = tf.keras.models.Sequential(
        [
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(256, activation="relu"),
            tf.keras.layers.Dense(10),
        ]
    )
    net.build((None, 28, 28))
    return net


def test_seed_mlp_training_step_runs_five_gemms(gemm_count):
    net = _seed_mlp()
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x = tf.constant(rng.random((256, 28, 28), dtype=np.float32))
    y = tf.constant(rng.integers(0, 10, 256))
    with tf.GradientTape() as tape:
        value = loss(y, net(x))
    grads = tape.gradient(value, net.trainable_variables)
    # 2 forward; backward: dW2 and dh for the second layer, dW1 only for the first (no d/dx).
    assert len(gemm_count) == 5, gemm_count
    assert all(g is not None for g in grads)
    backward_outputs = [(a[0], b[-1]) for a, b in gemm_count[2:]]
    assert (256, 784) not in backward_outputs


def test_watched_input_still_gets_its_gradient(gemm_count):
    x = tf.constant(rng.standard_normal((4, 3)).astype(np.float32))
    w = tf.Variable(rng.standard_normal((3, 2)).astype(np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.matmul(x, w))
    gx, gw = tape.gradient(y, [x, w])
    assert len(gemm_count) == 3
    np.testing.assert_allclose(gx.numpy(), np.ones((4, 2)) @ w.numpy().T, rtol=1e-6)
    np.testing.assert_allclose(gw.numpy(), x.numpy().T @ np.ones((4, 2)), rtol=1e-6)


def test_persistent_tape_decides_per_call(gemm_count):
    """What is skipped depends on the sources of each gradient() call, not on the recording."""
    x = tf.constant(rng.standard_normal((4, 3)))
    w = tf.Variable(rng.standard_normal((3, 2)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.matmul(x, w) ** 2)
    del gemm_count[:]
    gw = tape.gradient(y, w)
    assert len(gemm_count) == 1
    gx = tape.gradient(y, x)
    assert len(gemm_count) == 2
    h = x.numpy() @ w.numpy()
    np.testing.assert_allclose(gw.numpy(), x.numpy().T @ (2 * h))
    np.testing.assert_allclose(gx.numpy(), (2 * h) @ w.numpy().T)


def test_branch_that_leads_to_no_source_is_not_differentiated():
    a = tf.constant(2.0)
    b = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = tf.sin(a) * tf.exp(b)
    ga = tape.gradient(y, a)
    assert float(ga) == pytest.approx(np.cos(2.0) * np.exp(3.0), rel=1e-6)


def test_input_needed_is_true_outside_a_backward_walk():
    assert input_needed(0) and input_needed(5)


def test_custom_gradient_sees_which_inputs_are_needed():
    seen = []

    @tf.custom_gradient
    def f(x, y):
        def grad(dy):
            seen.append((input_needed(0), input_needed(1)))
            return dy * y, dy * x

        return x * y, grad

    x, y = tf.constant(2.0), tf.constant(5.0)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = f(x, y)
    assert float(tape.gradient(z, y)) == 2.0
    assert seen == [(False, True)]


def test_first_conv_layer_runs_no_col2im(monkeypatch):
    calls = []
    real = conv_kernels.col2im

    def counting(*args):
        calls.append(args[2])
        return real(*args)

    monkeypatch.setattr(conv_kernels, "col2im", counting)
    monkeypatch.setattr(conv_kernels, "FLAT_WASTE", 0)  # the im2col algorithm (col2im)
    monkeypatch.setattr(conv_kernels, "ROWS_RUN", 10**9)  # channels-first
    x = tf.constant(rng.random((2, 8, 8, 1), dtype=np.float32))
    w1 = tf.Variable(rng.standard_normal((3, 3, 1, 4)).astype(np.float32))
    w2 = tf.Variable(rng.standard_normal((3, 3, 4, 2)).astype(np.float32))
    with tf.GradientTape(persistent=True) as tape:
        h = tf.sigmoid(tf.nn.conv2d(x, w1, 1, "SAME"))
        y = tf.reduce_sum(tf.nn.conv2d(h, w2, 1, "VALID"))
    g1, g2 = tape.gradient(y, [w1, w2])
    assert calls == [(2, 8, 8, 4)]  # only into h, never into the data batch x
    assert g1 is not None and g2 is not None
    del calls[:]
    tape.gradient(y, w2)
    assert calls == []  # nothing below w2's layer is walked


def test_nested_tapes_outer_needs_what_inner_skips():
    """The inner tape wants d/dw only (x unwatched there); the outer differentiates that
    gradient with respect to x, through the ops the inner walk ran."""
    x0 = rng.standard_normal((3, 4))
    w0 = rng.standard_normal((4, 2))
    x = tf.constant(x0)
    w = tf.Variable(w0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            y = tf.reduce_sum(tf.tanh(tf.matmul(x, w)) ** 2)
        gw = inner.gradient(y, w)
        s = tf.reduce_sum(gw * gw)
    gx = outer.gradient(s, x)

    def grad_w(xv):  # d y / d w in NumPy
        t = np.tanh(xv @ w0)
        return xv.T @ (2 * t * (1 - t**2))

    np.testing.assert_allclose(gw.numpy(), grad_w(x0), rtol=1e-10)
    eps = 1e-6
    num = np.zeros_like(x0)
    for idx in np.ndindex(*x0.shape):
        xp_, xm = x0.copy(), x0.copy()
        xp_[idx] += eps
        xm[idx] -= eps
        num[idx] = (np.sum(grad_w(xp_) ** 2) - np.sum(grad_w(xm) ** 2)) / (2 * eps)
    np.testing.assert_allclose(gx.numpy(), num, rtol=1e-5, atol=1e-8)


def test_nested_tapes_through_conv():
    """Outer d/dx of |d loss/d filter|^2: the inner conv gradient skips the input, the outer
    walk needs the filter-gradient op's gradient with respect to x."""
    x0 = rng.standard_normal((1, 5, 5, 2))
    w0 = rng.standard_normal((3, 3, 2, 2))
    x = tf.constant(x0)
    w = tf.Variable(w0)

    def value(xv):
        xt = tf.constant(xv)
        with tf.GradientTape() as inner:
            y = tf.reduce_sum(tf.sigmoid(tf.nn.conv2d(xt, w, 1, "SAME")))
        return float(tf.reduce_sum(inner.gradient(y, w) ** 2))

    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            y = tf.reduce_sum(tf.sigmoid(tf.nn.conv2d(x, w, 1, "SAME")))
        gw = inner.gradient(y, w)
        s = tf.reduce_sum(gw**2)
    gx = outer.gradient(s, x).numpy()
    eps = 1e-6
    for idx in [(0, 0, 0, 0), (0, 2, 3, 1), (0, 4, 4, 0), (0, 1, 2, 1)]:
        xp_, xm = x0.copy(), x0.copy()
        xp_[idx] += eps
        xm[idx] -= eps
        num = (value(xp_) - value(xm)) / (2 * eps)
        assert gx[idx] == pytest.approx(num, rel=1e-5, abs=1e-8)


def test_einsum_and_gather_skip_unwatched_operands():
    a = tf.constant(rng.standard_normal((3, 4)))
    b = tf.Variable(rng.standard_normal((4, 5)))
    emb = tf.Variable(rng.standard_normal((6, 2)))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.einsum("ij,jk->ik", a, b)) + tf.reduce_sum(tf.gather(emb, [1, 1, 4]))
    gb, ge = tape.gradient(y, [b, emb])
    np.testing.assert_allclose(gb.numpy(), a.numpy().T @ np.ones((3, 5)))
    expected = np.zeros((6, 2))
    expected[1] = 2
    expected[4] = 1
    np.testing.assert_allclose(ge.numpy(), expected)
