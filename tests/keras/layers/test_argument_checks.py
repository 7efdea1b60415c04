"""Sizes, shapes and axes of layers are integers: nothing is silently truncated (issue 8).

tf_keras 2 turns `Dense(2.5)` and `Conv2D(2.5, 3)` into 2 units/filters; here they raise. What
tf_keras accepts and means (integral floats such as `Dense(2.0)`, NumPy integers) still works."""

import numpy as np
import pytest

import layerflow as tf

L = tf.keras.layers


@pytest.fixture(autouse=True)
def fresh_names():
    tf.keras.backend.clear_session()


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: L.Dense(2.5), ValueError, r"Dense 'dense': `units` must be an integer, got 2.5"),
        (lambda: L.Dense("4"), TypeError, r"`units` must be an integer, got '4' of type str"),
        (lambda: L.Dense(None), TypeError, "`units`"),
        (lambda: L.Dense(True), TypeError, "`units`"),
        (lambda: L.Dense(float("nan")), ValueError, "`units`"),
        (lambda: L.Dense(-1), ValueError, r"`units` must be an integer >= 1"),
        (lambda: L.Conv2D(2.5, 3), ValueError, "`filters` must be an integer, got 2.5"),
        (lambda: L.Conv2D("2", 3), TypeError, "`filters`"),
        (lambda: L.Conv2D(2, 2.5), ValueError, "`kernel_size`"),
        (lambda: L.Conv2D(2, "3"), TypeError, "`kernel_size`"),
        (lambda: L.Conv2D(2, (3, 3, 3)), ValueError, r"`kernel_size` .*\(3 entries\)"),
        (lambda: L.Conv2D(2, 3, strides=1.5), ValueError, "`strides`"),
        (lambda: L.Conv2D(2, 3, dilation_rate=(1, 1.5)), ValueError, "`dilation_rate`"),
        (lambda: L.Conv1D(2.5, 3), ValueError, "`filters`"),
        (lambda: L.DepthwiseConv2D(3, depth_multiplier=2.5), ValueError, "`depth_multiplier`"),
        (lambda: L.MaxPooling2D(2.5), ValueError, "`pool_size`"),
        (lambda: L.AveragePooling1D(2, strides=0.5), ValueError, "`strides`"),
        (lambda: L.ZeroPadding2D(1.5), ValueError, "`padding`"),
        (lambda: L.ZeroPadding2D(((1, 1), (0, 0.5))), ValueError, "`padding`"),
        (lambda: L.ZeroPadding2D(-1), ValueError, r"`padding` must be an integer >= 0"),
        (lambda: L.Embedding(10.5, 3), ValueError, "`input_dim`"),
        (lambda: L.Embedding(10, "3"), TypeError, "`output_dim`"),
        (lambda: L.RepeatVector(2.5), ValueError, "`n`"),
        (lambda: L.Reshape((2.5,)), TypeError, r"Reshape 'reshape': every entry of `target_shape`"),
        (lambda: L.Reshape((2.0, 3)), TypeError, "`target_shape`"),
        (lambda: L.Reshape(("2",)), TypeError, "`target_shape`"),
        (lambda: L.Reshape(2.5), TypeError, "`target_shape`"),
        (lambda: L.Permute((2.0, 1.0)), TypeError, "`dims`"),
        (lambda: L.Dropout(0.5, noise_shape=(2.5, 3)), TypeError, "`noise_shape`"),
        (lambda: L.Concatenate(axis=1.5), TypeError, "`axis` must be an integer"),
        (lambda: L.Softmax(axis=1.5), TypeError, "`axis`"),
        (lambda: L.BatchNormalization(axis=1.5), TypeError, "`axis`"),
        (lambda: L.LayerNormalization(axis=[1, 1.5]), TypeError, "`axis`"),
        (lambda: L.Dense(2, input_shape=(3.5,)), TypeError, "`input_shape`"),
        (lambda: L.Dense(2, input_dim=3.0), TypeError, "`input_dim`"),
        (lambda: L.Dense(2, batch_input_shape=(None, 2.5)), TypeError, "`batch_input_shape`"),
        (lambda: L.Dense(2, input_shape=(3,), batch_size=2.5), ValueError, "`batch_size`"),
        (lambda: tf.keras.Input((2.5,)), TypeError, r"tf.keras.Input: every entry of `shape`"),
        (lambda: tf.keras.Input(("2",)), TypeError, "`shape`"),
        (lambda: tf.keras.Input((2,), batch_size=2.5), ValueError, "`batch_size`"),
        (lambda: tf.keras.Input(batch_shape=(None, 2.5)), TypeError, "`batch_shape`"),
    ],
)
def test_non_integer_sizes_shapes_and_axes_raise(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_the_error_suggests_the_neighbouring_integers():
    with pytest.raises(ValueError, match=r"never truncated: pass the integer you mean \(2 or 3\)"):
        L.Dense(2.5)


def test_integers_in_every_form_tf_keras_accepts_still_work():
    assert L.Dense(2.0).units == 2 and type(L.Dense(2.0).units) is int
    assert L.Dense(np.int64(3)).units == 3 and type(L.Dense(np.int64(3)).units) is int
    assert L.Dense(tf.constant(4)).units == 4
    conv = L.Conv2D(np.int64(2), np.int32(3), strides=(1.0, 1.0))
    assert conv.filters == 2 and conv.kernel_size == (3, 3) and conv.strides == (1, 1)
    assert conv(tf.ones((1, 5, 5, 1))).shape == (1, 3, 3, 2)
    assert L.MaxPooling2D(np.int64(2))(tf.ones((1, 4, 4, 1))).shape == (1, 2, 2, 1)
    assert L.ZeroPadding2D((1, 2)).padding == ((1, 1), (2, 2))
    assert L.ZeroPadding2D(((0, 1), (2, 3))).padding == ((0, 1), (2, 3))
    assert L.Reshape((np.int64(2), -1))(tf.ones((1, 6))).shape == (1, 2, 3)
    assert L.Concatenate(axis=np.int64(1)).axis == 1
    assert L.Dense(2, input_shape=np.int64(3)).get_config()["batch_input_shape"] == (None, 3)
    assert L.Embedding(10, 3, input_length=np.int64(4)).get_config()["batch_input_shape"] == (
        None,
        4,
    )
    assert tf.keras.Input((np.int64(3), None)).shape == (None, 3, None)


def test_a_rejected_argument_leaves_nothing_behind():
    model = tf.keras.Sequential([L.Dense(2, input_shape=(3,))])
    with pytest.raises(ValueError):
        model.add(L.Dense(2.5))
    assert len(model.layers) == 1 and model.output_shape == (None, 2)
