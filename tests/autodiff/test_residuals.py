"""An op can save values for its gradient (`saves=True`, see autodiff/op.py).

The forward returns `(out, saved)`; the tape keeps `saved` in the op's node only while it
records, and hands it to the gradient as `saved=`; the gradient passes it as a memo to a
gradient op written with ops, so higher-order gradients stay right. The cross-entropies use it,
with one gradient each and no second output.
"""

import gc
import pathlib
import weakref

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op, check_second_derivative
from layerflow._src.autodiff.op import op, recording
from layerflow._src.ops import nn_ops

calls = {"forward": 0, "saved": [], "grad_memo": []}


class Memo:
    """A residual the test can watch (weak references tell when the tape lets it go)."""

    def __init__(self, x):
        self.twice = x * 2


@op("scaled_square_test", saves=True)
def scaled_square(xp, x):
    calls["forward"] += 1
    return x * x, (Memo(x) if recording() else None)


@scaled_square.grad
def _(dy, out, x, saved=None):
    calls["saved"].append(saved)
    return _times_twice(dy, x, saved)


@op("times_twice_test", 2)
def _times_twice(xp, dy, x, memo):
    calls["grad_memo"].append(memo)
    return dy * (memo.twice if memo is not None else 2 * x)


@_times_twice.grad
def _(g, out, dy, x, memo):
    return _times_twice(g, x, None), tf.multiply(tf.multiply(g, dy), 2.0)


@pytest.fixture(autouse=True)
def _reset():
    calls["forward"] = 0
    calls["saved"].clear()
    calls["grad_memo"].clear()


def test_the_gradient_receives_what_the_forward_saved():
    x = tf.constant([1.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = scaled_square(x)
    g = tape.gradient(y, x)
    np.testing.assert_allclose(g.numpy(), [2.0, 6.0])
    (saved,) = calls["saved"]
    assert isinstance(saved, Memo) and calls["grad_memo"] == [saved]
    assert calls["forward"] == 1


def test_without_a_tape_nothing_is_kept():
    y = scaled_square(tf.constant([2.0]))
    assert float(y[0]) == 4.0 and calls["saved"] == []


def test_the_residual_lives_only_as_long_as_the_tape_needs_it():
    x = tf.constant([1.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = scaled_square(x)
    node_saved = tape._nodes[0][4]["saved"]
    ref = weakref.ref(node_saved)
    del node_saved
    assert ref() is not None  # held by the node while the tape can still ask
    tape.gradient(y, x)  # a non-persistent tape drops its nodes
    calls["saved"].clear()
    calls["grad_memo"].clear()
    gc.collect()
    assert ref() is None


def test_a_tape_that_does_not_watch_the_input_keeps_nothing():
    x = tf.constant([1.0])
    with tf.GradientTape() as tape:
        scaled_square(x)
    assert tape._nodes == []


def test_second_derivative_through_the_memo_is_right():
    # d2/dx2 of x^2 summed = 2 everywhere; the gradient op's own gradient is written with ops.
    check_second_derivative(scaled_square, np.array([0.5, -1.5, 2.0]))


def test_a_missing_residual_is_recomputed():
    # The gradient op also runs without a memo (a forward that chose not to save).
    out = _times_twice(tf.constant([1.0]), tf.constant([3.0]), None)
    assert float(out[0]) == 6.0


# --- the cross-entropies --------------------------------------------------------------------------


def _sparse(logits):
    labels = tf.constant([2, 0, 1])
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)


def _dense(logits):
    labels = tf.constant([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0], [0.0, 0.6, 0.6]], logits.dtype)
    return tf.nn.softmax_cross_entropy_with_logits(labels, logits)


LOGITS = np.array([[0.3, -1.2, 2.0], [1.5, 0.1, -0.4], [-0.7, 0.8, 0.2]])


@pytest.mark.parametrize("fn", [_sparse, _dense])
def test_cross_entropy_gradients_match_differences(fn):
    check_op(fn, [LOGITS], None)


@pytest.mark.parametrize("fn", [_sparse, _dense])
def test_cross_entropy_second_derivatives_through_nested_tapes(fn):
    check_second_derivative(lambda t: fn(t) * fn(t), LOGITS, rtol=1e-4)


def test_dense_cross_entropy_gradient_for_the_labels_and_its_second_derivative():
    labels = np.array([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])
    logits = tf.constant(LOGITS[:2])
    check_op(
        lambda y: tf.nn.softmax_cross_entropy_with_logits(y, logits),
        [labels],
        None,
        dtypes=("float64",),
    )
    check_second_derivative(
        lambda y: tf.square(tf.nn.softmax_cross_entropy_with_logits(y, logits * y)), labels
    )


@pytest.mark.parametrize("fn", [_sparse, _dense])
def test_the_third_derivative_is_right_too(fn):
    # Finite differences of the analytic second derivative (itself checked above).
    def second(arr):
        x = arr if isinstance(arr, tf.Tensor) else tf.constant(arr)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = tf.reduce_sum(fn(x))
            g = tf.reduce_sum(tf.square(t1.gradient(y, x)))
        return t2.gradient(g, x)

    x = tf.constant(LOGITS)
    with tf.GradientTape() as t3:
        t3.watch(x)
        s = tf.reduce_sum(second(x) * tf.constant(np.arange(9.0).reshape(3, 3)))
    got = t3.gradient(s, x).numpy()
    eps, numeric = 1e-6, np.zeros_like(LOGITS)
    for i in np.ndindex(*LOGITS.shape):
        up, down = LOGITS.copy(), LOGITS.copy()
        up[i] += eps
        down[i] -= eps
        w = np.arange(9.0).reshape(3, 3)
        numeric[i] = ((second(up).numpy() - second(down).numpy()) * w).sum() / (2 * eps)
    np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-7)


def test_cross_entropies_have_one_output_and_no_tape_switch():
    assert not nn_ops._sparse_xent.prim.multi_out and nn_ops._sparse_xent.prim.saves
    assert not nn_ops._xent.prim.multi_out and nn_ops._xent.prim.saves
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits([0], [[0.0, 0.0]])
    assert loss.shape == (1,)
    # No gradient in the ops package looks at the tape's internals to pick a second version
    # (conv_ops.py's patch cache is converted separately).
    ops_dir = pathlib.Path(nn_ops.__file__).parent
    for path in ops_dir.glob("*.py"):
        if path.name != "conv_ops.py":
            assert "_state.tapes" not in path.read_text(), path.name
