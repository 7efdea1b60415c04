"""VGG16 and VGG19 (`tf.keras.applications.vgg16` / `vgg19`), as tf_keras builds them.

Reference: [Very Deep Convolutional Networks for Large-Scale Image Recognition](
https://arxiv.org/abs/1409.1556) (ICLR 2015). Inputs are preprocessed with `preprocess_input`
("caffe": RGB -> BGR, ImageNet mean subtracted).
"""

from __future__ import annotations

from typing import Any

from layerflow._src.keras import layers
from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.engine.model import Model

__all__ = ["VGG16", "VGG19", "decode_predictions", "preprocess_input"]

_BASE = "https://storage.googleapis.com/tensorflow/keras-applications/"
_HASHES = {
    "vgg16": ("64373286793e3c8b2b4e3219cbf3544b", "6d6bbae143d832006294945121d1f1fc"),
    "vgg19": ("cbe5617147190e668d6c5d5026f83318", "253f8cb515780f3b799900260a226db6"),
}


def _vgg(
    name: str,
    convs_per_block: tuple[int, ...],
    include_top: bool,
    weights: Any,
    input_tensor: Any,
    input_shape: Any,
    pooling: Any,
    classes: int,
    classifier_activation: Any,
) -> Model:
    img_input = imagenet_utils.prepare_input(
        weights, include_top, classes, input_tensor, input_shape, default_size=224, min_size=32
    )
    x = img_input
    for block, (filters, convs) in enumerate(zip((64, 128, 256, 512, 512), convs_per_block), 1):
        for i in range(1, convs + 1):
            x = layers.Conv2D(
                filters, (3, 3), activation="relu", padding="same", name=f"block{block}_conv{i}"
            )(x)
        x = layers.MaxPooling2D((2, 2), strides=(2, 2), name=f"block{block}_pool")(x)
    if include_top:
        x = layers.Flatten(name="flatten")(x)
        x = layers.Dense(4096, activation="relu", name="fc1")(x)
        x = layers.Dense(4096, activation="relu", name="fc2")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool_features(x, pooling)
    model = Model(imagenet_utils.source_inputs(input_tensor, img_input), x, name=name)
    return imagenet_utils.load_tf_kernels_weights(model, weights, include_top, f"{_BASE}{name}/",
                                                  _HASHES[name])  # fmt: skip


def VGG16(  # noqa: N802 - Keras's public name
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
) -> Model:
    """The VGG16 model (default input 224x224x3; at least 32x32 without the top).

    >>> import layerflow as tf
    >>> m = tf.keras.applications.VGG16(weights=None, include_top=False, input_shape=(32, 32, 3))
    >>> m.output_shape
    (None, 1, 1, 512)
    """
    return _vgg("vgg16", (2, 2, 3, 3, 3), include_top, weights, input_tensor, input_shape,
                pooling, classes, classifier_activation)  # fmt: skip


def VGG19(  # noqa: N802 - Keras's public name
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
) -> Model:
    """The VGG19 model (default input 224x224x3; at least 32x32 without the top)."""
    return _vgg("vgg19", (2, 2, 4, 4, 4), include_top, weights, input_tensor, input_shape,
                pooling, classes, classifier_activation)  # fmt: skip


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """ImageNet "caffe" preprocessing: RGB -> BGR, then the ImageNet mean subtracted."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds: Any, top: int = 5) -> list:
    """The top ImageNet classes of each prediction (see `imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
