"""`tf.dtypes.experimental`: the float8, float4 and 2/4-bit integer dtypes of `ml_dtypes`,
created (and ml_dtypes imported) on first access."""

from layerflow._src.framework.dtypes import ML_DTYPES as _ML_DTYPES

_NAMES = sorted(set(_ML_DTYPES) - {"bfloat16"})
__all__ = list(_NAMES)


def __getattr__(name: str):  # noqa: ANN202 - module hook
    if name in _NAMES:
        from layerflow._src.framework.dtypes import ml_dtype

        try:
            return ml_dtype(name)
        except ImportError as err:
            raise AttributeError(str(err)) from err
    raise AttributeError(f"module 'layerflow.dtypes.experimental' has no attribute {name!r}")


def __dir__() -> list[str]:
    return list(_NAMES)
