"""fit/evaluate/predict under MirroredStrategy on two logical CPUs equal single-device training."""

import numpy as np
import pytest

import layerflow as tf
from layerflow._src.distribute.values import MirroredVariable


@pytest.fixture
def strategy(two_cpus):
    """MirroredStrategy over two logical CPUs (tests/conftest.py's `two_cpus`)."""
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


def _data(n=96, d=5, k=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = (x @ rng.standard_normal((d, k))).argmax(1)
    return x, y


def _model(weights=None):
    inputs = tf.keras.Input((5,))
    h = tf.keras.layers.Dense(8, activation="tanh", name="hidden")(inputs)
    out = tf.keras.layers.Dense(3, name="logits")(h)
    model = tf.keras.Model(inputs, out)
    if weights is not None:
        model.set_weights(weights)
    model.compile(
        optimizer=tf.keras.optimizers.SGD(0.2, momentum=0.5),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def test_fit_under_mirrored_strategy_matches_single_device(strategy):
    x, y = _data()
    ref = _model()
    init = ref.get_weights()
    with strategy.scope():
        model = _model(init)
    assert all(isinstance(v, MirroredVariable) for v in model.trainable_variables)
    # Fit outside the scope: the model remembers the strategy it was made under.
    kw = dict(batch_size=16, epochs=3, shuffle=False, verbose=0, validation_data=(x[:32], y[:32]))
    h = model.fit(x, y, **kw)
    h_ref = ref.fit(x, y, **kw)
    for got, want in zip(model.get_weights(), ref.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for v in model.trainable_variables:  # every replica's copy took the same updates
        a, b = v.values
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert set(h.history) == set(h_ref.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    for key in h_ref.history:
        np.testing.assert_allclose(h.history[key], h_ref.history[key], rtol=1e-5)
    assert int(model.optimizer.iterations) == int(ref.optimizer.iterations) == 18
    # evaluate and predict split batches across the replicas and give the same answers; odd
    # batch sizes give the replicas unequal slices (18 and 17), weighted by size in the means.
    np.testing.assert_allclose(
        model.evaluate(x, y, batch_size=35, verbose=0),
        ref.evaluate(x, y, batch_size=35, verbose=0),
        rtol=1e-5,
    )
    got = model.predict(x, batch_size=25, verbose=0)
    np.testing.assert_allclose(got, ref.predict(x, batch_size=25, verbose=0), rtol=1e-5, atol=1e-6)


def test_fit_inside_the_scope_with_a_dataset_and_adam(strategy):
    x, y = _data(seed=1)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(24)
    ref = tf.keras.Sequential([tf.keras.layers.Dense(4), tf.keras.layers.Dense(3)])
    ref.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(4), tf.keras.layers.Dense(3)])
        model.compile(
            optimizer=tf.keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy"
        )
        ref(x[:1])
        ref_init = ref.get_weights()
        model.build((None, 5))
        model.set_weights(ref_init)
        h = model.fit(ds, epochs=2, verbose=0)
    h_ref = ref.fit(ds, epochs=2, verbose=0)
    assert len(model.weights) == 4
    for got, want in zip(model.get_weights(), ref.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(h.history["loss"], h_ref.history["loss"], rtol=1e-5)


def test_unbuilt_model_is_built_once_with_mirrored_weights(strategy):
    x, y = _data()
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(3)])
        model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    assert len(model.weights) == 2
    assert all(isinstance(v, MirroredVariable) for v in model.weights)


def test_custom_train_step_under_strategy_is_refused_clearly(strategy):
    class Custom(tf.keras.Model):
        def train_step(self, data):
            return {}

    with strategy.scope():
        inputs = tf.keras.Input((5,))
        model = Custom(inputs, tf.keras.layers.Dense(3)(inputs))
        model.compile(optimizer="sgd", loss="mse")
    x, _ = _data()
    with pytest.raises(NotImplementedError, match="overrides train_step"):
        model.fit(x, np.zeros((96, 3), np.float32), verbose=0)


def test_default_strategy_keeps_the_single_device_path():
    x, y = _data()
    model = _model()
    calls = []
    original = model._distributed_train_step
    model._distributed_train_step = lambda *a: calls.append(a) or original(*a)
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    assert calls == []


def test_multi_output_fit_under_strategy_matches_single_device(strategy):
    x, y = _data(seed=2)
    reg = x[:, :1] * 2.0

    def build():
        inputs = tf.keras.Input((5,))
        h = tf.keras.layers.Dense(6, activation="relu", name="trunk")(inputs)
        outs = [tf.keras.layers.Dense(1, name="out1")(h), tf.keras.layers.Dense(3, name="out2")(h)]
        return tf.keras.Model(inputs, outs)

    def compile_(m):
        m.compile(
            optimizer=tf.keras.optimizers.SGD(0.1),
            loss={"out1": "mse", "out2": tf.keras.losses.SparseCategoricalCrossentropy(True)},
            loss_weights=[0.3, 1.0],
            metrics={"out2": "accuracy"},
        )

    ref = build()
    compile_(ref)
    with strategy.scope():
        model = build()
        model.set_weights(ref.get_weights())
        compile_(model)
    h = model.fit(x, [reg, y], batch_size=32, epochs=2, shuffle=False, verbose=0)
    h_ref = ref.fit(x, [reg, y], batch_size=32, epochs=2, shuffle=False, verbose=0)
    assert list(h.history) == ["loss", "out1_loss", "out2_loss", "out2_accuracy"]
    for key in h_ref.history:
        np.testing.assert_allclose(h.history[key], h_ref.history[key], rtol=1e-5)
    for got, want in zip(model.get_weights(), ref.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
