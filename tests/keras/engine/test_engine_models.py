"""Sequential, the functional API, subclassed-model build, summary and cloning."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.framework.trackable import walk


@pytest.fixture(autouse=True)
def fresh_names():
    tf.keras.backend.clear_session()


def relu(x):
    return np.maximum(x, 0)


# ------------------------------------------------------------------------------ Sequential
def test_sequential_add_pop_and_structural_paths():
    net = tf.keras.Sequential(name="net")
    net.add(tf.keras.layers.Dense(3))
    net.add(tf.keras.layers.Dense(2))
    net.add(tf.keras.layers.Dense(1))
    net.pop()
    assert [layer.name for layer in net.layers] == ["dense", "dense_1"]
    assert net(tf.ones((4, 5))).shape == (4, 2)
    assert [p for p, _ in walk(net)] == [
        "layers/0/kernel",
        "layers/0/bias",
        "layers/1/kernel",
        "layers/1/bias",
    ]
    with pytest.raises(TypeError, match="expects a Layer instance, got int"):
        net.add(3)
    empty = tf.keras.Sequential()
    with pytest.raises(TypeError, match="no layers"):
        empty.pop()


def test_sequential_builds_eagerly_from_input_shape_or_input():
    net = tf.keras.Sequential(
        [tf.keras.layers.Dense(4, input_shape=(3,)), tf.keras.layers.Dense(2)]
    )
    assert net.built and [w.shape for w in net.get_weights()] == [(3, 4), (4,), (4, 2), (2,)]
    assert net.output_shape == (None, 2) and net.input_shape == (None, 3)
    net2 = tf.keras.Sequential([tf.keras.Input(shape=(6,)), tf.keras.layers.Dense(2)])
    assert net2.built and net2.layers[0].kernel.shape == (6, 2)
    assert len(net2.layers) == 1  # the InputLayer is not listed
    net2.add(tf.keras.layers.Dense(5))  # built models build new layers at once
    assert net2.layers[1].kernel.shape == (2, 5) and net2.output_shape == (None, 5)


def test_sequential_explicit_build():
    net = tf.keras.Sequential([tf.keras.layers.Dense(8), tf.keras.layers.Dense(1)])
    net.build((None, 4))
    assert net.built and net.count_params() == 4 * 8 + 8 + 8 + 1
    assert net.layers[0]._output_shape_record == (None, 8)
    with pytest.raises(ValueError, match=r"needs input_shape"):
        tf.keras.Sequential([tf.keras.layers.Dense(1)]).build()


def test_sequential_config_round_trip():
    net = tf.keras.Sequential(
        [tf.keras.layers.Dense(4, activation="relu", input_shape=(3,)), tf.keras.layers.Flatten()]
    )
    config = net.get_config()
    copy = tf.keras.Sequential.from_config(config)
    assert [type(layer).__name__ for layer in copy.layers] == ["Dense", "Flatten"]
    assert copy.layers[0].get_config()["units"] == 4 and copy.built


# ------------------------------------------------------------------------------ subclassed
class Two(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.a = tf.keras.layers.Dense(3, activation="relu")
        self.b = tf.keras.layers.Dense(1)

    def call(self, x, training=None):
        return self.b(self.a(x))


def test_subclassed_model_build_with_input_shape():
    model = Two()
    model.build((None, 5))
    assert model.built and [w.shape for w in model.get_weights()] == [(5, 3), (3,), (3, 1), (1,)]
    assert model.output_shape == (None, 1)
    assert model.layers == [model.a, model.b]
    with pytest.raises(ValueError, match="needs input_shape"):
        Two().build()


def test_model_without_call_explains_both_ways():
    with pytest.raises(NotImplementedError, match="functional API.*subclass"):
        tf.keras.Model()(tf.ones((1, 2)))


# ------------------------------------------------------------------------------ functional
def test_functional_model_replays_eagerly():
    x = tf.keras.Input(shape=(4,), name="x")
    h = tf.keras.layers.Dense(3, activation="relu", name="h")(x)
    y = tf.keras.layers.Dense(2, name="y")(h)
    assert h.shape == (None, 3) and y.shape == (None, 2)
    model = tf.keras.Model(inputs=x, outputs=y)
    assert [layer.name for layer in model.layers] == ["x", "h", "y"]
    data = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    out = model(data)
    w1, b1, w2, b2 = model.get_weights()
    np.testing.assert_allclose(out.numpy(), relu(data @ w1 + b1) @ w2 + b2, rtol=1e-5)
    assert [p for p, _ in walk(model)] == [
        "layers/0/kernel",
        "layers/0/bias",
        "layers/1/kernel",
        "layers/1/bias",
    ]
    with pytest.raises(ValueError, match=r"Input 0 of model 'model' expects shape \(None, 4\)"):
        model(tf.ones((2, 7)))


def test_functional_multiple_inputs_and_outputs_with_a_shared_layer():
    a = tf.keras.Input(shape=(3,), name="a")
    b = tf.keras.Input(shape=(3,), name="b")
    shared = tf.keras.layers.Dense(2, name="shared")
    ha, hb = shared(a), shared(b)
    total = tf.keras.layers.Dense(1, name="total")(tf.keras.layers.Concatenate()([ha, hb]))
    model = tf.keras.Model([a, b], [total, ha])
    xa, xb = tf.ones((2, 3)), tf.fill((2, 3), 2.0)
    out_total, out_ha = model([xa, xb])
    assert out_total.shape == (2, 1) and out_ha.shape == (2, 2)
    k, bias = shared.get_weights()
    np.testing.assert_allclose(out_ha.numpy(), xa.numpy() @ k + bias, rtol=1e-6)
    dict_out = model({"a": xa, "b": xb})
    np.testing.assert_allclose(dict_out[0].numpy(), out_total.numpy())
    assert len(model.weights) == 4  # the shared layer's weights once
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "shared (Dense) [shared x2]" in text and "Connected to" in text
    assert "Total params: 13" in text
    with pytest.raises(ValueError, match="expects 2 input"):
        model(xa)


def test_graph_disconnected_and_non_symbolic_outputs():
    a = tf.keras.Input(shape=(3,))
    b = tf.keras.Input(shape=(3,))
    y = tf.keras.layers.Add()([a, b])
    with pytest.raises(ValueError, match="Graph disconnected"):
        tf.keras.Model(a, y)
    with pytest.raises(TypeError, match="symbolic tensors"):
        tf.keras.Model(a, tf.ones((1, 3)))
    with pytest.raises(TypeError, match="needs both inputs= and outputs="):
        tf.keras.Model(inputs=a)


def test_functional_inside_sequential_and_training_flag():
    x = tf.keras.Input(shape=(4,))
    inner = tf.keras.Model(x, tf.keras.layers.Dropout(0.5)(x))
    net = tf.keras.Sequential([inner, tf.keras.layers.Dense(1, kernel_initializer="ones")])
    ones = tf.ones((64, 4))
    np.testing.assert_allclose(net(ones, training=False).numpy(), np.full((64, 1), 4.0))
    trained = net(ones, training=True).numpy()
    assert not np.allclose(trained, 4.0)  # dropout active: training reached the inner layer


def test_clone_model_keeps_structure_and_sharing():
    shared = tf.keras.layers.Dense(3, activation="relu")
    net = tf.keras.Sequential([shared, shared, tf.keras.layers.Dense(1)])
    net(tf.ones((2, 3)))
    copy = tf.keras.models.clone_model(net)
    copy(tf.ones((2, 3)))
    assert len(copy.layers) == 2 and copy.layers[0] is not shared
    assert len(copy.weights) == 4
    x = tf.keras.Input(shape=(2,))
    model = tf.keras.Model(x, tf.keras.layers.Dense(2)(x))
    twin = tf.keras.models.clone_model(model)
    assert twin(tf.ones((1, 2))).shape == (1, 2) and twin.layers[1] is not model.layers[1]
    # tf_keras: a subclassed model is rebuilt from get_config(), which Two does not define.
    with pytest.raises(TypeError, match="Unable to revive model from config"):
        tf.keras.models.clone_model(Two())


# ------------------------------------------------------------------------------ summary
def test_summary_before_build_says_what_is_unknown():
    net = tf.keras.Sequential([tf.keras.layers.Dense(3), tf.keras.layers.Dense(1)])
    lines = []
    assert net.summary(print_fn=lines.append) is None
    text = "\n".join(lines)
    assert "(not built yet)" in text and "unknown" in text
    assert "Total params: unknown (the model is not built yet)" in text
    assert "model.build(input_shape)" in text


def test_summary_of_subclassed_and_frozen_models():
    model = Two()
    model(tf.ones((2, 5)))
    model.a.trainable = False
    lines = []
    model.summary(print_fn=lines.append, line_length=70)
    assert all(len(line) <= 70 for line in lines if not line.startswith("Weights"))
    assert "Total params: 22" in lines and "Trainable params: 4" in lines
    assert "Non-trainable params: 18" in lines
    expanded = []
    tf.keras.Sequential([model]).summary(print_fn=expanded.append, expand_nested=True)
    assert any(line.startswith("  dense (Dense)") for line in expanded)


def test_python_operators_on_symbolic_tensors():
    x = tf.keras.Input(shape=(3,))
    y = tf.keras.Input(shape=(3,))
    assert (x * 2).shape == (None, 3) and (x + y)[:, 0].shape == (None,)
    model = tf.keras.Model([x, y], [x * 2 + 1, 1 - y, (x + y)[:, 0], -x])
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 3.0, np.float32)
    doubled, flipped, first, neg = model([a, b])
    np.testing.assert_array_equal(doubled.numpy(), a * 2 + 1)
    np.testing.assert_array_equal(flipped.numpy(), 1 - b)
    np.testing.assert_array_equal(first.numpy(), (a + b)[:, 0])
    np.testing.assert_array_equal(neg.numpy(), -a)
    with pytest.raises(TypeError, match="Python condition"):
        bool(x)
