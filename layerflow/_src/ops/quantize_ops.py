"""`tf.quantization.quantize`, `dequantize` and `quantized_concat`: float32 to and from the
quantized dtypes (qint8, quint8, qint16, quint16, qint32), with TF 2.21's CPU arithmetic.

A quantized tensor holds its integers in TF's NumPy stand-in (a one-field structured array,
see `framework/dtypes._OpaqueDType`) and lives on the host, as TF's quantized kernels are
CPU kernels; its `numpy()` gives the plain integers. These ops have no gradient, as in TF.

>>> import layerflow as tf
>>> q = tf.quantization.quantize([-1.0, 0.0, 0.5, 2.0], -1.0, 2.0, tf.dtypes.quint8)
>>> q.output.numpy(), float(q.output_min), float(q.output_max)
(array([  0,  85, 128, 255], dtype=uint8), -1.0, 2.0)
>>> tf.quantization.dequantize(q.output, q.output_min, q.output_max).numpy()
array([-1.       ,  0.       ,  0.5058824,  2.       ], dtype=float32)
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, plain

QuantizeV2 = namedtuple("QuantizeV2", ["output", "output_min", "output_max"])
QuantizedConcat = namedtuple("QuantizedConcat", ["output", "output_min", "output_max"])

_F = np.float32
_MODES = ("MIN_COMBINED", "MIN_FIRST", "SCALED")
_ROUND_MODES = ("HALF_AWAY_FROM_ZERO", "HALF_TO_EVEN")
_ALLOWED = "qint8, quint8, qint32, qint16, quint16"


def _invalid(opname: str, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, opname, f"{opname}: {message}")


def _round_half_away(v: Any) -> Any:
    """std::round / Eigen's round: halves away from zero."""
    return np.trunc(v + np.copysign(v.dtype.type(0.5), v))


def _limits(qtype: dtypes.DType) -> tuple[np.dtype, int, int]:
    base = qtype.np[0]
    info = np.iinfo(base)
    return base, int(info.min), int(info.max)


def _quantized_type(value: Any, opname: str, attr: str = "T") -> dtypes.DType:
    dt = dtypes.as_dtype(value)
    if not dt.is_quantized:
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"Value for attr '{attr}' of {dt.name} is not in the list of allowed "
            f"values: {_ALLOWED}. {opname} works on the quantized dtypes (tf.dtypes.quint8, ...).",
        )
    return dt


def _check_modes(opname: str, mode: str, round_mode: str | None = None) -> None:
    if mode not in _MODES:
        raise _invalid(
            opname,
            f"Value for attr 'mode' of {mode!r} is not in the list of allowed "
            'values: "MIN_COMBINED", "MIN_FIRST", "SCALED".',
        )
    if round_mode is None:
        return
    if round_mode not in _ROUND_MODES:
        raise _invalid(
            opname,
            f"Value for attr 'round_mode' of {round_mode!r} is not in the "
            'list of allowed values: "HALF_AWAY_FROM_ZERO", "HALF_TO_EVEN".',
        )
    if round_mode == "HALF_TO_EVEN" and mode != "SCALED":
        raise _invalid(
            opname,
            f"Round mode 'HALF_TO_EVEN' only supported for mode 'SCALED', but mode is {mode!r}.",
        )


def _no_qint32_scaled(opname: str, qtype: dtypes.DType, mode: str, oned: bool = True) -> None:
    if qtype.name == "qint32" and mode == "SCALED" and oned:
        # TF 2.21's CPU build (oneDNN) registers no SCALED kernel for qint32.
        raise errors.NotFoundError(
            None,
            opname,
            f"{opname}: TF 2.21 has no CPU kernel for mode 'SCALED' with qint32. "
            "Use qint8/qint16, or mode 'MIN_COMBINED' for qint32.",
        )


def _mode_axis(opname: str, kind: str, mode: str, axis: int | None, ndim: int) -> int:
    """`_axis`, refusing a per-axis MIN_FIRST as TF does (no such kernel)."""
    ax = _axis(opname, axis, ndim)
    if ax != -1 and mode == "MIN_FIRST":
        raise errors.UnimplementedError(
            None,
            opname,
            f"{opname}: MIN_FIRST mode is not implemented for {kind} with "
            "axis != -1. Use mode 'MIN_COMBINED' or 'SCALED' per axis.",
        )
    return ax


def _axis(opname: str, axis: int | None, ndim: int) -> int:
    if axis is None:
        return -1
    axis = int(axis)
    if axis < 0:
        axis %= max(ndim, 1)
    if axis >= ndim:
        raise _invalid(
            opname,
            f"Axis is on a zero-based index, so its value must always be less "
            f"than number of input's dims, but given axis value was {axis} and "
            f"input's dims was {ndim}.",
        )
    return axis


def _ranges(opname: str, lo: Any, hi: Any, axis: int, depth: int | None) -> tuple[Any, Any]:
    """Host float32 min/max: scalars (TF reads the first element) or [depth] vectors."""
    lo = np.asarray(backend.to_host(convert_to_tensor(lo, dtype_hint="float32")._data))
    hi = np.asarray(backend.to_host(convert_to_tensor(hi, dtype_hint="float32")._data))
    for a, n in ((lo, "min_range"), (hi, "max_range")):
        if a.dtype != np.float32:
            raise _invalid(opname, f"{n} must be float32, got {a.dtype}.")
        if axis == -1 and a.size < 1:
            raise _invalid(opname, f"{n} must hold a value, got an empty tensor.")
        if axis != -1 and (a.ndim != 1 or a.shape[0] != depth):
            raise _invalid(
                opname,
                f"If axis is specified, {n} must be a 1-D tensor whose size "
                "matches the axis dimension of the input and output tensors, but "
                f"{n} has shape {list(a.shape)} and input's axis dimension is of size "
                f"{depth}.",
            )
    if axis == -1:
        return lo.reshape(-1)[:1], hi.reshape(-1)[:1]
    return lo, hi


def _host_input(value: Any, opname: str) -> np.ndarray:
    x = convert_to_tensor(value, dtype_hint="float32")
    if x.dtype != "float32":
        raise _invalid(
            opname,
            f"input #0 (zero-based) must be a float tensor but is a "
            f"{x.dtype.name} tensor. Cast it with tf.cast(x, tf.float32).",
        )
    return np.asarray(backend.to_host(x._data))


def _slices(x: np.ndarray, axis: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """`x` as [pre, slices, post] (one slice when axis is -1), and the range broadcast shape."""
    if axis == -1:
        return x.reshape(1, 1, -1), (1, 1, 1)
    pre = int(np.prod(x.shape[:axis], dtype=np.int64))
    return x.reshape(pre, x.shape[axis], -1), (1, -1, 1)


# --- quantize ---------------------------------------------------------------------------------


def _min_first_quantize(
    x: np.ndarray, lo: Any, hi: Any, base: np.dtype, qmin: int, qmax: int
) -> np.ndarray:
    if base != np.uint8:
        return _quantize_with_eigen(x, lo, hi, base, qmin, qmax)
    # quint8 runs on oneDNN in TF 2.21's CPU build: one float32 rounding, half to even.
    scale = _F(256.0 / ((float(hi) - float(lo)) * (256.0 / 255.0)))
    with np.errstate(all="ignore"):
        q = np.clip(np.rint(x * scale - _F(lo) * scale), qmin, qmax)
    return q.astype(np.int64).astype(base)


def _quantize_with_eigen(
    x: np.ndarray, lo: Any, hi: Any, base: np.dtype, qmin: int, qmax: int
) -> np.ndarray:
    """TF's QUANTIZE_WITH_EIGEN, in float32; qint32 stops at the largest float below 2**31."""
    steps = float(1 << (8 * base.itemsize))
    with np.errstate(all="ignore"):
        span = np.float64(_F(hi) - _F(lo))
        fscale = _F(0) if span == 0 else _F((steps - 1.0) / span)
        lo_scaled = _round_half_away(np.asarray(_F(lo) * fscale))
        q = _round_half_away(x.astype(_F) * fscale) - (lo_scaled - _F(qmin))
        q = np.minimum(np.maximum(q, _F(qmin)), min(_F(qmax), _F(2147483520.0)))
    return q.astype(np.int64).astype(base)


def quantize(
    input: Any,
    min_range: Any,
    max_range: Any,
    T: Any,  # noqa: A002, N803
    mode: str = "MIN_COMBINED",
    round_mode: str = "HALF_AWAY_FROM_ZERO",
    name: str | None = None,
    narrow_range: bool = False,
    axis: int | None = None,
    ensure_minimum_range: float = 0.01,
) -> QuantizeV2:
    """Quantize float32 `input` over [min_range, max_range] to the quantized dtype `T`, as TF's
    QuantizeV2: modes MIN_COMBINED, MIN_FIRST and SCALED, per slice along `axis` when given
    (min/max then of shape [input.shape[axis]]). Returns `(output, output_min, output_max)`,
    the range actually used (widened to include 0 and by `ensure_minimum_range`)."""
    opname = "QuantizeV2"
    qtype = _quantized_type(T, opname)
    _check_modes(opname, mode, round_mode)
    x = _host_input(input, opname)
    ax = _mode_axis(opname, "Quantize", mode, axis, x.ndim)
    _no_qint32_scaled(opname, qtype, mode, _onednn_scaled(qtype, round_mode, narrow_range, ax))
    lo_in, hi_in = _ranges(opname, min_range, max_range, ax, None if ax == -1 else x.shape[ax])
    if np.any(hi_in < lo_in):
        raise _invalid(opname, "input_max_range must be larger than input_min_range.")
    base, tmin, tmax = _limits(qtype)
    with np.errstate(all="ignore"):
        lo = np.minimum(_F(0), lo_in)
        eps = np.maximum(_F(1), np.maximum(np.abs(lo_in), np.abs(hi_in))) * _F(ensure_minimum_range)
        hi = np.maximum(_F(0), np.maximum(hi_in, lo + eps))
    if mode == "MIN_FIRST":
        out = _min_first_quantize(x, lo[0], hi[0], base, tmin, tmax)
        return _quantize_result(out, qtype, lo[0], hi[0], ax)
    xs, bshape = _slices(x, ax)
    with np.errstate(all="ignore"):
        if mode == "MIN_COMBINED":
            scale = (np.float64(tmax) - np.float64(tmin)) / (hi - lo).astype(np.float64)
            scale = scale.astype(_F).reshape(bshape)
            lo_b, hi_b = lo.reshape(bshape), hi.reshape(bshape)
            v = (np.minimum(np.maximum(xs, lo_b), hi_b) - lo_b) * scale
            if tmin < 0:
                half = _F((np.float64(tmax) - np.float64(tmin) + 1) / 2.0)
                q = _round_half_away(v - half)
            else:
                q = np.trunc(v + _F(0.5))
        elif _onednn_scaled(qtype, round_mode, narrow_range, ax):
            # TF 2.21's CPU build runs this case on oneDNN (_MklQuantizeV2): the range made
            # symmetric around 0 (from 0 when unsigned), all 2**bits levels across it.
            top = np.maximum(np.abs(lo), np.abs(hi))
            lo, hi = (-top if tmin < 0 else np.zeros_like(top)), top
            scale = (_F(tmax - tmin) / (hi - lo)).astype(_F)
            q = np.clip(np.rint(xs * scale.reshape(bshape)), tmin, tmax)
        else:  # SCALED
            low_q = _F(tmin + (1 if narrow_range else 0))
            from_min = np.where(low_q * lo > 0, low_q / lo, np.finfo(_F).max)
            from_max = np.where(_F(tmax) * hi > 0, _F(tmax) / hi, np.finfo(_F).max)
            scale = np.minimum(from_min, from_max).astype(_F)
            lo, hi = _ftz(low_q / scale), _ftz(_F(tmax) / scale)
            s, lo_b, hi_b = scale.reshape(bshape), lo.reshape(bshape), hi.reshape(bshape)
            v = np.minimum(np.maximum(xs, lo_b), hi_b) * s
            q = np.rint(v) if round_mode == "HALF_TO_EVEN" else _round_half_away(v)
        out = _to_int(q, base, tmin, tmax).reshape(x.shape)
    if ax == -1:
        return _quantize_result(out, qtype, lo[0], hi[0], ax)
    return _quantize_result(out, qtype, lo, hi, ax)


def _onednn_scaled(qtype: dtypes.DType, round_mode: str, narrow: bool, axis: int) -> bool:
    return (
        qtype.name in ("qint8", "quint8", "qint32")
        and round_mode == "HALF_TO_EVEN"
        and not narrow
        and axis == -1
    )


def _ftz(v: np.ndarray) -> np.ndarray:
    """TF's CPU threads flush float32 subnormals to zero (1 / FLT_MAX becomes 0)."""
    return np.where(np.abs(v) < np.finfo(_F).tiny, _F(0), v).astype(_F)


def _to_int(q: np.ndarray, base: np.dtype, tmin: int, tmax: int) -> np.ndarray:
    # A float32 just past the type's end (qint32's 2**31) wraps as the C++ cast does on x86.
    wide = q.astype(np.float64)
    bad = (wide > tmax) | (wide < tmin) | np.isnan(wide)
    out = np.where(bad, tmin if tmin < 0 else 0, wide).astype(np.int64)
    return out.astype(base)


def _quantize_result(out: np.ndarray, qtype: dtypes.DType, lo: Any, hi: Any, axis: int) -> Any:
    cpu = backend.cpu_device()
    q = Tensor(np.ascontiguousarray(out).view(qtype.np), cpu)
    return QuantizeV2(q, Tensor(np.asarray(lo, _F), cpu), Tensor(np.asarray(hi, _F), cpu))


# --- dequantize -------------------------------------------------------------------------------


def _as_quantized(value: Any, opname: str) -> tuple[np.ndarray, dtypes.DType]:
    t = value if isinstance(value, Tensor) else convert_to_tensor(value)
    qtype = _quantized_type(t.dtype, opname)
    return plain(np.asarray(backend.to_host(t._data))), qtype


def _dequantize_min_first(q: np.ndarray, lo: Any, hi: Any, tmin: int, bits: int) -> Any:
    """TF's DEQUANTIZE_WITH_EIGEN (MIN_FIRST): all in float32 but the step size."""
    with np.errstate(all="ignore"):
        scale = ((hi - lo).astype(np.float64) / (float(1 << bits) - 1.0)).astype(_F)
        lo_rounded = np.where(hi == lo, lo, _round_half_away(lo / scale) * scale).astype(_F)
        return (lo_rounded - _F(tmin) * scale) + q.astype(_F) * scale


def _dequantize_array(
    q: np.ndarray, lo: Any, hi: Any, qtype: dtypes.DType, mode: str, narrow: bool
) -> np.ndarray:
    base, tmin, tmax = _limits(qtype)
    with np.errstate(all="ignore"):
        if mode == "MIN_COMBINED":
            half = _F(0) if tmin == 0 else (_F(tmax) - _F(tmin) + _F(1)) / _F(2)
            scale = (hi - lo) / (_F(tmax) - _F(tmin))
            return (q.astype(_F) + half) * scale + lo
        if mode == "MIN_FIRST":
            return _dequantize_min_first(q, lo, hi, tmin, 8 * base.itemsize)
        low_q = tmin + (1 if narrow else 0)
        scale = hi / _F(tmax) if tmin == 0 else np.maximum(lo / _F(low_q), hi / _F(tmax))
        return q.astype(_F) * scale


def dequantize(
    input: Any,
    min_range: Any,
    max_range: Any,
    mode: str = "MIN_COMBINED",  # noqa: A002
    name: str | None = None,
    axis: int | None = None,
    narrow_range: bool = False,
    dtype: Any = dtypes.float32,
) -> Any:
    """Convert a quantized tensor back to float32 (or bfloat16 with `dtype=`) over
    [min_range, max_range], the inverse of `quantize` in each mode; per slice along `axis`."""
    opname = "Dequantize"
    out_dtype = dtypes.as_dtype(dtype)
    if out_dtype.name not in ("float32", "bfloat16"):
        raise _invalid(
            opname,
            f"Value for attr 'dtype' of {out_dtype.name} is not in the list "
            "of allowed values: bfloat16, float.",
        )
    q, qtype = _as_quantized(input, opname)
    _check_modes(opname, mode)
    ax = _mode_axis(opname, "Dequantize", mode, axis, q.ndim)
    _no_qint32_scaled(opname, qtype, mode)
    lo, hi = _ranges(opname, min_range, max_range, ax, None if ax == -1 else q.shape[ax])
    qs, bshape = _slices(q, ax)
    out = (
        _dequantize_array(qs, lo.reshape(bshape), hi.reshape(bshape), qtype, mode, narrow_range)
        .astype(_F)
        .reshape(q.shape)
    )
    if out_dtype.name == "bfloat16":
        out = out.astype(out_dtype.np)
    return Tensor(np.ascontiguousarray(out), backend.cpu_device())


# --- quantized_concat -------------------------------------------------------------------------


def _requantize(
    q: np.ndarray,
    lo: float,
    hi: float,
    new_lo: float,
    new_hi: float,
    base: np.dtype,
    tmin: int,
    tmax: int,
) -> np.ndarray:
    """TF's QuantizedConcat requantizer: DEQUANTIZE_WITH_EIGEN, then QUANTIZE_WITH_EIGEN."""
    real = _dequantize_min_first(q, _F(lo), _F(hi), tmin, 8 * base.itemsize)
    return _quantize_with_eigen(real, new_lo, new_hi, base, tmin, tmax)


def quantized_concat(
    concat_dim: Any, values: Any, input_mins: Any, input_maxes: Any, name: str | None = None
) -> QuantizedConcat:
    """Concatenate quantized tensors (quint8 or qint32, as TF's kernels) along `concat_dim`,
    requantizing each into the union of the input ranges (widened to include 0, and symmetric
    for signed types). Returns `(output, output_min, output_max)`."""
    opname = "QuantizedConcat"
    values = list(values)
    mins, maxes = list(input_mins), list(input_maxes)
    if len(values) < 2 or len(mins) != len(values) or len(maxes) != len(values):
        raise _invalid(
            opname,
            f"expected N >= 2 values with one input_min and one input_max "
            f"each, got {len(values)} values, {len(mins)} mins and {len(maxes)} "
            "maxes.",
        )
    first, qtype = _as_quantized(values[0], opname)
    arrays = [first]
    for i, v in enumerate(values[1:], 1):
        a, dt = _as_quantized(v, opname)
        if dt != qtype:
            raise _invalid(
                opname,
                f"input #{i} was expected to be a {qtype.name} tensor but is a {dt.name} tensor.",
            )
        arrays.append(a)
    if qtype.name not in ("quint8", "qint32"):
        raise errors.NotFoundError(
            None,
            opname,
            f"{opname}: TF has CPU kernels for quint8 and qint32 only, got "
            f"{qtype.name}. Dequantize, concatenate with tf.concat and quantize again.",
        )
    dim = int(np.asarray(backend.to_host(convert_to_tensor(concat_dim)._data)))
    rank = arrays[0].ndim
    if not -rank <= dim < rank:
        raise _invalid(
            opname,
            f"ConcatOp : Expected concatenating dimensions in the range "
            f"[{-rank}, {rank}), but got {dim}.",
        )
    dim %= rank
    for i, a in enumerate(arrays[1:], 1):
        if a.ndim != rank:
            raise _invalid(
                opname,
                f"ConcatOp : Ranks of all input tensors should match: "
                f"shape[0] = {list(arrays[0].shape)} vs. shape[{i}] = "
                f"{list(a.shape)}.",
            )
        if any(a.shape[j] != arrays[0].shape[j] for j in range(rank) if j != dim):
            raise _invalid(
                opname,
                f"ConcatOp : Dimension {dim} in both shapes must be equal: "
                f"shape[0] = {list(arrays[0].shape)} vs. shape[{i}] = "
                f"{list(a.shape)}.",
            )
    los = [float(_ranges(opname, m, m, -1, None)[0][0]) for m in mins]
    his = [float(_ranges(opname, m, m, -1, None)[0][0]) for m in maxes]
    out_lo = min(_F(0), _F(min(los)))
    out_hi = _F(max(his))
    base, tmin, tmax = _limits(qtype)
    if tmin < 0:
        largest = max(abs(out_lo), abs(out_hi))
        out_lo, out_hi = -largest, largest
    parts = [
        a
        if (lo == out_lo and hi == out_hi)
        else _requantize(a, lo, hi, float(out_lo), float(out_hi), base, tmin, tmax)
        for a, lo, hi in zip(arrays, los, his, strict=True)
    ]
    out = np.concatenate(parts, axis=dim)
    return QuantizedConcat(*_quantize_result(out, qtype, _F(out_lo), _F(out_hi), -1))
