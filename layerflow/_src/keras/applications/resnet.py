"""ResNet50/101/152 (`tf.keras.applications.resnet`, `resnet50`) and the builder shared with
ResNetV2 (`resnet_v2`), as tf_keras builds them.

Reference: [Deep Residual Learning for Image Recognition](https://arxiv.org/abs/1512.03385)
(CVPR 2015). Inputs are preprocessed with `preprocess_input` ("caffe").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerflow._src.keras import layers
from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.engine.model import Model

__all__ = ["ResNet", "ResNet50", "ResNet101", "ResNet152", "decode_predictions",
           "preprocess_input"]  # fmt: skip

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/resnet/"
WEIGHTS_HASHES = {
    "resnet50": ("2cb95161c43110f7111970584f804107", "4d473c1dd8becc155b73f8504c6f6626"),
    "resnet101": ("f1aeb4b969a6efcfb50fad2f0c20cfc5", "88cf7a10940856eca736dc7b7e228a21"),
    "resnet152": ("100835be76be38e30d865e96f2aaae62", "ee4c566cf9a93f14d82f913c2dc6dd0c"),
    "resnet50v2": ("3ef43a0b657b3be2300d5770ece849e0", "fac2f116257151a9d068a22e544a4917"),
    "resnet101v2": ("6343647c601c52e1368623803854d971", "c0ed64b8031c3730f411d2eb4eea35b5"),
    "resnet152v2": ("a49b44d1979771252814e80f8ec446f9", "ed17cf2e0169df9d443503ef94b23b33"),
}
_EPS = 1.001e-5


def ResNet(  # noqa: N802 - Keras's name
    stack_fn: Callable[[Any], Any],
    preact: bool,
    use_bias: bool,
    model_name: str = "resnet",
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
    **kwargs: Any,
) -> Model:
    """A ResNet (v1 when `preact` is False, v2 otherwise) whose stages `stack_fn` builds."""
    if kwargs:
        raise ValueError(f"Unknown argument(s): {kwargs}")
    img_input = imagenet_utils.prepare_input(
        weights, include_top, classes, input_tensor, input_shape, default_size=224, min_size=32
    )
    bn_axis = imagenet_utils.channel_axis()
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=use_bias, name="conv1_conv")(x)
    if not preact:
        x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name="conv1_bn")(x)
        x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = stack_fn(x)
    if preact:
        x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name="post_bn")(x)
        x = layers.Activation("relu", name="post_relu")(x)
    x = imagenet_utils.classifier_top(x, include_top, pooling, classes, classifier_activation,
                                      weights)  # fmt: skip
    model = Model(imagenet_utils.source_inputs(input_tensor, img_input), x, name=model_name)
    if weights == "imagenet" and model_name in WEIGHTS_HASHES:
        imagenet_utils.load_tf_kernels_weights(model, weights, include_top, BASE_WEIGHTS_PATH,
                                               WEIGHTS_HASHES[model_name])  # fmt: skip
    elif weights is not None and weights != "imagenet":
        imagenet_utils.load_model_weights(model, weights)
    return model


def block1(x: Any, filters: int, kernel_size: int = 3, stride: int = 1,
           conv_shortcut: bool = True, name: str | None = None) -> Any:  # fmt: skip
    """A residual bottleneck block (v1)."""
    bn_axis = imagenet_utils.channel_axis()
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(x)
        shortcut = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_0_bn")(
            shortcut
        )
    else:
        shortcut = x
    x = layers.Conv2D(filters, 1, strides=stride, name=name + "_1_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_1_bn")(x)
    x = layers.Activation("relu", name=name + "_1_relu")(x)
    x = layers.Conv2D(filters, kernel_size, padding="SAME", name=name + "_2_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_2_bn")(x)
    x = layers.Activation("relu", name=name + "_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_3_bn")(x)
    x = layers.Add(name=name + "_add")([shortcut, x])
    return layers.Activation("relu", name=name + "_out")(x)


def stack1(x: Any, filters: int, blocks: int, stride1: int = 2, name: str | None = None) -> Any:
    """A stage of `blocks` v1 residual blocks."""
    x = block1(x, filters, stride=stride1, name=name + "_block1")
    for i in range(2, blocks + 1):
        x = block1(x, filters, conv_shortcut=False, name=name + "_block" + str(i))
    return x


def block2(x: Any, filters: int, kernel_size: int = 3, stride: int = 1,
           conv_shortcut: bool = False, name: str | None = None) -> Any:  # fmt: skip
    """A residual bottleneck block (v2: pre-activation)."""
    bn_axis = imagenet_utils.channel_axis()
    preact = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_preact_bn")(x)
    preact = layers.Activation("relu", name=name + "_preact_relu")(preact)
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(preact)
    else:
        shortcut = layers.MaxPooling2D(1, strides=stride)(x) if stride > 1 else x
    x = layers.Conv2D(filters, 1, strides=1, use_bias=False, name=name + "_1_conv")(preact)
    x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_1_bn")(x)
    x = layers.Activation("relu", name=name + "_1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name=name + "_2_pad")(x)
    x = layers.Conv2D(filters, kernel_size, strides=stride, use_bias=False, name=name + "_2_conv")(
        x
    )
    x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPS, name=name + "_2_bn")(x)
    x = layers.Activation("relu", name=name + "_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    return layers.Add(name=name + "_out")([shortcut, x])


def stack2(x: Any, filters: int, blocks: int, stride1: int = 2, name: str | None = None) -> Any:
    """A stage of `blocks` v2 residual blocks (the stride is on the last one)."""
    x = block2(x, filters, conv_shortcut=True, name=name + "_block1")
    for i in range(2, blocks):
        x = block2(x, filters, name=name + "_block" + str(i))
    return block2(x, filters, stride=stride1, name=name + "_block" + str(blocks))


def _v1(name: str, depths: tuple[int, int, int, int]) -> Callable[..., Model]:
    def stack_fn(x: Any) -> Any:
        x = stack1(x, 64, depths[0], stride1=1, name="conv2")
        x = stack1(x, 128, depths[1], name="conv3")
        x = stack1(x, 256, depths[2], name="conv4")
        return stack1(x, 512, depths[3], name="conv5")

    def constructor(
        include_top: bool = True,
        weights: Any = "imagenet",
        input_tensor: Any = None,
        input_shape: Any = None,
        pooling: Any = None,
        classes: int = 1000,
        **kwargs: Any,
    ) -> Model:
        return ResNet(stack_fn, False, True, name, include_top, weights, input_tensor,
                      input_shape, pooling, classes, **kwargs)  # fmt: skip

    constructor.__name__ = constructor.__qualname__ = name.replace("resnet", "ResNet")
    constructor.__doc__ = (
        f"The {constructor.__name__} model (default input 224x224x3; at least 32x32 without "
        "the top). `classifier_activation` may be passed as a keyword.\n\n"
        "    >>> import layerflow as tf\n"
        f"    >>> m = tf.keras.applications.{constructor.__name__}(weights=None, "
        "include_top=False, input_shape=(32, 32, 3))  # doctest: +SKIP\n"
    )
    return constructor


ResNet50 = _v1("resnet50", (3, 4, 6, 3))
ResNet101 = _v1("resnet101", (3, 4, 23, 3))
ResNet152 = _v1("resnet152", (3, 8, 36, 3))


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """ImageNet "caffe" preprocessing: RGB -> BGR, then the ImageNet mean subtracted."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds: Any, top: int = 5) -> list:
    """The top ImageNet classes of each prediction (see `imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
