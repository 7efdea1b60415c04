"""Each converted statement gives the plain-Python result, on Python values (Python path) and
on tensors (tf.cond / tf.while_loop path)."""

import numpy as np
import pytest

import layerflow as tf


def sign(x):
    if x > 0:
        y = 1
    elif x < 0:
        y = -1
    else:
        y = 0
    return y


def collatz(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def first_big(xs, limit):
    total = 0
    for x in xs:
        if x < 0:
            continue
        total += x
        if total > limit:
            break
    return total


def early_return(x):
    if x > 10:
        return x * 2
    x = x + 1
    return x


def nested(n):
    s = 0
    i = 0
    while i < n:
        j = 0
        while j < i:
            s += j
            j += 1
        i += 1
    return s


def ternary(x):
    return x * 2 if x > 0 else -x


def logic(a, b):
    if a > 0 and b > 0:
        return 1
    if not (a > 0) or b > 5:
        return 2
    return 3


CASES = [
    (sign, [(5,), (-3,), (0,)]),
    (collatz, [(6,), (7,)]),
    (first_big, [([1, -2, 3, 4, 5], 5), ([1, 2], 100)]),
    (early_return, [(20,), (3,)]),
    (nested, [(4,), (0,)]),
    (ternary, [(4,), (-3,)]),
    (logic, [(1, 1), (-1, 1), (1, -1), (1, 9)]),
]


def _tensors(args):
    return tuple(tf.constant(a) for a in args)


@pytest.mark.parametrize("fn,inputs", CASES, ids=[c[0].__name__ for c in CASES])
def test_python_values_run_python(fn, inputs, spy):
    converted = tf.autograph.to_graph(fn)
    for args in inputs:
        assert converted(*args) == fn(*args)
    assert spy == {"cond": 0, "while_loop": 0}


@pytest.mark.parametrize("fn,inputs", CASES, ids=[c[0].__name__ for c in CASES])
def test_tensors_take_the_tf_path(fn, inputs, spy):
    converted = tf.autograph.to_graph(fn)
    for args in inputs:
        got = converted(*_tensors(args))
        assert int(got) == fn(*args)
    assert spy["cond"] + spy["while_loop"] > 0


def test_while_on_a_tensor_calls_while_loop(spy):
    assert int(tf.autograph.to_graph(collatz)(tf.constant(6))) == 8
    assert spy["while_loop"] == 1


def test_for_over_a_tensor_iterates_the_first_axis(spy):
    def f(m):
        acc = tf.zeros([2])
        for row in m:
            acc = acc + row
        return acc

    m = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_allclose(tf.autograph.to_graph(f)(m).numpy(), [9.0, 12.0])
    assert spy["while_loop"] == 1


def test_for_over_tf_range_with_break(spy):
    def f(n):
        s = 0
        for i in tf.range(n):
            if i > 4:
                break
            s += i
        return s

    assert int(tf.autograph.to_graph(f)(10)) == 0 + 1 + 2 + 3 + 4
    assert spy["while_loop"] == 1


def test_range_of_a_tensor_becomes_tf_range(spy):
    def f(n):
        s = 0
        for i in range(n):
            s += i
        return s

    assert tf.autograph.to_graph(f)(4) == 6
    assert spy["while_loop"] == 0
    assert int(tf.autograph.to_graph(f)(tf.constant(4))) == 6
    assert spy["while_loop"] == 1


def test_for_over_a_dataset_folds_it():
    def f(ds):
        total = tf.constant(0, tf.int64)
        for x in ds:
            if x % 2 == 0:
                continue
            total += x
        return total

    ds = tf.data.Dataset.range(7)
    assert int(tf.autograph.to_graph(f)(ds)) == 1 + 3 + 5


def test_for_over_a_python_list_stays_python(spy):
    def f(items):
        out = []
        for item in items:
            if item == "stop":
                break
            out.append(item.upper())
        return out

    assert tf.autograph.to_graph(f)(["a", "b", "stop", "c"]) == ["A", "B"]
    assert spy == {"cond": 0, "while_loop": 0}


def test_loop_else_runs_without_break():
    def f(xs, target):
        for x in xs:
            if x == target:
                found = True
                break
        else:
            found = False
        return found

    g = tf.autograph.to_graph(f)
    assert g([1, 2, 3], 2) is True and g([1, 2, 3], 9) is False


def test_return_inside_nested_python_loops():
    def f(grid, target):
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                if v == target:
                    return (i, j)
        return None

    g = tf.autograph.to_graph(f)
    grid = [[1, 2], [3, 4]]
    assert g(grid, 4) == f(grid, 4) == (1, 1)
    assert g(grid, 7) is None


def test_and_or_are_lazy_on_tensors(spy):
    calls = []

    def probe():
        calls.append(1)
        return tf.constant(True)

    def f(x):
        return x > 0 and probe()

    g = tf.autograph.to_graph(f)
    assert bool(g(tf.constant(-1))) is False and calls == []
    assert bool(g(tf.constant(1))) is True and calls == [1]


def test_not_of_a_tensor_is_logical_not():
    def f(x):
        return not x

    out = tf.autograph.to_graph(f)(tf.constant([True, False]))
    assert out.numpy().tolist() == [False, True]


def test_len_print_and_assert(capsys):
    def f(x):
        n = len(x)
        print("n", n, x)
        assert n == 3, "three"
        return n

    assert tf.autograph.to_graph(f)(tf.constant([1, 2, 3])) == 3
    assert "n 3 [1 2 3]" in capsys.readouterr().out


def test_assert_on_a_tensor_is_tf_assert():
    def f(x):
        assert x > 0, "x must be positive"
        return x

    g = tf.autograph.to_graph(f)
    assert int(g(tf.constant(2))) == 2
    with pytest.raises(tf.errors.InvalidArgumentError, match="x must be positive"):
        g(tf.constant(-2))


def test_variables_only_local_to_a_loop_body_are_not_loop_vars():
    def f(n):
        s = 0
        i = 0
        while i < n:
            tmp = i * 2
            s += tmp
            i += 1
        return s

    assert int(tf.autograph.to_graph(f)(tf.constant(4))) == 12


def test_a_variable_first_defined_in_the_loop():
    def f(n):
        i = 0
        while i < n:
            last = i * 10
            i += 1
        return last

    assert int(tf.autograph.to_graph(f)(tf.constant(3))) == 20
    with pytest.raises(tf.errors.InvalidArgumentError, match="iterate at least once"):
        tf.autograph.to_graph(f)(tf.constant(0))


def test_shape_invariants_from_set_loop_options():
    def f(n):
        x = tf.zeros([0])
        i = 0
        while i < n:
            tf.autograph.experimental.set_loop_options(
                shape_invariants=[(x, tf.TensorShape([None]))]
            )
            x = tf.concat([x, [1.0]], 0)
            i += 1
        return x

    assert tf.autograph.to_graph(f)(tf.constant(3)).shape == (3,)
