"""MobileNet (`tf.keras.applications.mobilenet`), as tf_keras builds it.

Reference: [MobileNets: Efficient Convolutional Neural Networks for Mobile Vision Applications](
https://arxiv.org/abs/1704.04861). Inputs are preprocessed with `preprocess_input` ("tf").
"""

from __future__ import annotations

import logging
from typing import Any

from layerflow._src.keras import layers
from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.engine import backend_config
from layerflow._src.keras.engine.model import Model

__all__ = ["MobileNet", "decode_predictions", "preprocess_input"]

BASE_WEIGHT_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet/"
_ALPHA_TEXT = {1.0: "1_0", 0.75: "7_5", 0.5: "5_0", 0.25: "2_5"}
_log = logging.getLogger("layerflow")


def MobileNet(  # noqa: N802 - Keras's public name
    input_shape: Any = None,
    alpha: float = 1.0,
    depth_multiplier: int = 1,
    dropout: float = 1e-3,
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
    **kwargs: Any,
) -> Model:
    """MobileNet v1 with width `alpha` (default input 224x224x3; at least 32x32).

    >>> import layerflow as tf
    >>> m = tf.keras.applications.MobileNet(input_shape=(32, 32, 3), alpha=0.25, weights=None,
    ...                                     classes=3)
    >>> m.output_shape
    (None, 3)
    """
    if kwargs:
        raise ValueError(f"Unknown argument(s): {(kwargs,)}")
    imagenet_utils.validate_weights(weights, include_top, classes)
    channels_first = backend_config.image_data_format() == "channels_first"
    default_size = 224
    if input_shape is not None:
        rows, cols = (input_shape[1], input_shape[2]) if channels_first else input_shape[:2]
        if rows == cols and rows in [128, 160, 192, 224]:
            default_size = rows
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape,
        default_size=default_size,
        min_size=32,
        data_format=backend_config.image_data_format(),
        require_flatten=include_top,
        weights=weights,
    )
    rows, cols = (input_shape[1], input_shape[2]) if channels_first else input_shape[:2]
    if weights == "imagenet":
        if depth_multiplier != 1:
            raise ValueError(
                "If imagenet weights are being loaded, depth multiplier must be 1.  "
                f"Received depth_multiplier={depth_multiplier}"
            )
        if alpha not in [0.25, 0.50, 0.75, 1.0]:
            raise ValueError(
                "If imagenet weights are being loaded, alpha can be one of`0.25`, `0.50`, "
                f"`0.75` or `1.0` only.  Received alpha={alpha}"
            )
        if rows != cols or rows not in [128, 160, 192, 224]:
            rows = 224
            _log.warning(
                "`input_shape` is undefined or non-square, or `rows` is not in [128, 160, "
                "192, 224]. Weights for input shape (224, 224) will be loaded as the default."
            )
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = _conv_block(img_input, 32, alpha, strides=(2, 2))
    plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5
    plan += [(1024, 2), (1024, 1)]
    for block_id, (filters, stride) in enumerate(plan, 1):
        x = _depthwise_conv_block(x, filters, alpha, depth_multiplier, strides=(stride, stride),
                                  block_id=block_id)  # fmt: skip
    if include_top:
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Dropout(dropout, name="dropout")(x)
        x = layers.Conv2D(classes, (1, 1), padding="same", name="conv_preds")(x)
        x = layers.Reshape((classes,), name="reshape_2")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Activation(activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool_features(x, pooling)
    model = Model(imagenet_utils.source_inputs(input_tensor, img_input), x,
                  name=f"mobilenet_{alpha:0.2f}_{rows}")  # fmt: skip
    if weights == "imagenet":
        suffix = "_tf.h5" if include_top else "_tf_no_top.h5"
        fname = f"mobilenet_{_ALPHA_TEXT.get(alpha, '2_5')}_{rows}{suffix}"
        imagenet_utils.load_model_weights(model, weights, fname, BASE_WEIGHT_PATH + fname, None)
    else:
        imagenet_utils.load_model_weights(model, weights)
    return model


def _conv_block(inputs: Any, filters: int, alpha: float, kernel: Any = (3, 3),
                strides: Any = (1, 1)) -> Any:  # fmt: skip
    channel_axis = 1 if backend_config.image_data_format() == "channels_first" else -1
    filters = int(filters * alpha)
    x = layers.Conv2D(filters, kernel, padding="same", use_bias=False, strides=strides,
                      name="conv1")(inputs)  # fmt: skip
    x = layers.BatchNormalization(axis=channel_axis, name="conv1_bn")(x)
    return layers.ReLU(6.0, name="conv1_relu")(x)


def _depthwise_conv_block(inputs: Any, pointwise_conv_filters: int, alpha: float,
                          depth_multiplier: int = 1, strides: Any = (1, 1),
                          block_id: int = 1) -> Any:  # fmt: skip
    channel_axis = 1 if backend_config.image_data_format() == "channels_first" else -1
    pointwise_conv_filters = int(pointwise_conv_filters * alpha)
    if strides == (1, 1):
        x = inputs
    else:
        x = layers.ZeroPadding2D(((0, 1), (0, 1)), name=f"conv_pad_{block_id}")(inputs)
    x = layers.DepthwiseConv2D(
        (3, 3),
        padding="same" if strides == (1, 1) else "valid",
        depth_multiplier=depth_multiplier,
        strides=strides,
        use_bias=False,
        name=f"conv_dw_{block_id}",
    )(x)
    x = layers.BatchNormalization(axis=channel_axis, name=f"conv_dw_{block_id}_bn")(x)
    x = layers.ReLU(6.0, name=f"conv_dw_{block_id}_relu")(x)
    x = layers.Conv2D(pointwise_conv_filters, (1, 1), padding="same", use_bias=False,
                      strides=(1, 1), name=f"conv_pw_{block_id}")(x)  # fmt: skip
    x = layers.BatchNormalization(axis=channel_axis, name=f"conv_pw_{block_id}_bn")(x)
    return layers.ReLU(6.0, name=f"conv_pw_{block_id}_relu")(x)


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """ImageNet "tf" preprocessing: pixels scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds: Any, top: int = 5) -> list:
    """The top ImageNet classes of each prediction (see `imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
