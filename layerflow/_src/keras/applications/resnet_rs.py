"""ResNet-RS 50 to 420 (Bello et al., 2021, https://arxiv.org/abs/2103.07579).

Layer for layer tf_keras 2.x's `applications/resnet_rs.py`: ResNet-D stem, bottleneck blocks
with squeeze-and-excite and (for the deeper variants) drop-connect, names and order included.
Preprocessing (`Rescaling(1/255)`, then the ImageNet mean and std for 3 channels) is inside the
model; `preprocess_input` is a pass-through. `weights` also takes "imagenet-i<size>" to choose
among the published variants of a depth ("imagenet" is the largest).

As in tf_keras, the residual `Dropout` of a block drops with rate `drop_connect_rate *
(group + 2) / (groups + 1)` (a "survival probability" used as the drop rate).
"""

from __future__ import annotations

from typing import Any

from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.applications.modern_utils import (
    bn_axis,
    classifier_top,
    decode_predictions,
    image_input,
    is_file,
    model_inputs,
    preprocess_input,
)
from layerflow._src.keras.backend_api.session_api import get_uid
from layerflow._src.keras.engine.backend_config import image_data_format
from layerflow._src.keras.engine.model import Model
from layerflow._src.keras.layers import (
    Activation,
    Add,
    AveragePooling2D,
    BatchNormalization,
    Conv2D,
    Dropout,
    GlobalAveragePooling2D,
    Normalization,
    Rescaling,
    Reshape,
    ZeroPadding2D,
    multiply,
)

__all__ = [
    "ResNetRS",
    "ResNetRS101",
    "ResNetRS152",
    "ResNetRS200",
    "ResNetRS270",
    "ResNetRS350",
    "ResNetRS420",
    "ResNetRS50",
    "decode_predictions",
    "preprocess_input",
]

BASE_WEIGHTS_URL = "https://storage.googleapis.com/tensorflow/keras-applications/resnet_rs/"
# MD5 of the published files.
WEIGHT_HASHES = {
    "resnet-rs-101-i160.h5": "544b3434d00efc199d66e9058c7f3379",
    "resnet-rs-101-i160_notop.h5": "82d5b90c5ce9d710da639d6216d0f979",
    "resnet-rs-101-i192.h5": "eb285be29ab42cf4835ff20a5e3b5d23",
    "resnet-rs-101-i192_notop.h5": "f9a0f6b85faa9c3db2b6e233c4eebb5b",
    "resnet-rs-152-i192.h5": "8d72a301ed8a6f11a47c4ced4396e338",
    "resnet-rs-152-i192_notop.h5": "5fbf7ac2155cb4d5a6180ee9e3aa8704",
    "resnet-rs-152-i224.h5": "31a46a92ab21b84193d0d71dd8c3d03b",
    "resnet-rs-152-i224_notop.h5": "dc8b2cba2005552eafa3167f00dc2133",
    "resnet-rs-152-i256.h5": "ba6271b99bdeb4e7a9b15c05964ef4ad",
    "resnet-rs-152-i256_notop.h5": "fa79794252dbe47c89130f65349d654a",
    "resnet-rs-200-i256.h5": "a76930b741884e09ce90fa7450747d5f",
    "resnet-rs-200-i256_notop.h5": "bbdb3994718dfc0d1cd45d7eff3f3d9c",
    "resnet-rs-270-i256.h5": "20d575825ba26176b03cb51012a367a8",
    "resnet-rs-270-i256_notop.h5": "2c42ecb22e35f3e23d2f70babce0a2aa",
    "resnet-rs-350-i256.h5": "f4a039dc3c421321b7fc240494574a68",
    "resnet-rs-350-i256_notop.h5": "6e44b55025bbdff8f51692a023143d66",
    "resnet-rs-350-i320.h5": "7ccb858cc738305e8ceb3c0140bee393",
    "resnet-rs-350-i320_notop.h5": "ab0c1f9079d2f85a9facbd2c88aa6079",
    "resnet-rs-420-i320.h5": "ae0eb9bed39e64fc8d7e0db4018dc7e8",
    "resnet-rs-420-i320_notop.h5": "fe6217c32be8305b1889657172b98884",
    "resnet-rs-50-i160.h5": "69d9d925319f00a8bdd4af23c04e4102",
    "resnet-rs-50-i160_notop.h5": "90daa68cd26c95aa6c5d25451e095529",
}
DEPTH_TO_WEIGHT_VARIANTS = {
    50: [160],
    101: [160, 192],
    152: [192, 224, 256],
    200: [256],
    270: [256],
    350: [256, 320],
    420: [320],
}
# depth: the number of bottleneck blocks of the 4 groups (64, 128, 256, 512 filters).
_REPEATS = {
    50: (3, 4, 6, 3),
    101: (3, 4, 23, 3),
    152: (3, 8, 36, 3),
    200: (3, 24, 36, 3),
    270: (4, 29, 53, 4),
    350: (4, 36, 72, 4),
    420: (4, 44, 87, 4),
}
BLOCK_ARGS = {
    depth: [{"input_filters": f, "num_repeats": r} for f, r in zip((64, 128, 256, 512), repeats)]
    for depth, repeats in _REPEATS.items()
}
CONV_KERNEL_INITIALIZER = {
    "class_name": "VarianceScaling",
    "config": {"scale": 2.0, "mode": "fan_out", "distribution": "truncated_normal"},
}

BASE_DOCSTRING = """Instantiates the {name} architecture (https://arxiv.org/abs/2103.07579).

  Input preprocessing is part of the model (`include_preprocessing=True`: `Rescaling(1/255)`,
  then the ImageNet mean and std), so it takes float pixels in [0, 255] and
  `resnet_rs.preprocess_input` is a pass-through.

  Args:
    include_top: whether to include the classifier on top. Defaults to True.
    weights: None (random initialization), "imagenet" (the published variant trained on the
      largest input), "imagenet-i<size>" (the variant trained on size x size inputs), or the path
      to a weights file. Pretrained files are taken from the Keras cache `~/.keras/models/`, else
      downloaded.
    classes: number of classes (only without pretrained weights when `include_top`).
    input_shape: optional shape tuple (each side at least 32).
    input_tensor: optional Keras tensor (output of `layers.Input()`) to use as the input.
    pooling: with `include_top=False`: None (4D output of the last block), "avg" or "max".
    classifier_activation: activation of the "predictions" layer (None for logits); with
      pretrained weights only None or "softmax".
    include_preprocessing: whether the model rescales and normalizes its input.

  Returns:
    A `keras.Model`.

  >>> # model = tf.keras.applications.{name}(weights=None, input_shape=(64, 64, 3), classes=10)
"""


def fixed_padding(inputs: Any, kernel_size: int) -> Any:
    """Zero-pad the spatial dimensions by kernel_size - 1, independently of the input size."""
    pad_total = kernel_size - 1
    pad_beg = pad_total // 2
    pad_end = pad_total - pad_beg
    return ZeroPadding2D(padding=((pad_beg, pad_end), (pad_beg, pad_end)))(inputs)


def Conv2DFixedPadding(filters: int, kernel_size: int, strides: int,  # noqa: N802
                       name: Any = None) -> Any:  # fmt: skip
    """A bias-free Conv2D; with strides > 1 the input is fixed-padded and the conv is 'valid'."""
    if name is None:
        name = f"conv_{get_uid('conv_')}"

    def apply(inputs: Any) -> Any:
        if strides > 1:
            inputs = fixed_padding(inputs, kernel_size)
        return Conv2D(
            filters=filters,
            kernel_size=kernel_size,
            strides=strides,
            padding="same" if strides == 1 else "valid",
            use_bias=False,
            kernel_initializer=CONV_KERNEL_INITIALIZER,
            name=name,
        )(inputs)

    return apply


def _bn(momentum: float, epsilon: float, name: str) -> BatchNormalization:
    return BatchNormalization(axis=bn_axis(), momentum=momentum, epsilon=epsilon, name=name)


def STEM(bn_momentum: float = 0.0, bn_epsilon: float = 1e-5, activation: Any = "relu",  # noqa: N802
         name: Any = None) -> Any:  # fmt: skip
    """The ResNet-D stem: four 3x3 convolutions (32, 32, 64, 64 filters; the first and last
    strided), each followed by BN and the activation."""
    if name is None:
        name = f"stem_{get_uid('stem_')}"

    def apply(inputs: Any) -> Any:
        x = inputs
        for k, (filters, strides) in enumerate(((32, 2), (32, 1), (64, 1), (64, 2)), start=1):
            x = Conv2DFixedPadding(filters=filters, kernel_size=3, strides=strides,
                                   name=f"{name}_stem_conv_{k}")(x)  # fmt: skip
            x = _bn(bn_momentum, bn_epsilon, f"{name}_stem_batch_norm_{k}")(x)
            x = Activation(activation, name=f"{name}_stem_act_{k}")(x)
        return x

    return apply


def SE(in_filters: int, se_ratio: float = 0.25, expand_ratio: int = 1,  # noqa: N802
       name: Any = None) -> Any:  # fmt: skip
    """Squeeze and excitation over the 4 * in_filters channels of a bottleneck's output."""
    if name is None:
        name = f"se_{get_uid('se_')}"

    def apply(inputs: Any) -> Any:
        x = GlobalAveragePooling2D(name=name + "_se_squeeze")(inputs)
        se_shape = (x.shape[-1], 1, 1) if bn_axis() == 1 else (1, 1, x.shape[-1])
        x = Reshape(se_shape, name=name + "_se_reshape")(x)
        x = Conv2D(
            filters=max(1, int(in_filters * 4 * se_ratio)),
            kernel_size=[1, 1],
            strides=[1, 1],
            kernel_initializer=CONV_KERNEL_INITIALIZER,
            padding="same",
            use_bias=True,
            activation="relu",
            name=name + "_se_reduce",
        )(x)
        x = Conv2D(
            filters=4 * in_filters * expand_ratio,
            kernel_size=[1, 1],
            strides=[1, 1],
            kernel_initializer=CONV_KERNEL_INITIALIZER,
            padding="same",
            use_bias=True,
            activation="sigmoid",
            name=name + "_se_expand",
        )(x)
        return multiply([inputs, x], name=name + "_se_excite")

    return apply


def BottleneckBlock(  # noqa: N802 - tf_keras's name
    filters: int,
    strides: int,
    use_projection: bool,
    bn_momentum: float = 0.0,
    bn_epsilon: float = 1e-5,
    activation: Any = "relu",
    se_ratio: float = 0.25,
    survival_probability: float = 0.8,
    name: Any = None,
) -> Any:
    """A bottleneck residual block (1x1, 3x3, 1x1 to 4 * filters) with SE and drop-connect;
    the projection shortcut average-pools before its 1x1 convolution when striding."""
    if name is None:
        name = f"block_0_{get_uid('block_0_')}"

    def apply(inputs: Any) -> Any:
        shortcut = inputs
        if use_projection:
            filters_out = filters * 4
            if strides == 2:
                shortcut = AveragePooling2D(pool_size=(2, 2), strides=(2, 2), padding="same",
                                            name=name + "_projection_pooling")(inputs)  # fmt: skip
                shortcut = Conv2DFixedPadding(filters=filters_out, kernel_size=1, strides=1,
                                              name=name + "_projection_conv")(shortcut)  # fmt: skip
            else:
                shortcut = Conv2DFixedPadding(filters=filters_out, kernel_size=1, strides=strides,
                                              name=name + "_projection_conv")(inputs)  # fmt: skip
            shortcut = _bn(bn_momentum, bn_epsilon, name + "_projection_batch_norm")(shortcut)

        x = Conv2DFixedPadding(filters=filters, kernel_size=1, strides=1,
                               name=name + "_conv_1")(inputs)  # fmt: skip
        x = _bn(bn_momentum, bn_epsilon, name + "batch_norm_1")(x)  # (sic: no "_", as tf_keras)
        x = Activation(activation, name=name + "_act_1")(x)
        x = Conv2DFixedPadding(filters=filters, kernel_size=3, strides=strides,
                               name=name + "_conv_2")(x)  # fmt: skip
        x = _bn(bn_momentum, bn_epsilon, name + "_batch_norm_2")(x)
        x = Activation(activation, name=name + "_act_2")(x)
        x = Conv2DFixedPadding(filters=filters * 4, kernel_size=1, strides=1,
                               name=name + "_conv_3")(x)  # fmt: skip
        x = _bn(bn_momentum, bn_epsilon, name + "_batch_norm_3")(x)
        if 0 < se_ratio < 1:
            x = SE(filters, se_ratio=se_ratio, name=name + "_se")(x)
        if survival_probability:
            x = Dropout(survival_probability, noise_shape=(None, 1, 1, 1),
                        name=name + "_drop")(x)  # fmt: skip
        x = Add()([x, shortcut])
        return Activation(activation, name=name + "_output_act")(x)

    return apply


def BlockGroup(  # noqa: N802 - tf_keras's name
    filters: int,
    strides: int,
    num_repeats: int,
    se_ratio: float = 0.25,
    bn_epsilon: float = 1e-5,
    bn_momentum: float = 0.0,
    activation: Any = "relu",
    survival_probability: float = 0.8,
    name: Any = None,
) -> Any:
    """`num_repeats` bottleneck blocks; only the first projects and strides."""
    if name is None:
        name = f"block_group_{get_uid('block_group_')}"

    def apply(inputs: Any) -> Any:
        x = inputs
        for i in range(num_repeats):
            x = BottleneckBlock(
                filters=filters,
                strides=strides if i == 0 else 1,
                use_projection=i == 0,
                se_ratio=se_ratio,
                bn_epsilon=bn_epsilon,
                bn_momentum=bn_momentum,
                activation=activation,
                survival_probability=survival_probability,
                name=name + f"_block_{i}_",
            )(x)
        return x

    return apply


def get_survival_probability(init_rate: float, block_num: int, total_blocks: int) -> float:
    """The drop-connect rate of block group `block_num` (a linear ramp)."""
    return init_rate * float(block_num) / total_blocks


def ResNetRS(  # noqa: N802 - tf_keras's name
    depth: int,
    input_shape: Any = None,
    bn_momentum: float = 0.0,
    bn_epsilon: float = 1e-5,
    activation: Any = "relu",
    se_ratio: float = 0.25,
    dropout_rate: float = 0.25,
    drop_connect_rate: float = 0.2,
    include_top: bool = True,
    block_args: Any = None,
    model_name: str = "resnet-rs",
    pooling: Any = None,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
    include_preprocessing: bool = True,
) -> Model:
    """A ResNet-RS of `depth` (one of the keys of `DEPTH_TO_WEIGHT_VARIANTS`)."""
    if depth not in DEPTH_TO_WEIGHT_VARIANTS:
        raise ValueError(
            f"ResNetRS: depth must be one of {sorted(DEPTH_TO_WEIGHT_VARIANTS)}; got {depth!r}."
        )
    available_weight_variants = DEPTH_TO_WEIGHT_VARIANTS[depth]
    if weights == "imagenet":  # the variant trained on the largest input
        weights = f"{weights}-i{max(available_weight_variants)}"
    weights_allow_list = [f"imagenet-i{x}" for x in available_weight_variants]
    if not (weights in {*weights_allow_list, None} or is_file(weights)):
        raise ValueError(
            "The `weights` argument should be either `None` (random initialization), "
            "`'imagenet'` (pre-training on ImageNet, with highest available input shape), or "
            f"the path to the weights file to be loaded. For ResNetRS{depth} the following "
            f"weight variants are available {weights_allow_list} (default=highest). Received "
            f"weights={weights}"
        )
    if weights in weights_allow_list and include_top and classes != 1000:
        raise ValueError(
            f"If using `weights` as `'imagenet'` or any of {weights_allow_list} with "
            f"`include_top` as true, `classes` should be 1000. Received classes={classes}"
        )
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape,
        default_size=224,
        min_size=32,
        data_format=image_data_format(),
        require_flatten=include_top,
        weights=weights,
    )
    img_input = image_input(input_tensor, input_shape)
    axis = bn_axis()
    x = img_input
    if include_preprocessing:
        num_channels = input_shape[axis - 1]
        x = Rescaling(scale=1.0 / 255)(x)
        if num_channels == 3:
            x = Normalization(
                mean=[0.485, 0.456, 0.406],
                variance=[0.229**2, 0.224**2, 0.225**2],
                axis=axis,
            )(x)

    x = STEM(bn_momentum=bn_momentum, bn_epsilon=bn_epsilon, activation=activation)(x)
    if block_args is None:
        block_args = BLOCK_ARGS[depth]
    for i, args in enumerate(block_args):
        x = BlockGroup(
            filters=args["input_filters"],
            activation=activation,
            strides=(1 if i == 0 else 2),
            num_repeats=args["num_repeats"],
            se_ratio=se_ratio,
            bn_momentum=bn_momentum,
            bn_epsilon=bn_epsilon,
            survival_probability=get_survival_probability(
                init_rate=drop_connect_rate, block_num=i + 2, total_blocks=len(block_args) + 1
            ),
            name=f"BlockGroup{i + 2}_",
        )(x)

    x = classifier_top(x, include_top, pooling, classes, classifier_activation, weights,
                       dropout_rate)  # fmt: skip
    model = Model(model_inputs(input_tensor, img_input), x, name=model_name)
    if weights in weights_allow_list:
        weights_name = f"{model_name}-{weights.split('-')[-1]}"  # e.g. "resnet-rs-50-i160"
        if not include_top:
            weights_name += "_notop"
        filename = f"{weights_name}.h5"
        if filename not in WEIGHT_HASHES:
            raise ValueError(
                f"ResNetRS: no ImageNet weights are published under the name '{filename}' "
                f"(model_name={model_name!r}); keep the default model_name, or pass "
                "weights=None or a file path."
            )
        imagenet_utils.load_model_weights(
            model, "imagenet", filename, BASE_WEIGHTS_URL + filename, WEIGHT_HASHES[filename]
        )
    elif weights is not None:
        imagenet_utils.load_model_weights(model, weights)
    return model


def _variant(name: str, depth: int, drop_connect_rate: float, dropout_rate: float) -> Any:
    def constructor(
        include_top: bool = True,
        weights: Any = "imagenet",
        classes: int = 1000,
        input_shape: Any = None,
        input_tensor: Any = None,
        pooling: Any = None,
        classifier_activation: Any = "softmax",
        include_preprocessing: bool = True,
    ) -> Model:
        return ResNetRS(
            depth=depth,
            include_top=include_top,
            drop_connect_rate=drop_connect_rate,
            dropout_rate=dropout_rate,
            weights=weights,
            classes=classes,
            input_shape=input_shape,
            input_tensor=input_tensor,
            pooling=pooling,
            classifier_activation=classifier_activation,
            model_name=f"resnet-rs-{depth}",
            include_preprocessing=include_preprocessing,
        )

    constructor.__name__ = constructor.__qualname__ = name
    constructor.__module__ = __name__
    constructor.__doc__ = BASE_DOCSTRING.format(name=name)
    return constructor


ResNetRS50 = _variant("ResNetRS50", 50, 0.0, 0.25)
ResNetRS101 = _variant("ResNetRS101", 101, 0.0, 0.25)
ResNetRS152 = _variant("ResNetRS152", 152, 0.0, 0.25)
ResNetRS200 = _variant("ResNetRS200", 200, 0.1, 0.25)
ResNetRS270 = _variant("ResNetRS270", 270, 0.1, 0.25)
ResNetRS350 = _variant("ResNetRS350", 350, 0.1, 0.4)
ResNetRS420 = _variant("ResNetRS420", 420, 0.1, 0.4)
