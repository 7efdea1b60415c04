"""tf.keras.layers.experimental.RandomFourierFeatures / SyncBatchNormalization and
tf.keras.utils.experimental.DatasetCreator, as tf_keras."""

import numpy as np
import pytest

import layerflow as tf

X = tf.keras.layers.experimental


def test_random_fourier_features_formula_and_weights():
    layer = X.RandomFourierFeatures(output_dim=16, scale=2.0)
    x = np.random.default_rng(0).normal(size=(4, 3)).astype("float32")
    y = layer(x).numpy()
    w, b, s = layer.unscaled_kernel.numpy(), layer.bias.numpy(), layer.kernel_scale.numpy()
    np.testing.assert_allclose(y, np.cos(x @ (w / s) + b), rtol=1e-5, atol=1e-6)
    assert s.tolist() == [2.0] and b.min() >= 0 and b.max() < 2 * np.pi
    assert layer.trainable_weights == []  # trainable=False by default (tf_keras)
    tuned = X.RandomFourierFeatures(output_dim=4, trainable=True)
    tuned(x)
    assert [v.name.split("/")[-1] for v in tuned.trainable_weights] == ["kernel_scale:0"]
    assert layer.compute_output_shape((None, 3)) == tf.TensorShape([None, 16])


def test_random_fourier_features_approximate_the_gaussian_kernel():
    d = 20000
    layer = X.RandomFourierFeatures(output_dim=d, scale=1.0)
    a = np.array([[0.0, 0.0], [0.5, -0.5], [1.0, 1.0]], "float32")
    phi = layer(a).numpy()
    approx = 2.0 / d * phi @ phi.T
    sq = ((a[:, None] - a[None]) ** 2).sum(-1)
    np.testing.assert_allclose(approx, np.exp(-sq / 2.0), atol=0.05)
    assert X.RandomFourierFeatures(4)(tf.ones((1, 8))) is not None
    default = X.RandomFourierFeatures(4)
    default(tf.ones((1, 8)))
    assert default.scale == pytest.approx(2.0)  # sqrt(input_dim / 2) for the Gaussian kernel
    lap = X.RandomFourierFeatures(4, kernel_initializer="laplacian")
    lap(tf.ones((1, 8)))
    assert lap.scale == 1.0


def test_random_fourier_features_config_and_errors():
    layer = X.RandomFourierFeatures(8, kernel_initializer="laplacian", scale=3.0, name="rff")
    again = X.RandomFourierFeatures.from_config(layer.get_config())
    assert (again.output_dim, again.kernel_initializer, again.scale) == (8, "laplacian", 3.0)
    with pytest.raises(ValueError, match="positive integer"):
        X.RandomFourierFeatures(0)
    with pytest.raises(ValueError, match="Unsupported `kernel_initializer`"):
        X.RandomFourierFeatures(4, kernel_initializer="cosine")
    with pytest.raises(ValueError, match="positive float"):
        X.RandomFourierFeatures(4, scale=-1.0)
    with pytest.raises(ValueError, match="rank of the input tensor should be 2"):
        X.RandomFourierFeatures(4)(tf.ones((2, 3, 4)))


def test_sync_batch_normalization():
    layer = X.SyncBatchNormalization(momentum=0.5)
    assert isinstance(layer, tf.keras.layers.BatchNormalization) and layer.synchronized
    x = np.random.default_rng(0).normal(size=(8, 3)).astype("float32")
    out = layer(x, training=True).numpy()
    want = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    again = X.SyncBatchNormalization.from_config(layer.get_config())
    assert again.synchronized and again.momentum == 0.5


def _dataset_fn(context):
    x = np.arange(16, dtype="float32").reshape(8, 2) / 16
    data = tf.data.Dataset.from_tensor_slices((x, x.sum(1, keepdims=True)))
    return data.repeat().batch(context.get_per_replica_batch_size(4))


def test_dataset_creator_in_fit():
    creator = tf.keras.utils.experimental.DatasetCreator(_dataset_fn)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile(tf.keras.optimizers.SGD(0.1), "mse")
    hist = model.fit(creator, epochs=3, steps_per_epoch=2, verbose=0)
    assert len(hist.history["loss"]) == 3 and int(model.optimizer.iterations) == 6
    with pytest.raises(ValueError, match="steps_per_epoch"):
        model.fit(creator, epochs=1, verbose=0)
    with pytest.raises(TypeError, match="must be a `callable`"):
        tf.keras.utils.experimental.DatasetCreator(3)
    bad = tf.keras.utils.experimental.DatasetCreator(lambda ctx: [1, 2])
    with pytest.raises(TypeError, match="must return a Dataset"):
        model.fit(bad, epochs=1, steps_per_epoch=1, verbose=0)
