"""`tf.image`: resizing and padding images (NHWC)."""

from layerflow._src.ops.image_ops import (
    ResizeMethod,
    convert_image_dtype,
    resize,
    resize_with_pad,
)
