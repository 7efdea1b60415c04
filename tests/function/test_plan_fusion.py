"""Fused plan steps (`function/fusion.py`): which pairs are fused, and training with them gives
the bits of the NumPy path and of eager steps, for any batch size and float dtype."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.backend import jit

pytestmark = pytest.mark.skipif(not jit.available(), reason="numba is not installed")


def _names(plan):
    return [s.fn.name if s.kind == "op" else s.fn if s.kind == "assign" else s.kind
            for s in plan.program_steps]  # fmt: skip


def _mlp(dtype="float32", bias=True):
    net = tf.keras.Sequential(
        [
            tf.keras.layers.Dense(24, activation="relu", dtype=dtype, use_bias=bias),
            tf.keras.layers.Dense(10, dtype=dtype, use_bias=bias),
        ]
    )
    net.build((None, 12))
    rng = np.random.default_rng(1)
    net.set_weights([rng.standard_normal(w.shape).astype(dtype) * 0.4 for w in net.get_weights()])
    return net


def _trainer(dtype="float32", bias=True, return_loss=True):
    net = _mlp(dtype, bias)
    opt = tf.keras.optimizers.SGD(learning_rate=0.1)
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def step(x, y):
        with tf.GradientTape() as tape:
            l = loss(y, net(x))
        grads = tape.gradient(l, net.trainable_variables)
        opt.apply_gradients(zip(grads, net.trainable_variables))
        return l if return_loss else grads[-1]

    return net, step


def _batches(n, dtype, steps=3):
    rng = np.random.default_rng(n)
    return [
        (rng.standard_normal((n, 12)).astype(dtype) * 2, rng.integers(0, 10, n))
        for _ in range(steps)
    ]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [64, 7, 1030])  # class-major loss; not; bias sums by GEMV
@pytest.mark.parametrize("return_loss", [True, False])
def test_fused_training_steps_give_numpy_path_and_eager_bits(dtype, n, return_loss):
    batches = _batches(n, dtype)
    results = {}
    for mode in ("eager", "numpy", "kernels"):
        net, step = _trainer(dtype, return_loss=return_loss)
        with jit.use(mode == "kernels"):
            run = step if mode == "eager" else tf.function(step)
            losses = [run(x, y).numpy() for x, y in batches]
            if mode == "kernels":
                plan = run.get_concrete_function(*batches[0])._plan
                names = _names(plan)
                assert "relu_grad_bias_grad" in names
                assert names.count("sgd_update") == 4 and "sgd_delta" not in names
                # with the loss returned its forward, gradient and bias sum are one step
                xent = "sparse_softmax_cross_entropy_with_logits_" + (
                    "and_grads" if return_loss else "grad_bias_grad"
                )
                assert xent in names
        results[mode] = (losses, [w.numpy() for w in net.weights])
    for mode in ("numpy", "kernels"):
        for got, want in zip(results[mode][0] + results[mode][1], results["eager"][0] +
                             results["eager"][1]):  # fmt: skip
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_fit_with_fused_loss_and_accuracy_gives_the_numpy_paths_history_and_weights():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((200, 12)).astype(np.float32)
    y = rng.integers(0, 10, 200)
    runs = {}
    for kernels in (False, True):
        net = _mlp()
        net.compile(
            optimizer=tf.keras.optimizers.SGD(0.1),
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
        with jit.use(kernels):
            hist = net.fit(x, y, batch_size=64, epochs=2, shuffle=False, verbose=0)
            names = _names(next(iter(net.train_function.function._traces.values()))._plan)
        runs[kernels] = (hist.history, net.get_weights(), names)
    (h0, w0, names0), (h1, w1, names1) = runs[False], runs[True]
    assert h0 == h1
    for a, b in zip(w0, w1):
        np.testing.assert_array_equal(a, b)
    assert "sparse_softmax_cross_entropy_with_logits_and_grads" in names1
    assert "sparse_categorical_accuracy_total_and_count" in names1
    assert "sparse_categorical_accuracy_values" in names0 and "sgd_update" not in names0


def test_fused_steps_run_their_numpy_path_when_the_kernels_are_off_at_run_time():
    batches = _batches(64, "float32")
    nets = {}
    for off_later in (False, True):
        net, step = _trainer()
        fn = tf.function(step)
        with jit.use(True):
            fn.get_concrete_function(*batches[0])  # the plan is built with fused steps
        with jit.use(not off_later):
            for x, y in batches:
                fn(x, y)
        nets[off_later] = net
    for a, b in zip(nets[False].weights, nets[True].weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_a_bad_label_in_a_fused_step_raises_the_ops_error_and_changes_nothing():
    net, step = _trainer()
    fn = tf.function(step)
    x, y = _batches(64, "float32", 1)[0]
    with jit.use(True):
        fn(x, y)
        before = [w.numpy() for w in net.weights]
        bad = y.copy()
        bad[9] = 10
        with pytest.raises(tf.errors.InvalidArgumentError, match="label value of 10"):
            fn(x, bad)
    for w, b in zip(net.weights, before):
        np.testing.assert_array_equal(w.numpy(), b)


def test_a_relu_gradient_summed_over_another_axis_is_not_fused():
    def f(a):
        with tf.GradientTape() as tape:
            tape.watch(a)
            h = tf.nn.relu(a)
            loss = tf.reduce_sum(h * h)
        ga = tape.gradient(loss, a)  # relu_grad(2h, h)
        return tf.reduce_sum(ga, axis=1), tf.reduce_sum(ga, axis=0)

    a = tf.constant(np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32))
    with jit.use(True):
        cf = tf.function(f).get_concrete_function(a)
        names = _names(cf._plan)
        got = [t.numpy() for t in cf(a)]
    # the axis-0 sum is fused, the axis-1 sum reads the fused step's first result
    assert names.count("relu_grad_bias_grad") == 1 and "relu_grad" not in names
    assert names.count("reduce_sum") == 1
    with jit.use(False):
        want = [t.numpy() for t in tf.function(f)(a)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_a_model_without_biases_keeps_its_gradient_steps():
    net, step = _trainer(bias=False)
    x, y = _batches(64, "float32", 1)[0]
    with jit.use(True):
        names = _names(tf.function(step).get_concrete_function(x, y)._plan)
    assert "relu_grad" in names and "relu_grad_bias_grad" not in names
    assert "sparse_softmax_cross_entropy_with_logits_grad" in names
