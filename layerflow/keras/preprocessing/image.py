"""`tf.keras.preprocessing.image`."""

from layerflow._src.keras.preprocessing_legacy.image_generator import ImageDataGenerator
from layerflow._src.keras.preprocessing_legacy.image_iterators import (
    DirectoryIterator,
    Iterator,
    NumpyArrayIterator,
)
from layerflow._src.keras.preprocessing_legacy.image_transforms import (
    apply_affine_transform,
    apply_brightness_shift,
    apply_channel_shift,
    random_brightness,
    random_channel_shift,
    random_rotation,
    random_shear,
    random_shift,
    random_zoom,
    smart_resize,
)
from layerflow._src.keras.utils.image_utils import array_to_img, img_to_array, load_img, save_img

__all__ = [
    "DirectoryIterator",
    "ImageDataGenerator",
    "Iterator",
    "NumpyArrayIterator",
    "apply_affine_transform",
    "apply_brightness_shift",
    "apply_channel_shift",
    "array_to_img",
    "img_to_array",
    "load_img",
    "random_brightness",
    "random_channel_shift",
    "random_rotation",
    "random_shear",
    "random_shift",
    "random_zoom",
    "save_img",
    "smart_resize",
]
