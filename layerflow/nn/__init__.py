"""`tf.nn`: activations, losses and layers' building blocks."""

from layerflow._src.distribute.loss_scaling import (
    compute_average_loss,
    scale_regularization_loss,
)
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
# --- convolution family, space-to-batch, pooling (h-tfnn) ---
from layerflow._src.ops.candidate_sampling_ops import (
    all_candidate_sampler,
    compute_accidental_hits,
    fixed_unigram_candidate_sampler,
    learned_unigram_candidate_sampler,
    nce_loss,
    sampled_softmax_loss,
)
from layerflow._src.ops.conv3d_ops import avg_pool3d, conv3d, conv3d_transpose, max_pool3d
from layerflow._src.ops.conv_transpose_ops import (
    atrous_conv2d,
    atrous_conv2d_transpose,
    conv1d_transpose,
    conv_transpose,
    convolution,
    depthwise_conv2d_backprop_filter,
    depthwise_conv2d_backprop_input,
    separable_conv2d,
)
from layerflow._src.ops.ctc_ops import (
    collapse_repeated,
    ctc_beam_search_decoder,
    ctc_greedy_decoder,
    ctc_loss,
    ctc_unique_labels,
)
from layerflow._src.ops.nn_extra_ops import (
    batch_norm_with_global_normalization,
    isotonic_regression,
)
from layerflow._src.ops.pool_extra_ops import (
    dilation2d,
    erosion2d,
    fractional_avg_pool,
    fractional_max_pool,
    max_pool_with_argmax,
)
from layerflow._src.ops.space_batch_ops import pool, space_to_batch, with_space_to_batch
from layerflow._src.ops.sparse_embedding_ops import (
    embedding_lookup_sparse,
    safe_embedding_lookup_sparse,
)
from layerflow.nn import experimental

# The Keras 2 cell wrappers live in keras (imported on first use, to keep `import layerflow` fast).
_KERAS_CELL_WRAPPERS = {
    "RNNCellDeviceWrapper": "DeviceWrapper",
    "RNNCellDropoutWrapper": "DropoutWrapper",
    "RNNCellResidualWrapper": "ResidualWrapper",
}


def __getattr__(name: str):  # noqa: ANN202 - module hook
    target = _KERAS_CELL_WRAPPERS.get(name)
    if target is None:
        raise AttributeError(f"module 'layerflow.nn' has no attribute {name!r}")
    from layerflow._src.keras.layers import rnn_cell_wrappers

    value = getattr(rnn_cell_wrappers, target)
    globals()[name] = value
    return value
