"""NASNetMobile and NASNetLarge (`tf.keras.applications.nasnet`), as tf_keras builds them.

Reference: [Learning Transferable Architectures for Scalable Image Recognition](
https://arxiv.org/abs/1707.07012) (CVPR 2018). Inputs are preprocessed with `preprocess_input`
("tf": scaled to [-1, 1]). NASNet is built channels_last only, as in Keras.
"""

from __future__ import annotations

import logging
from typing import Any

from layerflow._src.keras import layers
from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.engine import backend_config
from layerflow._src.keras.engine.model import Model

__all__ = ["NASNet", "NASNetLarge", "NASNetMobile", "decode_predictions", "preprocess_input"]

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/nasnet/"
_FILES = {  # (default_size, include_top) -> (cache name, url name, hash)
    (224, True): ("nasnet_mobile.h5", "NASNet-mobile.h5", "020fb642bf7360b370c678b08e0adf61"),
    (224, False): ("nasnet_mobile_no_top.h5", "NASNet-mobile-no-top.h5",
                   "1ed92395b5b598bdda52abe5c0dbfd63"),
    (331, True): ("nasnet_large.h5", "NASNet-large.h5", "11577c9a518f0070763c2b964a382f17"),
    (331, False): ("nasnet_large_no_top.h5", "NASNet-large-no-top.h5",
                   "d81d89dc07e6e56530c4e77faddd61b5"),
}  # fmt: skip
_BN = {"momentum": 0.9997, "epsilon": 1e-3}
_log = logging.getLogger("layerflow")


def NASNet(  # noqa: N802 - Keras's name
    input_shape: Any = None,
    penultimate_filters: int = 4032,
    num_blocks: int = 6,
    stem_block_filters: int = 96,
    skip_reduction: bool = True,
    filter_multiplier: int = 2,
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    default_size: int | None = None,
    classifier_activation: Any = "softmax",
) -> Model:
    """A NASNet-A model (`penultimate_filters` must be a multiple of 24 * filter_multiplier**2)."""
    imagenet_utils.validate_weights(weights, include_top, classes)
    if isinstance(input_shape, tuple) and None in input_shape and weights == "imagenet":
        raise ValueError(
            "When specifying the input shape of a NASNet and loading `ImageNet` weights, the "
            f"input_shape argument must be static (no None entries). Got: `input_shape="
            f"{input_shape}`."
        )
    if default_size is None:
        default_size = 331
    input_shape = imagenet_utils.obtain_input_shape(
        input_shape,
        default_size=default_size,
        min_size=32,
        data_format=backend_config.image_data_format(),
        require_flatten=include_top,
        weights=weights,
    )
    if penultimate_filters % (24 * (filter_multiplier**2)) != 0:
        raise ValueError(
            "For NASNet-A models, the `penultimate_filters` must be a multiple of 24 * "
            f"(`filter_multiplier` ** 2). Current value: {penultimate_filters}"
        )
    old_data_format = None
    if backend_config.image_data_format() != "channels_last":
        _log.warning(
            "The NASNet family of models is only available for the input data format "
            '"channels_last" (width, height, channels). The model being returned right now '
            'will expect inputs to follow the "channels_last" data format.'
        )
        backend_config.set_image_data_format("channels_last")
        old_data_format = "channels_first"
    try:
        model = _build(input_shape, penultimate_filters, num_blocks, stem_block_filters,
                       skip_reduction, filter_multiplier, include_top, weights, input_tensor,
                       pooling, classes, classifier_activation)  # fmt: skip
        if weights == "imagenet":
            if (default_size, include_top) not in _FILES:
                raise ValueError(
                    "ImageNet weights can only be loaded with NASNetLarge or NASNetMobile"
                )
            fname, url_name, file_hash = _FILES[(default_size, include_top)]
            imagenet_utils.load_model_weights(
                model, weights, fname, BASE_WEIGHTS_PATH + url_name, file_hash
            )
        else:
            imagenet_utils.load_model_weights(model, weights)
    finally:
        if old_data_format:
            backend_config.set_image_data_format(old_data_format)
    return model


def _build(input_shape: Any, penultimate_filters: int, num_blocks: int, stem_block_filters: int,
           skip_reduction: bool, filter_multiplier: int, include_top: bool, weights: Any,
           input_tensor: Any, pooling: Any, classes: int,
           classifier_activation: Any) -> Model:  # fmt: skip
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    filters = penultimate_filters // 24
    x = layers.Conv2D(stem_block_filters, (3, 3), strides=(2, 2), padding="valid",
                      use_bias=False, name="stem_conv1", kernel_initializer="he_normal")(
        img_input
    )  # fmt: skip
    x = layers.BatchNormalization(axis=-1, name="stem_bn1", **_BN)(x)
    p = None
    x, p = _reduction_a_cell(x, p, filters // (filter_multiplier**2), block_id="stem_1")
    x, p = _reduction_a_cell(x, p, filters // filter_multiplier, block_id="stem_2")
    for stage in range(3):
        width = filters * filter_multiplier**stage
        if stage:
            x, p0 = _reduction_a_cell(x, p, width, block_id=f"reduce_{stage * num_blocks}")
            p = p if skip_reduction else p0
        for i in range(num_blocks):
            block = i if stage == 0 else stage * num_blocks + i + 1
            x, p = _normal_a_cell(x, p, width, block_id=f"{block}")
    x = layers.Activation("relu")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D()(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool_features(x, pooling)
    return Model(imagenet_utils.source_inputs(input_tensor, img_input), x, name="NASNet")


def NASNetMobile(  # noqa: N802 - Keras's public name
    input_shape: Any = None,
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
) -> Model:
    """NASNet-A Mobile (4 @ 1056; default input 224x224x3, at least 32x32)."""
    return NASNet(input_shape, penultimate_filters=1056, num_blocks=4, stem_block_filters=32,
                  skip_reduction=False, filter_multiplier=2, include_top=include_top,
                  weights=weights, input_tensor=input_tensor, pooling=pooling, classes=classes,
                  default_size=224, classifier_activation=classifier_activation)  # fmt: skip


def NASNetLarge(  # noqa: N802 - Keras's public name
    input_shape: Any = None,
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
) -> Model:
    """NASNet-A Large (6 @ 4032; default input 331x331x3, at least 32x32)."""
    return NASNet(input_shape, penultimate_filters=4032, num_blocks=6, stem_block_filters=96,
                  skip_reduction=True, filter_multiplier=2, include_top=include_top,
                  weights=weights, input_tensor=input_tensor, pooling=pooling, classes=classes,
                  default_size=331, classifier_activation=classifier_activation)  # fmt: skip


def _separable_conv_block(ip: Any, filters: int, kernel_size: Any = (3, 3),
                          strides: Any = (1, 1), block_id: str | None = None) -> Any:  # fmt: skip
    x = layers.Activation("relu")(ip)
    if strides == (2, 2):
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, kernel_size),
                                 name=f"separable_conv_1_pad_{block_id}")(x)  # fmt: skip
        conv_pad = "valid"
    else:
        conv_pad = "same"
    x = layers.SeparableConv2D(filters, kernel_size, strides=strides,
                               name=f"separable_conv_1_{block_id}", padding=conv_pad,
                               use_bias=False, kernel_initializer="he_normal")(x)  # fmt: skip
    x = layers.BatchNormalization(axis=-1, name=f"separable_conv_1_bn_{block_id}", **_BN)(x)
    x = layers.Activation("relu")(x)
    x = layers.SeparableConv2D(filters, kernel_size, name=f"separable_conv_2_{block_id}",
                               padding="same", use_bias=False,
                               kernel_initializer="he_normal")(x)  # fmt: skip
    return layers.BatchNormalization(axis=-1, name=f"separable_conv_2_bn_{block_id}", **_BN)(x)


def _adjust_block(p: Any, ip: Any, filters: int, block_id: str | None = None) -> Any:
    """Match `p` (the previous cell's output) to `ip` in spatial size and channels."""
    if p is None:
        return ip
    ip_shape, p_shape = tuple(ip.shape), tuple(p.shape)
    if p_shape[-2] != ip_shape[-2]:
        p = layers.Activation("relu", name=f"adjust_relu_1_{block_id}")(p)
        p1 = layers.AveragePooling2D((1, 1), strides=(2, 2), padding="valid",
                                     name=f"adjust_avg_pool_1_{block_id}")(p)  # fmt: skip
        p1 = layers.Conv2D(filters // 2, (1, 1), padding="same", use_bias=False,
                           name=f"adjust_conv_1_{block_id}",
                           kernel_initializer="he_normal")(p1)  # fmt: skip
        p2 = layers.ZeroPadding2D(padding=((0, 1), (0, 1)))(p)
        p2 = layers.Cropping2D(cropping=((1, 0), (1, 0)))(p2)
        p2 = layers.AveragePooling2D((1, 1), strides=(2, 2), padding="valid",
                                     name=f"adjust_avg_pool_2_{block_id}")(p2)  # fmt: skip
        p2 = layers.Conv2D(filters // 2, (1, 1), padding="same", use_bias=False,
                           name=f"adjust_conv_2_{block_id}",
                           kernel_initializer="he_normal")(p2)  # fmt: skip
        p = layers.concatenate([p1, p2], axis=-1)
        p = layers.BatchNormalization(axis=-1, name=f"adjust_bn_{block_id}", **_BN)(p)
    elif p_shape[-1] != filters:
        p = layers.Activation("relu")(p)
        p = layers.Conv2D(filters, (1, 1), strides=(1, 1), padding="same",
                          name=f"adjust_conv_projection_{block_id}", use_bias=False,
                          kernel_initializer="he_normal")(p)  # fmt: skip
        p = layers.BatchNormalization(axis=-1, name=f"adjust_bn_{block_id}", **_BN)(p)
    return p


def _normal_a_cell(ip: Any, p: Any, filters: int, block_id: str | None = None) -> tuple:
    p = _adjust_block(p, ip, filters, block_id)
    h = layers.Activation("relu")(ip)
    h = layers.Conv2D(filters, (1, 1), strides=(1, 1), padding="same",
                      name=f"normal_conv_1_{block_id}", use_bias=False,
                      kernel_initializer="he_normal")(h)  # fmt: skip
    h = layers.BatchNormalization(axis=-1, name=f"normal_bn_1_{block_id}", **_BN)(h)
    x1_1 = _separable_conv_block(h, filters, kernel_size=(5, 5),
                                 block_id=f"normal_left1_{block_id}")  # fmt: skip
    x1_2 = _separable_conv_block(p, filters, block_id=f"normal_right1_{block_id}")
    x1 = layers.add([x1_1, x1_2], name=f"normal_add_1_{block_id}")
    x2_1 = _separable_conv_block(p, filters, (5, 5), block_id=f"normal_left2_{block_id}")
    x2_2 = _separable_conv_block(p, filters, (3, 3), block_id=f"normal_right2_{block_id}")
    x2 = layers.add([x2_1, x2_2], name=f"normal_add_2_{block_id}")
    x3 = layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same",
                                 name=f"normal_left3_{block_id}")(h)  # fmt: skip
    x3 = layers.add([x3, p], name=f"normal_add_3_{block_id}")
    x4_1 = layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same",
                                   name=f"normal_left4_{block_id}")(p)  # fmt: skip
    x4_2 = layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same",
                                   name=f"normal_right4_{block_id}")(p)  # fmt: skip
    x4 = layers.add([x4_1, x4_2], name=f"normal_add_4_{block_id}")
    x5 = _separable_conv_block(h, filters, block_id=f"normal_left5_{block_id}")
    x5 = layers.add([x5, h], name=f"normal_add_5_{block_id}")
    x = layers.concatenate([p, x1, x2, x3, x4, x5], axis=-1, name=f"normal_concat_{block_id}")
    return x, ip


def _reduction_a_cell(ip: Any, p: Any, filters: int, block_id: str | None = None) -> tuple:
    p = _adjust_block(p, ip, filters, block_id)
    h = layers.Activation("relu")(ip)
    h = layers.Conv2D(filters, (1, 1), strides=(1, 1), padding="same",
                      name=f"reduction_conv_1_{block_id}", use_bias=False,
                      kernel_initializer="he_normal")(h)  # fmt: skip
    h = layers.BatchNormalization(axis=-1, name=f"reduction_bn_1_{block_id}", **_BN)(h)
    h3 = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(h, 3),
                              name=f"reduction_pad_1_{block_id}")(h)  # fmt: skip
    x1_1 = _separable_conv_block(h, filters, (5, 5), strides=(2, 2),
                                 block_id=f"reduction_left1_{block_id}")  # fmt: skip
    x1_2 = _separable_conv_block(p, filters, (7, 7), strides=(2, 2),
                                 block_id=f"reduction_right1_{block_id}")  # fmt: skip
    x1 = layers.add([x1_1, x1_2], name=f"reduction_add_1_{block_id}")
    x2_1 = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="valid",
                               name=f"reduction_left2_{block_id}")(h3)  # fmt: skip
    x2_2 = _separable_conv_block(p, filters, (7, 7), strides=(2, 2),
                                 block_id=f"reduction_right2_{block_id}")  # fmt: skip
    x2 = layers.add([x2_1, x2_2], name=f"reduction_add_2_{block_id}")
    x3_1 = layers.AveragePooling2D((3, 3), strides=(2, 2), padding="valid",
                                   name=f"reduction_left3_{block_id}")(h3)  # fmt: skip
    x3_2 = _separable_conv_block(p, filters, (5, 5), strides=(2, 2),
                                 block_id=f"reduction_right3_{block_id}")  # fmt: skip
    x3 = layers.add([x3_1, x3_2], name=f"reduction_add3_{block_id}")
    x4 = layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same",
                                 name=f"reduction_left4_{block_id}")(x1)  # fmt: skip
    x4 = layers.add([x2, x4])
    x5_1 = _separable_conv_block(x1, filters, (3, 3), block_id=f"reduction_left4_{block_id}")
    x5_2 = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="valid",
                               name=f"reduction_right5_{block_id}")(h3)  # fmt: skip
    x5 = layers.add([x5_1, x5_2], name=f"reduction_add4_{block_id}")
    x = layers.concatenate([x2, x3, x4, x5], axis=-1, name=f"reduction_concat_{block_id}")
    return x, ip


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """ImageNet "tf" preprocessing: pixels scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds: Any, top: int = 5) -> list:
    """The top ImageNet classes of each prediction (see `imagenet_utils.decode_predictions`)."""
    return imagenet_utils.decode_predictions(preds, top=top)
