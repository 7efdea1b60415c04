"""TF ops called on symbolic KerasTensors become TFOpLambda layers (Keras 2), replayed eagerly."""

import numpy as np
import pytest

import layerflow as tf


@pytest.fixture(autouse=True)
def fresh_names():
    tf.keras.backend.clear_session()


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_relu_concat_reduce_sum_against_numpy():
    a, b = tf.keras.Input((4,)), tf.keras.Input((3,))
    joined = tf.concat([tf.nn.relu(a), b], -1)
    total = tf.reduce_sum(joined, axis=1)
    assert tuple(joined.shape) == (None, 7) and tuple(total.shape) == (None,)
    model = tf.keras.Model([a, b], [joined, total])
    xa, xb = _x(5, 4), _x(5, 3, seed=1)
    got_joined, got_total = model([xa, xb])
    want = np.concatenate([np.maximum(xa, 0), xb], -1)
    np.testing.assert_allclose(got_joined.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(got_total.numpy(), want.sum(1), rtol=1e-5)


def test_matmul_with_a_weight_constant_and_reshape():
    x = tf.keras.Input((6,))
    w = _x(6, 4, seed=2)
    y = tf.reshape(tf.matmul(x, tf.constant(w)), (-1, 2, 2))
    assert tuple(y.shape) == (None, 2, 2)
    model = tf.keras.Model(x, y)
    data = _x(3, 6, seed=3)
    np.testing.assert_allclose(model(data).numpy(), (data @ w).reshape(-1, 2, 2), rtol=1e-5)


def test_layer_names_and_summary_follow_keras_2():
    x = tf.keras.Input((4,))
    y = tf.reduce_sum(tf.nn.relu(tf.nn.relu(x)), axis=1, keepdims=True)
    y = tf.matmul(tf.concat([y, y], -1), tf.ones((2, 1)))
    model = tf.keras.Model(x, y)
    names = [layer.name for layer in model.layers[1:]]
    assert names == [
        "tf.nn.relu",
        "tf.nn.relu_1",
        "tf.math.reduce_sum",
        "tf.concat",
        "tf.linalg.matmul",
    ]
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "tf.nn.relu (TFOpLambda)" in text and "tf.concat (TFOpLambda)" in text


def test_ops_between_trainable_layers_train_with_fit():
    x = tf.keras.Input((4,))
    h = tf.nn.relu(tf.keras.layers.Dense(8)(x))
    y = tf.keras.layers.Dense(1)(tf.concat([h, x], -1))
    model = tf.keras.Model(x, y)
    model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
    data = _x(64, 4, seed=4)
    target = data.sum(1, keepdims=True)
    first = model.evaluate(data, target, verbose=0)
    model.fit(data, target, epochs=20, batch_size=16, verbose=0)
    assert model.evaluate(data, target, verbose=0) < first / 4
    # The gradient reaches the first Dense through relu and concat.
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(data[:2]))
    grads = tape.gradient(loss, model.trainable_variables)
    assert all(g is not None for g in grads) and len(grads) == 4


def test_an_op_node_used_by_two_models_and_python_numbers():
    x = tf.keras.Input((3,))
    y = tf.maximum(x, 0.5)  # a Python float takes the KerasTensor's dtype at run time
    m1, m2 = tf.keras.Model(x, y), tf.keras.Model(x, tf.reduce_sum(y, 1))
    data = _x(2, 3)
    np.testing.assert_allclose(m1(data).numpy(), np.maximum(data, 0.5))
    np.testing.assert_allclose(m2(data).numpy(), np.maximum(data, 0.5).sum(1), rtol=1e-6)


def test_a_model_with_op_layers_saves_and_loads(tmp_path):
    # Issue 11: op layers serialize by their TF name ("nn.relu"), as tf_keras's TFOpLambda.
    x = tf.keras.Input((2,))
    model = tf.keras.Model(x, tf.nn.relu(x) * 2.0 - x)
    model.save(str(tmp_path / "m.keras"))
    loaded = tf.keras.models.load_model(str(tmp_path / "m.keras"))
    data = _x(3, 2)
    np.testing.assert_allclose(loaded(data).numpy(), model(data).numpy())


def test_an_op_layer_with_an_unnameable_argument_says_so(tmp_path):
    x = tf.keras.Input((4,))
    model = tf.keras.Model(x, x[:, 1:3])  # a slice object is not JSON
    with pytest.raises(NotImplementedError, match="non-JSON-serializable") as info:
        model.get_config()
    assert "Define get_config()" not in str(info.value)  # the wrong advice for op layers


def test_eager_ops_are_unchanged_and_values_of_symbolic_tensors_still_fail():
    np.testing.assert_allclose(tf.nn.relu(tf.constant([-1.0, 2.0])).numpy(), [0.0, 2.0])
    assert int(tf.reduce_sum(tf.constant([[1, 2], [3, 4]]), axis=None)) == 10
    x = tf.keras.Input((2,))
    assert tf.convert_to_tensor(x) is x  # passed through to the op that records it
    with pytest.raises(TypeError, match="symbolic"):
        np.asarray(x)
    with pytest.raises(TypeError, match="symbolic tensor"):
        tf.keras.layers.Layer().add_loss(tf.reduce_sum(x))
