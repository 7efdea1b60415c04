"""`tf.linalg`: matrix operations."""

from layerflow import _lazy_facade as _lazy
from layerflow._src.ops.array_ops import eye
from layerflow._src.ops.linalg_eig_ops import eig, eigh_tridiagonal, eigvals, logm, sqrtm
from layerflow._src.ops.linalg_ops import (
    band_part,
    det,
    diag,
    diag_part,
    einsum,
    inv,
    matmul,
    matrix_transpose,
    matvec,
    tensordot,
    trace,
)
from layerflow._src.ops.linalg_solve_ops import (
    cholesky,
    cholesky_solve,
    expm,
    logdet,
    lstsq,
    matrix_rank,
    pinv,
    slogdet,
    solve,
    triangular_solve,
)
from layerflow._src.ops.matrix_structure_ops import (
    adjoint,
    cross,
    set_diag,
    tensor_diag,
    tensor_diag_part,
)
from layerflow._src.ops.normalization_ops import l2_normalize, normalize
from layerflow._src.ops.reduce_ops import global_norm, norm

# Imported on first use, to keep `import layerflow` fast (the op-name registry resolves them
# at its first lookup: layerflow/__init__.py).
_LAZY_NAMES = {
    **dict.fromkeys(["eigh", "eigvalsh", "qr", "svd"], "layerflow._src.ops.linalg_decomp_ops"),
    **dict.fromkeys(
        ["banded_triangular_solve", "lu", "lu_matrix_inverse", "lu_reconstruct", "lu_solve",
         "tridiagonal_matmul", "tridiagonal_solve"],
        "layerflow._src.ops.linalg_lu_ops",
    ),
}  # fmt: skip

# The LinearOperator family and `experimental` load on first use (import time stays small).
_LAZY = {
    **dict.fromkeys(
        ["LinearOperator", "LinearOperatorDiag", "LinearOperatorFullMatrix",
         "LinearOperatorIdentity", "LinearOperatorLowerTriangular",
         "LinearOperatorScaledIdentity"],
        "layerflow._src.ops.linear_operator",
    ),
    **dict.fromkeys(
        ["LinearOperatorAdjoint", "LinearOperatorBlockDiag", "LinearOperatorComposition",
         "LinearOperatorInversion", "LinearOperatorKronecker", "LinearOperatorLowRankUpdate",
         "LinearOperatorToeplitz", "LinearOperatorZeros"],
        "layerflow._src.ops.linear_operator_structured",
    ),
    **dict.fromkeys(
        ["LinearOperatorHouseholder", "LinearOperatorPermutation", "LinearOperatorTridiag"],
        "layerflow._src.ops.linear_operator_special",
    ),
    **dict.fromkeys(
        ["LinearOperatorCirculant", "LinearOperatorCirculant2D", "LinearOperatorCirculant3D"],
        "layerflow._src.ops.linear_operator_circulant",
    ),
    "LinearOperatorBlockLowerTriangular": "layerflow._src.ops.linear_operator_block",
    "experimental": None,
}  # fmt: skip


def __getattr__(name: str):  # noqa: ANN202 - module hook
    if name in _LAZY_NAMES:
        return _lazy_op(name)
    if name not in _LAZY:
        raise AttributeError(f"module 'layerflow.linalg' has no attribute {name!r}")
    import importlib

    if name == "experimental":
        value = importlib.import_module("layerflow.linalg.experimental")
    else:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


_lazy_op = _lazy.lazy_getattr("layerflow.linalg", _LAZY_NAMES, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_NAMES) | set(_LAZY))
