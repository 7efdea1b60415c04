"""What the harness does not cover: training-mode semantics, errors, masks, safety, the seed."""

import numpy as np
import pytest

import layerflow as tf

L = tf.keras.layers


def test_dropout_scaling_and_identity():
    x = tf.ones((200, 50))
    layer = L.Dropout(0.4)
    assert layer(x) is x or np.array_equal(layer(x).numpy(), x.numpy())
    assert np.array_equal(layer(x, training=False).numpy(), x.numpy())
    out = layer(x, training=True).numpy()
    kept = out != 0
    np.testing.assert_allclose(out[kept], 1 / 0.6, rtol=1e-6)
    assert abs(kept.mean() - 0.6) < 0.02
    assert np.all(L.Dropout(1.0)(x, training=True).numpy() == 0)
    shared = L.Dropout(0.5, noise_shape=(None, 1))(x, training=True).numpy()
    assert all(len(set(row)) == 1 for row in shared)  # one draw per row
    with pytest.raises(ValueError, match="rate must be"):
        L.Dropout(1.5)


def test_dropout_training_flag_reaches_nested_layers():
    model = tf.keras.Sequential([L.Dense(30), L.Dropout(0.5)])
    x = tf.ones((8, 4))
    a, b = model(x).numpy(), model(x).numpy()
    np.testing.assert_array_equal(a, b)
    c = model(x, training=True).numpy()
    assert np.mean(c == 0) > 0.2


def test_dropout_gradient_uses_the_same_mask():
    x = tf.Variable(tf.ones((4, 5)))
    with tf.GradientTape() as tape:
        y = L.Dropout(0.5, seed=1)(x, training=True)
        total = tf.reduce_sum(y)
    g = tape.gradient(total, x).numpy()
    np.testing.assert_allclose(g, y.numpy())


def _triple(x):
    return 3 * x


def test_lambda_config_named_function_and_arguments():
    layer = L.Lambda(_triple, name="tri")
    config = layer.get_config()
    # Under safe_mode (the default) a named function is resolved only when it is a Keras built-in,
    # registered, or passed in custom_objects; the trusting caller may say safe_mode=False.
    with pytest.raises(ValueError, match="Lambda layer 'tri'.*'_triple'.*safe_mode=False"):
        L.Lambda.from_config(config)
    assert L.Lambda.from_config(config, custom_objects={"_triple": _triple}).function is _triple
    clone = L.Lambda.from_config(config, safe_mode=False)
    assert clone.function is _triple
    np.testing.assert_allclose(clone(tf.constant([[1.0]])).numpy(), [[3.0]])
    scaled = L.Lambda(lambda x, k: x * k, arguments={"k": 2.0})
    np.testing.assert_allclose(scaled(tf.constant([[1.5]])).numpy(), [[3.0]])


def test_lambda_python_lambda_refused_unless_unsafe():
    offset = 5.0
    layer = L.Lambda(lambda x: x + offset, output_shape=(3,))
    config = layer.get_config()
    assert config["function_type"] == "lambda"
    with pytest.raises(ValueError, match="safe_mode=False"):
        L.Lambda.from_config(config)
    with pytest.raises(ValueError, match="safe_mode=False"):
        L.deserialize({"class_name": "Lambda", "config": config})
    clone = L.deserialize({"class_name": "Lambda", "config": config}, safe_mode=False)
    np.testing.assert_allclose(clone(tf.zeros((1, 3))).numpy(), [[5.0, 5.0, 5.0]])
    assert clone.compute_output_shape((None, 3)).as_list() == [None, 3]


def test_lambda_output_shape_inferred():
    layer = L.Lambda(lambda x: tf.concat([x, x], axis=1))
    assert layer.compute_output_shape((None, 3)).as_list() == [None, 6]


def test_merge_errors_name_the_layer():
    with pytest.raises(ValueError, match="Add 'add_bad'.*shapes"):
        L.Add(name="add_bad")([tf.zeros((2, 3)), tf.zeros((2, 4))])
    with pytest.raises(ValueError, match="exactly 2"):
        L.Subtract()([tf.zeros((1, 2))] * 3)
    with pytest.raises(ValueError, match="list of at least 2"):
        L.Add()([tf.zeros((1, 2))])
    with pytest.raises(ValueError, match="matching shapes except"):
        L.Concatenate()([tf.zeros((2, 3)), tf.zeros((3, 3))])


def test_merge_broadcasting_and_functional_forms():
    a = tf.constant([[1.0, 2.0, 3.0]])
    b = tf.constant([[10.0]])
    np.testing.assert_allclose(L.add([a, b]).numpy(), [[11, 12, 13]])
    np.testing.assert_allclose(L.subtract([a, b]).numpy(), [[-9, -8, -7]])
    np.testing.assert_allclose(L.multiply([a, a]).numpy(), [[1, 4, 9]])
    np.testing.assert_allclose(L.average([a, b]).numpy(), [[5.5, 6, 6.5]])
    np.testing.assert_allclose(L.maximum([a, tf.constant([[2.0, 2.0, 2.0]])]).numpy(), [[2, 2, 3]])
    np.testing.assert_allclose(L.minimum([a, tf.constant([[2.0, 2.0, 2.0]])]).numpy(), [[1, 2, 2]])
    np.testing.assert_allclose(L.concatenate([a, b]).numpy(), [[1, 2, 3, 10]])


def test_merging_in_the_functional_api():
    x1 = tf.keras.Input(shape=(4,))
    x2 = tf.keras.Input(shape=(4,))
    merged = L.concatenate([L.Dense(3)(x1), L.add([x1, x2])])
    assert merged.shape.as_list() == [None, 7]
    model = tf.keras.Model([x1, x2], L.Dense(1)(merged))
    assert model([tf.ones((2, 4)), tf.ones((2, 4))]).shape == (2, 1)


def test_embedding_lookup_mask_and_bad_ids():
    layer = L.Embedding(5, 3, mask_zero=True)
    ids = tf.constant([[0, 4, 2]])
    out = layer(ids).numpy()
    table = layer.get_weights()[0]
    np.testing.assert_array_equal(out[0], table[[0, 4, 2]])
    assert np.abs(table).max() <= 0.05  # Keras's 'uniform' default: U(-0.05, 0.05)
    assert layer.compute_mask(ids).numpy().tolist() == [[False, True, True]]
    with pytest.raises(Exception, match="5|range"):
        layer(tf.constant([[7]]))
    with pytest.raises(ValueError, match="input_dim"):
        L.Embedding(0, 3)
    np.testing.assert_array_equal(layer(tf.constant([[4.0]])).numpy()[0, 0], table[4])


def test_layer_normalization_statistics_and_error():
    x = np.random.default_rng(0).standard_normal((4, 6)).astype("float32") * 3 + 2
    y = L.LayerNormalization(epsilon=1e-6)(tf.constant(x)).numpy()
    np.testing.assert_allclose(y.mean(axis=-1), 0, atol=1e-5)
    np.testing.assert_allclose(y.std(axis=-1), 1, atol=1e-3)
    layer = L.LayerNormalization(name="ln")
    layer(tf.zeros((2, 5)))
    with pytest.raises(ValueError, match="'ln'.*last dimension 5"):
        layer(tf.zeros((2, 7)))


def test_reshape_permute_repeat_errors():
    with pytest.raises(ValueError, match="cannot be reshaped"):
        L.Reshape((4, 4))(tf.zeros((2, 6)))
    with pytest.raises(ValueError, match="at most one -1"):
        L.Reshape((-1, -1))
    with pytest.raises(ValueError, match="permutation"):
        L.Permute((1, 3))
    with pytest.raises(ValueError, match="rank 2"):
        L.RepeatVector(2)(tf.zeros((2, 3, 4)))
    assert L.Reshape((-1,)).compute_output_shape((None, 3, 4)).as_list() == [None, 12]


def test_activation_layers_values_and_validation():
    x = tf.constant([[-2.0, -0.5, 0.5, 8.0]])
    np.testing.assert_allclose(L.ReLU(max_value=6.0)(x).numpy(), [[0, 0, 0.5, 6]])
    np.testing.assert_allclose(L.LeakyReLU()(x).numpy(), [[-0.6, -0.15, 0.5, 8]], rtol=1e-6)
    np.testing.assert_allclose(L.ELU(alpha=2.0)(x).numpy()[0, 0], 2 * (np.exp(-2) - 1), rtol=1e-6)
    np.testing.assert_allclose(L.Activation("relu6")(x).numpy(), [[0, 0, 0.5, 6]])
    with pytest.raises(ValueError, match="negative_slope"):
        L.ReLU(negative_slope=-1)
    assert L.Activation(tf.nn.relu).get_config()["activation"] == "relu"


def test_softmax_layer_mask():
    x = tf.constant([[1.0, 2.0, 3.0]])
    out = L.Softmax()(x, mask=tf.constant([[True, True, False]])).numpy()
    z = np.exp(1) + np.exp(2)
    np.testing.assert_allclose(out, [[np.exp(1) / z, np.exp(2) / z, 0]], rtol=1e-5)


def test_regularizer_losses_land_in_model_losses():
    model = tf.keras.Sequential([
        L.Dense(3, kernel_regularizer=tf.keras.regularizers.l2(0.1), input_shape=(2,)),
        L.PReLU(alpha_regularizer="l1", alpha_initializer=tf.keras.initializers.Constant(1.0)),
    ])  # fmt: skip
    model(tf.ones((1, 2)))
    kernel = model.layers[0].kernel.numpy()
    assert len(model.losses) == 2
    total = sum(float(v) for v in model.losses)
    assert total == pytest.approx(0.1 * (kernel**2).sum() + 0.01 * 3, rel=1e-5)


def test_constraint_is_a_projection_on_the_variable():
    layer = L.Embedding(4, 2, embeddings_constraint=tf.keras.constraints.NonNeg())
    layer(tf.constant([[1]]))
    v = layer.embeddings
    assert isinstance(v.constraint, tf.keras.constraints.NonNeg)
    v.assign(v.constraint(tf.constant(-np.ones((4, 2), "float32"))))
    assert np.all(v.numpy() == 0)


def test_layers_serialize_round_trip():
    layer = L.LayerNormalization(axis=[1], gamma_regularizer="l2", name="norm")
    cfg = L.serialize(layer)
    assert cfg["class_name"] == "LayerNormalization"
    again = L.deserialize(cfg)
    assert again.get_config() == layer.get_config()
    with pytest.raises(ValueError, match="Unknown layer"):
        L.deserialize({"class_name": "Nope", "config": {}})
