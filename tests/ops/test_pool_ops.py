"""Max pooling's residual (ops/pool_ops.py): the tap numbers of each window's first maximum.

A recorded max pool saves one small integer per output instead of keeping its output for the
gradient; the gradient ops take it as a memo and recompute it from x when it is absent.
"""

import numpy as np

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_second_derivative
from layerflow._src.ops import pool_ops

rng = np.random.default_rng(3)


def test_the_residual_is_one_byte_per_output_and_the_output_is_not_needed():
    x = tf.constant(rng.standard_normal((2, 6, 6, 3)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.max_pool2d(x, 3, 2, "SAME")
    (node,) = tape._nodes
    arg = node[4]["saved"]
    assert arg.dtype == np.uint8 and arg.shape == (2, 3, 3, 3)
    assert not pool_ops._max_pool.prim.grad_uses_out
    # Without a tape nothing is computed for the gradient.
    assert tf.nn.max_pool2d(x, 3, 2, "SAME").shape == y.shape
    g = tape.gradient(y, x)
    assert np.count_nonzero(g.numpy()) <= y.shape.num_elements()


def test_the_gradient_without_the_memo_is_the_same():
    x = tf.constant(rng.standard_normal((2, 7, 5, 4)))
    dy = tf.constant(rng.standard_normal((2, 4, 3, 4)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.max_pool2d(x, 3, 2, "SAME")
    with_memo = tape.gradient(y, x, output_gradients=dy).numpy()
    args = ((3, 3), (2, 2), "SAME")
    recomputed = pool_ops._max_pool_grad(dy, x, *args).numpy()
    np.testing.assert_array_equal(with_memo, recomputed)
    # Selecting x itself at each window's maximum is the max pool.
    selected = pool_ops._max_pool_select(x, x, *args).numpy()
    np.testing.assert_array_equal(selected, tf.nn.max_pool2d(x, 3, 2, "SAME").numpy())


def test_a_window_of_minus_infinity_sends_its_gradient_to_its_first_tap():
    x = np.full((1, 4, 4, 1), -np.inf)
    x[0, 2:, 2:, 0] = [[1.0, 5.0], [5.0, 2.0]]  # the last window: a tie, the first one wins
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.nn.max_pool2d(xt, 2, 2, "VALID")
    g = tape.gradient(y, xt, output_gradients=tf.constant(np.arange(1.0, 5.0).reshape(1, 2, 2, 1)))
    expected = np.zeros((4, 4))
    expected[0, 0], expected[0, 2], expected[2, 0], expected[2, 3] = 1.0, 2.0, 3.0, 4.0
    np.testing.assert_array_equal(g.numpy()[0, :, :, 0], expected)


def test_second_derivatives_through_max_pooling():
    # Distinct values: no ties, so finite differences stay inside one piece.
    x = rng.permutation(2 * 5 * 6 * 2).reshape(2, 5, 6, 2) / 7.0
    check_second_derivative(lambda a: tf.nn.max_pool2d(a * a, 2, 2, "SAME"), x)
