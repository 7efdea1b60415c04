"""Retracing rules: shapes and dtypes, reduce_retracing, input_signature, TF's warning."""

import logging

import pytest

import layerflow as tf


def test_new_shape_or_dtype_retraces():
    f = tf.function(lambda x: x)
    for n in (1, 2, 3, 4):
        f(tf.zeros([n]))
    assert f.experimental_get_tracing_count() == 4  # TF 2.21 gives 4 too
    f(tf.zeros([2]))
    assert f.experimental_get_tracing_count() == 4
    f(tf.zeros([2], tf.int32))
    assert f.experimental_get_tracing_count() == 5


def test_reduce_retracing_generalises_shapes():
    f = tf.function(lambda x: x * 2, reduce_retracing=True)
    for n in (1, 2, 3, 4):
        assert f(tf.ones([n])).numpy().tolist() == [2.0] * n
    assert f.experimental_get_tracing_count() == 2  # as TF: (1,), then (None,)
    cf = f.get_concrete_function(tf.zeros([7]))
    assert cf.structured_input_signature[0][0].shape.as_list() == [None]


def test_input_signature_traces_once_for_compatible_shapes():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        return x + 1.0

    f(tf.constant([1.0]))
    f(tf.constant([1.0, 2.0, 3.0]))
    assert f.experimental_get_tracing_count() == 1


@pytest.mark.parametrize(
    "value, text",
    [
        (
            [1, 2],
            "Can not cast TensorSpec(shape=(2,), dtype=tf.int32, name=None) to "
            "TensorSpec(shape=(None,), dtype=tf.float32, name=None)",
        ),
        (
            [[1.0]],
            "Can not cast TensorSpec(shape=(1, 1), dtype=tf.float32, name=None) to "
            "TensorSpec(shape=(None,), dtype=tf.float32, name=None)",
        ),
    ],
)
def test_input_signature_mismatch_is_tfs_type_error(value, text):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        return x

    with pytest.raises(TypeError, match="Binding inputs to tf.function failed due to") as info:
        f(tf.constant(value))
    assert text in str(info.value)
    assert "for signature: (x: TensorSpec(shape=(None,), dtype=tf.float32, name=None))" in str(
        info.value
    )


def test_input_signature_too_many_arguments():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        return x

    with pytest.raises(TypeError, match="`too many positional arguments`"):
        f(tf.constant([1.0]), 2)


def test_input_signature_must_hold_tensor_specs():
    with pytest.raises(TypeError, match="TensorSpec"):
        tf.function(lambda x: x, input_signature=[3])


def test_retracing_warning(caplog):
    f = tf.function(lambda x: x)
    with caplog.at_level(logging.WARNING, logger="layerflow"):
        for n in range(1, 7):
            f(tf.zeros([n]))
    warnings = [r.getMessage() for r in caplog.records if "retracing" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].startswith("5 out of the last 5 calls to ")
    assert "triggered tf.function retracing" in warnings[0]
    assert "reduce_retracing=True" in warnings[0]


def test_no_warning_when_calls_reuse_traces(caplog):
    f = tf.function(lambda x: x)
    with caplog.at_level(logging.WARNING, logger="layerflow"):
        for _ in range(10):
            f(tf.zeros([3]))
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]
