"""Small layers of Keras 2: `Masking`, `Identity`, `ThresholdedReLU`, `SpectralNormalization`.

Import cycle, on purpose (as for the other wrappers): `SpectralNormalization` subclasses
`rnn_wrappers.Wrapper`, whose `from_config` rebuilds the wrapped layer through `rnn_cells`'s
`deserialize_layer`, which reads the built-in classes from the `layers` package when called;
that package imports `recurrent` and this module.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import initializers
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.keras.layers.rnn_wrappers import Wrapper
from layerflow._src.ops import array_ops, math_ops, normalization_ops, reduce_ops
from layerflow._src.utils import nest

__all__ = ["Identity", "Masking", "SpectralNormalization", "ThresholdedReLU"]


class Masking(Layer):
    """Mask the time steps whose features all equal `mask_value` (Keras 2).

    The output is the input with masked steps zeroed, carrying the mask (`_keras_mask`,
    shape `(batch, time)`) that the next layers (RNNs, pooling, losses) honour.

    >>> import layerflow as tf
    >>> x = tf.constant([[[1.0], [0.0]]])
    >>> tf.keras.layers.Masking()(x)._keras_mask.numpy().tolist()
    [[True, False]]
    """

    def __init__(self, mask_value: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True
        self.mask_value = mask_value

    def _keep(self, inputs: Any, keepdims: bool) -> Any:
        differs = math_ops.not_equal(inputs, math_ops.cast(self.mask_value, inputs.dtype))
        return reduce_ops.reduce_any(differs, axis=-1, keepdims=keepdims)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return self._keep(inputs, keepdims=False)

    def call(self, inputs: Any) -> Any:
        keep = self._keep(inputs, keepdims=True)
        outputs = inputs * math_ops.cast(keep, inputs.dtype)
        try:  # the mask comes with the output (tf_keras computes both at once)
            outputs._keras_mask = array_ops.squeeze(keep, axis=-1)
        except AttributeError:
            pass
        return outputs

    def compute_output_shape(self, input_shape: Any) -> Any:
        return TensorShape(input_shape)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "mask_value": self.mask_value}


class Identity(Layer):
    """Return the input unchanged: a placeholder where no operation is wanted.

    >>> import layerflow as tf
    >>> tf.keras.layers.Identity()(tf.constant([1.0, 2.0])).numpy().tolist()
    [1.0, 2.0]
    """

    def call(self, inputs: Any) -> Any:
        return nest.map_structure(array_ops.identity, inputs)


class ThresholdedReLU(Layer):
    """`x` where `x > theta`, else 0 (Keras 2's thresholded rectifier).

    >>> import layerflow as tf
    >>> tf.keras.layers.ThresholdedReLU(theta=1.0)(tf.constant([0.5, 1.0, 2.0])).numpy()
    array([0., 0., 2.], dtype=float32)
    """

    def __init__(self, theta: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if theta is None:
            raise ValueError(
                "Theta of a Thresholded ReLU layer cannot be None, expecting a float. "
                f"Received: {theta}"
            )
        if isinstance(theta, bool) or not isinstance(theta, int | float):
            raise TypeError(f"ThresholdedReLU: theta must be a float, got {theta!r}.")
        if theta < 0:
            raise ValueError(
                f"The theta value of a Thresholded ReLU layer should be >=0. Received: {theta}"
            )
        self.supports_masking = True
        self.theta = float(theta)

    def call(self, inputs: Any) -> Any:
        theta = math_ops.cast(self.theta, inputs.dtype)
        return inputs * math_ops.cast(math_ops.greater(inputs, theta), inputs.dtype)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return TensorShape(input_shape)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "theta": self.theta}


class SpectralNormalization(Wrapper):
    """Constrain the spectral norm of the wrapped layer's `kernel` (or `embeddings`) to 1.

    In training, each call runs `power_iterations` steps of power iteration from the stored
    vector `vector_u`, divides the kernel by its estimated largest singular value, and stores
    both (as tf_keras does); in inference the kernel is used as it is.

    >>> import layerflow as tf
    >>> sn = tf.keras.layers.SpectralNormalization(tf.keras.layers.Dense(3))
    >>> sn(tf.ones((2, 4)), training=True).shape
    TensorShape([2, 3])
    """

    def __init__(self, layer: Any, power_iterations: int = 1, **kwargs: Any) -> None:
        super().__init__(layer, **kwargs)
        if isinstance(power_iterations, bool) or not isinstance(power_iterations, int):
            raise TypeError(
                f"SpectralNormalization: power_iterations must be an int, got {power_iterations!r}."
            )
        if power_iterations <= 0:
            raise ValueError(
                "`power_iterations` should be greater than zero. Received: "
                f"`power_iterations={power_iterations}`"
            )
        self.power_iterations = power_iterations

    def build(self, input_shape: Any) -> None:
        input_shape = TensorShape(input_shape)
        if not self.layer.built:
            self.layer.build(input_shape)
        self.input_spec = InputSpec(shape=[None] + list(input_shape[1:]))
        if hasattr(self.layer, "kernel"):
            kernel = self.layer.kernel
        elif hasattr(self.layer, "embeddings"):
            kernel = self.layer.embeddings
        else:
            raise ValueError(
                f"{type(self.layer).__name__} object has no attribute 'kernel' nor 'embeddings'"
            )
        # Not an attribute: the kernel belongs to the wrapped layer (no second tracking path).
        self.__dict__["_kernel"] = kernel
        self.__dict__["_kernel_shape"] = list(kernel.shape)
        self.vector_u = self.add_weight(
            name="vector_u",
            shape=(1, self._kernel_shape[-1]),
            initializer=initializers.TruncatedNormal(stddev=0.02),
            trainable=False,
            dtype=kernel.dtype,
        )

    def call(self, inputs: Any, training: Any = False) -> Any:
        if training:
            self._update_weights()
        return self.layer(inputs)

    def _update_weights(self) -> None:
        kernel = self._kernel
        if not bool(reduce_ops.reduce_any(math_ops.not_equal(kernel, 0)).numpy()):
            return  # an all-zero kernel has no direction to normalize (tf_keras keeps it)
        normalized, vector_u = self.normalize_weights()
        kernel.assign(normalized)
        self.vector_u.assign(vector_u)

    def normalize_weights(self) -> tuple[Any, Any]:
        """The spectrally normalized kernel and the new `vector_u` (power iteration)."""
        vector_u = array_ops.identity(self.vector_u)
        vector_v = vector_u
        weights = array_ops.reshape(self._kernel, [-1, self._kernel_shape[-1]])
        for _ in range(self.power_iterations):
            vector_v = normalization_ops.l2_normalize(
                math_ops.matmul(vector_u, weights, transpose_b=True)
            )
            vector_u = normalization_ops.l2_normalize(math_ops.matmul(vector_v, weights))
        vector_u = array_ops.stop_gradient(vector_u)
        vector_v = array_ops.stop_gradient(vector_v)
        sigma = math_ops.matmul(math_ops.matmul(vector_v, weights), vector_u, transpose_b=True)
        return array_ops.reshape(weights / sigma, self._kernel_shape), vector_u

    def compute_output_shape(self, input_shape: Any) -> Any:
        return TensorShape(self.layer.compute_output_shape(input_shape))

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "power_iterations": self.power_iterations}
