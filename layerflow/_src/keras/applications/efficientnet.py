"""EfficientNet B0-B7 (Tan & Le, ICML 2019, https://arxiv.org/abs/1905.11946).

Layer for layer tf_keras 2.x's `applications/efficientnet.py`: same layer names, order, weight
shapes and arguments, so its published ImageNet files load by layer order. The model rescales
its input itself (`Rescaling(1/255)` then `Normalization`), so pixels in [0, 255] go in as they
are and `preprocess_input` is a pass-through.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.applications.modern_utils import (
    bn_axis,
    classifier_top,
    decode_predictions,
    load_weights,
    model_inputs,
    preprocess_input,
)
from layerflow._src.keras.engine.backend_config import image_data_format
from layerflow._src.keras.engine.model import Model
from layerflow._src.keras.layers import (
    Activation,
    BatchNormalization,
    Conv2D,
    DepthwiseConv2D,
    Dropout,
    GlobalAveragePooling2D,
    Normalization,
    Rescaling,
    Reshape,
    ZeroPadding2D,
    add,
    multiply,
)
from layerflow._src.ops import array_ops, math_ops

__all__ = [
    "EfficientNet",
    "EfficientNetB0",
    "EfficientNetB1",
    "EfficientNetB2",
    "EfficientNetB3",
    "EfficientNetB4",
    "EfficientNetB5",
    "EfficientNetB6",
    "EfficientNetB7",
    "decode_predictions",
    "preprocess_input",
]

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/keras-applications/"
# (with top, without top) MD5 of the published files, as tf_keras checks them.
WEIGHTS_HASHES = {
    "b0": ("902e53a9f72be733fc0bcb005b3ebbac", "50bc09e76180e00e4465e1a485ddc09d"),
    "b1": ("1d254153d4ab51201f1646940f018540", "74c4e6b3e1f6a1eea24c589628592432"),
    "b2": ("b15cce36ff4dcbd00b6dd88e7857a6ad", "111f8e2ac8aa800a7a99e3239f7bfb39"),
    "b3": ("ffd1fdc53d0ce67064dc6a9c7960ede0", "af6d107764bb5b1abb91932881670226"),
    "b4": ("18c95ad55216b8f92d7e70b3a046e2fc", "ebc24e6d6c33eaebbd558eafbeedf1ba"),
    "b5": ("ace28f2a6363774853a83a0b21b9421a", "38879255a25d3c92d5e44e04ae6cec6f"),
    "b6": ("165f6e37dce68623721b423839de8be5", "9ecce42647a20130c1f39a5d4cb75743"),
    "b7": ("8c03f828fec3ef71311cd463b6759d99", "cbcfe4450ddf6f3ad90b1b398090fe4a"),
}

# (kernel_size, repeats, filters_in, filters_out, expand_ratio, strides) of the 7 stages; every
# stage has id_skip=True and se_ratio=0.25.
_STAGES = [
    (3, 1, 32, 16, 1, 1),
    (3, 2, 16, 24, 6, 2),
    (5, 2, 24, 40, 6, 2),
    (3, 3, 40, 80, 6, 2),
    (5, 3, 80, 112, 6, 1),
    (5, 4, 112, 192, 6, 2),
    (3, 1, 192, 320, 6, 1),
]
DEFAULT_BLOCKS_ARGS = [
    {
        "kernel_size": k,
        "repeats": r,
        "filters_in": fi,
        "filters_out": fo,
        "expand_ratio": e,
        "id_skip": True,
        "strides": s,
        "se_ratio": 0.25,
    }
    for k, r, fi, fo, e, s in _STAGES
]

CONV_KERNEL_INITIALIZER = {
    "class_name": "VarianceScaling",
    "config": {"scale": 2.0, "mode": "fan_out", "distribution": "truncated_normal"},
}
DENSE_KERNEL_INITIALIZER = {
    "class_name": "VarianceScaling",
    "config": {"scale": 1.0 / 3.0, "mode": "fan_out", "distribution": "uniform"},
}
IMAGENET_STDDEV_RGB = [0.229, 0.224, 0.225]

BASE_DOCSTRING = """Instantiates the {name} architecture (https://arxiv.org/abs/1905.11946).

  Input preprocessing is part of the model (a `Rescaling` layer), so it takes float pixels in
  [0, 255] and `efficientnet.preprocess_input` is a pass-through.

  Args:
    include_top: whether to include the classifier on top. Defaults to True.
    weights: None (random initialization), "imagenet" (pre-trained; the file is taken from the
      Keras cache `~/.keras/models/`, else downloaded), or the path to a weights file.
    input_tensor: optional Keras tensor (output of `layers.Input()`) to use as the input.
    input_shape: optional shape tuple (3 channels, each side at least 32); with
      `include_top=True` only when `weights` is not "imagenet".
    pooling: with `include_top=False`: None (4D output of the last convolution), "avg" or
      "max" (global pooling, 2D output).
    classes: number of classes (only without "imagenet" weights when `include_top`).
    classifier_activation: activation of the "predictions" layer (None for logits); with
      pretrained weights only None or "softmax".

  Returns:
    A `keras.Model`.

  >>> # model = tf.keras.applications.{name}(weights=None, input_shape=(64, 64, 3), classes=10)
"""


def EfficientNet(  # noqa: N802 - tf_keras's name
    width_coefficient: float,
    depth_coefficient: float,
    default_size: int,
    dropout_rate: float = 0.2,
    drop_connect_rate: float = 0.2,
    depth_divisor: int = 8,
    activation: Any = "swish",
    blocks_args: Any = "default",
    model_name: str = "efficientnet",
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
) -> Model:
    """An EfficientNet of the given width and depth scaling (the B0-B7 constructors call it)."""
    if blocks_args == "default":
        blocks_args = DEFAULT_BLOCKS_ARGS
    img_input = imagenet_utils.prepare_input(
        weights, include_top, classes, input_tensor, input_shape, default_size, min_size=32
    )
    axis = bn_axis()

    def round_filters(filters: float, divisor: int = depth_divisor) -> int:
        filters *= width_coefficient
        new_filters = max(divisor, int(filters + divisor / 2) // divisor * divisor)
        if new_filters < 0.9 * filters:  # never round down by more than 10%
            new_filters += divisor
        return int(new_filters)

    def round_repeats(repeats: int) -> int:
        return int(math.ceil(depth_coefficient * repeats))

    # Stem
    x = Rescaling(1.0 / 255.0)(img_input)
    x = Normalization(axis=axis)(x)
    if weights == "imagenet":
        # The Normalization layer divides by sqrt(variance) = std, the original implementation
        # by the variance: divide once more by sqrt(std) (tensorflow/tensorflow#49930).
        shape = [1, 3, 1, 1] if image_data_format() == "channels_first" else [1, 1, 1, 3]
        x = math_ops.multiply(
            x, array_ops.reshape([1.0 / math.sqrt(s) for s in IMAGENET_STDDEV_RGB], shape)
        )
    x = ZeroPadding2D(padding=imagenet_utils.correct_pad(x, 3), name="stem_conv_pad")(x)
    x = Conv2D(
        round_filters(32),
        3,
        strides=2,
        padding="valid",
        use_bias=False,
        kernel_initializer=CONV_KERNEL_INITIALIZER,
        name="stem_conv",
    )(x)
    x = BatchNormalization(axis=axis, name="stem_bn")(x)
    x = Activation(activation, name="stem_activation")(x)

    # Blocks
    blocks_args = copy.deepcopy(blocks_args)
    b = 0
    blocks = float(sum(round_repeats(args["repeats"]) for args in blocks_args))
    for i, args in enumerate(blocks_args):
        if args["repeats"] <= 0:
            raise ValueError(
                f"EfficientNet: every block needs repeats > 0; block {i} has "
                f"repeats={args['repeats']}."
            )
        args["filters_in"] = round_filters(args["filters_in"])
        args["filters_out"] = round_filters(args["filters_out"])
        for j in range(round_repeats(args.pop("repeats"))):
            if j > 0:  # only the first block of a stage strides and changes the width
                args["strides"] = 1
                args["filters_in"] = args["filters_out"]
            x = block(
                x,
                activation,
                drop_connect_rate * b / blocks,
                name=f"block{i + 1}{chr(j + 97)}_",
                **args,
            )
            b += 1

    # Top
    x = Conv2D(
        round_filters(1280),
        1,
        padding="same",
        use_bias=False,
        kernel_initializer=CONV_KERNEL_INITIALIZER,
        name="top_conv",
    )(x)
    x = BatchNormalization(axis=axis, name="top_bn")(x)
    x = Activation(activation, name="top_activation")(x)
    x = classifier_top(x, include_top, pooling, classes, classifier_activation, weights,
                       dropout_rate, kernel_initializer=DENSE_KERNEL_INITIALIZER)  # fmt: skip
    model = Model(model_inputs(input_tensor, img_input), x, name=model_name)
    return load_weights(model, weights, include_top, WEIGHTS_HASHES, model_name[-2:],
                        BASE_WEIGHTS_PATH)  # fmt: skip


def squeeze_excite(x: Any, filters: int, input_filters: int, se_ratio: float, activation: Any,
                   name: str) -> Any:  # fmt: skip
    """Squeeze-and-excite of a block's `filters` channels to `input_filters * se_ratio` (the
    "se_squeeze" .. "se_excite" layers of both EfficientNet versions)."""
    filters_se = max(1, int(input_filters * se_ratio))
    se = GlobalAveragePooling2D(name=name + "se_squeeze")(x)
    se_shape = (filters, 1, 1) if bn_axis() == 1 else (1, 1, filters)
    se = Reshape(se_shape, name=name + "se_reshape")(se)
    se = Conv2D(
        filters_se,
        1,
        padding="same",
        activation=activation,
        kernel_initializer=CONV_KERNEL_INITIALIZER,
        name=name + "se_reduce",
    )(se)
    se = Conv2D(
        filters,
        1,
        padding="same",
        activation="sigmoid",
        kernel_initializer=CONV_KERNEL_INITIALIZER,
        name=name + "se_expand",
    )(se)
    return multiply([x, se], name=name + "se_excite")


def block(
    inputs: Any,
    activation: Any = "swish",
    drop_rate: float = 0.0,
    name: str = "",
    filters_in: int = 32,
    filters_out: int = 16,
    kernel_size: int = 3,
    strides: int = 1,
    expand_ratio: int = 1,
    se_ratio: float = 0.0,
    id_skip: bool = True,
) -> Any:
    """An inverted residual block (MBConv): expand, depthwise conv, squeeze-and-excite, project;
    the skip connection (with drop-connect) when the shape is kept."""
    axis = bn_axis()
    filters = filters_in * expand_ratio
    if expand_ratio != 1:
        x = Conv2D(
            filters,
            1,
            padding="same",
            use_bias=False,
            kernel_initializer=CONV_KERNEL_INITIALIZER,
            name=name + "expand_conv",
        )(inputs)
        x = BatchNormalization(axis=axis, name=name + "expand_bn")(x)
        x = Activation(activation, name=name + "expand_activation")(x)
    else:
        x = inputs

    if strides == 2:
        x = ZeroPadding2D(
            padding=imagenet_utils.correct_pad(x, kernel_size), name=name + "dwconv_pad"
        )(x)
        conv_pad = "valid"
    else:
        conv_pad = "same"
    x = DepthwiseConv2D(
        kernel_size,
        strides=strides,
        padding=conv_pad,
        use_bias=False,
        depthwise_initializer=CONV_KERNEL_INITIALIZER,
        name=name + "dwconv",
    )(x)
    x = BatchNormalization(axis=axis, name=name + "bn")(x)
    x = Activation(activation, name=name + "activation")(x)

    if 0 < se_ratio <= 1:
        x = squeeze_excite(x, filters, filters_in, se_ratio, activation, name)

    x = Conv2D(
        filters_out,
        1,
        padding="same",
        use_bias=False,
        kernel_initializer=CONV_KERNEL_INITIALIZER,
        name=name + "project_conv",
    )(x)
    x = BatchNormalization(axis=axis, name=name + "project_bn")(x)
    if id_skip and strides == 1 and filters_in == filters_out:
        if drop_rate > 0:
            x = Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=name + "drop")(x)
        x = add([x, inputs], name=name + "add")
    return x


def _variant(name: str, width: float, depth: float, size: int, dropout: float) -> Any:
    def constructor(
        include_top: bool = True,
        weights: Any = "imagenet",
        input_tensor: Any = None,
        input_shape: Any = None,
        pooling: Any = None,
        classes: int = 1000,
        classifier_activation: Any = "softmax",
        **kwargs: Any,
    ) -> Model:
        return EfficientNet(
            width,
            depth,
            size,
            dropout,
            model_name=name.lower(),
            include_top=include_top,
            weights=weights,
            input_tensor=input_tensor,
            input_shape=input_shape,
            pooling=pooling,
            classes=classes,
            classifier_activation=classifier_activation,
            **kwargs,
        )

    constructor.__name__ = constructor.__qualname__ = name
    constructor.__module__ = __name__
    constructor.__doc__ = BASE_DOCSTRING.format(name=name)
    return constructor


EfficientNetB0 = _variant("EfficientNetB0", 1.0, 1.0, 224, 0.2)
EfficientNetB1 = _variant("EfficientNetB1", 1.0, 1.1, 240, 0.2)
EfficientNetB2 = _variant("EfficientNetB2", 1.1, 1.2, 260, 0.3)
EfficientNetB3 = _variant("EfficientNetB3", 1.2, 1.4, 300, 0.3)
EfficientNetB4 = _variant("EfficientNetB4", 1.4, 1.8, 380, 0.4)
EfficientNetB5 = _variant("EfficientNetB5", 1.6, 2.2, 456, 0.4)
EfficientNetB6 = _variant("EfficientNetB6", 1.8, 2.6, 528, 0.5)
EfficientNetB7 = _variant("EfficientNetB7", 2.0, 3.1, 600, 0.5)
