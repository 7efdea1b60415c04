"""`tf.nn`: activations, losses and layers' building blocks."""

from layerflow import _lazy_facade as _lazy
from layerflow._src.ops.conv_ops import (
    avg_pool,
    avg_pool1d,
    avg_pool2d,
    conv1d,
    conv2d,
    conv2d_transpose,
    depthwise_conv2d,
    max_pool,
    max_pool1d,
    max_pool2d,
)
from layerflow._src.ops.depth_space_ops import depth_to_space, space_to_depth
from layerflow._src.ops.elementwise_more_ops import crelu, zero_fraction
from layerflow._src.ops.elementwise_ops import log_sigmoid
from layerflow._src.ops.gather_ops import embedding_lookup
from layerflow._src.ops.loss_ops import log_poisson_loss, weighted_cross_entropy_with_logits
from layerflow._src.ops.math_ops import relu, sigmoid, tanh
from layerflow._src.ops.nn_ops import (
    bias_add,
    dropout,
    elu,
    gelu,
    l2_loss,
    leaky_relu,
    log_softmax,
    moments,
    relu6,
    selu,
    sigmoid_cross_entropy_with_logits,
    silu,
    softmax,
    softmax_cross_entropy_with_logits,
    softplus,
    softsign,
    sparse_softmax_cross_entropy_with_logits,
    swish,
)
from layerflow._src.ops.normalization_ops import (
    batch_normalization,
    l2_normalize,
    local_response_normalization,
    lrn,
    normalize_moments,
    sufficient_statistics,
    weighted_moments,
)
from layerflow._src.ops.ordering_ops import approx_max_k, approx_min_k, top_k
from layerflow._src.ops.segment_ops import in_top_k

# isort: split
# --- convolution family, space-to-batch, pooling (h-tfnn): in _LAZY_NAMES (first use) ---

# The Keras 2 cell wrappers live in keras (imported on first use, to keep `import layerflow` fast).
_KERAS_CELL_WRAPPERS = {
    "RNNCellDeviceWrapper": "DeviceWrapper",
    "RNNCellDropoutWrapper": "DropoutWrapper",
    "RNNCellResidualWrapper": "ResidualWrapper",
}


def _keras_cell_wrapper(name: str):  # noqa: ANN202 - a class (or the experimental module)
    if name == "experimental":
        import importlib

        module = importlib.import_module("layerflow.nn.experimental")
        globals()[name] = module
        return module
    target = _KERAS_CELL_WRAPPERS.get(name)
    if target is None:
        raise AttributeError(f"module 'layerflow.nn' has no attribute {name!r}")
    from layerflow._src.keras.layers import rnn_cell_wrappers

    value = getattr(rnn_cell_wrappers, target)
    globals()[name] = value
    return value


# Imported on first use, to keep `import layerflow` fast (the op-name registry resolves them
# at its first lookup: layerflow/__init__.py).
_LAZY_NAMES = {
    **dict.fromkeys(
        [
            "all_candidate_sampler",
            "compute_accidental_hits",
            "fixed_unigram_candidate_sampler",
            "learned_unigram_candidate_sampler",
            "nce_loss",
            "sampled_softmax_loss",
        ],
        "layerflow._src.ops.candidate_sampling_ops",
    ),
    "batch_norm_with_global_normalization": "layerflow._src.ops.nn_extra_ops",
    "isotonic_regression": "layerflow._src.ops.nn_extra_ops",
    "avg_pool3d": "layerflow._src.ops.conv3d_ops",
    "conv3d": "layerflow._src.ops.conv3d_ops",
    "conv3d_transpose": "layerflow._src.ops.conv3d_ops",
    "max_pool3d": "layerflow._src.ops.conv3d_ops",
    "atrous_conv2d": "layerflow._src.ops.conv_transpose_ops",
    "atrous_conv2d_transpose": "layerflow._src.ops.conv_transpose_ops",
    "conv1d_transpose": "layerflow._src.ops.conv_transpose_ops",
    "conv_transpose": "layerflow._src.ops.conv_transpose_ops",
    "convolution": "layerflow._src.ops.conv_transpose_ops",
    "depthwise_conv2d_backprop_filter": "layerflow._src.ops.conv_transpose_ops",
    "depthwise_conv2d_backprop_input": "layerflow._src.ops.conv_transpose_ops",
    "separable_conv2d": "layerflow._src.ops.conv_transpose_ops",
    "collapse_repeated": "layerflow._src.ops.ctc_ops",
    "ctc_beam_search_decoder": "layerflow._src.ops.ctc_ops",
    "ctc_greedy_decoder": "layerflow._src.ops.ctc_ops",
    "ctc_loss": "layerflow._src.ops.ctc_ops",
    "ctc_unique_labels": "layerflow._src.ops.ctc_ops",
    "dilation2d": "layerflow._src.ops.pool_extra_ops",
    "erosion2d": "layerflow._src.ops.pool_extra_ops",
    "fractional_avg_pool": "layerflow._src.ops.pool_extra_ops",
    "fractional_max_pool": "layerflow._src.ops.pool_extra_ops",
    "max_pool_with_argmax": "layerflow._src.ops.pool_extra_ops",
    "pool": "layerflow._src.ops.space_batch_ops",
    "space_to_batch": "layerflow._src.ops.space_batch_ops",
    "with_space_to_batch": "layerflow._src.ops.space_batch_ops",
    "embedding_lookup_sparse": "layerflow._src.ops.sparse_embedding_ops",
    "safe_embedding_lookup_sparse": "layerflow._src.ops.sparse_embedding_ops",
    "compute_average_loss": "layerflow._src.distribute.loss_scaling",
    "scale_regularization_loss": "layerflow._src.distribute.loss_scaling",
}
__getattr__ = _lazy.lazy_getattr("layerflow.nn", _LAZY_NAMES, globals(), _keras_cell_wrapper)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_NAMES) | set(_KERAS_CELL_WRAPPERS) | {"experimental"})
