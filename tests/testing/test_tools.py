"""`tf.test`'s functions: compute_gradient, device/build queries, Benchmark, decorators."""

from __future__ import annotations

import io
import sys
import unittest

import numpy as np
import pytest

import layerflow as tf


def test_compute_gradient_returns_tf_structure():
    # TF 2.21 gives exactly these for f(x, y) = x * y at ([1, 2], 3).
    theoretical, numeric = tf.test.compute_gradient(
        lambda x, y: x * y, [tf.constant([1.0, 2.0]), tf.constant(3.0)]
    )
    assert isinstance(theoretical, tuple) and len(theoretical) == len(numeric) == 2
    np.testing.assert_array_equal(theoretical[0], [[3.0, 0.0], [0.0, 3.0]])
    np.testing.assert_array_equal(theoretical[1], [[1.0], [2.0]])
    for t, n in zip(theoretical, numeric):
        assert t.dtype == n.dtype == np.float32
        np.testing.assert_allclose(t, n, rtol=1e-3)


def test_compute_gradient_dtype_delta_and_a_wrong_gradient():
    t, n = tf.test.compute_gradient(lambda x: x * x, [np.array([1.0, 2.0])], delta=0.5)
    assert t[0].dtype == np.float64
    np.testing.assert_array_equal(n[0], [[2.0, 0.0], [0.0, 4.0]])  # exact for a square

    @tf.custom_gradient
    def bad(x):
        return tf.sin(x), lambda dy: dy * 2.0  # wrong on purpose: d sin = cos

    t, n = tf.test.compute_gradient(bad, [tf.constant([0.5, 1.0], tf.float64)])
    np.testing.assert_allclose(t[0], np.diag([2.0, 2.0]))
    np.testing.assert_allclose(n[0], np.diag(np.cos([0.5, 1.0])), rtol=1e-5)
    # outputs of several elements: one row per output element
    t, n = tf.test.compute_gradient(lambda x: tf.stack([tf.reduce_sum(x), x[0]]), [[1.0, 2.0]])
    np.testing.assert_array_equal(t[0], [[1.0, 1.0], [1.0, 0.0]])


def test_compute_gradient_errors():
    with pytest.raises(ValueError, match="list or tuple"):
        tf.test.compute_gradient(lambda x: x, tf.constant(1.0))
    with pytest.raises(TypeError, match="unsupported type int32"):
        tf.test.compute_gradient(lambda x: x, [tf.constant([1])])


def test_device_and_build_queries_are_truthful():
    gpus = tf.config.list_physical_devices("GPU")
    assert tf.test.is_gpu_available() == bool(gpus)
    assert tf.test.gpu_device_name() == ("/device:GPU:0" if gpus else "")
    try:
        import cupy  # noqa: F401

        has_cupy = True
    except ImportError:
        has_cupy = False
    assert tf.test.is_built_with_cuda() == tf.test.is_built_with_gpu_support() == has_cupy
    assert not tf.test.is_built_with_rocm() and not tf.test.is_built_with_xla()
    assert tf.test.is_cpu_target_available("x86") and tf.test.is_cpu_target_available("aarch64")
    with pytest.raises(AssertionError, match="Unknown CPU target: riscv"):
        tf.test.is_cpu_target_available("riscv")
    tf.test.experimental.sync_devices()


def test_sync_devices_refuses_inside_a_function():
    @tf.function
    def f(x):
        tf.test.experimental.sync_devices()
        return x

    with pytest.raises(RuntimeError, match="Eager mode"):
        f(tf.constant(1.0))


class Bench(tf.test.Benchmark):
    def benchmark_add(self):
        self.report_benchmark(
            iters=3,
            wall_time=0.5,
            extras={"n": 1, "kind": "x"},
            metrics=[{"name": "m", "value": 2}],
        )

    def benchmark_op(self):
        return self.run_op_benchmark(
            None, lambda: tf.constant(1.0) + 1, burn_iters=1, min_iters=3, name="plus", mbs=4
        )


def test_benchmark_reports_tf_text_format(capsys):
    Bench().benchmark_add()
    out = capsys.readouterr().out
    assert out.startswith('entry {\n  name: "Bench.benchmark_add"\n  iters: 3\n  wall_time: 0.5\n')
    assert '    key: "n"\n    value {\n      double_value: 1\n' in out
    assert 'string_value: "x"' in out and '  metrics {\n    name: "m"\n    value: 2\n' in out
    values = Bench().benchmark_op()
    assert values["iters"] == 3 and values["name"] == "plus" and values["wall_time"] > 0
    assert values["throughput"] == pytest.approx(4 / values["wall_time"])
    assert {"wall_time_mean", "wall_time_stdev"} <= set(values["extras"])
    assert 'name: "Bench.plus"' in capsys.readouterr().out
    with pytest.raises(TypeError, match="non-callable"):
        Bench().run_op_benchmark(None, tf.constant(1.0))
    assert Bench().evaluate([tf.constant(2)]) == [2]
    assert tf.test.benchmark_config()["graph_options"]["rewrite_options"]


class Decorated(tf.test.TestCase):
    __test__ = False

    @tf.test.disable_with_predicate(pred=lambda: True, skip_message="not here")
    def test_skipped(self):
        raise RuntimeError("must not run")

    @tf.test.disable_with_predicate(pred=lambda: False, skip_message="not here")
    def test_runs(self):
        self.ran = True


def test_decorators():
    runner = unittest.TextTestRunner(stream=io.StringIO())
    result = runner.run(unittest.TestSuite([Decorated("test_skipped"), Decorated("test_runs")]))
    assert result.skipped and result.skipped[0][1] == "not here" and result.wasSuccessful()
    assert tf.test.with_eager_op_as_function(Decorated) is Decorated
    assert tf.test.with_eager_op_as_function(only_as_function=True)(Decorated) is Decorated


def test_main_runs_unittest(monkeypatch):
    module = type(sys)("fake_main")
    module.Decorated = Decorated
    monkeypatch.setitem(sys.modules, "__main__", module)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with pytest.raises(SystemExit) as exit_info:
        tf.test.main(argv=["prog"])
    assert exit_info.value.code == 0
    # test_runs passes; test_skipped and the inherited test_session (as TF) are skipped
    assert "Ran 3 tests" in sys.stderr.getvalue() and "OK (skipped=2)" in sys.stderr.getvalue()


def test_facade_and_absent_names():
    assert tf.test.TestCase.__mro__[1] is unittest.TestCase
    for name in ("create_local_cluster", "assert_equal_graph_def"):
        with pytest.raises(AttributeError, match=f"no tf.test.{name}: "):
            getattr(tf.test, name)
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        tf.test.nope  # noqa: B018
    assert tf.io.gfile.exists is not None
