"""EfficientNetV2 B0-B3, S, M, L (Tan & Le, ICML 2021, https://arxiv.org/abs/2104.00298).

Layer for layer tf_keras 2.x's `applications/efficientnet_v2.py` (names, order, weight shapes,
arguments). Preprocessing is inside the model (`include_preprocessing=True`): the B variants
with 3 channels rescale to [0, 1] and normalize with the ImageNet mean and std, every other
input is rescaled to [-1, 1]; `preprocess_input` is a pass-through.

As in tf_keras, the residual `Dropout` of a block drops with rate `drop_connect_rate * b /
blocks` (a "survival probability" used as the drop rate), so the first block has none.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.applications.efficientnet import (  # the same as V1's
    CONV_KERNEL_INITIALIZER,
    DENSE_KERNEL_INITIALIZER,
    squeeze_excite,
)
from layerflow._src.keras.applications.modern_utils import (
    bn_axis,
    classifier_top,
    decode_predictions,
    load_weights,
    model_inputs,
    preprocess_input,
)
from layerflow._src.keras.backend_api.session_api import get_uid
from layerflow._src.keras.engine.backend_config import image_data_format
from layerflow._src.keras.engine.model import Model
from layerflow._src.keras.initializers import Constant
from layerflow._src.keras.layers import (
    Activation,
    BatchNormalization,
    Conv2D,
    DepthwiseConv2D,
    Dropout,
    Normalization,
    Rescaling,
    add,
)

__all__ = [
    "EfficientNetV2",
    "EfficientNetV2B0",
    "EfficientNetV2B1",
    "EfficientNetV2B2",
    "EfficientNetV2B3",
    "EfficientNetV2L",
    "EfficientNetV2M",
    "EfficientNetV2S",
    "decode_predictions",
    "preprocess_input",
]

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/efficientnet_v2/"
# (with top, without top) MD5 of the published files, keyed by the model name's last 2 chars.
WEIGHTS_HASHES = {
    "b0": ("21ecbf6da12460d5c40bb2f29ceb2188", "893217f2bb855e2983157299931e43ff"),
    "b1": ("069f0534ff22adf035c89e2d9547a9dc", "0e80663031ca32d657f9caa404b6ec37"),
    "b2": ("424e49f28180edbde1e94797771950a7", "1dfe2e7a5d45b6632553a8961ea609eb"),
    "b3": ("1f1fc43bd98a6e4fd8fdfd551e02c7a0", "f6abf7b5849ac99a89b50dd3fd532856"),
    "-s": ("e1d88a8495beba45748fedd0cecbe016", "af0682fb74e8c54910f2d4393339c070"),
    "-m": ("a3bf6aa3276309f4fc6a34aa114c95cd", "1b8dc055df72dde80d614482840fe342"),
    "-l": ("27e6d408b53c7ebc868fefa357689935", "b0b66b5c863aef5b46e8608fe1711615"),
}

_KEYS = (
    "kernel_size",
    "num_repeat",
    "input_filters",
    "output_filters",
    "expand_ratio",
    "se_ratio",
    "strides",
    "conv_type",  # 0: MBConv, 1: Fused-MBConv
)
_B = [
    (3, 1, 32, 16, 1, 0, 1, 1),
    (3, 2, 16, 32, 4, 0, 2, 1),
    (3, 2, 32, 48, 4, 0, 2, 1),
    (3, 3, 48, 96, 4, 0.25, 2, 0),
    (3, 5, 96, 112, 6, 0.25, 1, 0),
    (3, 8, 112, 192, 6, 0.25, 2, 0),
]
_STAGES = {
    "efficientnetv2-s": [
        (3, 2, 24, 24, 1, 0.0, 1, 1),
        (3, 4, 24, 48, 4, 0.0, 2, 1),
        (3, 4, 48, 64, 4, 0, 2, 1),
        (3, 6, 64, 128, 4, 0.25, 2, 0),
        (3, 9, 128, 160, 6, 0.25, 1, 0),
        (3, 15, 160, 256, 6, 0.25, 2, 0),
    ],
    "efficientnetv2-m": [
        (3, 3, 24, 24, 1, 0, 1, 1),
        (3, 5, 24, 48, 4, 0, 2, 1),
        (3, 5, 48, 80, 4, 0, 2, 1),
        (3, 7, 80, 160, 4, 0.25, 2, 0),
        (3, 14, 160, 176, 6, 0.25, 1, 0),
        (3, 18, 176, 304, 6, 0.25, 2, 0),
        (3, 5, 304, 512, 6, 0.25, 1, 0),
    ],
    "efficientnetv2-l": [
        (3, 4, 32, 32, 1, 0, 1, 1),
        (3, 7, 32, 64, 4, 0, 2, 1),
        (3, 7, 64, 96, 4, 0, 2, 1),
        (3, 10, 96, 192, 4, 0.25, 2, 0),
        (3, 19, 192, 224, 6, 0.25, 1, 0),
        (3, 25, 224, 384, 6, 0.25, 2, 0),
        (3, 7, 384, 640, 6, 0.25, 1, 0),
    ],
    **{f"efficientnetv2-b{i}": _B for i in range(4)},
}
DEFAULT_BLOCKS_ARGS = {
    name: [dict(zip(_KEYS, stage)) for stage in stages] for name, stages in _STAGES.items()
}

BASE_DOCSTRING = """Instantiates the {name} architecture (https://arxiv.org/abs/2104.00298).

  Input preprocessing is part of the model (`include_preprocessing=True`), so it takes float
  pixels in [0, 255] and `efficientnet_v2.preprocess_input` is a pass-through.

  Args:
    include_top: whether to include the classifier on top. Defaults to True.
    weights: None (random initialization), "imagenet" (pre-trained; the file is taken from the
      Keras cache `~/.keras/models/`, else downloaded), or the path to a weights file.
    input_tensor: optional Keras tensor (output of `layers.Input()`) to use as the input.
    input_shape: optional shape tuple (each side at least 32); with `include_top=True` only
      when `weights` is not "imagenet".
    pooling: with `include_top=False`: None (4D output of the last convolution), "avg" or
      "max" (global pooling, 2D output).
    classes: number of classes (only without "imagenet" weights when `include_top`).
    classifier_activation: activation of the "predictions" layer (None for logits); with
      pretrained weights only None or "softmax".
    include_preprocessing: whether the model rescales (and, for B0-B3, normalizes) its input.

  Returns:
    A `keras.Model`.

  >>> # model = tf.keras.applications.{name}(weights=None, input_shape=(64, 64, 3), classes=10)
"""


def round_filters(filters: float, width_coefficient: float, min_depth: Any,
                  depth_divisor: int) -> int:  # fmt: skip
    """The number of filters scaled by `width_coefficient`, a multiple of `depth_divisor`."""
    filters *= width_coefficient
    minimum_depth = min_depth or depth_divisor
    new_filters = max(
        minimum_depth, int(filters + depth_divisor / 2) // depth_divisor * depth_divisor
    )
    return int(new_filters)


def round_repeats(repeats: int, depth_coefficient: float) -> int:
    """The number of repeats scaled by `depth_coefficient` (rounded up)."""
    return int(math.ceil(depth_coefficient * repeats))


def _residual(x: Any, inputs: Any, survival_probability: float, name: str) -> Any:
    if survival_probability:
        x = Dropout(survival_probability, noise_shape=(None, 1, 1, 1), name=name + "drop")(x)
    return add([x, inputs], name=name + "add")


def MBConvBlock(  # noqa: N802 - tf_keras's name
    input_filters: int,
    output_filters: int,
    expand_ratio: int = 1,
    kernel_size: int = 3,
    strides: int = 1,
    se_ratio: float = 0.0,
    bn_momentum: float = 0.9,
    activation: Any = "swish",
    survival_probability: float = 0.8,
    name: Any = None,
) -> Any:
    """MBConv block (mobile inverted residual bottleneck); returns a function of the input."""
    axis = bn_axis()
    if name is None:
        name = str(get_uid("block0"))

    def apply(inputs: Any) -> Any:
        filters = input_filters * expand_ratio
        if expand_ratio != 1:
            x = Conv2D(
                filters=filters,
                kernel_size=1,
                strides=1,
                kernel_initializer=CONV_KERNEL_INITIALIZER,
                padding="same",
                data_format=image_data_format(),
                use_bias=False,
                name=name + "expand_conv",
            )(inputs)
            x = BatchNormalization(axis=axis, momentum=bn_momentum, name=name + "expand_bn")(x)
            x = Activation(activation, name=name + "expand_activation")(x)
        else:
            x = inputs
        x = DepthwiseConv2D(
            kernel_size=kernel_size,
            strides=strides,
            depthwise_initializer=CONV_KERNEL_INITIALIZER,
            padding="same",
            data_format=image_data_format(),
            use_bias=False,
            name=name + "dwconv2",
        )(x)
        x = BatchNormalization(axis=axis, momentum=bn_momentum, name=name + "bn")(x)
        x = Activation(activation, name=name + "activation")(x)
        if 0 < se_ratio <= 1:
            x = squeeze_excite(x, filters, input_filters, se_ratio, activation, name)
        x = Conv2D(
            filters=output_filters,
            kernel_size=1,
            strides=1,
            kernel_initializer=CONV_KERNEL_INITIALIZER,
            padding="same",
            data_format=image_data_format(),
            use_bias=False,
            name=name + "project_conv",
        )(x)
        x = BatchNormalization(axis=axis, momentum=bn_momentum, name=name + "project_bn")(x)
        if strides == 1 and input_filters == output_filters:
            x = _residual(x, inputs, survival_probability, name)
        return x

    return apply


def FusedMBConvBlock(  # noqa: N802 - tf_keras's name
    input_filters: int,
    output_filters: int,
    expand_ratio: int = 1,
    kernel_size: int = 3,
    strides: int = 1,
    se_ratio: float = 0.0,
    bn_momentum: float = 0.9,
    activation: Any = "swish",
    survival_probability: float = 0.8,
    name: Any = None,
) -> Any:
    """Fused-MBConv block: the expansion and depthwise convolutions fused into one Conv2D."""
    axis = bn_axis()
    if name is None:
        name = str(get_uid("block0"))

    def apply(inputs: Any) -> Any:
        filters = input_filters * expand_ratio
        if expand_ratio != 1:
            x = Conv2D(
                filters,
                kernel_size=kernel_size,
                strides=strides,
                kernel_initializer=CONV_KERNEL_INITIALIZER,
                data_format=image_data_format(),
                padding="same",
                use_bias=False,
                name=name + "expand_conv",
            )(inputs)
            x = BatchNormalization(axis=axis, momentum=bn_momentum, name=name + "expand_bn")(x)
            x = Activation(activation=activation, name=name + "expand_activation")(x)
        else:
            x = inputs
        if 0 < se_ratio <= 1:
            x = squeeze_excite(x, filters, input_filters, se_ratio, activation, name)
        x = Conv2D(
            output_filters,
            kernel_size=1 if expand_ratio != 1 else kernel_size,
            strides=1 if expand_ratio != 1 else strides,
            kernel_initializer=CONV_KERNEL_INITIALIZER,
            padding="same",
            use_bias=False,
            name=name + "project_conv",
        )(x)
        x = BatchNormalization(axis=axis, momentum=bn_momentum, name=name + "project_bn")(x)
        if expand_ratio == 1:
            x = Activation(activation=activation, name=name + "project_activation")(x)
        if strides == 1 and input_filters == output_filters:
            x = _residual(x, inputs, survival_probability, name)
        return x

    return apply


def EfficientNetV2(  # noqa: N802 - tf_keras's name
    width_coefficient: float,
    depth_coefficient: float,
    default_size: int,
    dropout_rate: float = 0.2,
    drop_connect_rate: float = 0.2,
    depth_divisor: int = 8,
    min_depth: int = 8,
    bn_momentum: float = 0.9,
    activation: Any = "swish",
    blocks_args: Any = "default",
    model_name: str = "efficientnetv2",
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
    include_preprocessing: bool = True,
) -> Model:
    """An EfficientNetV2 of the given scaling; `blocks_args="default"` takes the stages of
    `model_name` (one of "efficientnetv2-b0".."-b3", "-s", "-m", "-l")."""
    if blocks_args == "default":
        if model_name not in DEFAULT_BLOCKS_ARGS:
            raise ValueError(
                f"EfficientNetV2: blocks_args='default' needs a model_name with default "
                f"stages, one of {sorted(DEFAULT_BLOCKS_ARGS)}; got model_name={model_name!r}. "
                "Pass blocks_args explicitly for another name."
            )
        blocks_args = DEFAULT_BLOCKS_ARGS[model_name]
    img_input, input_shape = imagenet_utils.input_and_shape(
        weights, include_top, classes, input_tensor, input_shape, default_size, min_size=32
    )
    axis = bn_axis()

    def filters_of(n: float) -> int:
        return round_filters(n, width_coefficient, min_depth, depth_divisor)

    x = img_input
    if include_preprocessing:
        num_channels = input_shape[axis - 1]
        if model_name.split("-")[-1].startswith("b") and num_channels == 3:
            # the original V1 preprocessing for the B variants
            x = Rescaling(scale=1.0 / 255)(x)
            x = Normalization(
                mean=[0.485, 0.456, 0.406],
                variance=[0.229**2, 0.224**2, 0.225**2],
                axis=axis,
            )(x)
        else:
            x = Rescaling(scale=1.0 / 128.0, offset=-1)(x)

    x = Conv2D(
        filters=filters_of(blocks_args[0]["input_filters"]),
        kernel_size=3,
        strides=2,
        kernel_initializer=CONV_KERNEL_INITIALIZER,
        padding="same",
        use_bias=False,
        name="stem_conv",
    )(x)
    x = BatchNormalization(axis=axis, momentum=bn_momentum, name="stem_bn")(x)
    x = Activation(activation, name="stem_activation")(x)

    blocks_args = copy.deepcopy(blocks_args)
    b = 0
    blocks = float(sum(args["num_repeat"] for args in blocks_args))
    for i, args in enumerate(blocks_args):
        if args["num_repeat"] <= 0:
            raise ValueError(
                f"EfficientNetV2: every block needs num_repeat > 0; block {i} has "
                f"num_repeat={args['num_repeat']}."
            )
        args["input_filters"] = filters_of(args["input_filters"])
        args["output_filters"] = filters_of(args["output_filters"])
        conv_block = {0: MBConvBlock, 1: FusedMBConvBlock}[args.pop("conv_type")]
        repeats = round_repeats(args.pop("num_repeat"), depth_coefficient)
        for j in range(repeats):
            if j > 0:  # only the first block of a stage strides and changes the width
                args["strides"] = 1
                args["input_filters"] = args["output_filters"]
            x = conv_block(
                activation=activation,
                bn_momentum=bn_momentum,
                survival_probability=drop_connect_rate * b / blocks,
                name=f"block{i + 1}{chr(j + 97)}_",
                **args,
            )(x)
            b += 1

    x = Conv2D(
        filters=filters_of(1280),
        kernel_size=1,
        strides=1,
        kernel_initializer=CONV_KERNEL_INITIALIZER,
        padding="same",
        data_format=image_data_format(),
        use_bias=False,
        name="top_conv",
    )(x)
    x = BatchNormalization(axis=axis, momentum=bn_momentum, name="top_bn")(x)
    x = Activation(activation=activation, name="top_activation")(x)
    x = classifier_top(x, include_top, pooling, classes, classifier_activation, weights,
                       dropout_rate, kernel_initializer=DENSE_KERNEL_INITIALIZER,
                       bias_initializer=Constant(0))  # fmt: skip
    model = Model(model_inputs(input_tensor, img_input), x, name=model_name)
    return load_weights(model, weights, include_top, WEIGHTS_HASHES, model_name[-2:],
                        BASE_WEIGHTS_PATH)  # fmt: skip


def _variant(name: str, width: float, depth: float, size: int, model_name: str) -> Any:
    def constructor(
        include_top: bool = True,
        weights: Any = "imagenet",
        input_tensor: Any = None,
        input_shape: Any = None,
        pooling: Any = None,
        classes: int = 1000,
        classifier_activation: Any = "softmax",
        include_preprocessing: bool = True,
    ) -> Model:
        return EfficientNetV2(
            width_coefficient=width,
            depth_coefficient=depth,
            default_size=size,
            model_name=model_name,
            include_top=include_top,
            weights=weights,
            input_tensor=input_tensor,
            input_shape=input_shape,
            pooling=pooling,
            classes=classes,
            classifier_activation=classifier_activation,
            include_preprocessing=include_preprocessing,
        )

    constructor.__name__ = constructor.__qualname__ = name
    constructor.__module__ = __name__
    constructor.__doc__ = BASE_DOCSTRING.format(name=name)
    return constructor


EfficientNetV2B0 = _variant("EfficientNetV2B0", 1.0, 1.0, 224, "efficientnetv2-b0")
EfficientNetV2B1 = _variant("EfficientNetV2B1", 1.0, 1.1, 240, "efficientnetv2-b1")
EfficientNetV2B2 = _variant("EfficientNetV2B2", 1.1, 1.2, 260, "efficientnetv2-b2")
EfficientNetV2B3 = _variant("EfficientNetV2B3", 1.2, 1.4, 300, "efficientnetv2-b3")
EfficientNetV2S = _variant("EfficientNetV2S", 1.0, 1.0, 384, "efficientnetv2-s")
EfficientNetV2M = _variant("EfficientNetV2M", 1.0, 1.0, 480, "efficientnetv2-m")
EfficientNetV2L = _variant("EfficientNetV2L", 1.0, 1.0, 480, "efficientnetv2-l")
