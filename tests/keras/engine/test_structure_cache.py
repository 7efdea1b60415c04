"""The cached walks behind `trainable_variables`, `weights`, `losses` and `layers` follow every
structural change: new layers (attribute, list append, Sequential.add/pop), build, trainable."""

import numpy as np

import layerflow as tf
from layerflow._src.keras.engine import layer_state


def _ids(variables):
    return [id(v) for v in variables]


def _fresh(layer, what):
    """What the walk gives without any cache: the oracle for the cached answer."""
    kind = {"trainable": "trainable", "weights": "all", "non_trainable": "non_trainable"}[what]
    return _ids(layer._collect(kind, set(), set()))


class Block(tf.keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.inner = tf.keras.layers.Dense(3)
        self.extra = []

    def call(self, x):
        x = self.inner(x)
        for layer in self.extra:
            x = layer(x)
        return x


class Net(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = tf.keras.layers.Dense(2)

    def call(self, x):
        return self.head(self.block(x))


def test_cached_lists_are_reused_until_something_changes():
    net = Net()
    net(np.ones((1, 4), np.float32))
    first = net.trainable_variables
    cache = net.__dict__["_structure_cache"]
    assert net.trainable_variables == first and net.__dict__["_structure_cache"] is cache
    assert len(first) == 4
    # The caller gets a copy: mutating it does not corrupt the next answer.
    first.append("junk")
    assert len(net.trainable_variables) == 4


def test_list_append_on_a_nested_layer_updates_the_cache():
    net = Net()
    x = np.ones((1, 4), np.float32)
    net(x)
    assert len(net.trainable_variables) == 4
    net.block.extra.append(tf.keras.layers.Dense(3))  # a plain list: no hook sees this
    net(x)
    assert len(net.trainable_variables) == 6
    assert _ids(net.trainable_variables) == _fresh(net, "trainable")
    assert net.block.extra[0] in net._flatten_layers()


def test_attribute_set_and_delete_update_the_cache():
    net = Net()
    x = np.ones((1, 4), np.float32)
    net(x)
    assert len(net.weights) == 4
    net.aux = tf.keras.layers.Dense(1)
    net.aux(np.ones((1, 2), np.float32))
    assert len(net.weights) == 6
    net.aux = None  # a tracked attribute replaced by a plain value
    assert len(net.weights) == 4
    net.aux = tf.keras.layers.Dense(1)
    net.aux(np.ones((1, 2), np.float32))
    del net.aux
    assert _ids(net.weights) == _fresh(net, "weights") and len(net.weights) == 4


def test_build_adds_weights_to_a_cached_list():
    net = Net()
    assert net.trainable_variables == []  # cached while nothing is built
    net(np.ones((1, 4), np.float32))
    assert len(net.trainable_variables) == 4
    assert _ids(net.trainable_variables) == _fresh(net, "trainable")


def test_trainable_false_on_a_nested_layer_invalidates_the_parent():
    net = Net()
    net(np.ones((1, 4), np.float32))
    assert len(net.trainable_variables) == 4
    net.block.inner.trainable = False
    assert len(net.trainable_variables) == 2
    assert len(net.non_trainable_variables) == 2
    assert _ids(net.non_trainable_variables) == _fresh(net, "non_trainable")
    net.block.inner.trainable = True
    assert len(net.trainable_variables) == 4


def test_sequential_add_and_pop_update_layers_and_weights():
    model = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(2,))])
    assert len(model.layers) == 1 and len(model.weights) == 2
    model.add(tf.keras.layers.Dense(1))
    assert len(model.layers) == 2 and len(model.weights) == 4
    model.pop()
    assert len(model.layers) == 1 and len(model.weights) == 2


def test_regularization_losses_follow_new_layers():
    model = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(2,))])
    assert model.losses == []
    model.add(tf.keras.layers.Dense(1, kernel_regularizer=tf.keras.regularizers.L2(0.5)))
    assert len(model.losses) == 1
    kernel = model.layers[1].kernel.numpy()
    np.testing.assert_allclose(float(model.losses[0]), 0.5 * np.sum(kernel**2), rtol=1e-6)
    model.layers[0].add_loss(lambda: tf.constant(1.0))
    assert len(model.losses) == 2 and 1.0 in [float(v) for v in model.losses]


def test_fit_sees_a_layer_frozen_between_epochs():
    model = tf.keras.Sequential(
        [tf.keras.layers.Dense(4, input_shape=(3,)), tf.keras.layers.Dense(1)]
    )
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((8, 3), np.float32), np.ones((8, 1), np.float32)
    model.fit(x, y, epochs=1, verbose=0)
    model.layers[0].trainable = False
    frozen = [v.numpy().copy() for v in model.layers[0].weights]
    moving = model.layers[1].kernel.numpy().copy()
    model.fit(x, y, epochs=1, verbose=0)
    for before, v in zip(frozen, model.layers[0].weights):
        np.testing.assert_array_equal(before, v.numpy())
    assert not np.array_equal(moving, model.layers[1].kernel.numpy())


def test_a_plain_tf_module_inside_a_layer_is_never_cached():
    class Holder(tf.Module):
        def __init__(self):
            super().__init__()
            self.vs = []

    layer = tf.keras.layers.Layer()
    layer.holder = Holder()
    assert layer.weights == []
    layer.holder.vs.append(tf.Variable(1.0))  # invisible to the layer's hooks
    assert len(layer.weights) == 1


def test_every_structure_change_bumps_the_version():
    version = layer_state._structure_version
    layer = tf.keras.layers.Layer()
    before = version[0]
    layer.add_weight("w", (2,))
    assert version[0] > before
    before = version[0]
    layer.trainable = False
    assert version[0] > before
    before = version[0]
    layer.child = tf.keras.layers.Dense(1)
    assert version[0] > before
    before = version[0]
    layer.note = "not state"  # neither tracked nor replacing a tracked value
    assert version[0] == before
