"""InceptionV3 (`tf.keras.applications.inception_v3`), as tf_keras builds it.

Reference: [Rethinking the Inception Architecture for Computer Vision](
https://arxiv.org/abs/1512.00567) (CVPR 2016). Inputs are preprocessed with `preprocess_input`
("tf": scaled to [-1, 1]).
"""

from __future__ import annotations

from typing import Any

from layerflow._src.keras import layers
from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.engine.model import Model

__all__ = ["InceptionV3", "conv2d_bn", "decode_predictions", "preprocess_input"]

_BASE = "https://storage.googleapis.com/tensorflow/keras-applications/inception_v3/"
_HASHES = ("9a0d58056eeedaa3f26cb7ebd46da564", "bcbd6486424b2319ff4ef7d526e38f63")


def conv2d_bn(x: Any, filters: int, num_row: int, num_col: int, padding: str = "same",
              strides: Any = (1, 1), name: str | None = None) -> Any:  # fmt: skip
    """Conv2D (no bias) + BatchNormalization (no scale) + ReLU."""
    bn_name = None if name is None else name + "_bn"
    conv_name = None if name is None else name + "_conv"
    x = layers.Conv2D(filters, (num_row, num_col), strides=strides, padding=padding,
                      use_bias=False, name=conv_name)(x)  # fmt: skip
    x = layers.BatchNormalization(axis=imagenet_utils.channel_axis(), scale=False, name=bn_name)(x)
    return layers.Activation("relu", name=name)(x)


def _avg_branch(x: Any, filters: int) -> Any:
    branch_pool = layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same")(x)
    return conv2d_bn(branch_pool, filters, 1, 1)


def InceptionV3(  # noqa: N802 - Keras's public name
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
) -> Model:
    """Inception-v3 (default input 299x299x3; at least 75x75 without the top)."""
    img_input = imagenet_utils.prepare_input(
        weights, include_top, classes, input_tensor, input_shape, default_size=299, min_size=75
    )
    axis = imagenet_utils.channel_axis()
    x = conv2d_bn(img_input, 32, 3, 3, strides=(2, 2), padding="valid")
    x = conv2d_bn(x, 32, 3, 3, padding="valid")
    x = conv2d_bn(x, 64, 3, 3)
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = conv2d_bn(x, 80, 1, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, 3, padding="valid")
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)

    # mixed 0, 1, 2: 35 x 35 x 256/288
    for i, pool_filters in enumerate((32, 64, 64)):
        branch1x1 = conv2d_bn(x, 64, 1, 1)
        branch5x5 = conv2d_bn(x, 48, 1, 1)
        branch5x5 = conv2d_bn(branch5x5, 64, 5, 5)
        branch3x3dbl = conv2d_bn(x, 64, 1, 1)
        branch3x3dbl = conv2d_bn(branch3x3dbl, 96, 3, 3)
        branch3x3dbl = conv2d_bn(branch3x3dbl, 96, 3, 3)
        branch_pool = _avg_branch(x, pool_filters)
        x = layers.concatenate([branch1x1, branch5x5, branch3x3dbl, branch_pool], axis=axis,
                               name=f"mixed{i}")  # fmt: skip

    # mixed 3: 17 x 17 x 768
    branch3x3 = conv2d_bn(x, 384, 3, 3, strides=(2, 2), padding="valid")
    branch3x3dbl = conv2d_bn(x, 64, 1, 1)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 96, 3, 3)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 96, 3, 3, strides=(2, 2), padding="valid")
    branch_pool = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = layers.concatenate([branch3x3, branch3x3dbl, branch_pool], axis=axis, name="mixed3")

    # mixed 4, 5, 6, 7: 17 x 17 x 768
    for i, width in enumerate((128, 160, 160, 192)):
        branch1x1 = conv2d_bn(x, 192, 1, 1)
        branch7x7 = conv2d_bn(x, width, 1, 1)
        branch7x7 = conv2d_bn(branch7x7, width, 1, 7)
        branch7x7 = conv2d_bn(branch7x7, 192, 7, 1)
        branch7x7dbl = conv2d_bn(x, width, 1, 1)
        branch7x7dbl = conv2d_bn(branch7x7dbl, width, 7, 1)
        branch7x7dbl = conv2d_bn(branch7x7dbl, width, 1, 7)
        branch7x7dbl = conv2d_bn(branch7x7dbl, width, 7, 1)
        branch7x7dbl = conv2d_bn(branch7x7dbl, 192, 1, 7)
        branch_pool = _avg_branch(x, 192)
        x = layers.concatenate([branch1x1, branch7x7, branch7x7dbl, branch_pool], axis=axis,
                               name=f"mixed{4 + i}")  # fmt: skip

    # mixed 8: 8 x 8 x 1280
    branch3x3 = conv2d_bn(x, 192, 1, 1)
    branch3x3 = conv2d_bn(branch3x3, 320, 3, 3, strides=(2, 2), padding="valid")
    branch7x7x3 = conv2d_bn(x, 192, 1, 1)
    branch7x7x3 = conv2d_bn(branch7x7x3, 192, 1, 7)
    branch7x7x3 = conv2d_bn(branch7x7x3, 192, 7, 1)
    branch7x7x3 = conv2d_bn(branch7x7x3, 192, 3, 3, strides=(2, 2), padding="valid")
    branch_pool = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = layers.concatenate([branch3x3, branch7x7x3, branch_pool], axis=axis, name="mixed8")

    # mixed 9, 10: 8 x 8 x 2048
    for i in range(2):
        branch1x1 = conv2d_bn(x, 320, 1, 1)
        branch3x3 = conv2d_bn(x, 384, 1, 1)
        branch3x3_1 = conv2d_bn(branch3x3, 384, 1, 3)
        branch3x3_2 = conv2d_bn(branch3x3, 384, 3, 1)
        branch3x3 = layers.concatenate([branch3x3_1, branch3x3_2], axis=axis, name=f"mixed9_{i}")
        branch3x3dbl = conv2d_bn(x, 448, 1, 1)
        branch3x3dbl = conv2d_bn(branch3x3dbl, 384, 3, 3)
        branch3x3dbl_1 = conv2d_bn(branch3x3dbl, 384, 1, 3)
        branch3x3dbl_2 = conv2d_bn(branch3x3dbl, 384, 3, 1)
        branch3x3dbl = layers.concatenate([branch3x3dbl_1, branch3x3dbl_2], axis=axis)
        branch_pool = _avg_branch(x, 192)
        x = layers.concatenate([branch1x1, branch3x3, branch3x3dbl, branch_pool], axis=axis,
                               name=f"mixed{9 + i}")  # fmt: skip

    x = imagenet_utils.classifier_top(x, include_top, pooling, classes, classifier_activation,
                                      weights, avg_name=None, max_name=None)  # fmt: skip
    model = Model(imagenet_utils.source_inputs(input_tensor, img_input), x, name="inception_v3")
    return imagenet_utils.load_tf_kernels_weights(model, weights, include_top, _BASE, _HASHES)


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """ImageNet "tf" preprocessing: pixels scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds: Any, top: int = 5) -> list:
    """The top ImageNet classes of each prediction (see `imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
