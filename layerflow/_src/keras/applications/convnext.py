"""ConvNeXt Tiny/Small/Base/Large/XLarge (Liu et al., CVPR 2022, https://arxiv.org/abs/2201.03545).

Layer for layer tf_keras 2.x's `applications/convnext.py`: nested `Sequential` stem and
downsampling blocks, depthwise 7x7 convolutions (`Conv2D` with `groups=filters`), `Dense`
pointwise convolutions, `LayerScale`, `StochasticDepth` and the residual sum as an op layer.
Preprocessing (`Normalization` with the ImageNet mean and std on [0, 255] pixels) is inside the
model; `preprocess_input` is a pass-through.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.keras.applications import imagenet_utils
from layerflow._src.keras.applications.modern_utils import (
    bn_axis,
    decode_predictions,
    load_weights,
    model_inputs,
    preprocess_input,
    variant,
)
from layerflow._src.keras.backend_api.session_api import get_uid
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.model import Model
from layerflow._src.keras.engine.sequential import Sequential
from layerflow._src.keras.initializers import Constant
from layerflow._src.keras.layers import (
    Activation,
    Conv2D,
    Dense,
    GlobalAveragePooling2D,
    GlobalMaxPooling2D,
    LayerNormalization,
    Normalization,
)
from layerflow._src.ops import array_ops, elementwise_ops, random_ops

__all__ = [
    "ConvNeXt",
    "ConvNeXtBase",
    "ConvNeXtLarge",
    "ConvNeXtSmall",
    "ConvNeXtTiny",
    "ConvNeXtXLarge",
    "LayerScale",
    "StochasticDepth",
    "decode_predictions",
    "preprocess_input",
]

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/convnext/"
# (with top, without top) SHA-256 of the published files.
WEIGHTS_HASHES = {
    "convnext_tiny": (
        "8ae6e78ce2933352b1ef4008e6dd2f17bc40771563877d156bc6426c7cf503ff",
        "d547c096cabd03329d7be5562c5e14798aa39ed24b474157cef5e85ab9e49ef1",
    ),
    "convnext_small": (
        "ce1277d8f1ee5a0ef0e171469089c18f5233860ceaf9b168049cb9263fd7483c",
        "6fc8009faa2f00c1c1dfce59feea9b0745eb260a7dd11bee65c8e20843da6eab",
    ),
    "convnext_base": (
        "52cbb006d3dadd03f6e095a8ca1aca47aecdd75acb4bc74bce1f5c695d0086e6",
        "40a20c5548a5e9202f69735ecc06c990e6b7c9d2de39f0361e27baeb24cb7c45",
    ),
    "convnext_large": (
        "070c5ed9ed289581e477741d3b34beffa920db8cf590899d6d2c67fba2a198a6",
        "96f02b6f0753d4f543261bc9d09bed650f24dd6bc02ddde3066135b63d23a1cd",
    ),
    "convnext_xlarge": (
        "c1f5ccab661354fc3a79a10fa99af82f0fbf10ec65cb894a3ae0815f17a889ee",
        "de3f8a54174130e0cecdc71583354753d557fcf1f4487331558e2a16ba0cfe05",
    ),
}

MODEL_CONFIGS = {
    "tiny": {"depths": [3, 3, 9, 3], "projection_dims": [96, 192, 384, 768], "default_size": 224},
    "small": {
        "depths": [3, 3, 27, 3],
        "projection_dims": [96, 192, 384, 768],
        "default_size": 224,
    },
    "base": {
        "depths": [3, 3, 27, 3],
        "projection_dims": [128, 256, 512, 1024],
        "default_size": 224,
    },
    "large": {
        "depths": [3, 3, 27, 3],
        "projection_dims": [192, 384, 768, 1536],
        "default_size": 224,
    },
    "xlarge": {
        "depths": [3, 3, 27, 3],
        "projection_dims": [256, 512, 1024, 2048],
        "default_size": 224,
    },
}

BASE_DOCSTRING = """Instantiates the {name} architecture (https://arxiv.org/abs/2201.03545).

  Input preprocessing (ImageNet mean and std) is part of the model, so it takes float or uint8
  pixels in [0, 255] and `convnext.preprocess_input` is a pass-through. The base, large and
  xlarge ImageNet weights were pre-trained on ImageNet-21k, then fine-tuned on ImageNet-1k.

  Args:
    model_name: the model's name.
    include_top: whether to include the classification head. Defaults to True.
    include_preprocessing: whether the model normalizes its (3-channel) input.
    weights: None (random initialization), "imagenet" (pre-trained; the file is taken from the
      Keras cache `~/.keras/models/`, else downloaded), or the path to a weights file.
    input_tensor: optional Keras tensor (output of `layers.Input()`) to use as the input.
    input_shape: optional shape tuple (each side at least 32); with `include_top=True` only
      when `weights` is not "imagenet".
    pooling: with `include_top=False`: None (4D output of the last stage), "avg" or "max"
      (global pooling, 2D output); a LayerNormalization follows either way.
    classes: number of classes (only without "imagenet" weights when `include_top`).
    classifier_activation: activation of the head's Dense layer (None for logits); with
      pretrained weights only None or "softmax".

  Returns:
    A `keras.Model`.

  >>> # model = tf.keras.applications.{name}(weights=None, input_shape=(64, 64, 3), classes=10)
"""


class StochasticDepth(Layer):
    """Drop the whole residual branch of a sample with probability `drop_path_rate` while
    training (the kept ones scaled by 1 / keep_prob); the identity otherwise.

    >>> import layerflow as tf
    >>> StochasticDepth(0.5)(tf.ones((2, 3))).numpy()
    array([[1., 1., 1.],
           [1., 1., 1.]], dtype=float32)
    """

    def __init__(self, drop_path_rate: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.drop_path_rate = drop_path_rate

    def call(self, x: Any, training: Any = None) -> Any:
        if training:
            keep_prob = 1 - self.drop_path_rate
            rank = len(x.shape)
            shape = [array_ops.shape(x)[0]] + [1] * (rank - 1)
            random_tensor = keep_prob + random_ops.uniform(array_ops.stack(shape), 0, 1,
                                                           dtype=x.dtype)  # fmt: skip
            random_tensor = elementwise_ops.floor(random_tensor)
            return (x / keep_prob) * random_tensor
        return x

    def get_config(self) -> dict:
        return {**super().get_config(), "drop_path_rate": self.drop_path_rate}


class LayerScale(Layer):
    """Multiply the input by a learned per-channel scale `gamma` (initialized to `init_values`),
    https://arxiv.org/abs/2103.17239.

    >>> import layerflow as tf
    >>> LayerScale(0.5, 2)(tf.ones((1, 2))).numpy()
    array([[0.5, 0.5]], dtype=float32)
    """

    def __init__(self, init_values: float, projection_dim: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.init_values = init_values
        self.projection_dim = projection_dim

    def build(self, input_shape: Any) -> None:
        self.gamma = self.add_weight(
            name="gamma",
            shape=(self.projection_dim,),
            initializer=Constant(self.init_values),
            trainable=True,
        )
        self.built = True

    def call(self, x: Any) -> Any:
        return x * self.gamma

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "init_values": self.init_values,
            "projection_dim": self.projection_dim,
        }


def ConvNeXtBlock(  # noqa: N802 - tf_keras's name
    projection_dim: int,
    drop_path_rate: float = 0.0,
    layer_scale_init_value: Any = 1e-6,
    name: Any = None,
) -> Any:
    """A ConvNeXt block (depthwise 7x7, LayerNorm, MLP with GELU, layer scale, residual);
    returns a function of the input."""
    if name is None:
        name = "prestem" + str(get_uid("prestem"))

    def apply(inputs: Any) -> Any:
        x = Conv2D(
            filters=projection_dim,
            kernel_size=7,
            padding="same",
            groups=projection_dim,
            name=name + "_depthwise_conv",
        )(inputs)
        x = LayerNormalization(epsilon=1e-6, name=name + "_layernorm")(x)
        x = Dense(4 * projection_dim, name=name + "_pointwise_conv_1")(x)
        x = Activation("gelu", name=name + "_gelu")(x)
        x = Dense(projection_dim, name=name + "_pointwise_conv_2")(x)
        if layer_scale_init_value is not None:
            x = LayerScale(layer_scale_init_value, projection_dim, name=name + "_layer_scale")(x)
        if drop_path_rate:
            layer = StochasticDepth(drop_path_rate, name=name + "_stochastic_depth")
        else:
            layer = Activation("linear", name=name + "_identity")
        return inputs + layer(x)

    return apply


def PreStem(name: Any = None) -> Any:  # noqa: N802 - tf_keras's name
    """Normalize [0, 255] pixels with the ImageNet-1k mean and std."""
    if name is None:
        name = "prestem" + str(get_uid("prestem"))

    def apply(x: Any) -> Any:
        return Normalization(
            mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
            variance=[(0.229 * 255) ** 2, (0.224 * 255) ** 2, (0.225 * 255) ** 2],
            name=name + "_prestem_normalization",
        )(x)

    return apply


def Head(num_classes: int = 1000, classifier_activation: Any = None,  # noqa: N802
         name: Any = None) -> Any:  # fmt: skip
    """The classification head: global average pooling, LayerNorm, Dense."""
    if name is None:
        name = str(get_uid("head"))

    def apply(x: Any) -> Any:
        x = GlobalAveragePooling2D(name=name + "_head_gap")(x)
        x = LayerNormalization(epsilon=1e-6, name=name + "_head_layernorm")(x)
        return Dense(num_classes, activation=classifier_activation, name=name + "_head_dense")(x)

    return apply


def ConvNeXt(  # noqa: N802 - tf_keras's name
    depths: Any,
    projection_dims: Any,
    drop_path_rate: float = 0.0,
    layer_scale_init_value: Any = 1e-6,
    default_size: int = 224,
    model_name: str = "convnext",
    include_preprocessing: bool = True,
    include_top: bool = True,
    weights: Any = None,
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: Any = None,
    classes: int = 1000,
    classifier_activation: Any = "softmax",
) -> Model:
    """A ConvNeXt of 4 stages of `depths` blocks with `projection_dims` channels."""
    img_input, input_shape = imagenet_utils.input_and_shape(
        weights, include_top, classes, input_tensor, input_shape, default_size, min_size=32
    )
    if weights == "imagenet" and model_name not in WEIGHTS_HASHES:
        raise ValueError(
            f"ConvNeXt: ImageNet weights are published for the model names "
            f"{sorted(WEIGHTS_HASHES)}; got model_name={model_name!r}. Keep the default "
            "model_name, or pass weights=None or a file path."
        )
    inputs = model_inputs(input_tensor, img_input, first=True)
    x = inputs
    if include_preprocessing and input_shape[bn_axis() - 1] == 3:
        x = PreStem(name=model_name)(x)

    stem = Sequential(
        [
            Conv2D(projection_dims[0], kernel_size=4, strides=4, name=model_name + "_stem_conv"),
            LayerNormalization(epsilon=1e-6, name=model_name + "_stem_layernorm"),
        ],
        name=model_name + "_stem",
    )
    downsample_layers = [stem]
    for i in range(3):
        downsample_layers.append(
            Sequential(
                [
                    LayerNormalization(
                        epsilon=1e-6, name=model_name + "_downsampling_layernorm_" + str(i)
                    ),
                    Conv2D(
                        projection_dims[i + 1],
                        kernel_size=2,
                        strides=2,
                        name=model_name + "_downsampling_conv_" + str(i),
                    ),
                ],
                name=model_name + "_downsampling_block_" + str(i),
            )
        )

    # the stochastic depth schedule of the original code base (a linear ramp over all blocks)
    depth_drop_rates = [float(r) for r in np.linspace(0.0, drop_path_rate, sum(depths))]
    cur = 0
    for i in range(4):
        x = downsample_layers[i](x)
        for j in range(depths[i]):
            x = ConvNeXtBlock(
                projection_dim=projection_dims[i],
                drop_path_rate=depth_drop_rates[cur + j],
                layer_scale_init_value=layer_scale_init_value,
                name=model_name + f"_stage_{i}_block_{j}",
            )(x)
        cur += depths[i]

    if include_top:
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = Head(num_classes=classes, classifier_activation=classifier_activation,
                 name=model_name)(x)  # fmt: skip
    else:
        if pooling == "avg":
            x = GlobalAveragePooling2D()(x)
        elif pooling == "max":
            x = GlobalMaxPooling2D()(x)
        x = LayerNormalization(epsilon=1e-6)(x)

    model = Model(inputs=inputs, outputs=x, name=model_name)
    return load_weights(model, weights, include_top, WEIGHTS_HASHES, model_name, BASE_WEIGHTS_PATH)


def _variant(name: str, size: str) -> Any:
    config = MODEL_CONFIGS[size]
    return variant(ConvNeXt, name, __name__, BASE_DOCSTRING.format(name=name), f"convnext_{size}",
                   depths=config["depths"], projection_dims=config["projection_dims"],
                   drop_path_rate=0.0, layer_scale_init_value=1e-6,
                   default_size=config["default_size"])  # fmt: skip


ConvNeXtTiny = _variant("ConvNeXtTiny", "tiny")
ConvNeXtSmall = _variant("ConvNeXtSmall", "small")
ConvNeXtBase = _variant("ConvNeXtBase", "base")
ConvNeXtLarge = _variant("ConvNeXtLarge", "large")
ConvNeXtXLarge = _variant("ConvNeXtXLarge", "xlarge")
