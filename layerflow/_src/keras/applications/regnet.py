"""RegNetX and RegNetY, 002 to 320 (Radosavovic et al., CVPR 2020,
https://arxiv.org/abs/2003.13678; Dollar et al., https://arxiv.org/abs/2103.06877).

Layer for layer tf_keras 2.x's `applications/regnet.py`: names, order, weight shapes, grouped
3x3 convolutions (`Conv2D(groups=...)`), squeeze-and-excite in Y blocks, and the residual sums
and products as op layers. Preprocessing (`Rescaling(1/255)`) is inside the model;
`preprocess_input` is a pass-through.

Like tf_keras 2.x, the classification head (`<uid>_head_gap`, `<uid>head_dense`) applies no
activation: the model returns logits whatever `classifier_activation` is (it is only validated
against pretrained weights).
"""

from __future__ import annotations

from typing import Any

from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.applications.modern_utils import (
    decode_predictions,
    load_weights,
    model_inputs,
    preprocess_input,
    variant,
)
from layerflow._src.keras.backend_api.session_api import get_uid
from layerflow._src.keras.engine.model import Model
from layerflow._src.keras.layers import (
    BatchNormalization,
    Conv2D,
    Dense,
    GlobalAveragePooling2D,
    GlobalMaxPooling2D,
    ReLU,
    Rescaling,
)
from layerflow._src.ops import math_ops, nn_ops

__all__ = [f"RegNet{t}{n}" for t in "XY" for n in (
    "002", "004", "006", "008", "016", "032", "040", "064", "080", "120", "160", "320"
)] + ["RegNet", "decode_predictions", "preprocess_input"]  # fmt: skip

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/regnet/"
# (with top, without top) SHA-256 of the published files, keyed by the model name's last 4 chars.
WEIGHTS_HASHES = {
    "x002": (
        "49fb46e56cde07fdaf57bffd851461a86548f6a3a4baef234dd37290b826c0b8",
        "5445b66cd50445eb7ecab094c1e78d4d3d29375439d1a7798861c4af15ffff21",
    ),
    "x004": (
        "3523c7f5ac0dbbcc2fd6d83b3570e7540f7449d3301cc22c29547302114e4088",
        "de139bf07a66c9256f2277bf5c1b6dd2d5a3a891a5f8a925a10c8a0a113fd6f3",
    ),
    "x006": (
        "340216ef334a7bae30daac9f414e693c136fac9ab868704bbfcc9ce6a5ec74bb",
        "a43ec97ad62f86b2a96a783bfdc63a5a54de02eef54f26379ea05e1bf90a9505",
    ),
    "x008": (
        "8f145d6a5fae6da62677bb8d26eb92d0b9dfe143ec1ebf68b24a57ae50a2763d",
        "3c7e4b0917359304dc18e644475c5c1f5e88d795542b676439c4a3acd63b7207",
    ),
    "x016": (
        "31c386f4c7bfef4c021a583099aa79c1b3928057ba1b7d182f174674c5ef3510",
        "1b8e3d545d190271204a7b2165936a227d26b79bb7922bac5ee4d303091bf17a",
    ),
    "x032": (
        "6c025df1409e5ea846375bc9dfa240956cca87ef57384d93fef7d6fa90ca8c7f",
        "9cd4522806c0fcca01b37874188b2bd394d7c419956d77472a4e072b01d99041",
    ),
    "x040": (
        "ba128046c588a26dbd3b3a011b26cb7fa3cf8f269c184c132372cb20b6eb54c1",
        "b4ed0ca0b9a98e789e05000e830403a7ade4d8afa01c73491c44610195198afe",
    ),
    "x064": (
        "0f4489c3cd3ad979bd6b0324213998bcb36dc861d178f977997ebfe53c3ba564",
        "3e706fa416a18dfda14c713423eba8041ae2509db3e0a611d5f599b5268a46c4",
    ),
    "x080": (
        "76320e43272719df648db37271a247c22eb6e810fe469c37a5db7e2cb696d162",
        "7b1ce8e29ceefec10a6569640ee329dba7fbc98b5d0f6346aabade058b66cf29",
    ),
    "x120": (
        "5cafc461b78897d5e4f24e68cb406d18e75f31105ef620e7682b611bb355eb3a",
        "36174ddd0299db04a42631d028abcb1cc7afec2b705e42bd28fcd325e5d596bf",
    ),
    "x160": (
        "8093f57a5824b181fb734ea21ae34b1f7ee42c5298e63cf6d587c290973195d2",
        "9d1485050bdf19531ffa1ed7827c75850e0f2972118a996b91aa9264b088fd43",
    ),
    "x320": (
        "91fb3e6f4e9e44b3687e80977f7f4412ee9937c0c704232664fc83e4322ea01e",
        "9db7eacc37b85c98184070e1a172e6104c00846f44bcd4e727da9e50d9692398",
    ),
    "y002": (
        "1e8091c674532b1a61c04f6393a9c570113e0197f22bd1b98cc4c4fe800c6465",
        "f63221f63d625b8e201221499682587bfe29d33f50a4c4f4d53be00f66c0f12c",
    ),
    "y004": (
        "752fdbad21c78911bf1dcb8c513e5a0e14697b068e5d9e73525dbaa416d18d8e",
        "45e6ba8309a17a77e67afc05228454b2e0ee6be0dae65edc0f31f1da10cc066b",
    ),
    "y006": (
        "98942e07b273da500ff9699a1f88aca78dfad4375faabb0bab784bb0dace80a9",
        "b70261cba4e60013c99d130cc098d2fce629ff978a445663b6fa4f8fc099a2be",
    ),
    "y008": (
        "1b099377cc9a4fb183159a6f9b24bc998e5659d25a449f40c90cbffcbcfdcae4",
        "b11f5432a216ee640fe9be6e32939defa8d08b8d136349bf3690715a98752ca1",
    ),
    "y016": (
        "b7ce1f5e223f0941c960602de922bcf846288ce7a4c33b2a4f2e4ac4b480045b",
        "d7404f50205e82d793e219afb9eb2bfeb781b6b2d316a6128c6d7d7dacab7f57",
    ),
    "y032": (
        "6a6a545cf3549973554c9b94f0cd40e25f229fffb1e7f7ac779a59dcbee612bd",
        "eb3ac1c45ec60f4f031c3f5180573422b1cf7bebc26c004637517372f68f8937",
    ),
    "y040": (
        "98d00118b335162bbffe8f1329e54e5c8e75ee09b2a5414f97b0ddfc56e796f6",
        "b5be2a5e5f072ecdd9c0b8a437cd896df0efa1f6a1f77e41caa8719b7dfcb05d",
    ),
    "y064": (
        "65c948c7a18aaecaad2d1bd4fd978987425604ba6669ef55a1faa0069a2804b7",
        "885c4b7ed7ea339daca7dafa1a62cb7d41b1068897ef90a5a3d71b4a2e2db31a",
    ),
    "y080": (
        "7a2c62da2982e369a4984d3c7c3b32d6f8d3748a71cb37a31156c436c37f3e95",
        "3d119577e1e3bf8d153b895e8ea9e4ec150ff2d92abdca711b6e949c3fd7115d",
    ),
    "y120": (
        "a96ab0d27d3ae35a422ee7df0d789069b3e3217a99334e0ce861a96595bc5986",
        "4a6fa387108380b730b71feea2ad80b5224b5ea9dc21dc156c93fe3c6186485c",
    ),
    "y160": (
        "45067240ffbc7ca2591313fee2f80dbdda6d66ec1a7451446f9a6d00d8f7ac6e",
        "ead1e6b568be8f34447ec8941299a9df4368736ba9a8205de5427fa20a1fb316",
    ),
    "y320": (
        "b05e173e4ae635cfa22d06392ee3741284d17dadfee68f2aa6fd8cb2b7561112",
        "cad78f74a586e24c61d38be17f3ae53bb9674380174d2585da1a526b8c20e1fd",
    ),
}

# name: (depths, widths, group_width, block_type); every default input size is 224.
_CONFIGS = {
    "x002": ([1, 1, 4, 7], [24, 56, 152, 368], 8, "X"),
    "x004": ([1, 2, 7, 12], [32, 64, 160, 384], 16, "X"),
    "x006": ([1, 3, 5, 7], [48, 96, 240, 528], 24, "X"),
    "x008": ([1, 3, 7, 5], [64, 128, 288, 672], 16, "X"),
    "x016": ([2, 4, 10, 2], [72, 168, 408, 912], 24, "X"),
    "x032": ([2, 6, 15, 2], [96, 192, 432, 1008], 48, "X"),
    "x040": ([2, 5, 14, 2], [80, 240, 560, 1360], 40, "X"),
    "x064": ([2, 4, 10, 1], [168, 392, 784, 1624], 56, "X"),
    "x080": ([2, 5, 15, 1], [80, 240, 720, 1920], 120, "X"),
    "x120": ([2, 5, 11, 1], [224, 448, 896, 2240], 112, "X"),
    "x160": ([2, 6, 13, 1], [256, 512, 896, 2048], 128, "X"),
    "x320": ([2, 7, 13, 1], [336, 672, 1344, 2520], 168, "X"),
    "y002": ([1, 1, 4, 7], [24, 56, 152, 368], 8, "Y"),
    "y004": ([1, 3, 6, 6], [48, 104, 208, 440], 8, "Y"),
    "y006": ([1, 3, 7, 4], [48, 112, 256, 608], 16, "Y"),
    "y008": ([1, 3, 8, 2], [64, 128, 320, 768], 16, "Y"),
    "y016": ([2, 6, 17, 2], [48, 120, 336, 888], 24, "Y"),
    "y032": ([2, 5, 13, 1], [72, 216, 576, 1512], 24, "Y"),
    "y040": ([2, 6, 12, 2], [128, 192, 512, 1088], 64, "Y"),
    "y064": ([2, 7, 14, 2], [144, 288, 576, 1296], 72, "Y"),
    "y080": ([2, 4, 10, 1], [168, 448, 896, 2016], 56, "Y"),
    "y120": ([2, 5, 11, 1], [224, 448, 896, 2240], 112, "Y"),
    "y160": ([2, 4, 11, 1], [224, 448, 1232, 3024], 112, "Y"),
    "y320": ([2, 5, 12, 1], [232, 696, 1392, 3712], 232, "Y"),
}
MODEL_CONFIGS = {
    key: {"depths": d, "widths": w, "group_width": g, "default_size": 224, "block_type": t}
    for key, (d, w, g, t) in _CONFIGS.items()
}

BASE_DOCSTRING = """Instantiates the {name} architecture (https://arxiv.org/abs/2003.13678).

  Input preprocessing (`Rescaling(1/255)`) is part of the model, so it takes float or uint8
  pixels in [0, 255] and `regnet.preprocess_input` is a pass-through. As in tf_keras 2.x the
  head returns logits: `classifier_activation` is only checked against pretrained weights.

  Args:
    model_name: the model's name.
    include_top: whether to include the classification head. Defaults to True.
    include_preprocessing: whether the model rescales its input.
    weights: None (random initialization), "imagenet" (pre-trained; the file is taken from the
      Keras cache `~/.keras/models/`, else downloaded), or the path to a weights file.
    input_tensor: optional Keras tensor (output of `layers.Input()`) to use as the input.
    input_shape: optional shape tuple (each side at least 32); with `include_top=True` only
      when `weights` is not "imagenet".
    pooling: with `include_top=False`: None (4D output of the last stage), "avg" or "max"
      (global pooling, 2D output).
    classes: number of classes (only without "imagenet" weights when `include_top`).
    classifier_activation: with pretrained weights only None or "softmax".

  Returns:
    A `keras.Model`.

  >>> # model = tf.keras.applications.{name}(weights=None, input_shape=(64, 64, 3), classes=10)
"""


def _bn(name: str) -> BatchNormalization:
    return BatchNormalization(momentum=0.9, epsilon=1e-5, name=name)


def _conv(filters: int, size: int, name: str, **kwargs: Any) -> Conv2D:
    return Conv2D(filters, (size, size), kernel_initializer="he_normal", name=name, **kwargs)


def PreStem(name: Any = None) -> Any:  # noqa: N802 - tf_keras's name
    """Rescale [0, 255] pixels to [0, 1]."""
    if name is None:
        name = "prestem" + str(get_uid("prestem"))

    def apply(x: Any) -> Any:
        return Rescaling(scale=1.0 / 255.0, name=name + "_prestem_rescaling")(x)

    return apply


def Stem(name: Any = None) -> Any:  # noqa: N802 - tf_keras's name
    """The stem every variant shares: a strided 3x3 convolution to 32 channels, BN, ReLU."""
    if name is None:
        name = "stem" + str(get_uid("stem"))

    def apply(x: Any) -> Any:
        x = _conv(32, 3, name + "_stem_conv", strides=2, use_bias=False, padding="same")(x)
        x = _bn(name + "_stem_bn")(x)
        return ReLU(name=name + "_stem_relu")(x)

    return apply


def SqueezeAndExciteBlock(filters_in: int, se_filters: int, name: Any = None) -> Any:  # noqa: N802
    """Squeeze and excite (https://arxiv.org/abs/1709.01507)."""
    if name is None:
        name = str(get_uid("squeeze_and_excite"))

    def apply(inputs: Any) -> Any:
        x = GlobalAveragePooling2D(name=name + "_squeeze_and_excite_gap", keepdims=True)(inputs)
        x = _conv(se_filters, 1, name + "_squeeze_and_excite_squeeze", activation="relu")(x)
        x = _conv(filters_in, 1, name + "_squeeze_and_excite_excite", activation="sigmoid")(x)
        return math_ops.multiply(x, inputs)

    return apply


def _check_filters(filters_in: int, filters_out: int, stride: int) -> None:
    if filters_in != filters_out and stride == 1:
        raise ValueError(
            f"Input filters({filters_in}) and output filters({filters_out}) are not equal for "
            f"stride {stride}. Input and output filters must be equal for stride={stride}."
        )


def _skip(inputs: Any, filters_out: int, stride: int, name: str) -> Any:
    if stride == 1:
        return inputs
    skip = _conv(filters_out, 1, name + "_skip_1x1", strides=stride, use_bias=False)(inputs)
    return _bn(name + "_skip_bn")(skip)


def _xy_block(inputs: Any, filters_in: int, filters_out: int, group_width: int, stride: int,
              se_ratio: Any, name: str) -> Any:  # fmt: skip
    _check_filters(filters_in, filters_out, stride)
    groups = filters_out // group_width
    skip = _skip(inputs, filters_out, stride, name)
    x = _conv(filters_out, 1, name + "_conv_1x1_1", use_bias=False)(inputs)
    x = _bn(name + "_conv_1x1_1_bn")(x)
    x = ReLU(name=name + "_conv_1x1_1_relu")(x)
    x = _conv(filters_out, 3, name + "_conv_3x3", use_bias=False, strides=stride, groups=groups,
              padding="same")(x)  # fmt: skip
    x = _bn(name + "_conv_3x3_bn")(x)
    x = ReLU(name=name + "_conv_3x3_relu")(x)
    if se_ratio is not None:
        x = SqueezeAndExciteBlock(filters_out, int(filters_in * se_ratio), name=name)(x)
    x = _conv(filters_out, 1, name + "_conv_1x1_2", use_bias=False)(x)
    x = _bn(name + "_conv_1x1_2_bn")(x)
    return ReLU(name=name + "_exit_relu")(x + skip)


def XBlock(filters_in: int, filters_out: int, group_width: int, stride: int = 1,  # noqa: N802
           name: Any = None) -> Any:  # fmt: skip
    """The X block: 1x1, grouped 3x3 (strided), 1x1, residual, ReLU."""
    if name is None:
        name = str(get_uid("xblock"))

    def apply(inputs: Any) -> Any:
        return _xy_block(inputs, filters_in, filters_out, group_width, stride, None, name)

    return apply


def YBlock(filters_in: int, filters_out: int, group_width: int, stride: int = 1,  # noqa: N802
           squeeze_excite_ratio: float = 0.25, name: Any = None) -> Any:  # fmt: skip
    """The Y block: an X block with squeeze and excite after the grouped 3x3 convolution."""
    if name is None:
        name = str(get_uid("yblock"))

    def apply(inputs: Any) -> Any:
        return _xy_block(inputs, filters_in, filters_out, group_width, stride,
                         squeeze_excite_ratio, name)  # fmt: skip

    return apply


def ZBlock(filters_in: int, filters_out: int, group_width: int, stride: int = 1,  # noqa: N802
           squeeze_excite_ratio: float = 0.25, bottleneck_ratio: float = 0.25,
           name: Any = None) -> Any:  # fmt: skip
    """The Z block (https://arxiv.org/abs/2103.06877): inverted bottleneck with SiLU and SE.
    (tf_keras's version forgets to apply its SE block and cannot build; this one applies it.)"""
    if name is None:
        name = str(get_uid("zblock"))

    def apply(inputs: Any) -> Any:
        _check_filters(filters_in, filters_out, stride)
        groups = filters_out // group_width
        se_filters = int(filters_in * squeeze_excite_ratio)
        inv_btlneck_filters = int(filters_out / bottleneck_ratio)
        x = _conv(inv_btlneck_filters, 1, name + "_conv_1x1_1", use_bias=False)(inputs)
        x = nn_ops.silu(_bn(name + "_conv_1x1_1_bn")(x))
        x = _conv(inv_btlneck_filters, 3, name + "_conv_3x3", use_bias=False, strides=stride,
                  groups=groups, padding="same")(x)  # fmt: skip
        x = nn_ops.silu(_bn(name + "_conv_3x3_bn")(x))
        x = SqueezeAndExciteBlock(inv_btlneck_filters, se_filters, name=name)(x)
        x = _conv(filters_out, 1, name + "_conv_1x1_2", use_bias=False)(x)
        x = _bn(name + "_conv_1x1_2_bn")(x)
        return x if stride != 1 else x + inputs

    return apply


def Stage(block_type: str, depth: int, group_width: int, filters_in: int,  # noqa: N802
          filters_out: int, name: Any = None) -> Any:  # fmt: skip
    """`depth` blocks of `block_type` ("X", "Y" or "Z"); the first one strides by 2."""
    if name is None:
        name = str(get_uid("stage"))
    blocks = {"X": XBlock, "Y": YBlock, "Z": ZBlock}
    if block_type not in blocks:
        raise NotImplementedError(
            f"Block type `{block_type}` not recognized. block_type must be one of (`X`, `Y`, `Z`). "
        )
    block = blocks[block_type]

    def apply(inputs: Any) -> Any:
        x = block(filters_in, filters_out, group_width, stride=2,
                  name=f"{name}_{block_type}Block_0")(inputs)  # fmt: skip
        for i in range(1, depth):
            x = block(filters_out, filters_out, group_width,
                      name=f"{name}_{block_type}Block_{i}")(x)  # fmt: skip
        return x

    return apply


def Head(num_classes: int = 1000, name: Any = None) -> Any:  # noqa: N802 - tf_keras's name
    """Global average pooling and a Dense layer without activation (logits)."""
    if name is None:
        name = str(get_uid("head"))

    def apply(x: Any) -> Any:
        x = GlobalAveragePooling2D(name=name + "_head_gap")(x)
        return Dense(num_classes, name=name + "head_dense")(x)

    return apply


def RegNet(  # noqa: N802 - tf_keras's name
    depths: Any,
    widths: Any,
    group_width: int,
    block_type: str,
    default_size: int,
    model_name: str = "regnet",
    include_preprocessing: bool = True,
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
) -> Model:
    """A RegNet of 4 stages of `depths` blocks of `block_type` with `widths` channels."""
    img_input, input_shape = imagenet_utils.input_and_shape(
        weights, include_top, classes, input_tensor, input_shape, default_size, min_size=32
    )
    if weights == "imagenet" and model_name[-4:] not in WEIGHTS_HASHES:
        raise ValueError(
            "RegNet: ImageNet weights are published for model names ending in one of "
            f"{sorted(WEIGHTS_HASHES)}; got model_name={model_name!r}. Keep the default "
            "model_name, or pass weights=None or a file path."
        )
    inputs = model_inputs(input_tensor, img_input, first=True)
    x = inputs
    if include_preprocessing:
        x = PreStem(name=model_name)(x)
    x = Stem(name=model_name)(x)
    in_channels = 32  # the stem's output
    for num_stage in range(4):
        out_channels = widths[num_stage]
        x = Stage(block_type, depths[num_stage], group_width, in_channels, out_channels,
                  name=model_name + "_Stage_" + str(num_stage))(x)  # fmt: skip
        in_channels = out_channels
    if include_top:
        x = Head(num_classes=classes)(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
    elif pooling == "avg":
        x = GlobalAveragePooling2D()(x)
    elif pooling == "max":
        x = GlobalMaxPooling2D()(x)

    model = Model(inputs=inputs, outputs=x, name=model_name)
    return load_weights(model, weights, include_top, WEIGHTS_HASHES, model_name[-4:],
                        BASE_WEIGHTS_PATH)  # fmt: skip


def _variant(name: str, key: str) -> Any:
    config = MODEL_CONFIGS[key]
    return variant(RegNet, name, __name__, BASE_DOCSTRING.format(name=name), f"regnet{key}",
                   depths=config["depths"], widths=config["widths"],
                   group_width=config["group_width"], block_type=config["block_type"],
                   default_size=config["default_size"])  # fmt: skip


RegNetX002 = _variant("RegNetX002", "x002")
RegNetX004 = _variant("RegNetX004", "x004")
RegNetX006 = _variant("RegNetX006", "x006")
RegNetX008 = _variant("RegNetX008", "x008")
RegNetX016 = _variant("RegNetX016", "x016")
RegNetX032 = _variant("RegNetX032", "x032")
RegNetX040 = _variant("RegNetX040", "x040")
RegNetX064 = _variant("RegNetX064", "x064")
RegNetX080 = _variant("RegNetX080", "x080")
RegNetX120 = _variant("RegNetX120", "x120")
RegNetX160 = _variant("RegNetX160", "x160")
RegNetX320 = _variant("RegNetX320", "x320")
RegNetY002 = _variant("RegNetY002", "y002")
RegNetY004 = _variant("RegNetY004", "y004")
RegNetY006 = _variant("RegNetY006", "y006")
RegNetY008 = _variant("RegNetY008", "y008")
RegNetY016 = _variant("RegNetY016", "y016")
RegNetY032 = _variant("RegNetY032", "y032")
RegNetY040 = _variant("RegNetY040", "y040")
RegNetY064 = _variant("RegNetY064", "y064")
RegNetY080 = _variant("RegNetY080", "y080")
RegNetY120 = _variant("RegNetY120", "y120")
RegNetY160 = _variant("RegNetY160", "y160")
RegNetY320 = _variant("RegNetY320", "y320")
