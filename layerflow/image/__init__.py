"""`tf.image`: resizing and padding images (NHWC)."""

from layerflow._src.ops.image_box_ops import (
    draw_bounding_boxes,
    generate_bounding_box_proposals,
    sample_distorted_bounding_box,
    stateless_sample_distorted_bounding_box,
)
from layerflow._src.ops.image_crop_ops import (
    central_crop,
    crop_and_resize,
    crop_to_bounding_box,
    extract_glimpse,
    extract_patches,
    pad_to_bounding_box,
    resize_with_crop_or_pad,
)
from layerflow._src.ops.image_metric_ops import (
    image_gradients,
    psnr,
    sobel_edges,
    ssim,
    ssim_multiscale,
    total_variation,
)
from layerflow._src.ops.image_nms_ops import (
    combined_non_max_suppression,
    non_max_suppression,
    non_max_suppression_overlaps,
    non_max_suppression_padded,
    non_max_suppression_with_scores,
)
from layerflow._src.ops.image_ops import (
    ResizeMethod,
    convert_image_dtype,
    resize,
    resize_with_pad,
)
