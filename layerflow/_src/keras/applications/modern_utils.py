"""What the modern families (EfficientNet, EfficientNetV2, ConvNeXt, RegNet, ResNet-RS) share:
the model input from `input_tensor`/`input_shape`, the source inputs of the finished graph, the
classifier head and the ImageNet weight loading of their `Model`, the pass-through
`preprocess_input` (their preprocessing is inside the model) and `decode_predictions`.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.engine.model import Model

__all__ = [
    "bn_axis",
    "classifier_top",
    "decode_predictions",
    "image_input",
    "is_file",
    "load_weights",
    "model_inputs",
    "preprocess_input",
    "variant",
]

# The same helpers as the classic families', under the names these modules use.
bn_axis = imagenet_utils.channel_axis
is_file = imagenet_utils.is_file
image_input = imagenet_utils.image_input
classifier_top = imagenet_utils.classifier_top


def model_inputs(input_tensor: Any, img_input: Any, first: bool = False) -> Any:
    """The model's inputs: the `Input`s `input_tensor` comes from (the first one when `first`,
    as ConvNeXt and RegNet take it), or `img_input`."""
    sources = imagenet_utils.source_inputs(input_tensor, img_input)
    return sources[0] if first and input_tensor is not None else sources


def load_weights(
    model: Model, weights: Any, include_top: bool, hashes: Any, key: str, base_url: str
) -> Model:
    """Load `weights` into `model` and return it: "imagenet" loads `<model.name>.h5` (or
    `_notop.h5` without the top) from `base_url`, checked against `hashes[key]` = (with top,
    without top); a path loads that file; None keeps the initial weights."""
    if weights == "imagenet":
        file_name = model.name + (".h5" if include_top else "_notop.h5")
        file_hash = hashes[key][0 if include_top else 1]
        imagenet_utils.load_model_weights(
            model, weights, file_name, base_url + file_name, file_hash
        )
    elif weights is not None:
        imagenet_utils.load_model_weights(model, weights)
    return model


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


def variant(builder: Any, name: str, module: str, doc: str, model_name: str, **config: Any) -> Any:
    """The public constructor `name` of ConvNeXt and RegNet (tf_keras's signature, the same in
    both): `builder(**config, model_name=..., ...)` with the variant's fixed `config`."""

    def constructor(
        model_name: str = model_name,
        include_top: bool = True,
        include_preprocessing: bool = True,
        weights: Any = "imagenet",
        input_tensor: Any = None,
        input_shape: Any = None,
        pooling: Any = None,
        classes: int = 1000,
        classifier_activation: Any = "softmax",
    ) -> Model:
        return builder(
            **config,
            model_name=model_name,
            include_top=include_top,
            include_preprocessing=include_preprocessing,
            weights=weights,
            input_tensor=input_tensor,
            input_shape=input_shape,
            pooling=pooling,
            classes=classes,
            classifier_activation=classifier_activation,
        )

    constructor.__name__ = constructor.__qualname__ = name
    constructor.__module__ = module
    constructor.__doc__ = doc
    return constructor
