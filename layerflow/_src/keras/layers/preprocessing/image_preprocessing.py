"""Image preprocessing layers that are not random: `Rescaling`, `Resizing`, `CenterCrop`
(tf_keras 2 semantics; images are [..., height, width, channels])."""

from __future__ import annotations

from typing import Any

from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.ops import image_ops, math_ops

__all__ = ["CenterCrop", "Rescaling", "Resizing", "check_image", "smart_resize"]

_INTERPOLATIONS = (
    "bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
    "mitchellcubic",
)  # fmt: skip


def check_interpolation(owner: str, interpolation: Any) -> str:
    value = str(getattr(interpolation, "value", interpolation)).lower()
    if value not in _INTERPOLATIONS:
        raise NotImplementedError(
            f"{owner}: value not recognized for `interpolation`: {interpolation!r}. Supported "
            f"values are: {list(_INTERPOLATIONS)}."
        )
    return value


def check_size(owner: str, what: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{owner}: {what} must be a positive int, got {value!r}.")
    return value


def check_image(layer: Layer, x: Any) -> None:
    """A ValueError naming the layer for an input that is not [H, W, C] or [N, H, W, C]."""
    rank = len(x.shape)
    if rank not in (3, 4):
        raise ValueError(
            f"{type(layer).__name__} '{layer.name}' expects images of rank 3 [height, width, "
            f"channels] or 4 [batch, height, width, channels], got shape {tuple(x.shape)}."
        )


def _crop(x: Any, top: int, left: int, height: int, width: int) -> Any:
    if len(x.shape) == 4:
        return x[:, top : top + height, left : left + width, :]
    return x[top : top + height, left : left + width, :]


def smart_resize(x: Any, size: Any, interpolation: str = "bilinear") -> Any:
    """Resize to `size` without distorting the aspect ratio: crop the largest centred window
    of the target's aspect ratio, then resize it (tf_keras's `image_utils.smart_resize`)."""
    import numpy as np

    th, tw = int(size[0]), int(size[1])
    h, w = int(x.shape[-3]), int(x.shape[-2])
    crop_h = min(h, int(np.float32(w * th) / np.float32(tw)))
    crop_w = min(w, int(np.float32(h * tw) / np.float32(th)))
    top = int(np.float32(h - crop_h) / np.float32(2))
    left = int(np.float32(w - crop_w) / np.float32(2))
    return image_ops.resize(_crop(x, top, left, crop_h, crop_w), (th, tw), method=interpolation)


class Rescaling(Layer):
    """Multiply by `scale` and add `offset`: `x * scale + offset` in the layer's dtype.

    >>> import layerflow as tf
    >>> tf.keras.layers.Rescaling(1.0 / 255)(tf.constant([[0, 255]], tf.uint8)).numpy()
    array([[0., 1.]], dtype=float32)
    """

    _cast_inputs_to_compute_dtype = True

    def __init__(self, scale: Any, offset: Any = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scale = scale
        self.offset = offset

    def call(self, inputs: Any) -> Any:
        dtype = self.compute_dtype
        x = math_ops.cast(inputs, dtype)
        return x * math_ops.cast(self.scale, dtype) + math_ops.cast(self.offset, dtype)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "scale": self.scale, "offset": self.offset}


class Resizing(Layer):
    """Resize images to `(height, width)` with `interpolation`; `crop_to_aspect_ratio=True`
    crops the centre to the target aspect ratio first.

    >>> import layerflow as tf
    >>> tf.keras.layers.Resizing(2, 3)(tf.ones((1, 4, 4, 1))).shape
    TensorShape([1, 2, 3, 1])
    """

    def __init__(self, height: int, width: int, interpolation: str = "bilinear",
                 crop_to_aspect_ratio: bool = False, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        self.height = check_size("Resizing", "height", height)
        self.width = check_size("Resizing", "width", width)
        self.interpolation = check_interpolation("Resizing", interpolation)
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)

    def call(self, inputs: Any) -> Any:
        check_image(self, inputs)
        # tf.image.resize computes in float32 except nearest, which keeps the input dtype.
        work = self.compute_dtype if self.interpolation == "nearest" else "float32"
        x = math_ops.cast(inputs, work)
        size = (self.height, self.width)
        if self.crop_to_aspect_ratio:
            out = smart_resize(x, size, self.interpolation)
        else:
            out = image_ops.resize(x, size, method=self.interpolation)
        return math_ops.cast(out, self.compute_dtype)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        shape = TensorShape(input_shape).as_list()
        shape[-3], shape[-2] = self.height, self.width
        return TensorShape(shape)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "height": self.height,
            "width": self.width,
            "interpolation": self.interpolation,
            "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
        }


class CenterCrop(Layer):
    """Crop the centre `(height, width)` window; an image smaller than that is resized up
    (bilinear, keeping the aspect ratio by cropping), as tf_keras does.

    >>> import layerflow as tf
    >>> tf.keras.layers.CenterCrop(2, 2)(tf.reshape(tf.range(16.0), (4, 4, 1)))[..., 0].numpy()
    array([[ 5.,  6.],
           [ 9., 10.]], dtype=float32)
    """

    def __init__(self, height: int, width: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.height = check_size("CenterCrop", "height", height)
        self.width = check_size("CenterCrop", "width", width)

    def call(self, inputs: Any) -> Any:
        check_image(self, inputs)
        x = math_ops.cast(inputs, self.compute_dtype)
        h_diff = int(x.shape[-3]) - self.height
        w_diff = int(x.shape[-2]) - self.width
        if h_diff >= 0 and w_diff >= 0:
            return _crop(x, h_diff // 2, w_diff // 2, self.height, self.width)
        return math_ops.cast(smart_resize(x, (self.height, self.width)), self.compute_dtype)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        shape = TensorShape(input_shape).as_list()
        shape[-3], shape[-2] = self.height, self.width
        return TensorShape(shape)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "height": self.height, "width": self.width}
