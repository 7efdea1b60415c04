"""Tensor and Variable semantics of issue 2 section 2, and TF's dtype rules."""

import pickle

import numpy as np
import pytest

import layerflow as tf


def test_repr_and_str_as_tf_prints_them():
    assert repr(tf.constant(2.5)) == "<tf.Tensor: shape=(), dtype=float32, numpy=2.5>"
    assert repr(tf.constant([1, 2])) == (
        "<tf.Tensor: shape=(2,), dtype=int32, numpy=array([1, 2], dtype=int32)>"
    )
    assert str(tf.constant([1.0, 2.0])) == "tf.Tensor([1. 2.], shape=(2,), dtype=float32)"


def test_python_values_follow_tf_dtype_rules():
    assert tf.constant(1).dtype == tf.int32 and tf.constant(1.0).dtype == tf.float32
    assert tf.constant(np.arange(3)).dtype == tf.int64
    assert (tf.constant(np.uint8(3)) / 2).dtype == tf.float32
    assert (tf.constant(3) / 2).dtype == tf.float64
    with pytest.raises(tf.errors.InvalidArgumentError, match="add.*int32.*float32"):
        tf.constant(1) + tf.constant(1.0)


def test_indexing_negative_steps_and_masks():
    a = np.arange(12).reshape(3, 4)
    t = tf.constant(a)
    np.testing.assert_array_equal(t[::-1, ::-2].numpy(), a[::-1, ::-2])
    np.testing.assert_array_equal(t[..., None, 1].numpy(), a[..., None, 1])
    np.testing.assert_array_equal(t[t > 5].numpy(), a[a > 5])


def test_pickle_and_numpy_protocols(tmp_path):
    t = tf.constant([[1.0, 2.0]])
    assert np.array_equal(pickle.loads(pickle.dumps(t)).numpy(), t.numpy())
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    np.save(tmp_path / "x.npy", t)
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), t.numpy())


def test_variable_assign_family_and_slices():
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    assert v.name == "Variable:0" and v.trainable
    assert v.assign_add([[1.0, 1.0], [1.0, 1.0]]) is v
    v[0, 0].assign(42)
    assert v.numpy()[0, 0] == 42
    v[:].assign(v + 1)
    np.testing.assert_array_equal(v.numpy(), [[43, 4], [5, 6]])
    before = v.numpy()
    with pytest.raises(ValueError, match="shape \\(3,\\).*'Variable:0' of shape \\(2, 2\\)"):
        v.assign([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(v.numpy(), before)
    assert type(tf.convert_to_tensor(v)) is tf.Tensor


def test_gradient_tape_semantics():
    w = tf.Variable(3.0)
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        y = w * w + w  # tied uses are summed
    assert float(tape.gradient(y, w)) == 7.0
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.gradient(y, w)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        y = w * x
    assert tape.gradient(y, w) is None
    i = tf.constant(2)
    with tf.GradientTape() as tape:
        tape.watch(i)
        y = i * i
    assert tape.gradient(y, i) is None


def test_devices_soft_placement():
    with tf.device("/GPU:10"):
        t = tf.constant(1.0)
    assert t.device.endswith("CPU:0")
    for spelling in (
        "/CPU:0",
        "/device:CPU:0",
        "cpu:0",
        "/job:localhost/replica:0/task:0/device:CPU:0",
    ):
        with tf.device(spelling):
            assert tf.constant(1).device == "/job:localhost/replica:0/task:0/device:CPU:0"
