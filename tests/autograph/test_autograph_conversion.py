"""Conversion: generated code, recursion, methods, closures, lambdas, cache, allow-list."""

import layerflow as tf
from layerflow._src.autograph import conversion

COUNTER = 0


def helper(x):
    if x > 0:
        return x
    return -x


def caller(x):
    return helper(x) + 1


def test_to_code_shows_the_functional_forms():
    def f(x):
        while x > 0:
            x = x - 1
        for i in range(3):
            x = x + i
        if x > 2:
            x = 0
        return x

    code = tf.autograph.to_code(f)
    assert code.startswith("def tf__f(x):")
    for form in ("ag__.if_stmt(", "ag__.while_stmt(", "ag__.for_stmt(", "ag__.converted_call("):
        assert form in code
    assert tf.autograph.to_graph(f)(5) == f(5)


def test_called_user_functions_are_converted(spy):
    assert int(tf.autograph.to_graph(caller)(tf.constant(-3))) == 4
    assert spy["cond"] == 1  # the `if` of helper became tf.cond


def test_layerflow_and_numpy_functions_are_not_converted():
    import numpy as np

    assert conversion.convert(tf.reduce_sum) is tf.reduce_sum
    assert conversion.convert(np.sum) is np.sum
    assert conversion.convert(print) is print


def test_do_not_convert(spy):
    @tf.autograph.experimental.do_not_convert
    def plain(x):
        if x > 0:
            return x
        return -x

    assert tf.autograph.to_graph(plain) is plain
    assert tf.autograph.do_not_convert is tf.autograph.experimental.do_not_convert

    def f(x):
        return plain(x)

    assert int(tf.autograph.to_graph(f)(tf.constant(2))) == 2
    assert spy["cond"] == 0


class Base:
    def scale(self, x):
        return x * 10


class Model(Base):
    def __init__(self, limit):
        self.limit = limit

    def scale(self, x):
        if x > self.limit:
            x = x - self.limit
        return super().scale(x)


def test_methods_bind_self_and_keep_super(spy):
    m = Model(2)
    g = tf.autograph.to_graph(m.scale)
    assert g(5) == m.scale(5) == 30
    assert int(g(tf.constant(5))) == 30
    assert spy["cond"] == 1


def test_closures_and_globals_are_shared():
    count = 0

    def bump(x):
        nonlocal count
        global COUNTER
        if x > 0:
            count += 1
            COUNTER += 1
        return count

    g = tf.autograph.to_graph(bump)
    before = COUNTER
    assert g(1) == 1 and g(1) == 2 and count == 2
    assert COUNTER == before + 2


def test_lambdas_and_nested_functions(spy):
    absolute = lambda x: x if x > 0 else -x  # noqa: E731

    def outer(x):
        def inner(y):
            if y > 0:
                y = y * 2
            return y

        return inner(absolute(x))

    assert int(tf.autograph.to_graph(absolute)(tf.constant(-4))) == 4
    assert int(tf.autograph.to_graph(outer)(tf.constant(-3))) == 6
    assert spy["cond"] >= 3


def test_defaults_and_decorated_functions():
    def deco(fn):
        fn.tag = "kept"
        return fn

    @deco
    def f(x, k=3, *, m=2):
        if x > 0:
            return x * k * m
        return 0

    g = tf.autograph.to_graph(f)
    assert g(1) == 6 and g(1, k=1, m=1) == 1 and g.tag == "kept"


def test_the_cache_is_keyed_by_the_code_object():
    def make(n):
        def f(x):
            if x > 0:
                x = x + n
            return x

        return f

    a, b = make(1), make(10)
    assert a.__code__ is b.__code__
    ga, gb = tf.autograph.to_graph(a), tf.autograph.to_graph(b)
    assert ga.__code__ is gb.__code__  # one transformation, two closures
    assert ga(1) == 2 and gb(1) == 11
    assert tf.autograph.to_graph(ga) is ga  # converted code is not converted again


def test_trace_and_verbosity(capsys, caplog):
    tf.autograph.trace("traced", 1)
    assert "traced 1" in capsys.readouterr().out
    tf.autograph.set_verbosity(1)
    try:
        import logging

        def fresh(x):
            if x:
                return 1
            return 0

        with caplog.at_level(logging.INFO, logger="layerflow.autograph"):
            tf.autograph.to_graph(fresh)
        assert "def tf__fresh" in caplog.text
    finally:
        tf.autograph.set_verbosity(0)
