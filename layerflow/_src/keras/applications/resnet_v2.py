"""ResNet50V2/101V2/152V2 (`tf.keras.applications.resnet_v2`), as tf_keras builds them.

Reference: [Identity Mappings in Deep Residual Networks](https://arxiv.org/abs/1603.05027)
(CVPR 2016). Inputs are preprocessed with `preprocess_input` ("tf": scaled to [-1, 1]).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from layerflow._src.keras.applications import imagenet_utils, resnet
from layerflow._src.keras.engine.model import Model

__all__ = ["ResNet50V2", "ResNet101V2", "ResNet152V2", "decode_predictions", "preprocess_input"]


def _v2(name: str, depths: tuple[int, int, int, int]) -> Callable[..., Model]:
    def stack_fn(x: Any) -> Any:
        x = resnet.stack2(x, 64, depths[0], name="conv2")
        x = resnet.stack2(x, 128, depths[1], name="conv3")
        x = resnet.stack2(x, 256, depths[2], name="conv4")
        return resnet.stack2(x, 512, depths[3], stride1=1, name="conv5")

    def constructor(
        include_top: bool = True,
        weights: Any = "imagenet",
        input_tensor: Any = None,
        input_shape: Any = None,
        pooling: Any = None,
        classes: int = 1000,
        classifier_activation: Any = "softmax",
    ) -> Model:
        return resnet.ResNet(stack_fn, True, True, name, include_top, weights, input_tensor,
                             input_shape, pooling, classes,
                             classifier_activation=classifier_activation)  # fmt: skip

    constructor.__name__ = constructor.__qualname__ = name.replace("resnet", "ResNet").replace(
        "v2", "V2"
    )
    constructor.__doc__ = (
        f"The {constructor.__name__} model (default input 224x224x3; at least 32x32 without "
        "the top)."
    )
    return constructor


ResNet50V2 = _v2("resnet50v2", (3, 4, 6, 3))
ResNet101V2 = _v2("resnet101v2", (3, 4, 23, 3))
ResNet152V2 = _v2("resnet152v2", (3, 8, 36, 3))


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """ImageNet "tf" preprocessing: pixels scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds: Any, top: int = 5) -> list:
    """The top ImageNet classes of each prediction (see `imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
