"""`tf.keras.preprocessing`: the legacy text, sequence and image preprocessing API (tf_keras).
Submodules and the dataset helpers are imported on first use."""

import importlib

_SUBMODULES = {"image", "sequence", "text"}

_NAMES = {
    "image_dataset_from_directory": (
        "layerflow._src.keras.utils.image_dataset", "image_dataset_from_directory"
    ),
    "text_dataset_from_directory": (
        "layerflow._src.keras.utils.text_dataset", "text_dataset_from_directory"
    ),
    "timeseries_dataset_from_array": (
        "layerflow._src.keras.utils.dataset_utils", "timeseries_dataset_from_array"
    ),
}  # fmt: skip

__all__ = sorted(_SUBMODULES | set(_NAMES))


def __getattr__(name):  # noqa: ANN001, ANN202 - module hook
    if name in _SUBMODULES:
        module = importlib.import_module(f"layerflow.keras.preprocessing.{name}")
        globals()[name] = module
        return module
    target = _NAMES.get(name)
    if target is None:
        raise AttributeError(f"module 'layerflow.keras.preprocessing' has no attribute {name!r}")
    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value


def __dir__():  # noqa: ANN202 - module hook
    return __all__
