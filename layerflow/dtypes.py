"""`tf.dtypes`: the DType class, the dtype constants and conversions."""

from layerflow._src.framework.dtypes import (
    QUANTIZED_DTYPES,
    DType,
    as_dtype,
    complex64,
    complex128,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    qint8,
    qint16,
    qint32,
    quint8,
    quint16,
    resource,
    string,
    uint8,
    uint16,
    uint32,
    uint64,
    variant,
)
from layerflow._src.framework.dtypes import (
    bool_ as bool,  # noqa: A004 - TF's name
)
from layerflow._src.ops.complex_ops import complex  # noqa: A004 - TF's name
from layerflow._src.ops.elementwise_more_ops import saturate_cast
from layerflow._src.ops.math_ops import cast


def __getattr__(name: str):  # noqa: ANN202 - module hook
    if name == "bfloat16":  # needs ml_dtypes, imported on first use
        from layerflow._src.framework.dtypes import bfloat16_dtype

        try:
            return bfloat16_dtype()
        except ImportError as err:
            raise AttributeError(str(err)) from err
    if name == "experimental":  # float8/int4/... through ml_dtypes, on first use
        import importlib

        return importlib.import_module("layerflow._dtypes_experimental")
    raise AttributeError(f"module 'layerflow.dtypes' has no attribute {name!r}")
