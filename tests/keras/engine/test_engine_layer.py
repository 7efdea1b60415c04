"""The Layer contract: naming, build on first call, add_weight, weights order, errors."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.framework.trackable import walk


@pytest.fixture(autouse=True)
def fresh_names():
    tf.keras.backend.clear_session()


class Scale(tf.keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def build(self, input_shape):
        self.seen_shape = input_shape
        self.w = self.add_weight("w", (input_shape[-1],), initializer="ones")
        self.c = self.add_weight(name="c", shape=(), initializer="zeros", trainable=False)

    def call(self, x):
        return x * self.w + self.c


def test_unique_names_per_class_and_given_names():
    assert [tf.keras.layers.Dense(1).name for _ in range(3)] == ["dense", "dense_1", "dense_2"]
    assert Scale().name == "scale"
    assert tf.keras.layers.Dense(1, name="head").name == "head"
    tf.keras.backend.clear_session()
    assert tf.keras.layers.Dense(1).name == "dense"


def test_unknown_kwargs_raise_type_error_naming_them():
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['unitz'\]"):
        tf.keras.layers.Layer(unitz=3)
    # Keras's own kwargs are accepted.
    layer = tf.keras.layers.Dense(2, input_shape=(3,), batch_size=4)
    assert layer._batch_input_shape == (4, 3)
    assert tf.keras.layers.Dense(2, input_dim=5)._batch_input_shape == (None, 5)


def test_forgetting_super_init_is_explained():
    class Bad(tf.keras.Model):
        def __init__(self):
            self.d = tf.keras.layers.Dense(1)

    with pytest.raises(RuntimeError, match=r"super\(\).__init__\(\)"):
        Bad()

    class Lazy(tf.keras.layers.Layer):
        def __init__(self):
            self.units = 3  # plain values are fine, using the layer is not

    with pytest.raises(RuntimeError, match="Lazy.__init__ must call super"):
        Lazy()(tf.ones((1, 2)))


def test_build_runs_once_with_the_real_shape_in_the_layer_scope():
    layer = Scale()
    assert not layer.built and layer.weights == []
    y = layer(tf.ones((2, 3)))
    assert layer.built and layer.seen_shape == tf.TensorShape([2, 3])
    assert isinstance(layer.seen_shape, tf.TensorShape)
    np.testing.assert_array_equal(y.numpy(), np.ones((2, 3)))
    w = layer.w
    layer(tf.ones((5, 3)))
    assert layer.w is w and layer.seen_shape == (2, 3)
    assert [v.name for v in layer.weights] == ["scale/w:0", "scale/c:0"]
    assert [v.name for v in layer.trainable_weights] == ["scale/w:0"]
    assert [v.name for v in layer.non_trainable_weights] == ["scale/c:0"]


def test_explicit_build_and_nested_shapes():
    layer = tf.keras.layers.Dense(3)
    layer.build((None, 4))
    assert layer.built and layer.kernel.shape == (4, 3) and layer.kernel.name == "dense/kernel:0"

    class Pair(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.shapes = input_shape

        def call(self, inputs):
            a, b = inputs
            return a + b

    pair = Pair()
    pair([tf.ones((2, 3)), tf.ones((2, 3))])
    assert pair.shapes == [tf.TensorShape([2, 3]), tf.TensorShape([2, 3])]


def test_add_weight_styles_and_defaults():
    layer = tf.keras.layers.Layer(name="holder")
    a = layer.add_weight("a", (2, 3))  # Keras 2 positional
    b = layer.add_weight(shape=(3,), name="b", initializer="ones", dtype="float64")
    c = layer.add_weight((4,))  # Keras 3 style: the shape first
    i = layer.add_weight("i", (2,), dtype="int32")
    assert (a.name, a.shape, a.dtype) == ("holder/a:0", (2, 3), tf.float32)
    limit = np.sqrt(6 / 5)
    assert np.all(np.abs(a.numpy()) <= limit) and np.any(a.numpy() != 0)  # glorot_uniform
    assert b.dtype == tf.float64 and b.numpy().tolist() == [1, 1, 1]
    assert c.shape == (4,)
    assert i.numpy().tolist() == [0, 0]  # non-float default: zeros
    with pytest.raises(ValueError, match="every dimension of the shape must be known"):
        layer.add_weight("bad", (None, 3))


class _Source(dict):  # a RestoreSource (Trackable's restore protocol) over a dict
    def take(self, key):
        return self.pop(key, None)


def test_deferred_restore_uses_pending_values_and_checks_shapes():
    layer = tf.keras.layers.Dense(2)
    kernel = np.arange(6, dtype=np.float32).reshape(3, 2)
    source = _Source(kernel=kernel)
    layer._restore_on_create(source)
    layer(tf.ones((1, 3)))
    np.testing.assert_array_equal(layer.kernel.numpy(), kernel)
    assert source == {}
    assert layer.bias.numpy().tolist() == [0, 0]
    bad = tf.keras.layers.Dense(2, name="d")
    bad._restore_on_create(_Source(kernel=np.zeros((5, 2), np.float32)))
    with pytest.raises(ValueError, match=r"Dense 'd'.*\(5, 2\).*'kernel'.*\(3, 2\)"):
        bad(tf.ones((1, 3)))


def test_the_newest_restore_source_wins_and_older_ones_give_up_the_value():
    layer = tf.keras.layers.Dense(2)
    old = _Source(kernel=np.zeros((3, 2), np.float32), bias=np.full(2, 5.0, np.float32))
    new = _Source(kernel=np.ones((3, 2), np.float32))
    layer._restore_on_create(old)
    layer._restore_on_create(new)
    layer(tf.ones((1, 3)))
    np.testing.assert_array_equal(layer.kernel.numpy(), 1.0)
    np.testing.assert_array_equal(layer.bias.numpy(), 5.0)
    assert old == {} and new == {}


def test_post_build_callbacks_run_once_after_the_outer_call():
    model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    calls = []
    assert model._call_after_build(lambda: calls.append(len(model.weights)))
    model(tf.ones((1, 3)))
    model(tf.ones((1, 3)))
    assert calls == [2]


def test_reading_weights_before_build_says_how_to_build():
    layer = tf.keras.layers.Dense(3, name="d")
    with pytest.raises(AttributeError, match=r"Dense 'd'.*not built.*layer\.build\(input_shape\)"):
        layer.kernel  # noqa: B018
    model = tf.keras.Sequential([layer])
    with pytest.raises(IndexError, match="not built yet.*Call it on data first"):
        model.weights[0]  # noqa: B018
    with pytest.raises(ValueError, match="not built yet"):
        model.count_params()
    assert not hasattr(layer, "kernel")


def test_incompatible_input_names_layer_and_shapes():
    layer = tf.keras.layers.Dense(3, name="dense_2")
    layer(tf.ones((2, 5)))
    with pytest.raises(ValueError) as err:
        layer(tf.ones((2, 7)))
    assert str(err.value).startswith(
        "Dense 'dense_2' expects inputs with last dimension 5, got shape (2, 7)."
    )
    with pytest.raises(ValueError, match="rank at least 2"):
        layer(tf.ones((5,)))


def test_inputs_are_converted_and_floats_cast_to_the_layer_dtype():
    layer = tf.keras.layers.Dense(2, kernel_initializer="ones")
    out = layer(np.ones((1, 3)))  # float64 NumPy
    assert out.dtype == tf.float32 and out.numpy().tolist() == [[3.0, 3.0]]
    assert layer([[1.0, 2.0, 3.0]]).numpy().tolist() == [[6.0, 6.0]]


def test_weights_order_own_then_sublayers_and_trainable_switch():
    class Block(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.inner = tf.keras.layers.Dense(2)
            self.more = [tf.keras.layers.Dense(2)]

        def build(self, input_shape):
            self.own = self.add_weight("own", (1,))

        def call(self, x):
            return self.more[0](self.inner(x)) * self.own

    block = Block()
    block(tf.ones((1, 3)))
    assert [v.name.split("/")[1] for v in block.weights] == ["own:0"] + ["kernel:0", "bias:0"] * 2
    assert list(block._trackable_children()) == ["own", "inner", "more"]
    assert [p for p, _ in walk(block)] == [
        "own",
        "inner/kernel",
        "inner/bias",
        "more/0/kernel",
        "more/0/bias",
    ]
    block.trainable = False
    assert block.trainable_weights == [] and len(block.non_trainable_weights) == 5
    assert not block.inner.trainable
    block.inner.trainable = True
    assert block.trainable_weights == []  # a frozen parent freezes its children
    block.trainable = True
    assert len(block.trainable_variables) == 5


def test_get_and_set_weights():
    layer = tf.keras.layers.Dense(2, name="d")
    layer(tf.ones((1, 3)))
    values = [np.full((3, 2), 2.0), np.array([1.0, -1.0])]
    layer.set_weights(values)
    got = layer.get_weights()
    np.testing.assert_array_equal(got[0], values[0])
    assert got[0].dtype == np.float32
    with pytest.raises(ValueError, match=r"got 1 arrays, but the layer has 2 weights"):
        layer.set_weights(values[:1])
    with pytest.raises(ValueError) as err:
        layer.set_weights([np.zeros((4, 2)), np.zeros(3)])
    message = str(err.value)
    assert "2 shape mismatch(es); nothing was assigned" in message
    assert "'d/kernel:0' has shape (3, 2) but the value has shape (4, 2)" in message
    assert "'d/bias:0' has shape (2,) but the value has shape (3,)" in message
    np.testing.assert_array_equal(layer.get_weights()[0], values[0])  # unchanged


def test_training_flag_reaches_nested_layers():
    seen = []

    class Probe(tf.keras.layers.Layer):
        def call(self, x, training=None):
            seen.append(training)
            return x

    class Outer(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.probe = Probe()

        def call(self, x):
            return self.probe(x)

    model = Outer()
    model(tf.ones((1, 2)), training=True)
    model(tf.ones((1, 2)), training=False)
    model(tf.ones((1, 2)))
    seq = tf.keras.Sequential([Probe()])
    seq(tf.ones((1, 2)), training=True)
    assert seen == [True, False, None, True]


def test_losses_from_regularizers_and_add_loss():
    layer = tf.keras.layers.Dense(
        2, kernel_initializer="ones", kernel_regularizer=tf.keras.regularizers.l2(0.1)
    )

    class Act(tf.keras.layers.Layer):
        def call(self, x):
            self.add_loss(tf.reduce_sum(x))
            return x

    model = tf.keras.Sequential([layer, Act()])
    model(tf.ones((1, 3)))
    losses = sorted(float(v) for v in model.losses)
    np.testing.assert_allclose(losses, [0.6, 6.0], rtol=1e-6)
    model(tf.ones((1, 3)))  # a new call replaces the call-time losses
    assert len(model.losses) == 2


def test_count_params_and_compute_output_shape():
    layer = tf.keras.layers.Dense(4)
    assert layer.compute_output_shape((None, 3)) == (None, 4)
    layer(tf.ones((2, 3)))
    assert layer.count_params() == 16
    assert Scale().compute_output_shape((None, 5)) == (None, 5)  # by running call on zeros


def test_config_round_trips():
    dense = tf.keras.layers.Dense(
        3, activation="relu", use_bias=False, kernel_initializer="zeros", name="d"
    )
    config = dense.get_config()
    clone = tf.keras.layers.Dense.from_config(config)
    assert clone.get_config() == config
    assert config["units"] == 3 and config["activation"] == "relu" and not config["use_bias"]
    flat = tf.keras.layers.Flatten(name="f")
    assert tf.keras.layers.Flatten.from_config(flat.get_config()).get_config() == flat.get_config()
    with pytest.raises(NotImplementedError, match=r"has arguments \['units'\].*get_config"):

        class NoConfig(tf.keras.layers.Layer):
            def __init__(self, units):
                super().__init__()

        NoConfig(3).get_config()


def test_dense_on_higher_rank_inputs_and_flatten():
    dense = tf.keras.layers.Dense(2, kernel_initializer="ones")
    out = dense(tf.ones((2, 3, 4)))
    assert out.shape == (2, 3, 2) and float(out[0, 0, 0]) == 4.0
    flat = tf.keras.layers.Flatten()
    assert flat(tf.ones((2, 3, 4))).shape == (2, 12)
    assert flat(tf.ones((3,))).shape == (3, 1)
    assert flat(tf.ones((0, 3, 4))).shape == (0, 12)


def test_gradients_flow_to_layer_weights():
    layer = tf.keras.layers.Dense(2)
    x = tf.constant([[1.0, 2.0, 3.0]])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(layer(x))
    gk, gb = tape.gradient(y, [layer.kernel, layer.bias])
    np.testing.assert_allclose(gk.numpy(), np.repeat(x.numpy().T, 2, axis=1))
    np.testing.assert_allclose(gb.numpy(), [1.0, 1.0])
