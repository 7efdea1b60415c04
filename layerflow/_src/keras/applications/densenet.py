"""DenseNet121/169/201 (`tf.keras.applications.densenet`), as tf_keras builds them.

Reference: [Densely Connected Convolutional Networks](https://arxiv.org/abs/1608.06993)
(CVPR 2017). Inputs are preprocessed with `preprocess_input` ("torch").
"""

from __future__ import annotations

from typing import Any

from layerflow._src.keras import layers
from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.engine.model import Model

__all__ = ["DenseNet", "DenseNet121", "DenseNet169", "DenseNet201", "decode_predictions",
           "preprocess_input"]  # fmt: skip

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/densenet/"
_KNOWN = {  # blocks -> (name, hash with top, hash without top)
    (6, 12, 24, 16): ("densenet121", "9d60b8095a5708f2dcce2bca79d332c7",
                      "30ee3e1110167f948a6b9946edeeb738"),
    (6, 12, 32, 32): ("densenet169", "d699b8f76981ab1b30698df4c175e90b",
                      "b8c4d4c20dd625c148057b9ff1c1176b"),
    (6, 12, 48, 32): ("densenet201", "1ceb130c1ea1b78c3bf6114dbdfd8807",
                      "c13680b51ded0fb44dff2d8f86ac8bb1"),
}  # fmt: skip
_EPS = 1.001e-5


def dense_block(x: Any, blocks: int, name: str) -> Any:
    """`blocks` conv blocks, each concatenating 32 new channels."""
    for i in range(blocks):
        x = conv_block(x, 32, name=name + "_block" + str(i + 1))
    return x


def transition_block(x: Any, reduction: float, name: str) -> Any:
    """BN-ReLU, a 1x1 conv keeping `reduction` of the channels, then 2x2 average pooling."""
    bn_axis = imagenet_utils.channel_axis()
    x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_bn")(x)
    x = layers.Activation("relu", name=name + "_relu")(x)
    x = layers.Conv2D(int(x.shape[bn_axis] * reduction), 1, use_bias=False, name=name + "_conv")(x)
    return layers.AveragePooling2D(2, strides=2, name=name + "_pool")(x)


def conv_block(x: Any, growth_rate: int, name: str) -> Any:
    """BN-ReLU-1x1 conv, BN-ReLU-3x3 conv, concatenated to the input."""
    bn_axis = imagenet_utils.channel_axis()
    x1 = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_0_bn")(x)
    x1 = layers.Activation("relu", name=name + "_0_relu")(x1)
    x1 = layers.Conv2D(4 * growth_rate, 1, use_bias=False, name=name + "_1_conv")(x1)
    x1 = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_1_bn")(x1)
    x1 = layers.Activation("relu", name=name + "_1_relu")(x1)
    x1 = layers.Conv2D(growth_rate, 3, padding="same", use_bias=False, name=name + "_2_conv")(x1)
    return layers.Concatenate(axis=bn_axis, name=name + "_concat")([x, x1])


def DenseNet(  # noqa: N802 - Keras's name
    blocks: Any,
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
) -> Model:
    """A DenseNet with `blocks` conv blocks in each of its four dense blocks."""
    img_input = imagenet_utils.prepare_input(
        weights, include_top, classes, input_tensor, input_shape, default_size=224, min_size=32
    )
    bn_axis = imagenet_utils.channel_axis()
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)))(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=False, name="conv1/conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name="conv1/bn")(x)
    x = layers.Activation("relu", name="conv1/relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)))(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1")(x)
    for stage in range(4):
        x = dense_block(x, blocks[stage], name=f"conv{stage + 2}")
        if stage < 3:
            x = transition_block(x, 0.5, name=f"pool{stage + 2}")
    x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name="bn")(x)
    x = layers.Activation("relu", name="relu")(x)
    x = imagenet_utils.classifier_top(x, include_top, pooling, classes, classifier_activation,
                                      weights)  # fmt: skip
    known = _KNOWN.get(tuple(blocks))
    name = known[0] if known else "densenet"
    model = Model(imagenet_utils.source_inputs(input_tensor, img_input), x, name=name)
    if weights == "imagenet" and known:
        imagenet_utils.load_tf_kernels_weights(model, weights, include_top, BASE_WEIGHTS_PATH,
                                               known[1:])  # fmt: skip
    else:
        imagenet_utils.load_model_weights(model, weights)
    return model


def _variant(name: str, blocks: list, depth: int) -> Any:
    def constructor(
        include_top: bool = True,
        weights: Any = "imagenet",
        input_tensor: Any = None,
        input_shape: Any = None,
        pooling: Any = None,
        classes: int = 1000,
        classifier_activation: Any = "softmax",
    ) -> Model:
        return DenseNet(blocks, include_top, weights, input_tensor, input_shape, pooling,
                        classes, classifier_activation)  # fmt: skip

    constructor.__name__ = constructor.__qualname__ = name
    constructor.__module__ = __name__
    constructor.__doc__ = (
        f"DenseNet-{depth} (default input 224x224x3; at least 32x32 without the top)."
    )
    return constructor


DenseNet121 = _variant("DenseNet121", [6, 12, 24, 16], 121)
DenseNet169 = _variant("DenseNet169", [6, 12, 32, 32], 169)
DenseNet201 = _variant("DenseNet201", [6, 12, 48, 32], 201)


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """ImageNet "torch" preprocessing: scaled to [0, 1], then normalized per channel."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="torch")


def decode_predictions(preds: Any, top: int = 5) -> list:
    """The top ImageNet classes of each prediction (see `imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
