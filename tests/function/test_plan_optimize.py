"""The compiled plan's rewrites and buffers: the same results as the traced steps run as they
are, buffers that never leak into results, variables or constants."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.backend import jit
from layerflow._src.function.plan import Plan


def _concrete(fn, *args):
    return tf.function(fn).get_concrete_function(*args)


def _plain(cf):
    """The same trace as a plan without rewrites or buffers."""
    plan = cf._plan
    return Plan(cf.graph, plan.output_refs, plan.device, optimize=False)


def _arrays(*tensors):
    return [np.asarray(t) for t in tensors]


def _names(plan):
    """Op names, an assignment's kind ("assign_sub", "sgd_update"), else the step's kind."""
    return [s.fn.name if s.kind == "op" else s.fn if s.kind == "assign" else s.kind
            for s in plan.program_steps]  # fmt: skip


def _mlp_grads(params):
    w1, b1, w2, b2 = params

    def grads(x, y):
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.matmul(x, w1) + b1)
            h = tf.tanh(h) * 2.0 - h
            logits = tf.matmul(h, tf.transpose(tf.transpose(w2))) + b2
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            )
        return [loss, *tape.gradient(loss, params)]

    return grads


def _params(rng):
    return [
        tf.Variable(rng.standard_normal((20, 16)).astype(np.float32) * 0.3),
        tf.Variable(rng.standard_normal(16).astype(np.float32) * 0.1),
        tf.Variable(rng.standard_normal((16, 5)).astype(np.float32) * 0.3),
        tf.Variable(np.zeros(5, np.float32)),
    ]


def test_optimized_plan_gives_the_unoptimized_plans_results_bit_for_bit():
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((32, 20)).astype(np.float32))
    y = tf.constant(rng.integers(0, 5, 32))
    cf = _concrete(_mlp_grads(_params(rng)), x, y)
    assert cf._plan.buffer_specs  # intermediates do get buffers
    plain = _plain(cf)
    for _ in range(3):  # buffers reused: later calls too
        got = cf._plan.run(_arrays(x, y))
        want = plain.run(_arrays(x, y))
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and np.array_equal(g, w)


def test_results_handed_out_are_never_overwritten_by_a_later_call():
    w = tf.Variable(np.eye(4, dtype=np.float32))

    def f(x):
        h = tf.nn.relu(tf.matmul(x, w) + 1.0)
        return h * 2.0, h

    cf = _concrete(f, tf.ones((3, 4)))
    first = cf(tf.ones((3, 4)))
    kept = [t.numpy().copy() for t in first]
    cf(tf.fill((3, 4), -5.0))
    for t, k in zip(first, kept):
        np.testing.assert_array_equal(t.numpy(), k)
    (buffers,) = cf._plan._free_buffers
    assert buffers  # the matmul and the add share a buffer that no result aliases
    for t in first:
        assert not any(np.shares_memory(t.numpy(), b) for b in buffers)


def test_in_place_chains_never_write_into_variables_constants_or_inputs():
    rng = np.random.default_rng(1)
    v = tf.Variable(rng.standard_normal((8, 8)).astype(np.float32))
    c = tf.constant(rng.standard_normal((8, 8)).astype(np.float32))
    v0, c0 = v.numpy().copy(), c.numpy().copy()

    def f(x):
        a = tf.exp(tf.negative(v)) + c  # reads the variable and the captured constant
        b = tf.maximum(a * x, 0.0) - x
        return tf.reduce_sum(tf.sqrt(tf.abs(b) + 1.0))

    x = tf.constant(rng.standard_normal((8, 8)).astype(np.float32))
    x0 = x.numpy().copy()
    cf = _concrete(f, x)
    assert len(cf._plan.buffer_specs) == 1  # the whole elementwise chain runs in one buffer
    results = [float(cf(x)) for _ in range(3)]
    np.testing.assert_array_equal(v.numpy(), v0)
    np.testing.assert_array_equal(c.numpy(), c0)
    np.testing.assert_array_equal(x.numpy(), x0)
    assert results[0] == results[1] == results[2] == float(_plain(cf).run([x0])[0])


def test_assigned_values_are_fresh_arrays_not_plan_buffers():
    v = tf.Variable(np.zeros((2, 2), np.float32))

    def f(x):
        v.assign(x * 2.0 + 1.0)

    cf = _concrete(f, tf.ones((2, 2)))
    cf(tf.ones((2, 2)))
    after_first = v.numpy().copy()
    cf(tf.zeros((2, 2)))
    np.testing.assert_array_equal(after_first, np.full((2, 2), 3.0, np.float32))
    np.testing.assert_array_equal(v.numpy(), np.ones((2, 2), np.float32))


def test_constants_are_folded_once_when_the_plan_is_built():
    def f(x):
        k = tf.exp(tf.constant([0.0, 1.0])) * 2.0  # no input: folded
        return x + k

    cf = _concrete(f, tf.zeros(2))
    assert _names(cf._plan) == ["add"]
    x = np.ones(2, np.float32)
    want = x + np.exp(np.array([0.0, 1.0], np.float32)) * np.float32(2)
    np.testing.assert_array_equal(cf(tf.constant(x)).numpy(), want)
    np.testing.assert_array_equal(_plain(cf).run([x])[0], want)


def test_gradient_seed_is_folded_and_a_dead_forward_dropped():
    w = tf.Variable(np.ones((3, 2), np.float32))

    def f(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
        return tape.gradient(loss, w)

    cf = _concrete(f, tf.ones((4, 3)))
    names = _names(cf._plan)
    assert "array" not in names and "real_div" not in names  # ones_like(loss) / n: a constant
    assert "reduce_mean" not in names  # the loss itself is not returned
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(cf._plan.run([x])[0], _plain(cf).run([x])[0])


def test_random_ops_are_never_folded():
    def f():
        return tf.random.uniform((4,)) * 2.0

    cf = _concrete(f)
    assert "host" in _names(cf._plan)
    assert not np.array_equal(cf().numpy(), cf().numpy())


def test_common_subexpressions_are_computed_once():
    def f(x):
        return tf.exp(x) + tf.exp(x)

    cf = _concrete(f, tf.zeros(3))
    assert _names(cf._plan).count("exp") == 1
    np.testing.assert_array_equal(cf(tf.ones(3)).numpy(), 2 * np.exp(np.ones(3, np.float32)))


def test_common_subexpressions_are_not_merged_across_a_variable_update():
    v = tf.Variable(1.0)

    def f():
        a = v * 2.0
        v.assign_add(1.0)
        b = v * 2.0
        return a, b

    cf = _concrete(f)
    a, b = cf()
    assert (float(a), float(b)) == (2.0, 4.0)


def test_matmul_of_a_transpose_reads_the_operand_transposed_without_a_copy():
    def f(a, b, c):
        return tf.matmul(a, tf.transpose(b)), tf.matmul(tf.transpose(a), c, transpose_b=True)

    rng = np.random.default_rng(2)
    a = tf.constant(rng.standard_normal((3, 4)).astype(np.float32))
    b = tf.constant(rng.standard_normal((5, 4)).astype(np.float32))
    c = tf.constant(rng.standard_normal((5, 3)).astype(np.float32))
    cf = _concrete(f, a, b, c)
    assert "transpose" not in _names(cf._plan)
    got = cf._plan.run(_arrays(a, b, c))
    want = _plain(cf).run(_arrays(a, b, c))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_buffers_are_reused_across_calls_and_sized_by_liveness():
    def f(x):
        h = tf.matmul(x, x)  # a buffer
        h = tf.nn.relu(h + 1.0)  # in place, same buffer
        g = tf.matmul(h, h)  # a second buffer: h is still read here
        return tf.reduce_sum(g * 0.5)  # in place into g's buffer

    cf = _concrete(f, tf.ones((6, 6)))
    assert len(cf._plan.buffer_specs) == 2
    cf(tf.ones((6, 6)))
    (first,) = cf._plan._free_buffers
    ids = [id(b) for b in first]
    out = cf(tf.eye(6))
    assert [id(b) for b in cf._plan._free_buffers[0]] == ids
    e = np.maximum(np.eye(6, dtype=np.float32) + 1, 0)
    np.testing.assert_allclose(float(out), (e @ e).sum() * 0.5, rtol=1e-6)


def test_a_concurrent_call_gets_its_own_buffers():
    @tf.function
    def g(x):
        return tf.reduce_sum(tf.nn.relu(tf.matmul(x, x) + 1.0))

    cf = g.get_concrete_function(tf.ones((3, 3)))
    first = float(cf(tf.ones((3, 3))))
    plan = cf._plan
    taken = plan._free_buffers.pop()  # another call holds these now
    assert float(cf(tf.ones((3, 3)))) == first  # ... so this one allocates its own
    plan._free_buffers.append(taken)
    assert len(plan._free_buffers) == 2
    assert all(a is not b for a, b in zip(*plan._free_buffers))


def test_a_folded_result_is_a_fresh_array_at_every_call():
    def f():
        return tf.exp(tf.constant([0.0, 1.0]))

    cf = _concrete(f)
    assert _names(cf._plan) == []
    first, second = cf._plan.run([]), cf._plan.run([])
    assert first[0] is not second[0]
    first[0][0] = 42.0  # a caller writing into what it got
    assert float(cf()[0]) == 1.0


def test_compiled_cross_entropy_gradient_has_the_eager_gradients_bits():
    # The compiled step recomputes softmax in the gradient (no residuals in a plan); it uses
    # the forward's kernel, so the result is the eager tape's to the last bit.
    rng = np.random.default_rng(3)
    logits = tf.constant(rng.standard_normal((64, 10)).astype(np.float32) * 3)
    labels = tf.constant(rng.integers(0, 10, 64))

    def grad(z, y):
        with tf.GradientTape() as tape:
            tape.watch(z)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=z)
            )
        return tape.gradient(loss, z)

    eager = grad(logits, labels).numpy()
    compiled = tf.function(grad)(logits, labels).numpy()
    np.testing.assert_array_equal(compiled, eager)


def test_a_host_step_gets_folded_constants_and_its_structure_rebuilt_at_every_call():
    seen = []

    from layerflow._src.function import host_method

    @host_method
    def record(value, nested):
        seen.append((float(value), nested["b"][0].numpy().tolist(), nested["a"]))
        nested["b"].append("kept?")  # a fresh structure at every call: no trace of this later

    def f(x):
        record(tf.constant(2.0) * 3.0, {"b": [x], "a": 1})  # the first argument is folded
        return x

    cf = _concrete(f, tf.constant(0.0))
    cf(tf.constant(1.0))
    cf(tf.constant(5.0))
    assert seen[-2:] == [(6.0, 1.0, 1), (6.0, 5.0, 1)]


def test_gemms_into_plan_buffers_choose_blas_threads_as_the_ops_do(monkeypatch):
    from layerflow._src.backend import blas_threads
    from layerflow._src.function import buffers

    calls = []
    monkeypatch.setattr(blas_threads, "timed", lambda m, n, k: calls.append((m, n, k)))
    rng = np.random.default_rng(0)
    w = tf.Variable(rng.standard_normal((64, 32)).astype(np.float32))
    b = tf.Variable(np.zeros(32, np.float32))
    layer = tf.keras.layers.Dense(32, activation="relu")
    x = tf.constant(rng.standard_normal((16, 64)).astype(np.float32))
    layer(x)
    f = tf.function(lambda x: layer(x) + tf.matmul(x, w) + b)
    expected = (layer(x) + tf.matmul(x, w) + b).numpy()
    f(x)  # trace
    assert {"dense", "matmul"} <= {s.fn.name for s in f.get_concrete_function(x)._plan.program_steps
                                   if s.kind == "op" and s.fn.name in buffers.INTO}  # fmt: skip
    calls.clear()
    np.testing.assert_allclose(f(x).numpy(), expected, rtol=1e-5)
    assert (16, 32, 64) in calls and (16 * 64, 32, 1) in calls  # the dense and the matmul


def test_operands_from_slots_constants_and_variables_in_any_mix():
    # Runners fetch operands that are all slots with one itemgetter (one operand: a 1-tuple),
    # any other mix through per-operand getters; list-input ops still get a list.
    v = tf.Variable([1.0, 2.0, 3.0])

    def f(x):
        a = tf.exp(x)  # one slot
        b = a * x  # two slots
        c = b + v  # slot and variable
        d = tf.add_n([a, b, c])  # list input, all slots
        e = tf.concat([d, tf.constant([7.0]), x], 0)  # list input, mixed
        return tf.reduce_sum(e * 2.0), e

    x = tf.constant([0.5, -1.0, 2.0])
    got = tf.function(f)(x)
    want = f(x)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("kernels", [False, True])
def test_compiled_sgd_writes_its_decrement_over_the_gradients_buffer_with_eager_bits(kernels):
    # NumPy path: `sgd_delta` (lr g) is pooled: it writes over the weight gradient's dying
    # buffer, so the optimizer's scratch array is never allocated. Kernels: `sgd_delta` and
    # `assign_sub` are one in-place step (`function/fusion.py`), no `lr g` array at all.
    # Either way the variables get the eager steps' bits.
    if kernels and not jit.available():
        pytest.skip("numba is not installed")
    with jit.use(kernels):
        _check_compiled_sgd(kernels)


def _check_compiled_sgd(kernels):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 20)).astype(np.float32)
    y = rng.integers(0, 5, 32)

    def make():
        net = tf.keras.Sequential(
            [tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(5)]
        )
        net.build((None, 20))
        for v, w in zip(net.weights, _params(np.random.default_rng(1))):
            v.assign(w)
        opt = tf.keras.optimizers.SGD(learning_rate=0.1)
        loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        def step(x, y):
            with tf.GradientTape() as tape:
                l = loss(y, net(x))
            opt.apply_gradients(zip(tape.gradient(l, net.trainable_variables),
                                    net.trainable_variables))  # fmt: skip

        return net, opt, step

    eager_net, _, eager_step = make()
    net, opt, step = make()
    compiled = tf.function(step)
    eager_step(x, y)
    compiled(x, y)  # traces (the trace runs the ops, scratch included), then runs the plan
    scratch = [sc._array.copy() for sc in opt._scratch.values()]
    assert len(scratch) == 4
    for _ in range(3):
        eager_step(x, y)
        compiled(x, y)
    for a, b in zip(net.weights, eager_net.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # The plan never wrote the scratch arrays: its decrements went into pooled buffers, the
    # first layer's into its gradient's own (one buffer of that shape).
    for before, sc in zip(scratch, opt._scratch.values()):
        np.testing.assert_array_equal(before, sc._array)
    plan = compiled.get_concrete_function(x, y)._plan
    assert _names(plan).count("sgd_update" if kernels else "sgd_delta") == 4
    assert "sgd_delta" not in _names(plan) or not kernels
    assert [shape for shape, _ in plan.buffer_specs].count((20, 16)) == 1
