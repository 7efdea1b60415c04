"""The fused dense op: forward and gradients equal the composed matmul + add (+ relu) exactly."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op, check_second_derivative
from layerflow._src.ops.dense_ops import dense


def _data(seed=0, n=6, k=5, m=4, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, k)).astype(dtype)
    w = rng.standard_normal((k, m)).astype(dtype)
    b = rng.standard_normal(m).astype(dtype)
    return x, w, b


def _np_dense(x, w, b, relu):
    out = x @ w + b
    return np.maximum(out, 0) if relu else out


@pytest.mark.parametrize("relu", [False, True])
def test_forward_and_gradients_against_numpy_and_differences(relu):
    x, w, b = _data()
    check_op(
        lambda x, w, b: dense(x, w, b, relu=relu),
        [x, w, b],
        lambda x, w, b: _np_dense(x, w, b, relu),
    )


@pytest.mark.parametrize("relu", [False, True])
def test_gradients_equal_the_composed_ops_bit_for_bit(relu):
    # A batch of 2048 rows also takes reduce_sum's GEMV route for the bias gradient.
    for n in (7, 2048):
        x, w, b = _data(seed=n, n=n, k=9, m=3)
        xv, wv, bv = tf.Variable(x), tf.Variable(w), tf.Variable(b)
        dy = tf.constant(np.random.default_rng(1).standard_normal((n, 3)).astype(np.float32))
        with tf.GradientTape() as t1:
            fused = dense(xv, wv, bv, relu=relu)
        g1 = t1.gradient(fused, [xv, wv, bv], output_gradients=dy)
        with tf.GradientTape() as t2:
            composed = tf.matmul(xv, wv) + bv
            if relu:
                composed = tf.nn.relu(composed)
        g2 = t2.gradient(composed, [xv, wv, bv], output_gradients=dy)
        np.testing.assert_array_equal(fused.numpy(), composed.numpy())
        for a, c in zip(g1, g2):
            assert a.dtype == tf.float32
            np.testing.assert_array_equal(a.numpy(), c.numpy())


def test_gradient_for_an_unwatched_input_is_skipped_but_the_rest_are_right():
    x, w, b = _data()
    wv, bv = tf.Variable(w), tf.Variable(b)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(dense(tf.constant(x), wv, bv, relu=True))
    gw, gb = tape.gradient(y, [wv, bv])
    mask = (x @ w + b > 0).astype(np.float32)
    np.testing.assert_allclose(gw.numpy(), x.T @ mask, rtol=1e-6)
    np.testing.assert_allclose(gb.numpy(), mask.sum(0), rtol=1e-6)


@pytest.mark.parametrize("relu", [False, True])
def test_second_derivative_through_nested_tapes(relu):
    _, w, b = _data(seed=3, dtype=np.float64)
    wt, bt = tf.constant(w), tf.constant(b)
    x = np.random.default_rng(4).standard_normal((3, 5))

    # The square makes the second derivative non-zero; relu's kink is avoided by the data.
    check_second_derivative(lambda t: tf.square(dense(t, wt, bt, relu=relu)), x)


def test_mismatched_dtypes_name_the_op_and_the_fix():
    x, w, b = _data()
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"dense.*float64.*tf.cast"):
        dense(tf.constant(x.astype(np.float64)), tf.constant(w), tf.constant(b))


def test_dense_layer_uses_the_fused_op_and_matches_composed_math():
    layer = tf.keras.layers.Dense(4, activation="relu")
    x, _, _ = _data()
    with tf.GradientTape() as tape:
        y = layer(x)
    gk, gb = tape.gradient(y, [layer.kernel, layer.bias])
    k, bias = layer.kernel.numpy(), layer.bias.numpy()
    np.testing.assert_allclose(y.numpy(), _np_dense(x, k, bias, True), rtol=1e-6)
    mask = (x @ k + bias > 0).astype(np.float32)
    np.testing.assert_allclose(gk.numpy(), x.T @ mask, rtol=1e-6)
    np.testing.assert_allclose(gb.numpy(), mask.sum(0), rtol=1e-6)


def _recorded_ops(fn, x):
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = fn(x)
        names = [node[0].name for node in tape._nodes]
    return y, names


@pytest.mark.parametrize(
    "activation", ["relu", tf.nn.relu, tf.keras.activations.relu], ids=["str", "nn", "keras"]
)
@pytest.mark.parametrize(
    "shape", [(6, 5), (2, 3, 5), (2, 1, 3, 5)], ids=["rank2", "rank3", "rank4"]
)
def test_every_spelling_of_relu_takes_the_fused_op_at_any_rank(activation, shape):
    layer = tf.keras.layers.Dense(4, activation=activation)
    x = tf.constant(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    y, names = _recorded_ops(layer, x)
    assert names.count("dense") == 1 and "relu" not in names and "add" not in names
    k, b = layer.kernel.numpy(), layer.bias.numpy()
    np.testing.assert_allclose(y.numpy(), _np_dense(x.numpy(), k, b, True), rtol=1e-5)
    assert y.shape == (*shape[:-1], 4)


def test_other_activations_and_no_bias_compose_after_the_op():
    x = tf.constant(np.random.default_rng(1).standard_normal((2, 3, 5)).astype(np.float32))
    layer = tf.keras.layers.Dense(4, activation="tanh")
    y, names = _recorded_ops(layer, x)
    assert names.count("dense") == 1 and "tanh" in names
    k, b = layer.kernel.numpy(), layer.bias.numpy()
    np.testing.assert_allclose(y.numpy(), np.tanh(x.numpy() @ k + b), rtol=1e-5)
    nobias = tf.keras.layers.Dense(4, activation="relu", use_bias=False)
    y, names = _recorded_ops(nobias, x)
    np.testing.assert_allclose(
        y.numpy(), np.maximum(x.numpy() @ nobias.kernel.numpy(), 0), rtol=1e-5
    )


def test_register_fused_activation_rejects_unknown_kinds():
    from layerflow._src.ops.dense_ops import register_fused_activation

    with pytest.raises(ValueError, match="'relu' or 'linear'"):
        register_fused_activation(np.tanh, "tanh")
