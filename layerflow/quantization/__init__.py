"""`tf.quantization`: simulated (fake) quantization for training, quantize/dequantize to the
quantized dtypes (tf.dtypes.qint8, quint8, ...), and quantized_concat."""

from layerflow._src.autodiff import dispatch as _public_names
from layerflow._src.ops.fake_quant_ops import (
    fake_quant_with_min_max_args,
    fake_quant_with_min_max_args_gradient,
    fake_quant_with_min_max_vars,
    fake_quant_with_min_max_vars_gradient,
    fake_quant_with_min_max_vars_per_channel,
    fake_quant_with_min_max_vars_per_channel_gradient,
    quantize_and_dequantize,
    quantize_and_dequantize_v2,
)
from layerflow._src.ops.quantize_ops import dequantize, quantize, quantized_concat

# TFOpLambda layers name these ops tf.quantization.<name> (the namespace loads lazily).
_public_names.register_namespace("quantization", dict(globals()))

# TF's names that layerflow does not provide, and why.
_ABSENT = {
    "experimental": (
        "TF's post-training quantizer (quantize_saved_model, QuantizationOptions, ...) rewrites "
        "a SavedModel's TF graph with TF's MLIR quantization passes and calibrates it on TF's "
        "runtime; layerflow has neither. Simulate quantization in the model instead, with "
        "tf.quantization.fake_quant_with_min_max_vars (quantization-aware training) or "
        "quantize_and_dequantize_v2, or quantize the weights with tf.quantization.quantize."
    ),
}


def __getattr__(name: str):  # noqa: ANN202 - module hook
    why = _ABSENT.get(name)
    if why is not None:
        raise AttributeError(f"layerflow has no tf.quantization.{name}: {why}")
    raise AttributeError(f"module 'layerflow.quantization' has no attribute {name!r}")


__all__ = [
    "dequantize", "fake_quant_with_min_max_args", "fake_quant_with_min_max_args_gradient",
    "fake_quant_with_min_max_vars", "fake_quant_with_min_max_vars_gradient",
    "fake_quant_with_min_max_vars_per_channel",
    "fake_quant_with_min_max_vars_per_channel_gradient", "quantize", "quantize_and_dequantize",
    "quantize_and_dequantize_v2", "quantized_concat",
]  # fmt: skip
