"""`tf.linalg`: matrix operations."""

from layerflow._src.ops.array_ops import eye
from layerflow._src.ops.linalg_decomp_ops import eigh, eigvalsh, qr, svd
from layerflow._src.ops.linalg_eig_ops import eig, eigh_tridiagonal, eigvals, logm, sqrtm
from layerflow._src.ops.linalg_lu_ops import (
    banded_triangular_solve,
    lu,
    lu_matrix_inverse,
    lu_reconstruct,
    lu_solve,
    tridiagonal_matmul,
    tridiagonal_solve,
)
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
from layerflow._src.ops.linear_operator import (
    LinearOperator,
    LinearOperatorDiag,
    LinearOperatorFullMatrix,
    LinearOperatorIdentity,
    LinearOperatorLowerTriangular,
    LinearOperatorScaledIdentity,
)
from layerflow._src.ops.linear_operator_special import (
    LinearOperatorHouseholder,
    LinearOperatorPermutation,
    LinearOperatorTridiag,
)
from layerflow._src.ops.linear_operator_structured import (
    LinearOperatorAdjoint,
    LinearOperatorBlockDiag,
    LinearOperatorComposition,
    LinearOperatorInversion,
    LinearOperatorKronecker,
    LinearOperatorLowRankUpdate,
    LinearOperatorToeplitz,
    LinearOperatorZeros,
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
from layerflow.linalg import experimental
