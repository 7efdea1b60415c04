"""tf.cond / case / switch_case / while_loop and the small graph-era helpers: TF 2.21's eager
results and errors (checked against real TF), and gradients through the branch or loop taken."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.autodiff.gradcheck import check_op

X = np.random.default_rng(3).uniform(0.5, 1.5, (3, 2))


def test_cond_runs_only_the_chosen_branch_and_returns_its_value_as_is():
    calls = []
    out = tf.cond(tf.constant(False), lambda: calls.append("t") or 1, lambda: [3, 4])
    assert out == [3, 4] and calls == []
    assert tf.cond(True, lambda: 1, lambda: 2) == 1  # Python predicate, Python result
    assert tf.cond(tf.constant(1), lambda: "a", lambda: "b") == "a"  # non-bool scalar pred


def test_cond_argument_errors_are_tfs():
    with pytest.raises(TypeError, match="'true_fn' argument required"):
        tf.cond(True, None, lambda: 2)
    with pytest.raises(TypeError, match="'true_fn' must be callable"):
        tf.cond(True, 1, lambda: 2)
    with pytest.raises(TypeError, match="'false_fn' must be callable"):
        tf.cond(True, lambda: 1, 2)
    with pytest.raises(ValueError):
        tf.cond(tf.constant([True, False]), lambda: 1, lambda: 2)


def test_cond_gradient_flows_through_the_taken_branch_only():
    def f(x):
        return tf.cond(tf.reduce_sum(x) > 0, lambda: tf.sin(x) * x, lambda: x * 0.0)

    check_op(f, [X], lambda x: np.sin(x) * x)
    check_op(f, [-X], lambda x: x * 0.0)


def test_case_picks_the_first_true_predicate_and_default():
    x = tf.constant(3)
    pairs = [(x > 5, lambda: 1), (x > 1, lambda: 2), (x > 0, lambda: 3)]
    assert tf.case(pairs, default=lambda: 0) == 2
    assert tf.case([(x < 0, lambda: 1)], default=lambda: 9) == 9


def test_case_without_default_and_exclusive_raise_invalid_argument():
    f, t = tf.constant(False), tf.constant(True)
    assert tf.case([(f, lambda: 1), (t, lambda: 5)]) == 5  # the last pair is the default
    with pytest.raises(tf.errors.InvalidArgumentError, match="None of conditions"):
        tf.case([(f, lambda: 1), (f, lambda: 5)])
    with pytest.raises(tf.errors.InvalidArgumentError, match="exclusive=True"):
        tf.case([(t, lambda: 1), (t, lambda: 2)], default=lambda: 3, exclusive=True)
    assert tf.case([(t, lambda: 1), (t, lambda: 2)], default=lambda: 3) == 1


def test_case_argument_errors():
    with pytest.raises(TypeError, match="pred must be a Tensor"):
        tf.case([(True, lambda: 1)], default=lambda: 0)
    with pytest.raises(TypeError, match="of type bool"):
        tf.case([(tf.constant(1), lambda: 1)], default=lambda: 0)
    with pytest.raises(TypeError, match="2-tuple"):
        tf.case([tf.constant(True)], default=lambda: 0)
    with pytest.raises(TypeError, match="must be callable"):
        tf.case([(tf.constant(True), 1)], default=lambda: 0)
    with pytest.raises(ValueError, match="Unordered dictionaries"):
        tf.case({tf.constant(True).ref(): lambda: 1}, default=lambda: 0)
    with pytest.raises(ValueError, match="at least one"):
        tf.case([], default=lambda: 0)


def test_case_gradient():
    def f(x):
        s = tf.reduce_sum(x)
        return tf.case([(s < 0, lambda: -x), (s > 100, lambda: x)], default=lambda: x * x)

    check_op(f, [X], lambda x: x * x)


def test_switch_case_index_default_and_out_of_range():
    fns = [lambda: 10, lambda: 20, lambda: 30]
    assert tf.switch_case(tf.constant(1), fns) == 20
    assert tf.switch_case(tf.constant(7), fns) == 30  # out of range: the last branch
    assert tf.switch_case(tf.constant(-1), fns) == 30
    assert tf.switch_case(tf.constant(7), fns, default=lambda: 99) == 99
    assert tf.switch_case(tf.constant(1, tf.int64), {1: lambda: "b", 0: lambda: "a"}) == "b"
    assert tf.switch_case(tf.constant(0), [(1, lambda: "b"), (0, lambda: "a")]) == "a"


def test_switch_case_errors_are_tfs():
    with pytest.raises(TypeError, match="must be a Tensor"):
        tf.switch_case(1, [lambda: 1])
    with pytest.raises(TypeError, match="integer Tensor"):
        tf.switch_case(tf.constant(1.0), [lambda: 1])
    with pytest.raises(ValueError, match="at least one"):
        tf.switch_case(tf.constant(0), [])
    with pytest.raises(ValueError, match="contiguous range"):
        tf.switch_case(tf.constant(0), {0: lambda: 1, 2: lambda: 2})
    with pytest.raises(TypeError, match="Python `int`"):
        tf.switch_case(tf.constant(0), {"a": lambda: 1})


def test_switch_case_gradient():
    def f(x):
        return tf.switch_case(tf.constant(1), [lambda: x, lambda: tf.exp(x) * 2.0])

    check_op(f, [X], lambda x: np.exp(x) * 2.0)


def test_while_loop_results_are_tensors_in_the_body_structure():
    i, s = tf.while_loop(lambda i, s: i < 10, lambda i, s: (i + 1, s * 2.0), (0, 1.0))
    assert isinstance(i, tf.Tensor) and int(i) == 10 and float(s) == 1024.0
    assert i.dtype == tf.int32 and s.dtype == tf.float32
    out = tf.while_loop(lambda i: i < 3, lambda i: [i + 1], [0])
    assert isinstance(out, list) and int(out[0]) == 3
    (d,) = tf.while_loop(lambda d: d["a"] < 3, lambda d: ({"a": d["a"] + 1},), ({"a": 0},))
    assert int(d["a"]) == 3
    # cond false at once: the loop variables come back as tensors.
    (z,) = tf.while_loop(lambda i: False, lambda i: (i + 1,), (5,))
    assert isinstance(z, tf.Tensor) and int(z) == 5


def test_while_loop_maximum_iterations():
    (i,) = tf.while_loop(lambda i: i < 10, lambda i: [i + 1], [0], maximum_iterations=3)
    assert int(i) == 3
    (i,) = tf.while_loop(lambda i: i < 10, lambda i: (i + 1,), (0,), maximum_iterations=-1)
    assert int(i) == 0
    (i,) = tf.while_loop(lambda i: i < 2, lambda i: (i + 1,), (0,), maximum_iterations=50,
                         shape_invariants=[tf.TensorShape([])])  # fmt: skip
    assert int(i) == 2


def test_while_loop_errors():
    with pytest.raises(TypeError, match="'cond' must be callable"):
        tf.while_loop(1, lambda i: i, [0])
    with pytest.raises(TypeError, match="'body' must be callable"):
        tf.while_loop(lambda i: True, 1, [0])
    with pytest.raises(ValueError, match="'loop_vars' must be provided"):
        tf.while_loop(lambda: False, lambda: (), [])
    with pytest.raises(TypeError, match=r"loop_vars=\[x\]"):
        tf.while_loop(lambda i: i < 3, lambda i: i + 1, tf.constant(0))
    with pytest.raises(ValueError, match="structure"):
        tf.while_loop(lambda i, j: i < 10, lambda i, j: (i + 1,), (0, 1.0))
    with pytest.raises(ValueError, match="list or tuple"):
        tf.while_loop(lambda i: i < 10, lambda i: i + 1, [0])
    with pytest.raises(ValueError):  # a predicate of several elements
        tf.while_loop(lambda i: i < 3, lambda i: [i + 1], [tf.constant([0, 1])])


def test_while_loop_gradient_through_every_iteration():
    def f(x):
        _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, tf.sin(y) * x), (0, x))
        return y

    def ref(x):
        y = x
        for _ in range(3):
            y = np.sin(y) * x
        return y

    check_op(f, [X], ref)


def test_identity_n_tuple_group_no_op_control_dependencies():
    a, b = tf.identity_n([1, tf.constant([2.0])])
    assert int(a) == 1 and a.dtype == tf.int32 and b.shape == (1,)
    t = tf.constant(2.0)
    assert tf.tuple([1, t, None]) == [1, t, None]
    assert tf.group(t, name="g") is None and tf.no_op() is None
    with pytest.raises(TypeError, match="Unknown keyword"):
        tf.group(t, foo=1)
    calls = []
    with tf.control_dependencies([lambda: calls.append(1), t]):
        y = t + 1.0
    assert calls == [1] and float(y) == 3.0
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        (y,) = tf.identity_n([x * 3.0])
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.full_like(X, 3.0))


def test_executing_eagerly_get_static_value_newaxis():
    assert tf.executing_eagerly() is True
    np.testing.assert_array_equal(tf.get_static_value(tf.constant([1, 2])), [1, 2])
    assert tf.get_static_value([1, 2]) == [1, 2]
    assert tf.newaxis is None
    assert tf.constant([1, 2])[:, tf.newaxis].shape == (2, 1)


def test_ensure_shape_checks_and_passes_gradients():
    x = tf.zeros([2, 3])
    assert tf.ensure_shape(x, [None, 3]).shape == (2, 3)
    assert tf.ensure_shape([1, 2], [2]).dtype == tf.int32
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[2,3\].*\[\?,4\]"):
        tf.ensure_shape(x, [None, 4])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"expected shape \[2\]"):
        tf.ensure_shape(x, [2])
    check_op(lambda t: tf.ensure_shape(t, [3, None]) * 2.0, [X], lambda t: t * 2.0)


def test_timestamp_is_a_float64_scalar_of_now():
    import time

    before = time.time()
    ts = tf.timestamp()
    assert ts.dtype == tf.float64 and ts.shape == () and before <= float(ts) <= time.time()
