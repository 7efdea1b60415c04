"""tf.keras.models.experimental.SharpnessAwareMinimization, checked against tf_keras 2.21."""

import numpy as np
import pytest

import layerflow as tf

# tf_keras 2.21: the weights (flattened, in order) after fit(x, y, batch_size=8, epochs=2,
# shuffle=False) of SAM(rho=0.3) over Dense(4, tanh) -> Dense(2), SGD(0.1), mse, from the
# inputs of _inputs(); with num_batch_splits None and 2.
TF_KERAS = {
    None: [
        -1.18162,
        -0.5671445,
        0.0007135179,
        -1.02003,
        -0.1842528,
        0.02415908,
        -0.121922,
        -0.3788224,
        0.5595008,
        0.8868279,
        0.2280607,
        -0.7386901,
        0.01138471,
        -0.02412407,
        -0.05597579,
        0.2128063,
        0.5943134,
        -0.3681286,
        0.7073711,
        -0.9955235,
        0.8126025,
        0.002933375,
        -1.162101,
        -0.2186258,
        -0.215177,
        0.08346705,
    ],
    2: [
        -1.145042,
        -0.4698049,
        0.02144442,
        -1.065269,
        -0.2264692,
        -0.00359951,
        -0.2137444,
        -0.2926257,
        0.5475032,
        0.9064989,
        0.1716702,
        -0.6817135,
        0.004373735,
        -0.02041885,
        -0.07862902,
        0.2166335,
        0.5427333,
        -0.2540121,
        0.6241348,
        -0.9392812,
        0.7530158,
        -0.008323563,
        -1.068764,
        -0.1121831,
        -0.2497417,
        0.1137175,
    ],
}


def _inputs():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(8, 3)).astype("float32")
    y = rng.normal(size=(8, 2)).astype("float32")
    k = rng.normal(size=(3, 4)).astype("float32")
    k2 = rng.normal(size=(4, 2)).astype("float32")
    return x, y, k, k2


def _sam(splits, run_eagerly=False):
    x, y, k, k2 = _inputs()
    inner = tf.keras.Sequential(
        [tf.keras.layers.Dense(4, activation="tanh", input_shape=(3,)), tf.keras.layers.Dense(2)]
    )
    inner.set_weights([k, np.full(4, 0.1, "float32"), k2, np.zeros(2, "float32")])
    sam = tf.keras.models.experimental.SharpnessAwareMinimization(
        inner, rho=0.3, num_batch_splits=splits
    )
    sam.compile(tf.keras.optimizers.SGD(0.1), "mse", run_eagerly=run_eagerly)
    return sam, inner, x, y


@pytest.mark.parametrize("splits", [None, 2])
@pytest.mark.parametrize("run_eagerly", [False, True])
def test_training_matches_tf_keras(splits, run_eagerly):
    sam, inner, x, y = _sam(splits, run_eagerly)
    sam.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    got = np.concatenate([w.ravel() for w in inner.get_weights()])
    np.testing.assert_allclose(got, TF_KERAS[splits], rtol=2e-5, atol=2e-6)


def test_differs_from_plain_sgd():
    sam, inner, x, y = _sam(None)
    sam.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    plain = tf.keras.models.clone_model(inner)
    _, _, k, k2 = _inputs()
    plain.set_weights([k, np.full(4, 0.1, "float32"), k2, np.zeros(2, "float32")])
    plain.compile(tf.keras.optimizers.SGD(0.1), "mse")
    plain.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    assert not np.allclose(plain.get_weights()[0], inner.get_weights()[0])


def test_call_config_and_errors():
    sam, inner, x, _ = _sam(2)
    np.testing.assert_allclose(sam(x).numpy(), inner(x).numpy())
    again = tf.keras.models.experimental.SharpnessAwareMinimization.from_config(sam.get_config())
    assert again.rho == 0.3 and again.num_batch_splits == 2
    assert isinstance(again.model, tf.keras.Sequential) and len(again.model.layers) == 2
    with pytest.raises(TypeError, match="wraps a tf.keras.Model"):
        tf.keras.models.experimental.SharpnessAwareMinimization(tf.keras.layers.Dense(1))
    with pytest.raises(ValueError, match="num_batch_splits"):
        tf.keras.models.experimental.SharpnessAwareMinimization(inner, num_batch_splits=0)
    sam3 = tf.keras.models.experimental.SharpnessAwareMinimization(inner, num_batch_splits=3)
    sam3.compile("sgd", "mse", run_eagerly=True)
    with pytest.raises(ValueError, match="cannot be split"):
        sam3.fit(x, np.zeros((8, 2)), batch_size=8, verbose=0)
