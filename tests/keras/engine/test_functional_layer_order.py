"""A functional model lists its layers in tf_keras's order (by depth from the inputs' end, then
by first visit from the outputs), and names operator layers as tf_keras does. Keras 2 HDF5
weights files are read layer by layer in this order. Expected values from tf_keras 2.21."""

import layerflow as tf


def test_layers_in_tf_keras_order():
    k, L = tf.keras, tf.keras.layers
    a, b = k.Input((4,), name="a"), k.Input((4,), name="b")
    h = L.Dense(4, name="h")(a)
    s1 = L.Dense(4, name="s1")(h)
    s2 = L.Dense(4, name="s2")(s1)
    short = L.Dense(4, name="short")(h)
    merged = L.Add(name="add")([s2, short])
    cat = L.Concatenate(name="cat")([merged, b])
    model = k.Model([a, b], [L.Dense(1, name="out")(cat), L.Dense(2, name="side")(s1)])
    # `b` feeds only the last layers, so tf_keras lists it late, not with the inputs.
    assert [layer.name for layer in model.layers] == [
        "a", "h", "s1", "s2", "short", "add", "b", "cat", "out", "side"
    ]  # fmt: skip
    assert [w.name for w in model.weights][:4] == [
        "h/kernel:0", "h/bias:0", "s1/kernel:0", "s1/bias:0"
    ]  # fmt: skip


def test_residual_branch_order_matches_tf_keras():
    # ResNet's block: the main path's layers sit deeper than the shortcut's conv, so they come
    # first (tf_keras: conv2_block1_1_conv before conv2_block1_0_conv).
    k, L = tf.keras, tf.keras.layers
    x = k.Input((8, 8, 4), name="x")
    shortcut = L.Conv2D(8, 1, name="sc")(x)
    y = L.Conv2D(4, 1, name="c1")(x)
    y = L.Conv2D(8, 3, padding="same", name="c2")(y)
    model = k.Model(x, L.Add(name="add")([shortcut, y]))
    assert [layer.name for layer in model.layers] == ["x", "c1", "sc", "c2", "add"]


def test_operator_layers_are_named_as_in_tf_keras():
    tf.keras.backend.clear_session()  # unnamed layers are numbered from 0
    x = tf.keras.Input((3,))
    outputs = [x * 2 - 1, x + 1, x / 2, -x, x**2, 2 * x, 1 - x, x[:, 0], x < 1, tf.nn.relu(x)]
    model = tf.keras.Model(x, outputs)
    assert [layer.name for layer in model.layers[1:]] == [
        "tf.math.multiply", "tf.math.subtract", "tf.__operators__.add", "tf.math.truediv",
        "tf.math.negative", "tf.math.pow", "tf.math.multiply_1", "tf.math.subtract_1",
        "tf.__operators__.getitem", "tf.math.less", "tf.nn.relu",
    ]  # fmt: skip
