"""`tf.image`: resizing and padding images (NHWC)."""

from layerflow._src.ops.image_box_ops import (
    draw_bounding_boxes,
    generate_bounding_box_proposals,
    sample_distorted_bounding_box,
    stateless_sample_distorted_bounding_box,
)
from layerflow._src.ops.image_codec_ops import (
    decode_and_crop_jpeg,
    decode_bmp,
    decode_gif,
    decode_image,
    decode_jpeg,
    decode_jxl,
    decode_png,
    decode_webp,
    extract_jpeg_shape,
    is_jpeg,
)
from layerflow._src.ops.image_color_ops import (
    adjust_brightness,
    adjust_contrast,
    adjust_gamma,
    adjust_hue,
    adjust_saturation,
    grayscale_to_rgb,
    hsv_to_rgb,
    per_image_standardization,
    rgb_to_grayscale,
    rgb_to_hsv,
    rgb_to_yiq,
    rgb_to_yuv,
    yiq_to_rgb,
    yuv_to_rgb,
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
from layerflow._src.ops.image_encode_ops import (
    adjust_jpeg_quality,
    encode_jpeg,
    encode_png,
    random_jpeg_quality,
    stateless_random_jpeg_quality,
)
from layerflow._src.ops.image_geometry_ops import (
    flip_left_right,
    flip_up_down,
    random_crop,
    random_flip_left_right,
    random_flip_up_down,
    rot90,
    stateless_random_crop,
    stateless_random_flip_left_right,
    stateless_random_flip_up_down,
    transpose,
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
from layerflow._src.ops.image_random_ops import (
    random_brightness,
    random_contrast,
    random_hue,
    random_saturation,
    stateless_random_brightness,
    stateless_random_contrast,
    stateless_random_hue,
    stateless_random_saturation,
)
