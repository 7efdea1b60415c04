"""Whole-value writes by loaders and set_weights reach every copy of a mirrored variable."""

import numpy as np

import layerflow as tf


def _copies(v):
    return [np.asarray(t) for t in v.values]


def test_set_weights_and_load_weights_write_every_replica(two_cpus, tmp_path):
    strategy = tf.distribute.MirroredStrategy(["/CPU:0", "/CPU:1"])
    with strategy.scope():
        net = tf.keras.Sequential([tf.keras.layers.Dense(3)])
        net(tf.ones((2, 4)))
    kernel = net.layers[0].kernel
    new = [np.full((4, 3), 2.0, np.float32), np.full((3,), -1.0, np.float32)]
    net.set_weights(new)
    for copy in _copies(kernel):
        np.testing.assert_array_equal(copy, new[0])
    path = tmp_path / "w.params"
    net.save_weights(str(path))
    net.set_weights([np.zeros((4, 3), np.float32), np.zeros((3,), np.float32)])
    net.load_weights(str(path))
    for copy in _copies(kernel):
        np.testing.assert_array_equal(copy, new[0])
