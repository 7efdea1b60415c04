"""A layer whose compute_output_shape falls back to super() for some inputs must not recurse."""

import layerflow as tf


class Sometimes(tf.keras.layers.Layer):
    def call(self, x):
        return tf.concat([x, x], axis=-1)

    def compute_output_shape(self, input_shape):
        if input_shape[-1] == 3:
            return tf.TensorShape([input_shape[0], 6])
        return super().compute_output_shape(input_shape)


def test_super_compute_output_shape_runs_call_instead_of_recursing():
    layer = Sometimes()
    assert layer.compute_output_shape(tf.TensorShape([None, 3])) == [None, 6]
    assert layer.compute_output_shape(tf.TensorShape([None, 5])) == [None, 10]
    out = layer(tf.keras.Input(shape=(5,)))
    assert out.shape == [None, 10]
