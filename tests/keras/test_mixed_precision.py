"""tf.keras.mixed_precision: policies, layers under mixed_float16, LossScaleOptimizer (tf_keras)."""

import numpy as np
import pytest

import layerflow as tf

mp = tf.keras.mixed_precision
L = tf.keras.layers


@pytest.fixture
def mixed():
    mp.set_global_policy("mixed_float16")
    yield
    mp.set_global_policy(None)


def test_policy():
    p = mp.Policy("mixed_float16")
    assert (p.name, p.compute_dtype, p.variable_dtype) == ("mixed_float16", "float16", "float32")
    assert repr(p) == '<Policy "mixed_float16">' and p.get_config() == {"name": "mixed_float16"}
    assert mp.Policy.from_config(p.get_config()) == p
    q = mp.Policy("float64")
    assert q.compute_dtype == q.variable_dtype == "float64"
    with pytest.raises(ValueError, match="Cannot convert value mixed_float32"):
        mp.Policy("mixed_float32")
    with pytest.raises(TypeError, match="must be a string"):
        mp.Policy(tf.float32)


def test_global_policy():
    assert mp.global_policy() == mp.Policy("float32")
    mp.set_global_policy("mixed_float16")
    try:
        assert mp.global_policy().compute_dtype == "float16"
        layer = L.Dense(2)
        assert layer.dtype_policy == mp.Policy("mixed_float16")
    finally:
        mp.set_global_policy(None)
    assert L.Dense(2).compute_dtype == "float32"
    with pytest.raises(ValueError, match="floating-point policies"):
        mp.set_global_policy("int32")
    assert mp.global_policy() == mp.Policy("float32")  # unchanged by the bad call


def test_dense_computes_in_float16_with_float32_variables():
    layer = L.Dense(3, dtype="mixed_float16")
    x = np.random.default_rng(0).normal(size=(4, 5)).astype("float32")
    y = layer(x)
    assert (layer.dtype, layer.compute_dtype, layer.variable_dtype) == (
        "float32",
        "float16",
        "float32",
    )
    assert layer.kernel.dtype == tf.float32 and y.dtype == tf.float16
    k, b = (w.astype("float16") for w in layer.get_weights())
    want = x.astype("float16") @ k + b
    np.testing.assert_allclose(y.numpy(), want, rtol=2e-3, atol=2e-3)
    assert layer(np.arange(10).reshape(2, 5)).dtype == tf.float16  # ints are cast too
    with tf.GradientTape() as tape:
        out = tf.reduce_sum(tf.cast(layer(x), tf.float32))
    grads = tape.gradient(out, layer.trainable_variables)
    assert [g.dtype for g in grads] == [tf.float32, tf.float32]
    np.testing.assert_allclose(grads[0].numpy(), np.tile(x.sum(0)[:, None], (1, 3)), rtol=1e-2)


def test_config_keeps_the_policy():
    layer = L.Dense(3, dtype="mixed_float16")
    config = layer.get_config()
    assert config["dtype"] == {"class_name": "Policy", "config": {"name": "mixed_float16"}}
    again = L.Dense.from_config(config)
    assert again.compute_dtype == "float16" and again.dtype == "float32"
    assert L.Dense(3).get_config()["dtype"] == "float32"


def test_layers_under_a_mixed_policy(mixed):
    x = np.random.default_rng(1).random((2, 6, 6, 3)).astype("float32")
    for layer in (L.Conv2D(4, 3), L.MaxPooling2D(), L.Dropout(0.5), L.LayerNormalization()):
        assert layer(x, training=True).dtype == tf.float16
    bn = L.BatchNormalization()
    out = bn(x, training=True)
    assert out.dtype == tf.float16 and bn.moving_mean.dtype == tf.float32
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.01 * x.mean(axis=(0, 1, 2)), rtol=1e-4)
    seq = x[:, :, :, 0]
    assert L.LSTM(3)(seq).dtype == tf.float16
    mha = L.MultiHeadAttention(2, 4)
    assert mha(seq, seq).dtype == tf.float16
    assert L.Activation("softmax", dtype="float32")(L.Dense(2)(seq)).dtype == tf.float32


def test_functional_model_trains_with_loss_scaling(mixed):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 8)).astype("float32")
    y = (x[:, 0] + x[:, 1] > 0).astype("int32")
    inputs = tf.keras.Input((8,))
    h = L.Dense(16, activation="relu")(inputs)
    assert h.dtype == tf.float16
    outputs = L.Activation("softmax", dtype="float32")(L.Dense(2)(h))
    model = tf.keras.Model(inputs, outputs)
    opt = mp.LossScaleOptimizer(tf.keras.optimizers.Adam(0.01))
    model.compile(opt, "sparse_categorical_crossentropy", metrics=["accuracy"])
    hist = model.fit(x, y, batch_size=32, epochs=8, verbose=0)
    assert hist.history["accuracy"][-1] > 0.9
    assert all(v.dtype == tf.float32 for v in model.trainable_variables)
    assert int(opt.iterations) == 64 and int(opt.dynamic_counter) == 64


def test_loss_scale_optimizer_defaults_and_scaling():
    opt = mp.LossScaleOptimizer(tf.keras.optimizers.SGD(1.0))
    assert opt.dynamic and float(opt.loss_scale) == 2.0**15 and opt.dynamic_growth_steps == 2000
    assert opt.initial_scale == 2.0**15 and isinstance(opt, tf.keras.optimizers.Optimizer)
    v = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        loss = opt.get_scaled_loss(v * v)
    assert float(loss) == 9.0 * 2**15
    (g,) = opt.get_unscaled_gradients(tape.gradient(loss, [v]))
    assert float(g) == 6.0
    with tf.GradientTape() as tape:
        loss = v * v
    opt.minimize(loss, [v], tape=tape)
    assert float(v) == -3.0 and int(opt.iterations) == 1


def test_non_finite_gradients_skip_the_step_and_halve_the_scale():
    opt = mp.LossScaleOptimizer(
        tf.keras.optimizers.SGD(0.5), initial_scale=8, dynamic_growth_steps=2
    )
    v = tf.Variable([1.0, 2.0])
    opt.apply_gradients([(tf.constant([np.inf, 1.0]), v)])
    assert v.numpy().tolist() == [1.0, 2.0] and float(opt.loss_scale) == 4.0
    assert int(opt.iterations) == 1 and int(opt.dynamic_counter) == 0
    opt.apply_gradients([(tf.constant([np.nan, 1.0]), v)])
    assert float(opt.loss_scale) == 2.0
    opt.apply_gradients([(tf.constant([1.0, 1.0]), v)])
    assert v.numpy().tolist() == [0.5, 1.5] and int(opt.dynamic_counter) == 1
    opt.apply_gradients([(tf.constant([1.0, 1.0]), v)])  # 2 finite steps: the scale doubles
    assert float(opt.loss_scale) == 4.0 and int(opt.dynamic_counter) == 0
    for _ in range(5):
        opt.apply_gradients([(tf.constant([np.inf, 0.0]), v)])
    assert float(opt.loss_scale) == 1.0  # never below 1
    assert int(opt.iterations) == 9


def test_fixed_scale_and_errors_and_config():
    opt = mp.LossScaleOptimizer(tf.keras.optimizers.SGD(), dynamic=False, initial_scale=128)
    assert not opt.dynamic and float(opt.loss_scale) == 128.0 and opt.dynamic_counter is None
    with pytest.raises(ValueError, match="initial_scale"):
        mp.LossScaleOptimizer(tf.keras.optimizers.SGD(), dynamic=False)
    with pytest.raises(ValueError, match="dynamic_growth_steps"):
        mp.LossScaleOptimizer(
            tf.keras.optimizers.SGD(), dynamic=False, initial_scale=2, dynamic_growth_steps=3
        )
    with pytest.raises(TypeError, match="inner_optimizer"):
        mp.LossScaleOptimizer("sgd")
    with pytest.raises(TypeError, match="cannot wrap another"):
        mp.LossScaleOptimizer(opt)
    inner = tf.keras.optimizers.Adam(0.25)
    wrapped = mp.LossScaleOptimizer(inner, initial_scale=4, dynamic_growth_steps=10)
    with pytest.raises(ValueError, match="already wrapped"):
        mp.LossScaleOptimizer(inner)
    again = mp.LossScaleOptimizer.from_config(wrapped.get_config())
    assert type(again.inner_optimizer) is tf.keras.optimizers.Adam
    assert float(again.learning_rate) == 0.25 and float(again.loss_scale) == 4.0
    assert again.dynamic_growth_steps == 10
    wrapped.learning_rate = 0.5
    assert float(inner.learning_rate) == 0.5


@pytest.mark.parametrize("suffix", ["keras", "h5"])
def test_mixed_model_and_loss_scale_optimizer_save_and_load(mixed, tmp_path, suffix):
    model = tf.keras.Sequential(
        [
            L.Conv2D(4, 3, activation="relu", input_shape=(8, 8, 1)),
            L.BatchNormalization(),
            L.Flatten(),
            L.Dense(2),
            L.Activation("softmax", dtype="float32"),
        ]
    )
    x = np.random.default_rng(0).random((16, 8, 8, 1)).astype("float32")
    y = (x.mean((1, 2, 3)) > 0.5).astype("int32")
    opt = mp.LossScaleOptimizer(tf.keras.optimizers.Adam(0.01), initial_scale=1024)
    model.compile(opt, "sparse_categorical_crossentropy")
    model.fit(x, y, epochs=1, verbose=0)
    path = str(tmp_path / f"m.{suffix}")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    assert loaded.layers[0].compute_dtype == "float16" and loaded.layers[0].dtype == "float32"
    assert loaded.layers[-1].compute_dtype == "float32"
    assert type(loaded.optimizer) is mp.LossScaleOptimizer
    assert loaded.optimizer.initial_scale == 1024
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-3)
