"""What the modern families (EfficientNet, EfficientNetV2, ConvNeXt, RegNet, ResNet-RS) share:
the model input from `input_tensor`/`input_shape`, the source inputs of the finished graph, the
pass-through `preprocess_input` (their preprocessing is inside the model) and `decode_predictions`.
"""

from __future__ import annotations

import os
from typing import Any

from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.backend_api.session_api import is_keras_tensor
from layerflow._src.keras.engine.backend_config import image_data_format
from layerflow._src.keras.engine.input_layer import Input
from layerflow._src.keras.utils.layer_utils import get_source_inputs

__all__ = [
    "bn_axis",
    "decode_predictions",
    "image_input",
    "is_file",
    "model_inputs",
    "preprocess_input",
]


def bn_axis() -> int:
    """The channel axis of a 4D image batch under the current `image_data_format()`."""
    return 3 if image_data_format() == "channels_last" else 1


def is_file(weights: Any) -> bool:
    """Whether `weights` names an existing file (the alternative to None and "imagenet")."""
    try:
        return os.path.exists(os.fspath(weights))
    except TypeError:
        return False


def image_input(input_tensor: Any, input_shape: Any) -> Any:
    """The symbolic image the model starts from: `input_tensor` when it is a Keras tensor,
    else a new `Input` of `input_shape` (on `input_tensor` when one is given)."""
    if input_tensor is None:
        return Input(shape=input_shape)
    if not is_keras_tensor(input_tensor):
        return Input(tensor=input_tensor, shape=input_shape)
    return input_tensor


def model_inputs(input_tensor: Any, img_input: Any, first: bool = False) -> Any:
    """The model's inputs: the `Input`s `input_tensor` comes from (the first one when `first`,
    as ConvNeXt and RegNet take it), or `img_input`."""
    if input_tensor is None:
        return img_input
    sources = get_source_inputs(input_tensor)
    return sources[0] if first else sources


def preprocess_input(x: Any, data_format: Any = None) -> Any:
    """A pass-through kept for API compatibility: these models rescale and normalize their
    input inside the model (pixels in [0, 255] go in as they are).

    >>> preprocess_input([[0.0, 255.0]])
    [[0.0, 255.0]]
    """
    return x


def decode_predictions(preds: Any, top: int = 5) -> list:
    """The `top` ImageNet classes of each row of `preds` (see `imagenet_utils`)."""
    return imagenet_utils.decode_predictions(preds, top=top)


decode_predictions.__doc__ = imagenet_utils.decode_predictions.__doc__
