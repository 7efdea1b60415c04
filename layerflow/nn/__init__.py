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
