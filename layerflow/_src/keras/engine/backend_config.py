"""Keras backend settings: default float dtype, fuzz factor, image data format, session reset."""

from __future__ import annotations

from layerflow._src.framework import dtypes
from layerflow._src.utils import naming

_config = {"floatx": "float32", "epsilon": 1e-7, "image_data_format": "channels_last"}


def floatx() -> str:
    """The default float dtype of layers and initializers.

    >>> floatx()
    'float32'
    """
    return _config["floatx"]


def set_floatx(value: str) -> None:
    name = dtypes.as_dtype(value).name if value in ("float16", "float32", "float64") else value
    if name not in ("float16", "float32", "float64"):
        raise ValueError(f"set_floatx expects 'float16', 'float32' or 'float64', got {value!r}.")
    _config["floatx"] = name


def epsilon() -> float:
    """The fuzz factor added to denominators (1e-7).

    >>> epsilon()
    1e-07
    """
    return _config["epsilon"]


def set_epsilon(value: float) -> None:
    _config["epsilon"] = float(value)


def image_data_format() -> str:
    """'channels_last' (NHWC, the default) or 'channels_first'.

    >>> image_data_format()
    'channels_last'
    """
    return _config["image_data_format"]


def set_image_data_format(data_format: str) -> None:
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(
            f"set_image_data_format expects 'channels_last' or 'channels_first', got "
            f"{data_format!r}."
        )
    _config["image_data_format"] = data_format


def clear_session() -> None:
    """Forget issued layer names, so the next `Dense()` is named `dense` again.

    >>> clear_session()
    """
    naming.reset_names()
