"""Xception (`tf.keras.applications.xception`), as tf_keras builds it.

Reference: [Xception: Deep Learning with Depthwise Separable Convolutions](
https://arxiv.org/abs/1610.02357) (CVPR 2017). Inputs are preprocessed with `preprocess_input`
("tf": scaled to [-1, 1]).
"""

from __future__ import annotations

from typing import Any

from layerflow._src.keras import layers
from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.engine.model import Model

__all__ = ["Xception", "decode_predictions", "preprocess_input"]

_BASE = "https://storage.googleapis.com/tensorflow/keras-applications/xception/"
_HASHES = ("0a58e3b7378bc2990ea3b43d5981f1f6", "b0042744bf5b25fce3cb969f33bebb97")


def _sep_bn(x: Any, filters: int, name: str, axis: int) -> Any:
    x = layers.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=name)(x)
    return layers.BatchNormalization(axis=axis, name=name + "_bn")(x)


def _residual(x: Any, filters: int, axis: int) -> Any:
    residual = layers.Conv2D(filters, (1, 1), strides=(2, 2), padding="same", use_bias=False)(x)
    return layers.BatchNormalization(axis=axis)(residual)


def Xception(  # noqa: N802 - Keras's public name
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
) -> Model:
    """Xception (default input 299x299x3; at least 71x71 without the top)."""
    img_input = imagenet_utils.prepare_input(
        weights, include_top, classes, input_tensor, input_shape, default_size=299, min_size=71
    )
    axis = 1 if imagenet_utils.channel_axis() == 1 else -1
    x = layers.Conv2D(32, (3, 3), strides=(2, 2), use_bias=False, name="block1_conv1")(img_input)
    x = layers.BatchNormalization(axis=axis, name="block1_conv1_bn")(x)
    x = layers.Activation("relu", name="block1_conv1_act")(x)
    x = layers.Conv2D(64, (3, 3), use_bias=False, name="block1_conv2")(x)
    x = layers.BatchNormalization(axis=axis, name="block1_conv2_bn")(x)
    x = layers.Activation("relu", name="block1_conv2_act")(x)

    residual = _residual(x, 128, axis)
    x = _sep_bn(x, 128, "block2_sepconv1", axis)
    x = layers.Activation("relu", name="block2_sepconv2_act")(x)
    x = _sep_bn(x, 128, "block2_sepconv2", axis)
    x = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name="block2_pool")(x)
    x = layers.add([x, residual])

    for block, filters in ((3, 256), (4, 728)):
        residual = _residual(x, filters, axis)
        x = layers.Activation("relu", name=f"block{block}_sepconv1_act")(x)
        x = _sep_bn(x, filters, f"block{block}_sepconv1", axis)
        x = layers.Activation("relu", name=f"block{block}_sepconv2_act")(x)
        x = _sep_bn(x, filters, f"block{block}_sepconv2", axis)
        x = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name=f"block{block}_pool")(
            x
        )
        x = layers.add([x, residual])

    for i in range(8):
        residual = x
        prefix = "block" + str(i + 5)
        for j in (1, 2, 3):
            x = layers.Activation("relu", name=f"{prefix}_sepconv{j}_act")(x)
            x = _sep_bn(x, 728, f"{prefix}_sepconv{j}", axis)
        x = layers.add([x, residual])

    residual = _residual(x, 1024, axis)
    x = layers.Activation("relu", name="block13_sepconv1_act")(x)
    x = _sep_bn(x, 728, "block13_sepconv1", axis)
    x = layers.Activation("relu", name="block13_sepconv2_act")(x)
    x = _sep_bn(x, 1024, "block13_sepconv2", axis)
    x = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name="block13_pool")(x)
    x = layers.add([x, residual])

    x = _sep_bn(x, 1536, "block14_sepconv1", axis)
    x = layers.Activation("relu", name="block14_sepconv1_act")(x)
    x = _sep_bn(x, 2048, "block14_sepconv2", axis)
    x = layers.Activation("relu", name="block14_sepconv2_act")(x)

    x = imagenet_utils.classifier_top(x, include_top, pooling, classes, classifier_activation,
                                      weights, avg_name=None, max_name=None)  # fmt: skip
    model = Model(imagenet_utils.source_inputs(input_tensor, img_input), x, name="xception")
    return imagenet_utils.load_tf_kernels_weights(model, weights, include_top, _BASE, _HASHES)


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """ImageNet "tf" preprocessing: pixels scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds: Any, top: int = 5) -> list:
    """The top ImageNet classes of each prediction (see `imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
