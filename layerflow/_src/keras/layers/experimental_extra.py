"""`tf.keras.layers.experimental`'s own layers: `RandomFourierFeatures` (random features that
approximate a shift-invariant kernel, Rahimi & Recht 2007) and `SyncBatchNormalization`
(Keras 2's deprecated name of `BatchNormalization(synchronized=True)`), as tf_keras."""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import initializers
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.keras.layers.normalization import BatchNormalization
from layerflow._src.ops import elementwise_ops, math_ops, nn_ops

_log = logging.getLogger("layerflow")
_KERNELS = ("gaussian", "laplacian")
_warned = [False]


def _features_initializer(initializer: Any, shape: tuple[int, int]) -> Any:
    if not isinstance(initializer, str):
        return initializers.get(initializer)
    if initializer.lower() == "gaussian":
        return initializers.RandomNormal(stddev=1.0)
    # Laplacian kernel: Cauchy-distributed frequencies (tf_keras draws them with NumPy).
    probs = np.random.uniform(low=0.0, high=1.0, size=shape)
    return initializers.Constant(np.tan(np.pi * (probs - 0.5)).astype("float32"))


class RandomFourierFeatures(Layer):
    """`cos(x @ (W / kernel_scale) + b)`: random features whose inner products approximate a
    Gaussian or Laplacian kernel. W (frequencies) and b (uniform phases in [0, 2 pi)) are fixed;
    only `kernel_scale` (initially `scale`, sqrt(input_dim / 2) for the Gaussian kernel) may
    train.

    >>> import layerflow as tf
    >>> layer = RandomFourierFeatures(output_dim=8)
    >>> layer(tf.ones((2, 3))).shape
    TensorShape([2, 8])
    """

    def __init__(self, output_dim: int, kernel_initializer: Any = "gaussian",
                 scale: float | None = None, trainable: bool = False, name: str | None = None,
                 **kwargs: Any) -> None:  # fmt: skip
        if output_dim <= 0:
            raise ValueError(f"`output_dim` should be a positive integer. Received: {output_dim}")
        if isinstance(kernel_initializer, str) and kernel_initializer.lower() not in _KERNELS:
            raise ValueError(
                f"Unsupported `kernel_initializer`: {kernel_initializer} Expected one of: "
                f"{_KERNELS}"
            )
        if scale is not None and scale <= 0.0:
            raise ValueError(
                f"When provided, `scale` should be a positive float. Received: {scale}"
            )
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.output_dim = output_dim
        self.kernel_initializer = kernel_initializer
        self.scale = scale

    def build(self, input_shape: Any) -> None:
        shape = TensorShape(input_shape)
        if shape.rank != 2:
            raise ValueError(
                f"The rank of the input tensor should be 2. Received input with rank "
                f"{shape.rank} instead. Full input shape received: {shape}"
            )
        if shape[1] is None:
            raise ValueError(
                "The last dimension of the input tensor should be defined. Found `None`. Full "
                f"input shape received: {shape}"
            )
        input_dim = int(shape[1])
        self.input_spec = InputSpec(ndim=2, axes={1: input_dim})
        self.unscaled_kernel = self.add_weight(
            name="unscaled_kernel",
            shape=(input_dim, self.output_dim),
            dtype="float32",
            initializer=_features_initializer(self.kernel_initializer,
                                              (input_dim, self.output_dim)),
            trainable=False,
        )  # fmt: skip
        self.bias = self.add_weight(
            name="bias",
            shape=(self.output_dim,),
            dtype="float32",
            initializer=initializers.RandomUniform(minval=0.0, maxval=2 * math.pi),
            trainable=False,
        )
        if self.scale is None:
            gaussian = isinstance(self.kernel_initializer, str) and (
                self.kernel_initializer.lower() == "gaussian"
            )
            self.scale = float(np.sqrt(input_dim / 2.0)) if gaussian else 1.0
        self.kernel_scale = self.add_weight(
            name="kernel_scale",
            shape=(1,),
            dtype="float32",
            initializer=initializers.Constant(self.scale),
            trainable=True,
            constraint="NonNeg",
        )

    def call(self, inputs: Any) -> Any:
        inputs = math_ops.cast(inputs, "float32")
        kernel = (1.0 / self.kernel_scale) * self.unscaled_kernel
        return elementwise_ops.cos(nn_ops.bias_add(math_ops.matmul(inputs, kernel), self.bias))

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        shape = TensorShape(input_shape)
        if shape.rank != 2 or shape[-1] is None:
            raise ValueError(
                "The input of RandomFourierFeatures must have rank 2 and a defined last "
                f"dimension. Full input shape received: {shape}"
            )
        return shape[:-1].concatenate([self.output_dim])

    def get_config(self) -> dict[str, Any]:
        init = self.kernel_initializer
        if not isinstance(init, str):
            init = initializers.serialize(init)
        return {
            **super().get_config(),
            "output_dim": self.output_dim,
            "kernel_initializer": init,
            "scale": self.scale,
        }


class SyncBatchNormalization(BatchNormalization):
    """Deprecated: `BatchNormalization(synchronized=True)` (batch statistics across replicas)."""

    def __init__(self, axis: Any = -1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, **kwargs: Any) -> None:  # fmt: skip
        if not _warned[0]:
            _warned[0] = True
            _log.warning(
                "`tf.keras.layers.experimental.SyncBatchNormalization` endpoint is deprecated "
                "and will be removed in a future release. Please use "
                "`tf.keras.layers.BatchNormalization` with parameter `synchronized` set to True."
            )
        kwargs.pop("synchronized", None)  # (its own get_config says synchronized=True)
        kwargs.pop("fused", None)
        super().__init__(axis=axis, momentum=momentum, epsilon=epsilon, center=center,
                         scale=scale, synchronized=True, **kwargs)  # fmt: skip
