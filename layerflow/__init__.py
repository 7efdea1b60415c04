"""layerflow: TensorFlow's API on NumPy and CuPy. Use it as `import layerflow as tf`.

This module only re-exports; the implementation lives in `layerflow._src`.
"""

from layerflow import _lazy_facade as _lazy
from layerflow import config, debugging, dtypes, errors, image, linalg, math, nest, nn, random
from layerflow._src.autodiff import dispatch as _public_names
from layerflow._src.autodiff.custom_gradient import custom_gradient
from layerflow._src.autodiff.tape import GradientTape
from layerflow._src.backend import DeviceContext as _DeviceContext
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.device_spec import DeviceSpec
from layerflow._src.framework.indexed_slices import IndexedSlices, IndexedSlicesSpec
from layerflow._src.framework.tensor import Tensor, is_tensor
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.trackable import Trackable as _Trackable
from layerflow._src.framework.variables import (
    Variable,
    VariableAggregation,
    VariableSynchronization,
    variable_creator_scope,
)
from layerflow._src.function import function, init_scope, inside_function, is_symbolic_tensor
from layerflow._src.ops.array_ops import (
    concat,
    constant,
    expand_dims,
    eye,
    fill,
    identity,
    linspace,
    ones,
    range,  # noqa: A004 - TF's name
    rank,
    shape,
    size,
    split,
    squeeze,
    stack,
    stop_gradient,
    transpose,
    unstack,
    zeros,
)
from layerflow._src.ops.complex_ops import complex  # noqa: A004 - TF's name
from layerflow._src.ops.control_flow_ops import (
    case,
    cond,
    control_dependencies,
    ensure_shape,
    executing_eagerly,
    get_static_value,
    group,
    identity_n,
    newaxis,
    no_op,
    switch_case,
    timestamp,
    while_loop,
)
from layerflow._src.ops.control_flow_ops import tuple_ as tuple  # noqa: A004 - TF's name
from layerflow._src.ops.debugging_ops import (
    Assert,
    assert_equal,
    assert_greater,
    assert_less,
    assert_rank,
)
from layerflow._src.ops.elementwise_more_ops import (
    acosh,
    asinh,
    atan2,
    atanh,
    realdiv,
    saturate_cast,
    scalar_mul,
    truncatediv,
    truncatemod,
)
from layerflow._src.ops.elementwise_ops import (
    acos,
    asin,
    atan,
    clip_by_value,
    cos,
    cosh,
    floor,
    log1p,
    round,  # noqa: A004 - TF's name
    rsqrt,
    sin,
    sinh,
    tan,
)
from layerflow._src.ops.gather_ops import (
    boolean_mask,
    gather,
    gather_nd,
    one_hot,
    scatter_nd,
    tensor_scatter_nd_add,
    tensor_scatter_nd_sub,
    tensor_scatter_nd_update,
)
from layerflow._src.ops.linalg_eig_ops import eig, eigvals, matrix_square_root
from layerflow._src.ops.linalg_ops import einsum, tensordot
from layerflow._src.ops.logging_ops import print_v2 as print  # noqa: A004 - TF's name
from layerflow._src.ops.manip_ops import meshgrid, pad, repeat, reverse, roll, sequence_mask, tile
from layerflow._src.ops.math_ops import (
    abs,  # noqa: A004 - TF's name
    add,
    broadcast_to,
    cast,
    divide,
    equal,
    exp,
    floordiv,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    logical_and,
    logical_not,
    logical_or,
    matmul,
    maximum,
    minimum,
    multiply,
    negative,
    not_equal,
    ones_like,
    pow,  # noqa: A004 - TF's name
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_sum,
    reshape,
    sigmoid,
    sign,
    sqrt,
    square,
    subtract,
    tanh,
    truediv,
    where,
    zeros_like,
)
from layerflow._src.ops.optional_ops import OptionalSpec
from layerflow._src.ops.ordering_ops import approx_top_k, argsort, sort, unique
from layerflow._src.ops.reduce_ops import (
    add_n,
    argmax,
    argmin,
    clip_by_global_norm,
    clip_by_norm,
    cumsum,
    norm,
    reduce_all,
    reduce_any,
    reduce_logsumexp,
    reduce_prod,
)
from layerflow._src.ops.segment_ops import searchsorted
from layerflow._src.ops.stateless_shuffle_ops import index_shuffle as random_index_shuffle
from layerflow._src.utils.naming import name_scope
from layerflow.dtypes import (  # the dtype constants are tf.dtypes' own
    DType,
    as_dtype,
    bool,  # noqa: A004 - TF's name
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
    string,
    uint8,
    uint16,
    uint32,
    uint64,
)

# isort: split
# --- convolution family and space-to-batch (h-tfnn): in _LAZY_NAMES (imported on first use) ---

# isort: split
# --- string and ragged tensors (h-strings): in _LAZY_NAMES (imported on first use) ---

# isort: split
# --- edit distance and TF's raw N-D FFT ops (h-ext): in _LAZY_NAMES (imported on first use) ---

device = _DeviceContext


def _this():  # noqa: ANN202 - this module
    import sys

    return sys.modules[__name__]


def get_logger():  # noqa: ANN201 - the logging.Logger of layerflow
    """The `logging.Logger` layerflow reports through (`tf.get_logger()`; TF's is named
    'tensorflow'); e.g. `tf.get_logger().setLevel("ERROR")`."""
    import logging

    return logging.getLogger("layerflow")


def get_current_name_scope() -> str:
    """The current name scope, "" at the top, "outer/inner" inside two `tf.name_scope`s."""
    from layerflow._src.utils.naming import current_scope

    return current_scope().rstrip("/")


__version__ = "0.1.0"
version = __version__

# The public names of ops (TFOpLambda layers are named after them), most specific namespace
# first, as TF's canonical names: tf.nn.relu, tf.math.reduce_sum, tf.linalg.matmul, tf.concat.
# Names their facades import on first use come in at the first lookup (autodiff/dispatch.py).
for _space, _module in (("nn", nn), ("math", math), ("linalg", linalg), ("image", image),
                        ("random", random)):  # fmt: skip
    _public_names.register_namespace(_space, dict(vars(_module)), _lazy.members_of(_module))
_public_names.register_namespace("", dict(globals()), lambda: _lazy.members_of(_this())())
del _space, _module

# Ops imported on first use, to keep `import layerflow` fast.
_LAZY_NAMES = {
    "edit_distance": "layerflow._src.ops.sparse_cross_ops",
    "fftnd": "layerflow._src.ops.fft_nd_ops",
    "ifftnd": "layerflow._src.ops.fft_nd_ops",
    "irfftnd": "layerflow._src.ops.fft_nd_ops",
    "rfftnd": "layerflow._src.ops.fft_nd_ops",
    "bitcast": "layerflow._src.ops.array_extra_ops",
    "broadcast_dynamic_shape": "layerflow._src.ops.array_extra_ops",
    "broadcast_static_shape": "layerflow._src.ops.array_extra_ops",
    "dynamic_partition": "layerflow._src.ops.array_extra_ops",
    "dynamic_stitch": "layerflow._src.ops.array_extra_ops",
    "histogram_fixed_width": "layerflow._src.ops.array_extra_ops",
    "histogram_fixed_width_bins": "layerflow._src.ops.array_extra_ops",
    "parallel_stack": "layerflow._src.ops.array_extra_ops",
    "reverse_sequence": "layerflow._src.ops.array_extra_ops",
    "shape_n": "layerflow._src.ops.array_extra_ops",
    "slice": "layerflow._src.ops.array_extra_ops",
    "strided_slice": "layerflow._src.ops.array_extra_ops",
    "tensor_scatter_nd_max": "layerflow._src.ops.array_extra_ops",
    "tensor_scatter_nd_min": "layerflow._src.ops.array_extra_ops",
    "unique_with_counts": "layerflow._src.ops.array_extra_ops",
    "unravel_index": "layerflow._src.ops.array_extra_ops",
    "TensorArray": "layerflow._src.ops.tensor_array_ops",
    "TensorArraySpec": "layerflow._src.ops.tensor_array_ops",
    "conv": "layerflow._src.ops.conv_transpose_ops",
    "conv2d_backprop_filter_v2": "layerflow._src.ops.conv_transpose_ops",
    "conv2d_backprop_input_v2": "layerflow._src.ops.conv_transpose_ops",
    "extract_volume_patches": "layerflow._src.ops.pool_extra_ops",
    "batch_to_space": "layerflow._src.ops.space_batch_ops",
    "required_space_to_batch_paddings": "layerflow._src.ops.space_batch_ops",
    "space_to_batch": "layerflow._src.ops.space_batch_ops",
    "space_to_batch_nd": "layerflow._src.ops.space_batch_ops",
    "RaggedTensor": "layerflow._src.ops.ragged.ragged_tensor",
    "RaggedTensorSpec": "layerflow._src.ops.ragged.ragged_spec",
    "ragged_fill_empty_rows": "layerflow._src.ops.ragged.ragged_ops",
    "ragged_fill_empty_rows_grad": "layerflow._src.ops.ragged.ragged_ops",
    "as_string": "layerflow._src.ops.string_ops",
    "fingerprint": "layerflow._src.ops.string_ops:fingerprint_op",
    "foldl": "layerflow._src.ops.functional_ops",
    "foldr": "layerflow._src.ops.functional_ops",
    "map_fn": "layerflow._src.ops.functional_ops",
    "scan": "layerflow._src.ops.functional_ops",
    "vectorized_map": "layerflow._src.ops.functional_ops",
    "AggregationMethod": "layerflow._src.ops.py_func_ops",
    "UnconnectedGradients": "layerflow._src.ops.py_func_ops",
    "grad_pass_through": "layerflow._src.ops.py_func_ops",
    "gradients": "layerflow._src.ops.py_func_ops",
    "hessians": "layerflow._src.ops.py_func_ops",
    "numpy_function": "layerflow._src.ops.py_func_ops",
    "py_function": "layerflow._src.ops.py_func_ops",
    "recompute_grad": "layerflow._src.ops.py_func_ops",
}  # fmt: skip

_LAZY = {
    "experimental": "layerflow.experimental",
    "autodiff": "layerflow.autodiff",
    "keras": "layerflow.keras",
    "data": "layerflow.data",
    "autograph": "layerflow.autograph",
    "distribute": "layerflow.distribute",
    "io": "layerflow.io",
    "train": "layerflow.train",
    "image": "layerflow.image",
    "initializers": "layerflow.initializers",
    "losses": "layerflow.losses",
    "optimizers": "layerflow.optimizers",
    "metrics": "layerflow.metrics",
    "summary": "layerflow.summary",
    "strings": "layerflow.strings",
    "ragged": "layerflow.ragged",
    "sparse": "layerflow.sparse",
    "bitwise": "layerflow.bitwise",
    "sets": "layerflow.sets",
    "signal": "layerflow.signal",
    "types": "layerflow.types",
    "audio": "layerflow.audio",
    "test": "layerflow.test",
    "quantization": "layerflow.quantization",
}


def __getattr__(name: str):  # noqa: ANN202 - module hook
    if name in _LAZY_NAMES:
        return _lazy_op(name)
    if name == "bfloat16":
        return _bfloat16()
    target = _LAZY.get(name)
    if target is None:
        extra = _lazy_functions().get(name)
        if extra is not None:
            return extra
        why = _ABSENT.get(name)
        if why is not None:
            raise AttributeError(f"layerflow has no tf.{name}: {why}")
        raise AttributeError(f"module 'layerflow' has no attribute {name!r}")
    import importlib

    module = importlib.import_module(target)
    globals()[name] = module
    return module


_lazy_op = _lazy.lazy_getattr("layerflow", _LAZY_NAMES, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_NAMES) | set(_LAZY))


# TF names that cannot mean anything in an eager framework without op types, and why.
_ABSENT = {
    "NotDifferentiable": "it is TF 1's name, gone from TF 2's API; use tf.no_gradient(op_type).",
}


def _bfloat16():  # noqa: ANN202 - a DType
    from layerflow._src.framework.dtypes import bfloat16_dtype

    try:
        return bfloat16_dtype()
    except ImportError as err:
        raise AttributeError(str(err)) from err


def _lazy_functions() -> dict:
    """TF's top-level initializer aliases, which live in keras, tf.Module and tf.TensorSpec
    (imported on first use, to keep `import layerflow` fast)."""
    from layerflow._src.autodiff import gradient_registry
    from layerflow._src.framework import sparse_tensor, type_spec
    from layerflow._src.framework.module import Module
    from layerflow._src.keras import initializers as init

    return {
        "RegisterGradient": gradient_registry.RegisterGradient,
        "no_gradient": gradient_registry.no_gradient,
        "Module": Module,
        "SparseTensor": sparse_tensor.SparseTensor,
        "SparseTensorSpec": sparse_tensor.SparseTensorSpec,
        "TensorSpec": type_spec.TensorSpec,
        "TypeSpec": type_spec.TypeSpec,
        "NoneTensorSpec": type_spec.NoneTensorSpec,
        "type_spec_from_value": type_spec.type_spec_from_value,
        "random_normal_initializer": init.RandomNormal,
        "random_uniform_initializer": init.RandomUniform,
        "zeros_initializer": init.Zeros,
        "ones_initializer": init.Ones,
        "constant_initializer": init.Constant,
        "glorot_uniform_initializer": init.GlorotUniform,
        "truncated_normal_initializer": init.TruncatedNormal,
    }
