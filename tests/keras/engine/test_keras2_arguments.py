"""Keras 2 argument names accepted where tf_keras 2 accepts them (issue 14)."""

import numpy as np
import pytest

import layerflow as tf

L = tf.keras.layers


@pytest.fixture(autouse=True)
def fresh_names():
    tf.keras.backend.clear_session()


def test_sequential_with_name_and_input_shape_on_the_first_layer():
    model = tf.keras.Sequential([L.Dense(4, input_shape=(3,)), L.Dense(2)], name="mlp")
    assert model.name == "mlp" and model.built
    assert model.input_shape == (None, 3) and model.output_shape == (None, 2)
    assert tf.keras.Sequential([L.Dense(2, input_shape=(3,))], "pos").name == "pos"


@pytest.mark.parametrize(
    "kwargs, shape",
    [
        ({"input_dim": 3}, (None, 3)),
        ({"input_shape": 3}, (None, 3)),
        ({"input_shape": (3,), "batch_size": 5}, (5, 3)),
        ({"batch_input_shape": (5, 3)}, (5, 3)),
    ],
)
def test_first_layer_shape_arguments(kwargs, shape):
    model = tf.keras.Sequential([L.Dense(2, **kwargs)])
    assert model.input_shape == shape
    assert model.layers[0].get_config()["batch_input_shape"] == shape


def test_dynamic_and_autocast_are_accepted():
    layer = L.Dense(2, dynamic=True, autocast=False)
    assert layer.dynamic
    assert layer(tf.ones((1, 3))).shape == (1, 2)


def test_conv2d_groups_is_accepted_and_kept_in_the_config():
    layer = L.Conv2D(4, 3, groups=2)
    assert layer.get_config()["groups"] == 2
    assert layer(tf.ones((1, 5, 5, 4))).shape == (1, 3, 3, 4)


def test_softmax_robust_masking_replaces_masked_logits():
    # A huge logit is not pushed below the others by the additive trick, but is replaced
    # by the robust one (tf_keras: tf.where(mask, inputs, large negative)).
    x = tf.constant([[1.0, 1e12, 1.0]])
    mask = tf.constant([[True, False, True]])
    robust = L.Softmax(robust_masking=True)(x, mask=mask).numpy()
    np.testing.assert_allclose(robust, [[0.5, 0.0, 0.5]])
    assert L.Softmax()(x, mask=mask).numpy()[0, 1] == pytest.approx(1.0)
    float_mask = tf.constant([[1.0, 0.0, 1.0]])
    np.testing.assert_allclose(L.Softmax(robust_masking=True)(x, mask=float_mask).numpy(), robust)
    config = L.Softmax(robust_masking=True).get_config()
    assert L.Softmax.from_config(config).robust_masking


def test_embedding_sparse_and_input_optional_are_accepted_when_false():
    assert L.Embedding(10, 2, sparse=False)(tf.constant([[1, 2]])).shape == (1, 2, 2)
    with pytest.raises(ValueError, match="sparse=True"):
        L.Embedding(10, 2, sparse=True)
    assert tf.keras.Input((3,), optional=False).shape == (None, 3)
    with pytest.raises(ValueError, match="optional=True"):
        tf.keras.Input((3,), optional=True)
    config = L.InputLayer((3,)).get_config()
    assert config["optional"] is False
    assert L.InputLayer.from_config(config)._batch_input_shape == (None, 3)
