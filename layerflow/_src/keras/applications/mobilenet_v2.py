"""MobileNetV2 (`tf.keras.applications.mobilenet_v2`), as tf_keras builds it.

Reference: [MobileNetV2: Inverted Residuals and Linear Bottlenecks](
https://arxiv.org/abs/1801.04381) (CVPR 2018). Inputs are preprocessed with `preprocess_input`
("tf": scaled to [-1, 1]).
"""

from __future__ import annotations

import logging
from typing import Any

from layerflow._src.keras import layers
from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.engine import backend_config
from layerflow._src.keras.engine.keras_tensor import KerasTensor
from layerflow._src.keras.engine.model import Model

__all__ = ["MobileNetV2", "decode_predictions", "preprocess_input"]

BASE_WEIGHT_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v2/"
_SIZES = [96, 128, 160, 192, 224]
_log = logging.getLogger("layerflow")


def check_input_tensor(input_tensor: Any, input_shape: Any) -> None:
    """`input_tensor` must be a Keras tensor whose width matches `input_shape` when both are
    given (MobileNetV2 and V3 check this as tf_keras does)."""
    if input_shape is None or input_tensor is None:
        return
    if not isinstance(input_tensor, KerasTensor):
        raise ValueError(
            f"input_tensor is not a TF-Keras tensor; Received `input_tensor={input_tensor}`"
        )
    shape = tuple(input_tensor.shape)
    if backend_config.image_data_format() == "channels_first":
        if shape[1] != input_shape[1]:
            raise ValueError(
                "input_shape[1] must equal shape(input_tensor)[1] when `image_data_format` is "
                f"`channels_first`; Received `input_tensor.shape={shape}`, "
                f"`input_shape={input_shape}`"
            )
    elif shape[2] != input_shape[1]:
        raise ValueError(
            "input_tensor.shape[2] must equal input_shape[1]; Received "
            f"`input_tensor.shape={shape}`, `input_shape={input_shape}`"
        )


def _spatial(shape: Any, batched: bool) -> tuple:
    offset = 1 if batched else 0
    if backend_config.image_data_format() == "channels_first":
        return shape[offset + 1], shape[offset + 2]
    return shape[offset], shape[offset + 1]


def MobileNetV2(  # noqa: N802 - Keras's public name
    input_shape: Any = None,
    alpha: float = 1.0,
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
    **kwargs: Any,
) -> Model:
    """MobileNetV2 with width `alpha` (default input 224x224x3; at least 32x32).

    >>> import layerflow as tf
    >>> m = tf.keras.applications.MobileNetV2(input_shape=(32, 32, 3), alpha=0.35,
    ...                                       weights=None, classes=3)
    >>> m.output_shape
    (None, 3)
    """
    if kwargs:
        raise ValueError(f"Unknown argument(s): {kwargs}")
    imagenet_utils.validate_weights(weights, include_top, classes)
    check_input_tensor(input_tensor, input_shape)
    default_size = 224
    if input_shape is None and isinstance(input_tensor, KerasTensor):
        rows, cols = _spatial(tuple(input_tensor.shape), batched=True)
        default_size = rows if rows == cols and rows in _SIZES else 224
    elif input_shape is not None:
        rows, cols = _spatial(input_shape, batched=False)
        default_size = rows if rows == cols and rows in _SIZES else 224
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape,
        default_size=default_size,
        min_size=32,
        data_format=backend_config.image_data_format(),
        require_flatten=include_top,
        weights=weights,
    )
    rows, cols = _spatial(input_shape, batched=False)
    if weights == "imagenet":
        if alpha not in [0.35, 0.50, 0.75, 1.0, 1.3, 1.4]:
            raise ValueError(
                "If imagenet weights are being loaded, alpha must be one of `0.35`, `0.50`, "
                f"`0.75`, `1.0`, `1.3` or `1.4` only; Received `alpha={alpha}`"
            )
        if rows != cols or rows not in _SIZES:
            rows = 224
            _log.warning(
                "`input_shape` is undefined or non-square, or `rows` is not in [96, 128, 160, "
                "192, 224]. Weights for input shape (224, 224) will be loaded as the default."
            )
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    channel_axis = 1 if backend_config.image_data_format() == "channels_first" else -1
    first_block_filters = _make_divisible(32 * alpha, 8)
    x = layers.Conv2D(first_block_filters, kernel_size=3, strides=(2, 2), padding="same",
                      use_bias=False, name="Conv1")(img_input)  # fmt: skip
    x = layers.BatchNormalization(axis=channel_axis, epsilon=1e-3, momentum=0.999,
                                  name="bn_Conv1")(x)  # fmt: skip
    x = layers.ReLU(6.0, name="Conv1_relu")(x)
    plan = [(16, 1, 1)] + [(24, 2, 6), (24, 1, 6)] + [(32, 2, 6)] + [(32, 1, 6)] * 2
    plan += [(64, 2, 6)] + [(64, 1, 6)] * 3 + [(96, 1, 6)] * 3
    plan += [(160, 2, 6)] + [(160, 1, 6)] * 2 + [(320, 1, 6)]
    for block_id, (filters, stride, expansion) in enumerate(plan):
        x = _inverted_res_block(x, filters=filters, alpha=alpha, stride=stride,
                                expansion=expansion, block_id=block_id)  # fmt: skip
    last_block_filters = _make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = layers.Conv2D(last_block_filters, kernel_size=1, use_bias=False, name="Conv_1")(x)
    x = layers.BatchNormalization(axis=channel_axis, epsilon=1e-3, momentum=0.999,
                                  name="Conv_1_bn")(x)  # fmt: skip
    x = layers.ReLU(6.0, name="out_relu")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D()(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool_features(x, pooling)
    model = Model(imagenet_utils.source_inputs(input_tensor, img_input), x,
                  name=f"mobilenetv2_{alpha:0.2f}_{rows}")  # fmt: skip
    if weights == "imagenet":
        suffix = "" if include_top else "_no_top"
        fname = f"mobilenet_v2_weights_tf_dim_ordering_tf_kernels_{float(alpha)}_{rows}{suffix}.h5"
        imagenet_utils.load_model_weights(model, weights, fname, BASE_WEIGHT_PATH + fname, None)
    else:
        imagenet_utils.load_model_weights(model, weights)
    return model


def _inverted_res_block(inputs: Any, expansion: int, stride: int, alpha: float, filters: int,
                        block_id: int) -> Any:  # fmt: skip
    channel_axis = 1 if backend_config.image_data_format() == "channels_first" else -1
    in_channels = inputs.shape[channel_axis]
    pointwise_filters = _make_divisible(int(filters * alpha), 8)
    x = inputs
    prefix = f"block_{block_id}_"
    if block_id:
        x = layers.Conv2D(expansion * in_channels, kernel_size=1, padding="same", use_bias=False,
                          activation=None, name=prefix + "expand")(x)  # fmt: skip
        x = layers.BatchNormalization(axis=channel_axis, epsilon=1e-3, momentum=0.999,
                                      name=prefix + "expand_BN")(x)  # fmt: skip
        x = layers.ReLU(6.0, name=prefix + "expand_relu")(x)
    else:
        prefix = "expanded_conv_"
    if stride == 2:
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, 3), name=prefix + "pad")(x)
    x = layers.DepthwiseConv2D(kernel_size=3, strides=stride, activation=None, use_bias=False,
                               padding="same" if stride == 1 else "valid",
                               name=prefix + "depthwise")(x)  # fmt: skip
    x = layers.BatchNormalization(axis=channel_axis, epsilon=1e-3, momentum=0.999,
                                  name=prefix + "depthwise_BN")(x)  # fmt: skip
    x = layers.ReLU(6.0, name=prefix + "depthwise_relu")(x)
    x = layers.Conv2D(pointwise_filters, kernel_size=1, padding="same", use_bias=False,
                      activation=None, name=prefix + "project")(x)  # fmt: skip
    x = layers.BatchNormalization(axis=channel_axis, epsilon=1e-3, momentum=0.999,
                                  name=prefix + "project_BN")(x)  # fmt: skip
    if in_channels == pointwise_filters and stride == 1:
        return layers.Add(name=prefix + "add")([inputs, x])
    return x


def _make_divisible(v: float, divisor: int, min_value: int | None = None) -> int:
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:  # rounding down must not drop more than 10%
        new_v += divisor
    return new_v


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """ImageNet "tf" preprocessing: pixels scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds: Any, top: int = 5) -> list:
    """The top ImageNet classes of each prediction (see `imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
