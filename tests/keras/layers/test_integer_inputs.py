"""Integer, uint8 and bool inputs: layers that compute with float weights cast them to the
compute dtype (tf.keras's Dense does); shape-only layers keep the input dtype (as tf.keras)."""

import numpy as np
import pytest

import layerflow as tf

L = tf.keras.layers


@pytest.fixture(autouse=True)
def fresh_names():
    tf.keras.backend.clear_session()


def _same_layer_on(make, x):
    """`make()` called on `x` and (same weights) on `x` as float32."""
    layer = make()
    out = layer(x)
    ref = layer(tf.constant(np.asarray(x).astype(np.float32)))
    return out, ref


@pytest.mark.parametrize(
    "x",
    [
        tf.constant([[1, 2, 3]]),
        np.array([[1, 2, 3]], np.uint8),
        np.array([[True, False, True]]),
        np.array([[1, 2, 3]], np.int64),
        [[1, 2, 3]],
    ],
    ids=["int32", "uint8", "bool", "int64", "list"],
)
def test_dense_casts_integer_and_bool_inputs_to_float32(x):
    out, ref = _same_layer_on(lambda: L.Dense(2, kernel_initializer="ones"), x)
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), ref.numpy())


def test_dense_cast_follows_the_layer_dtype_and_ignores_autocast():
    assert L.Dense(2, dtype="float64")(tf.constant([[1, 2]])).dtype == tf.float64
    # tf.keras's Dense casts in call, so autocast=False still gives the compute dtype.
    assert L.Dense(2, autocast=False)(tf.ones((2, 3), tf.float64)).dtype == tf.float32


@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda: L.Conv2D(2, 3), (2, 6, 6, 3)),
        (lambda: L.Conv1D(2, 3), (2, 6, 3)),
        (lambda: L.DepthwiseConv2D(3), (2, 6, 6, 3)),
        (lambda: L.BatchNormalization(), (2, 3)),
        (lambda: L.LayerNormalization(), (2, 3)),
        (lambda: L.AveragePooling2D(), (2, 6, 6, 3)),
        (lambda: L.AveragePooling1D(), (2, 6, 3)),
        (lambda: L.LeakyReLU(), (2, 3)),
        (lambda: L.PReLU(), (2, 3)),
        (lambda: L.ELU(), (2, 3)),
        (lambda: L.Softmax(), (2, 3)),
    ],
    ids=[
        "conv2d",
        "conv1d",
        "depthwise",
        "bn",
        "ln",
        "avgpool2d",
        "avgpool1d",
        "leaky",
        "prelu",
        "elu",
        "softmax",
    ],
)
def test_float_computing_layers_cast_uint8_inputs(make, shape):
    x = np.random.default_rng(0).integers(0, 255, shape).astype(np.uint8)
    out, ref = _same_layer_on(make, x)
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "make, shape",
    [
        (L.Flatten, (2, 3, 2)),
        (lambda: L.Reshape((-1,)), (2, 3, 2)),
        (L.MaxPooling2D, (2, 4, 4, 1)),
        (L.GlobalMaxPooling2D, (2, 4, 4, 1)),
        (lambda: L.Dropout(0.5), (2, 3)),
        (L.ReLU, (2, 3)),
        (L.ZeroPadding2D, (2, 4, 4, 1)),
    ],
    ids=["flatten", "reshape", "maxpool", "gmp", "dropout", "relu", "zeropad"],
)
def test_shape_only_layers_keep_integer_dtype_as_tf_keras(make, shape):
    assert make()(tf.ones(shape, tf.int32)).dtype == tf.int32
    assert make()(np.ones(shape, np.uint8)).dtype == tf.uint8


def test_symbolic_integer_input_gives_float_output_and_the_model_runs():
    inputs = tf.keras.Input((3,), dtype="int32")
    hidden = L.Flatten()(inputs)
    assert hidden.dtype == tf.int32
    outputs = L.Dense(2, kernel_initializer="ones")(hidden)
    assert outputs.dtype == tf.float32
    model = tf.keras.Model(inputs, outputs)
    got = model(np.array([[1, 2, 3]], np.int32))
    np.testing.assert_allclose(got.numpy(), [[6.0, 6.0]])
    conv = L.Conv2D(2, 3)(tf.keras.Input((5, 5, 1), dtype="uint8"))
    assert conv.dtype == tf.float32 and conv.shape == (None, 3, 3, 2)


@pytest.mark.parametrize("first", ["flatten", "conv", "input_shape"])
def test_fit_on_uint8_images_equals_fit_on_the_same_images_as_float32(first):
    rng = np.random.default_rng(1)
    images = rng.integers(0, 255, (16, 6, 6)).astype(np.uint8)
    labels = rng.integers(0, 3, 16).astype(np.uint8)

    def model():
        tf.keras.utils.set_random_seed(3)
        if first == "conv":
            stack = [L.Reshape((6, 6, 1)), L.Conv2D(2, 3), L.Flatten(), L.Dense(3)]
        elif first == "flatten":
            stack = [L.Flatten(), L.Dense(3)]
        else:
            stack = [L.Flatten(input_shape=(6, 6)), L.Dense(3)]
        net = tf.keras.Sequential(stack)
        net.build((None, 6, 6))  # weights drawn now, right after the seed
        net.compile(tf.keras.optimizers.SGD(1e-4), "sparse_categorical_crossentropy")
        return net

    a, b = model(), model()
    ha = a.fit(images, labels, batch_size=8, epochs=2, verbose=0, shuffle=False)
    hb = b.fit(images.astype(np.float32), labels, batch_size=8, epochs=2, verbose=0, shuffle=False)
    np.testing.assert_allclose(ha.history["loss"], hb.history["loss"], rtol=1e-5)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-5, atol=1e-6)
    assert a.predict(images, verbose=0).dtype == np.float32


def test_a_sequential_with_a_declared_input_takes_it_in_the_input_dtype():
    x = np.full((2, 4, 4), 51, np.uint8)
    declared = tf.keras.Sequential([L.Flatten(input_shape=(4, 4)), L.Lambda(lambda v: v / 255.0)])
    out = declared(x)
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), np.full((2, 16), 0.2, np.float32))
    assert declared.predict(x, verbose=0).dtype == np.float32
    from_input = tf.keras.Sequential([tf.keras.Input((4, 4)), L.Flatten()])
    assert from_input(x).dtype == tf.float32
    ids = tf.keras.Sequential([tf.keras.Input((4, 4), dtype="int32"), L.Flatten()])
    assert ids(x).dtype == tf.int32
    # Without a declared input the data keeps its dtype (tf.keras builds from the data).
    assert tf.keras.Sequential([L.Flatten()])(x).dtype == tf.uint8
