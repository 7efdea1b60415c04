"""InceptionResNetV2 (`tf.keras.applications.inception_resnet_v2`), as tf_keras builds it.

Reference: [Inception-v4, Inception-ResNet and the Impact of Residual Connections on Learning](
https://arxiv.org/abs/1602.07261) (AAAI 2017). Inputs are preprocessed with `preprocess_input`
("tf": scaled to [-1, 1]).
"""

from __future__ import annotations

from typing import Any

from layerflow._src.keras import layers
from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.model import Model
from layerflow._src.keras.serialization import register_keras_serializable

__all__ = ["CustomScaleLayer", "InceptionResNetV2", "conv2d_bn", "decode_predictions",
           "inception_resnet_block", "preprocess_input"]  # fmt: skip

BASE_WEIGHT_URL = (
    "https://storage.googleapis.com/tensorflow/keras-applications/inception_resnet_v2/"
)
_HASHES = ("e693bd0210a403b3192acc6073ad2e96", "d19885ff4a710c122648d3b5c3b684e4")


def InceptionResNetV2(  # noqa: N802 - Keras's public name
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
    **kwargs: Any,
) -> Model:
    """Inception-ResNet-v2 (default input 299x299x3; at least 75x75 without the top)."""
    if kwargs:
        raise ValueError(f"Unknown argument(s): {kwargs}")
    img_input = imagenet_utils.prepare_input(
        weights, include_top, classes, input_tensor, input_shape, default_size=299, min_size=75
    )
    axis = imagenet_utils.channel_axis()
    # Stem block: 35 x 35 x 192
    x = conv2d_bn(img_input, 32, 3, strides=2, padding="valid")
    x = conv2d_bn(x, 32, 3, padding="valid")
    x = conv2d_bn(x, 64, 3)
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = conv2d_bn(x, 80, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, padding="valid")
    x = layers.MaxPooling2D(3, strides=2)(x)

    # Mixed 5b (Inception-A block): 35 x 35 x 320
    branch_0 = conv2d_bn(x, 96, 1)
    branch_1 = conv2d_bn(x, 48, 1)
    branch_1 = conv2d_bn(branch_1, 64, 5)
    branch_2 = conv2d_bn(x, 64, 1)
    branch_2 = conv2d_bn(branch_2, 96, 3)
    branch_2 = conv2d_bn(branch_2, 96, 3)
    branch_pool = layers.AveragePooling2D(3, strides=1, padding="same")(x)
    branch_pool = conv2d_bn(branch_pool, 64, 1)
    branches = [branch_0, branch_1, branch_2, branch_pool]
    x = layers.Concatenate(axis=axis, name="mixed_5b")(branches)
    for block_idx in range(1, 11):
        x = inception_resnet_block(x, scale=0.17, block_type="block35", block_idx=block_idx)

    # Mixed 6a (Reduction-A block): 17 x 17 x 1088
    branch_0 = conv2d_bn(x, 384, 3, strides=2, padding="valid")
    branch_1 = conv2d_bn(x, 256, 1)
    branch_1 = conv2d_bn(branch_1, 256, 3)
    branch_1 = conv2d_bn(branch_1, 384, 3, strides=2, padding="valid")
    branch_pool = layers.MaxPooling2D(3, strides=2, padding="valid")(x)
    x = layers.Concatenate(axis=axis, name="mixed_6a")([branch_0, branch_1, branch_pool])
    for block_idx in range(1, 21):
        x = inception_resnet_block(x, scale=0.1, block_type="block17", block_idx=block_idx)

    # Mixed 7a (Reduction-B block): 8 x 8 x 2080
    branch_0 = conv2d_bn(x, 256, 1)
    branch_0 = conv2d_bn(branch_0, 384, 3, strides=2, padding="valid")
    branch_1 = conv2d_bn(x, 256, 1)
    branch_1 = conv2d_bn(branch_1, 288, 3, strides=2, padding="valid")
    branch_2 = conv2d_bn(x, 256, 1)
    branch_2 = conv2d_bn(branch_2, 288, 3)
    branch_2 = conv2d_bn(branch_2, 320, 3, strides=2, padding="valid")
    branch_pool = layers.MaxPooling2D(3, strides=2, padding="valid")(x)
    branches = [branch_0, branch_1, branch_2, branch_pool]
    x = layers.Concatenate(axis=axis, name="mixed_7a")(branches)
    for block_idx in range(1, 10):
        x = inception_resnet_block(x, scale=0.2, block_type="block8", block_idx=block_idx)
    x = inception_resnet_block(x, scale=1.0, activation=None, block_type="block8", block_idx=10)

    # Final convolution block: 8 x 8 x 1536
    x = conv2d_bn(x, 1536, 1, name="conv_7b")
    x = imagenet_utils.classifier_top(x, include_top, pooling, classes, classifier_activation,
                                      weights, avg_name=None, max_name=None)  # fmt: skip
    model = Model(
        imagenet_utils.source_inputs(input_tensor, img_input), x, name="inception_resnet_v2"
    )
    return imagenet_utils.load_tf_kernels_weights(
        model, weights, include_top, BASE_WEIGHT_URL, _HASHES
    )


def conv2d_bn(x: Any, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "same",
              activation: Any = "relu", use_bias: bool = False,
              name: str | None = None) -> Any:  # fmt: skip
    """Conv2D, then (without a bias) BatchNormalization without scale, then `activation`."""
    x = layers.Conv2D(filters, kernel_size, strides=strides, padding=padding, use_bias=use_bias,
                      name=name)(x)  # fmt: skip
    if not use_bias:
        bn_name = None if name is None else name + "_bn"
        x = layers.BatchNormalization(
            axis=imagenet_utils.channel_axis(), scale=False, name=bn_name
        )(x)
    if activation is not None:
        ac_name = None if name is None else name + "_ac"
        x = layers.Activation(activation, name=ac_name)(x)
    return x


@register_keras_serializable()
class CustomScaleLayer(Layer):
    """`inputs[0] + inputs[1] * scale`: the scaled residual of an Inception-ResNet block."""

    def __init__(self, scale: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scale = scale

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "scale": self.scale}

    def call(self, inputs: Any) -> Any:
        return inputs[0] + inputs[1] * self.scale

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape[0]


def inception_resnet_block(x: Any, scale: float, block_type: str, block_idx: int,
                           activation: Any = "relu") -> Any:  # fmt: skip
    """An Inception-ResNet block ("block35", "block17" or "block8") added to `x` scaled."""
    if block_type == "block35":
        branch_0 = conv2d_bn(x, 32, 1)
        branch_1 = conv2d_bn(x, 32, 1)
        branch_1 = conv2d_bn(branch_1, 32, 3)
        branch_2 = conv2d_bn(x, 32, 1)
        branch_2 = conv2d_bn(branch_2, 48, 3)
        branch_2 = conv2d_bn(branch_2, 64, 3)
        branches = [branch_0, branch_1, branch_2]
    elif block_type == "block17":
        branch_0 = conv2d_bn(x, 192, 1)
        branch_1 = conv2d_bn(x, 128, 1)
        branch_1 = conv2d_bn(branch_1, 160, [1, 7])
        branch_1 = conv2d_bn(branch_1, 192, [7, 1])
        branches = [branch_0, branch_1]
    elif block_type == "block8":
        branch_0 = conv2d_bn(x, 192, 1)
        branch_1 = conv2d_bn(x, 192, 1)
        branch_1 = conv2d_bn(branch_1, 224, [1, 3])
        branch_1 = conv2d_bn(branch_1, 256, [3, 1])
        branches = [branch_0, branch_1]
    else:
        raise ValueError(
            'Unknown Inception-ResNet block type. Expects "block35", "block17" or "block8", '
            f"but got: {block_type}"
        )
    block_name = block_type + "_" + str(block_idx)
    axis = imagenet_utils.channel_axis()
    mixed = layers.Concatenate(axis=axis, name=block_name + "_mixed")(branches)
    up = conv2d_bn(mixed, x.shape[axis], 1, activation=None, use_bias=True,
                   name=block_name + "_conv")  # fmt: skip
    x = CustomScaleLayer(scale)([x, up])
    if activation is not None:
        x = layers.Activation(activation, name=block_name + "_ac")(x)
    return x


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """ImageNet "tf" preprocessing: pixels scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds: Any, top: int = 5) -> list:
    """The top ImageNet classes of each prediction (see `imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
