"""MobileNetV3Small and MobileNetV3Large (`tf.keras.applications.mobilenet_v3`), as tf_keras
builds them.

Reference: [Searching for MobileNetV3](https://arxiv.org/abs/1905.02244) (ICCV 2019). The models
include their preprocessing (a `Rescaling` layer, unless `include_preprocessing=False`), so they
take pixels in [0, 255] and `preprocess_input` passes its input through.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from layerflow._src.keras import layers
from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.applications.mobilenet_v2 import check_input_tensor
from layerflow._src.keras.engine import backend_config
from layerflow._src.keras.engine.keras_tensor import KerasTensor
from layerflow._src.keras.engine.model import Model

__all__ = ["MobileNetV3Large", "MobileNetV3Small", "decode_predictions", "preprocess_input"]

BASE_WEIGHT_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v3/"
WEIGHTS_HASHES = {
    "large_224_0.75_float": ("765b44a33ad4005b3ac83185abf1d0eb",
                             "40af19a13ebea4e2ee0c676887f69a2e"),
    "large_224_1.0_float": ("59e551e166be033d707958cf9e29a6a7",
                            "07fb09a5933dd0c8eaafa16978110389"),
    "large_minimalistic_224_1.0_float": ("675e7b876c45c57e9e63e6d90a36599c",
                                         "ec5221f64a2f6d1ef965a614bdae7973"),
    "small_224_0.75_float": ("cb65d4e5be93758266aa0a7f2c6708b7",
                             "ebdb5cc8e0b497cd13a7c275d475c819"),
    "small_224_1.0_float": ("8768d4c2e7dee89b9d02b2d03d65d862",
                            "d3e8ec802a04aa4fc771ee12a9a9b836"),
    "small_minimalistic_224_1.0_float": ("99cd97fb2fcdad2bf028eb838de69e37",
                                         "cde8136e733e811080d9fcd8a252f7e4"),
}  # fmt: skip
_log = logging.getLogger("layerflow")


def MobileNetV3(  # noqa: N802 - Keras's name
    stack_fn: Callable[..., Any],
    last_point_ch: int,
    input_shape: Any = None,
    alpha: float = 1.0,
    model_type: str = "large",
    minimalistic: bool = False,
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    classes: int = 1000,
    pooling: Any = None,
    dropout_rate: float = 0.2,
    classifier_activation: Any = "softmax",
    include_preprocessing: bool = True,
) -> Model:
    """A MobileNetV3 whose inverted residual blocks `stack_fn` builds."""
    imagenet_utils.validate_weights(weights, include_top, classes)
    check_input_tensor(input_tensor, input_shape)
    channels_first = backend_config.image_data_format() == "channels_first"
    if input_shape is None and isinstance(input_tensor, KerasTensor):
        shape = tuple(input_tensor.shape)
        rows, cols = (shape[2], shape[3]) if channels_first else (shape[1], shape[2])
        input_shape = (3, cols, rows) if channels_first else (cols, rows, 3)
    if input_shape is None and input_tensor is None:
        input_shape = (3, None, None) if channels_first else (None, None, 3)
    rows, cols = (input_shape[1], input_shape[2]) if channels_first else input_shape[:2]
    if rows and cols and (rows < 32 or cols < 32):
        raise ValueError(f"Input size must be at least 32x32; Received `input_shape={input_shape}`")
    if weights == "imagenet":
        if (not minimalistic and alpha not in [0.75, 1.0]) or (minimalistic and alpha != 1.0):
            raise ValueError(
                "If imagenet weights are being loaded, alpha can be one of `0.75`, `1.0` for "
                "non minimalistic or `1.0` for minimalistic only."
            )
        if rows != cols or rows != 224:
            _log.warning(
                "`input_shape` is undefined or non-square, or `rows` is not 224. Weights for "
                "input shape (224, 224) will be loaded as the default."
            )
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    channel_axis = 1 if channels_first else -1
    if minimalistic:
        kernel, activation, se_ratio = 3, relu, None
    else:
        kernel, activation, se_ratio = 5, hard_swish, 0.25
    x = img_input
    if include_preprocessing:
        x = layers.Rescaling(scale=1.0 / 127.5, offset=-1.0)(x)
    x = layers.Conv2D(16, kernel_size=3, strides=(2, 2), padding="same", use_bias=False,
                      name="Conv")(x)  # fmt: skip
    x = layers.BatchNormalization(axis=channel_axis, epsilon=1e-3, momentum=0.999,
                                  name="Conv/BatchNorm")(x)  # fmt: skip
    x = activation(x)
    x = stack_fn(x, kernel, activation, se_ratio)
    last_conv_ch = _depth(x.shape[channel_axis] * 6)
    if alpha > 1.0:  # a smaller last stage would hurt accuracy, so only ever widen it
        last_point_ch = _depth(last_point_ch * alpha)
    x = layers.Conv2D(last_conv_ch, kernel_size=1, padding="same", use_bias=False,
                      name="Conv_1")(x)  # fmt: skip
    x = layers.BatchNormalization(axis=channel_axis, epsilon=1e-3, momentum=0.999,
                                  name="Conv_1/BatchNorm")(x)  # fmt: skip
    x = activation(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Conv2D(last_point_ch, kernel_size=1, padding="same", use_bias=True,
                          name="Conv_2")(x)  # fmt: skip
        x = activation(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate)(x)
        x = layers.Conv2D(classes, kernel_size=1, padding="same", name="Logits")(x)
        x = layers.Flatten()(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Activation(activation=classifier_activation, name="Predictions")(x)
    else:
        x = imagenet_utils.pool_features(x, pooling, "avg_pool", "max_pool")
    model = Model(imagenet_utils.source_inputs(input_tensor, img_input), x,
                  name="MobilenetV3" + model_type)  # fmt: skip
    if weights == "imagenet":
        model_name = f"{model_type}{'_minimalistic' if minimalistic else ''}_224_{alpha}_float"
        suffix = ".h5" if include_top else "_no_top_v2.h5"
        fname = "weights_mobilenet_v3_" + model_name + suffix
        imagenet_utils.load_model_weights(
            model,
            weights,
            fname,
            BASE_WEIGHT_PATH + fname,
            WEIGHTS_HASHES[model_name][0 if include_top else 1],
        )
    else:
        imagenet_utils.load_model_weights(model, weights)
    return model


def MobileNetV3Small(  # noqa: N802 - Keras's public name
    input_shape: Any = None,
    alpha: float = 1.0,
    minimalistic: bool = False,
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    classes: int = 1000,
    pooling: Any = None,
    dropout_rate: float = 0.2,
    classifier_activation: Any = "softmax",
    include_preprocessing: bool = True,
) -> Model:
    """MobileNetV3 Small (takes pixels in [0, 255]; inputs at least 32x32).

    >>> import layerflow as tf
    >>> m = tf.keras.applications.MobileNetV3Small(input_shape=(32, 32, 3), weights=None,
    ...                                            include_top=False, pooling="avg")
    >>> m.output_shape
    (None, 576)
    """

    def stack_fn(x: Any, kernel: int, activation: Callable, se_ratio: Any) -> Any:
        def depth(d: float) -> int:
            return _depth(d * alpha)

        x = _inverted_res_block(x, 1, depth(16), 3, 2, se_ratio, relu, 0)
        x = _inverted_res_block(x, 72.0 / 16, depth(24), 3, 2, None, relu, 1)
        x = _inverted_res_block(x, 88.0 / 24, depth(24), 3, 1, None, relu, 2)
        x = _inverted_res_block(x, 4, depth(40), kernel, 2, se_ratio, activation, 3)
        x = _inverted_res_block(x, 6, depth(40), kernel, 1, se_ratio, activation, 4)
        x = _inverted_res_block(x, 6, depth(40), kernel, 1, se_ratio, activation, 5)
        x = _inverted_res_block(x, 3, depth(48), kernel, 1, se_ratio, activation, 6)
        x = _inverted_res_block(x, 3, depth(48), kernel, 1, se_ratio, activation, 7)
        x = _inverted_res_block(x, 6, depth(96), kernel, 2, se_ratio, activation, 8)
        x = _inverted_res_block(x, 6, depth(96), kernel, 1, se_ratio, activation, 9)
        return _inverted_res_block(x, 6, depth(96), kernel, 1, se_ratio, activation, 10)

    return MobileNetV3(stack_fn, 1024, input_shape, alpha, "small", minimalistic, include_top,
                       weights, input_tensor, classes, pooling, dropout_rate,
                       classifier_activation, include_preprocessing)  # fmt: skip


def MobileNetV3Large(  # noqa: N802 - Keras's public name
    input_shape: Any = None,
    alpha: float = 1.0,
    minimalistic: bool = False,
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    classes: int = 1000,
    pooling: Any = None,
    dropout_rate: float = 0.2,
    classifier_activation: Any = "softmax",
    include_preprocessing: bool = True,
) -> Model:
    """MobileNetV3 Large (takes pixels in [0, 255]; inputs at least 32x32)."""

    def stack_fn(x: Any, kernel: int, activation: Callable, se_ratio: Any) -> Any:
        def depth(d: float) -> int:
            return _depth(d * alpha)

        x = _inverted_res_block(x, 1, depth(16), 3, 1, None, relu, 0)
        x = _inverted_res_block(x, 4, depth(24), 3, 2, None, relu, 1)
        x = _inverted_res_block(x, 3, depth(24), 3, 1, None, relu, 2)
        x = _inverted_res_block(x, 3, depth(40), kernel, 2, se_ratio, relu, 3)
        x = _inverted_res_block(x, 3, depth(40), kernel, 1, se_ratio, relu, 4)
        x = _inverted_res_block(x, 3, depth(40), kernel, 1, se_ratio, relu, 5)
        x = _inverted_res_block(x, 6, depth(80), 3, 2, None, activation, 6)
        x = _inverted_res_block(x, 2.5, depth(80), 3, 1, None, activation, 7)
        x = _inverted_res_block(x, 2.3, depth(80), 3, 1, None, activation, 8)
        x = _inverted_res_block(x, 2.3, depth(80), 3, 1, None, activation, 9)
        x = _inverted_res_block(x, 6, depth(112), 3, 1, se_ratio, activation, 10)
        x = _inverted_res_block(x, 6, depth(112), 3, 1, se_ratio, activation, 11)
        x = _inverted_res_block(x, 6, depth(160), kernel, 2, se_ratio, activation, 12)
        x = _inverted_res_block(x, 6, depth(160), kernel, 1, se_ratio, activation, 13)
        return _inverted_res_block(x, 6, depth(160), kernel, 1, se_ratio, activation, 14)

    return MobileNetV3(stack_fn, 1280, input_shape, alpha, "large", minimalistic, include_top,
                       weights, input_tensor, classes, pooling, dropout_rate,
                       classifier_activation, include_preprocessing)  # fmt: skip


def relu(x: Any) -> Any:
    return layers.ReLU()(x)


def hard_sigmoid(x: Any) -> Any:
    return layers.ReLU(6.0)(x + 3.0) * (1.0 / 6.0)


def hard_swish(x: Any) -> Any:
    return layers.Multiply()([x, hard_sigmoid(x)])


def _depth(v: float, divisor: int = 8, min_value: int | None = None) -> int:
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:  # rounding down must not drop more than 10%
        new_v += divisor
    return new_v


def _se_block(inputs: Any, filters: int, se_ratio: float, prefix: str) -> Any:
    x = layers.GlobalAveragePooling2D(keepdims=True, name=prefix + "squeeze_excite/AvgPool")(inputs)
    x = layers.Conv2D(_depth(filters * se_ratio), kernel_size=1, padding="same",
                      name=prefix + "squeeze_excite/Conv")(x)  # fmt: skip
    x = layers.ReLU(name=prefix + "squeeze_excite/Relu")(x)
    x = layers.Conv2D(filters, kernel_size=1, padding="same",
                      name=prefix + "squeeze_excite/Conv_1")(x)  # fmt: skip
    x = hard_sigmoid(x)
    return layers.Multiply(name=prefix + "squeeze_excite/Mul")([inputs, x])


def _inverted_res_block(x: Any, expansion: float, filters: int, kernel_size: int, stride: int,
                        se_ratio: Any, activation: Callable, block_id: int) -> Any:  # fmt: skip
    channel_axis = 1 if backend_config.image_data_format() == "channels_first" else -1
    shortcut = x
    prefix = "expanded_conv/"
    infilters = x.shape[channel_axis]
    if block_id:
        prefix = f"expanded_conv_{block_id}/"
        x = layers.Conv2D(_depth(infilters * expansion), kernel_size=1, padding="same",
                          use_bias=False, name=prefix + "expand")(x)  # fmt: skip
        x = layers.BatchNormalization(axis=channel_axis, epsilon=1e-3, momentum=0.999,
                                      name=prefix + "expand/BatchNorm")(x)  # fmt: skip
        x = activation(x)
    if stride == 2:
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, kernel_size),
                                 name=prefix + "depthwise/pad")(x)  # fmt: skip
    x = layers.DepthwiseConv2D(kernel_size, strides=stride,
                               padding="same" if stride == 1 else "valid", use_bias=False,
                               name=prefix + "depthwise")(x)  # fmt: skip
    x = layers.BatchNormalization(axis=channel_axis, epsilon=1e-3, momentum=0.999,
                                  name=prefix + "depthwise/BatchNorm")(x)  # fmt: skip
    x = activation(x)
    if se_ratio:
        x = _se_block(x, _depth(infilters * expansion), se_ratio, prefix)
    x = layers.Conv2D(filters, kernel_size=1, padding="same", use_bias=False,
                      name=prefix + "project")(x)  # fmt: skip
    x = layers.BatchNormalization(axis=channel_axis, epsilon=1e-3, momentum=0.999,
                                  name=prefix + "project/BatchNorm")(x)  # fmt: skip
    if stride == 1 and infilters == filters:
        x = layers.Add(name=prefix + "Add")([shortcut, x])
    return x


def preprocess_input(x: Any, data_format: Any = None) -> Any:
    """A placeholder for API consistency: MobileNetV3 rescales its inputs itself (its
    `Rescaling` layer), so this returns `x` unchanged."""
    return x


def decode_predictions(preds: Any, top: int = 5) -> list:
    """The top ImageNet classes of each prediction (see `imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
