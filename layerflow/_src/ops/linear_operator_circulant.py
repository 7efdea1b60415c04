"""`tf.linalg.LinearOperatorCirculant`, `...Circulant2D`, `...Circulant3D`: (nested block)
circulant operators known by their spectrum, applied through the FFT.

A circulant matrix is diagonal in the Fourier basis: A = F^-1 diag(spectrum) F, so
`matmul` is ifft(spectrum * fft(x)), `solve` divides instead, the determinant is the product of
the spectrum and the eigenvalues are the spectrum itself. The 2-D and 3-D operators are block
circulant with circulant blocks, which the 2-D and 3-D FFT diagonalise in the same way. As in
TF, the spectrum's dtype may differ from `input_output_dtype` (the operator's dtype): results
are computed in the complex dtype of the spectrum and cast to `input_output_dtype` (the real
part for a real dtype, exact when the spectrum is Hermitian). Everything is written with
layerflow ops, so gradients flow to the spectrum.

>>> import layerflow as tf
>>> op = tf.linalg.LinearOperatorCirculant([6.0, -3.0, -3.0], input_output_dtype=tf.float32)
>>> op.to_dense().numpy().round(3)
array([[0., 3., 3.],
       [3., 0., 3.],
       [3., 3., 0.]], dtype=float32)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layerflow._src.framework import dtypes, errors
from layerflow._src.ops.array_ops import expand_dims, transpose
from layerflow._src.ops.compare_ops import cast
from layerflow._src.ops.complex_ops import complex as complex_
from layerflow._src.ops.complex_ops import conj, imag, real
from layerflow._src.ops.core_ops import reduce_max, reduce_min
from layerflow._src.ops.fft_ops import _fft
from layerflow._src.ops.linear_operator import LinearOperator, _adj
from layerflow._src.ops.math_ops import _as_tensor, divide, log, multiply, reshape, zeros_like
from layerflow._src.ops.math_ops import abs as abs_
from layerflow._src.ops.reduce_ops import reduce_prod, reduce_sum

_SPECTRUM_DTYPES = ("float16", "float32", "float64", "complex64", "complex128")


def _to_complex(x: Any) -> Any:
    """TF's rule: float64 computes in complex128, every other real dtype in complex64."""
    if x.dtype.is_complex:
        return x
    return cast(x, dtypes.complex128 if x.dtype == dtypes.float64 else dtypes.complex64)


def _to_dtype(x: Any, dtype: Any) -> Any:
    """`x` as `dtype`; a complex value cast to a real dtype keeps its real part (TF's cast)."""
    if x.dtype.is_complex and not dtype.is_complex:
        x = real(x)
    return x if x.dtype == dtype else cast(x, dtype)


def _swap_last(x: Any) -> Any:
    r = x._data.ndim
    return transpose(x, list(range(r - 2)) + [r - 1, r - 2])


def _non_singular_hint(a: Any, b: Any) -> Any:
    if a.is_non_singular and b.is_non_singular:
        return True
    if a.is_non_singular is False or b.is_non_singular is False:
        return False
    return None


def _commuting_self_adjoint_hint(a: Any, b: Any) -> Any:
    if a.is_self_adjoint and b.is_self_adjoint:
        return True
    if (a.is_self_adjoint, b.is_self_adjoint) in ((True, False), (False, True)):
        return False
    return None


def _commuting_positive_definite_hint(a: Any, b: Any) -> Any:
    if (a.is_positive_definite and b.is_positive_definite and a.is_self_adjoint
            and b.is_self_adjoint):  # fmt: skip
        return True
    return None


class _BaseLinearOperatorCirculant(LinearOperator):
    """Shared by the three circulant operators; `_block_depth` is 1, 2 or 3."""

    _block_depth = 1

    def __init__(self, spectrum: Any, input_output_dtype: Any = dtypes.complex64,
                 is_non_singular: Any = None, is_self_adjoint: Any = None,
                 is_positive_definite: Any = None, is_square: Any = True,
                 name: str | None = None) -> None:  # fmt: skip
        cls = type(self).__name__
        spectrum = _as_tensor(spectrum)
        if spectrum.dtype.name not in _SPECTRUM_DTYPES:
            raise TypeError(
                f"{cls}: the spectrum must have dtype float16, float32, float64, complex64 or "
                f"complex128, got {spectrum.dtype.name}. Cast it with tf.cast(spectrum, "
                "tf.float32)."
            )
        depth = self._block_depth
        if spectrum._data.ndim < depth:
            raise ValueError(
                f"{cls}: argument `spectrum` must have at least {depth} dimensions (batch "
                f"dimensions, then the {depth}-D block shape); got shape {list(spectrum.shape)}."
            )
        if not spectrum.dtype.is_complex:
            if is_self_adjoint is False:
                raise ValueError(
                    f"{cls}: a real spectrum always corresponds to a self-adjoint operator, but "
                    "is_self_adjoint=False was given. Pass is_self_adjoint=None or True, or a "
                    "complex spectrum."
                )
            is_self_adjoint = True
        if is_square is False:
            raise ValueError(
                f"{cls}: a [[nested] block] circulant operator is always square; got "
                "is_square=False. Leave is_square at its default (True)."
            )
        self._spectrum = spectrum
        parameters = {"spectrum": spectrum, "input_output_dtype": input_output_dtype,
                      "is_non_singular": is_non_singular, "is_self_adjoint": is_self_adjoint,
                      "is_positive_definite": is_positive_definite, "is_square": True,
                      "name": name or cls}  # fmt: skip
        super().__init__(dtypes.as_dtype(input_output_dtype), None, is_non_singular,
                         is_self_adjoint, is_positive_definite, True, name or cls,
                         parameters)  # fmt: skip

    # --- structure ---------------------------------------------------------------------------

    @property
    def spectrum(self) -> Any:
        return self._spectrum

    @property
    def block_depth(self) -> int:
        """How deeply the circulant blocks nest: 1, 2 or 3."""
        return self._block_depth

    @property
    def block_shape(self) -> Any:
        from layerflow._src.framework.tensor_shape import TensorShape

        return TensorShape(self._spectrum._data.shape[-self._block_depth :])

    def block_shape_tensor(self, name: str | None = None) -> Any:
        from layerflow._src.framework.convert import convert_to_tensor

        block = self._spectrum._data.shape[-self._block_depth :]
        return convert_to_tensor(np.asarray(block, np.int32))

    def _shape(self) -> tuple:
        shape = tuple(self._spectrum._data.shape)
        n = int(np.prod(shape[-self._block_depth :]))
        return (*shape[: -self._block_depth], n, n)

    def _block_axes(self, rank: int) -> tuple[int, ...]:
        return tuple(range(rank - self._block_depth, rank))

    def _fft_axes(self) -> tuple[int, ...]:
        """The block axes counted from the end (batch broadcasting may add leading ones)."""
        return tuple(range(-self._block_depth, 0))

    def _flat_spectrum(self) -> Any:
        """The spectrum with its block dimensions flattened: [..., N] (the eigenvalues)."""
        shape = tuple(self._spectrum._data.shape)
        return reshape(self._spectrum, [*shape[: -self._block_depth], -1])

    # --- the FFT path ------------------------------------------------------------------------

    def _apply(self, x: Any, adjoint: bool, adjoint_arg: bool, inverse: bool) -> Any:
        """ifft(spectrum * fft(x)) (or fft(x) / spectrum) on the columns of x [..., N, R]."""
        spectrum = _to_complex(self._spectrum)
        if adjoint:
            spectrum = conj(spectrum)
        x = _adj(x) if adjoint_arg else x
        if x.dtype != spectrum.dtype:
            x = cast(x, spectrum.dtype)
        # [..., N, R] -> [..., R, *block]: one vector per column, blocked for the FFT.
        lead = tuple(x._data.shape[:-2])
        cols = x._data.shape[-1]
        block = tuple(self._spectrum._data.shape[-self._block_depth :])
        vec = reshape(_swap_last(x), [*lead, cols, *block])
        axes = self._fft_axes()
        batch = tuple(spectrum._data.shape[: -self._block_depth])
        spec = reshape(spectrum, [*batch, 1, *block])
        freq = _fft(vec, axes, False)
        freq = divide(freq, spec) if inverse else multiply(spec, freq)
        out = _fft(freq, axes, True)
        out_lead = tuple(out._data.shape[: -self._block_depth - 1])
        out = _swap_last(reshape(out, [*out_lead, cols, -1]))
        return _to_dtype(out, self._dtype)

    def _matmul(self, x: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return self._apply(x, adjoint, adjoint_arg, inverse=False)

    def _solve(self, rhs: Any, adjoint: bool, adjoint_arg: bool) -> Any:
        return self._apply(rhs, adjoint, adjoint_arg, inverse=True)

    def _to_dense(self) -> Any:
        n = self._shape()[-1]
        return self._apply(_as_tensor(np.eye(n, dtype=self._dtype.np)), False, False, False)

    def convolution_kernel(self, name: str | None = None) -> Any:
        """The kernel whose D-dimensional DFT is the spectrum (ifft(spectrum)), in the
        operator's dtype."""
        spectrum = _to_complex(self._spectrum)
        kernel = _fft(spectrum, self._fft_axes(), True)
        return _to_dtype(kernel, self._dtype)

    # --- spectral quantities -----------------------------------------------------------------

    def _determinant(self) -> Any:
        axes = list(self._block_axes(self._spectrum._data.ndim))
        return _to_dtype(reduce_prod(self._spectrum, axes), self._dtype)

    def _log_abs_determinant(self) -> Any:
        axes = list(self._block_axes(self._spectrum._data.ndim))
        return _to_dtype(reduce_sum(log(abs_(self._spectrum)), axes), self._dtype)

    def trace(self, name: str | None = None) -> Any:
        """The sum of the spectrum (N times the kernel's first entry)."""
        axes = list(self._block_axes(self._spectrum._data.ndim))
        spectrum = self._spectrum
        re = reduce_sum(real(spectrum) if spectrum.dtype.is_complex else spectrum, axes)
        if not self._dtype.is_complex:
            return _to_dtype(re, self._dtype)
        if self._is_self_adjoint or not spectrum.dtype.is_complex:
            im = zeros_like(re)
        else:
            im = reduce_sum(imag(spectrum), axes)
        return _to_dtype(complex_(re, im), self._dtype)

    def _diag_part(self) -> Any:
        # Every diagonal entry of a circulant matrix is the kernel's first entry: trace / N.
        n = self._shape()[-1]
        value = divide(self.trace(), _as_tensor(np.asarray(n, self._dtype.np)))
        ones = _as_tensor(np.ones(self._shape()[:-1], self._dtype.np))
        return multiply(expand_dims(value, -1), ones)

    def eigvals(self, name: str | None = None) -> Any:
        """The spectrum, block dimensions flattened (self-adjoint operators only, as TF)."""
        if not self._is_self_adjoint:
            raise NotImplementedError(
                f"{self.name}.eigvals: only self-adjoint operators (is_self_adjoint=True) are "
                "supported, as in TF; the eigenvalues of any circulant operator are its "
                "`spectrum`."
            )
        return self._flat_spectrum()

    def cond(self, name: str | None = None) -> Any:
        """max |spectrum| / min |spectrum|."""
        mag = abs_(self._flat_spectrum())
        return divide(reduce_max(mag, -1), reduce_min(mag, -1))

    def assert_hermitian_spectrum(self, name: str | None = None) -> None:
        """Raise InvalidArgumentError unless the spectrum is Hermitian (the operator real)."""
        eps = np.finfo(self._dtype.real_dtype.np).eps
        kernel = _fft(_to_complex(self._spectrum), self._fft_axes(), True)
        err = float(np.max(np.abs(imag(kernel).numpy()), initial=0.0))
        if err >= eps * self._shape()[-1]:
            raise errors.InvalidArgumentError(
                None,
                "assert_hermitian_spectrum",
                f"{self.name}: Spectrum was not Hermitian (the convolution kernel has imaginary "
                f"parts up to {err:.3g}), so the operator is not a real matrix.",
            )

    # --- operator algebra: circulant in, circulant out ---------------------------------------

    def _like(self, spectrum: Any, **hints: Any) -> Any:
        return type(self)(spectrum, input_output_dtype=self._dtype, is_square=True, **hints)

    def adjoint(self, name: str | None = None) -> LinearOperator:
        """The circulant operator with the conjugate spectrum (self when self-adjoint)."""
        if self._is_self_adjoint:
            return self
        spectrum = self._spectrum
        return self._like(conj(spectrum) if spectrum.dtype.is_complex else spectrum,
                          is_non_singular=self._is_non_singular,
                          is_self_adjoint=self._is_self_adjoint,
                          is_positive_definite=self._is_positive_definite)  # fmt: skip

    H = property(adjoint)

    def inverse(self, name: str | None = None) -> LinearOperator:
        """The circulant operator with spectrum 1 / spectrum."""
        if self._is_non_singular is False:
            raise ValueError("Cannot take the Inverse: This operator represents a singular matrix.")
        one = _as_tensor(np.asarray(1, self._spectrum.dtype.np))
        return self._like(divide(one, self._spectrum), is_non_singular=self._is_non_singular,
                          is_self_adjoint=self._is_self_adjoint,
                          is_positive_definite=self._is_positive_definite)  # fmt: skip

    def _combine(self, other: Any, fn: Any) -> Any:
        return self._like(
            fn(self, other),
            is_non_singular=_non_singular_hint(self, other),
            is_self_adjoint=_commuting_self_adjoint_hint(self, other),
            is_positive_definite=_commuting_positive_definite_hint(self, other),
        )

    def matmul(self, x: Any, adjoint: bool = False, adjoint_arg: bool = False,
               name: str | None = None) -> Any:  # fmt: skip
        """self @ x; with a circulant operator of the same kind, the circulant operator whose
        spectrum is the product of both (circulant operators commute)."""
        if isinstance(x, _BaseLinearOperatorCirculant) and type(x) is type(self):
            left = self.adjoint() if adjoint else self
            right = x.adjoint() if adjoint_arg else x
            return left._combine(right, lambda a, b: multiply(a.spectrum, b.spectrum))
        return super().matmul(x, adjoint, adjoint_arg, name)

    def solve(self, rhs: Any, adjoint: bool = False, adjoint_arg: bool = False,
              name: str | None = None) -> Any:  # fmt: skip
        """X with self @ X = rhs; with a circulant operator of the same kind, the circulant
        operator whose spectrum is rhs.spectrum / self.spectrum."""
        if isinstance(rhs, _BaseLinearOperatorCirculant) and type(rhs) is type(self):
            left = self.adjoint() if adjoint else self
            right = rhs.adjoint() if adjoint_arg else rhs
            return left._combine(right, lambda a, b: divide(b.spectrum, a.spectrum))
        return super().solve(rhs, adjoint, adjoint_arg, name)


class LinearOperatorCirculant(_BaseLinearOperatorCirculant):
    """A [batch] circulant operator [..., N, N] from its `spectrum` [..., N]
    (`tf.linalg.LinearOperatorCirculant`).

    >>> import layerflow as tf
    >>> op = tf.linalg.LinearOperatorCirculant([6.0, -3.0, -3.0], input_output_dtype=tf.float32)
    >>> op.matvec([1.0, 0.0, 0.0]).numpy().round(3)
    array([0., 3., 3.], dtype=float32)
    """

    _block_depth = 1


class LinearOperatorCirculant2D(_BaseLinearOperatorCirculant):
    """A [batch] block circulant operator with circulant blocks, from its `spectrum`
    [..., N0, N1] (N = N0 * N1; `tf.linalg.LinearOperatorCirculant2D`).

    >>> import layerflow as tf
    >>> op = tf.linalg.LinearOperatorCirculant2D([[4.0, 2.0], [1.0, 1.0]],
    ...                                         input_output_dtype=tf.float32)
    >>> op.shape, float(op.determinant())
    (TensorShape([4, 4]), 8.0)
    """

    _block_depth = 2


class LinearOperatorCirculant3D(_BaseLinearOperatorCirculant):
    """A [batch] nested block circulant operator from its `spectrum` [..., N0, N1, N2]
    (N = N0 * N1 * N2; `tf.linalg.LinearOperatorCirculant3D`).

    >>> import layerflow as tf
    >>> op = tf.linalg.LinearOperatorCirculant3D(tf.ones([2, 2, 2]),
    ...                                         input_output_dtype=tf.float32)
    >>> float(op.to_dense()[0, 0])
    1.0
    """

    _block_depth = 3


__all__ = ["LinearOperatorCirculant", "LinearOperatorCirculant2D", "LinearOperatorCirculant3D"]
