"""Simulated quantization on float tensors: `tf.quantization.fake_quant_*` and
`quantize_and_dequantize(_v2)`, with TF's kernels' float32 arithmetic step for step.

FakeQuant nudges [min, max] so that 0 is exactly representable, clamps, and rounds to one of
2**num_bits levels (1 fewer with `narrow_range`); its gradient is straight-through inside the
nudged range and, for the `_vars` versions, flows to `min`/`max` from the inputs below/above it.

>>> import layerflow as tf
>>> tf.quantization.fake_quant_with_min_max_args([-7.0, 0.1, 3.0], -6.0, 6.0).numpy()
array([-6.0235295 ,  0.09411765,  3.0117648 ], dtype=float32)
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from layerflow._src.autodiff.op import op
from layerflow._src.framework import errors
from layerflow._src.framework.convert import convert_to_tensor

FakeQuantWithMinMaxVarsGradient = namedtuple(
    "FakeQuantWithMinMaxVarsGradient",
    ["backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max"],
)
FakeQuantWithMinMaxVarsPerChannelGradient = namedtuple(
    "FakeQuantWithMinMaxVarsPerChannelGradient",
    ["backprops_wrt_input", "backprop_wrt_min", "backprop_wrt_max"],
)

_F = np.float32


def _check_bits(opname: str, num_bits: int) -> None:
    if not 2 <= int(num_bits) <= 16:
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: num_bits must be between 2 and 16, inclusive (got {num_bits}).",
        )


def _nudge(xp: Any, lo: Any, hi: Any, num_bits: int, narrow: bool) -> tuple[Any, Any, Any, Any]:
    """TF's Nudge, elementwise on float32 arrays: (nudged_min, nudged_max, scale, inv_scale)."""
    qmin, qmax = _F(1 if narrow else 0), _F((1 << int(num_bits)) - 1)
    with np.errstate(all="ignore"):  # min == max gives inf/nan, as in TF
        scale = (hi - lo) / (qmax - qmin)
        inv = (qmax - qmin) / (hi - lo)
        zp = qmin - lo / scale
        rounded = xp.trunc(xp.abs(zp) + _F(0.5)) * xp.sign(zp)  # std::round: half away from 0
        zp = xp.where(zp < qmin, qmin, xp.where(zp > qmax, qmax, rounded)).astype(_F)
        return (qmin - zp) * scale, (qmax - zp) * scale, scale, inv


def _fake_quant(xp: Any, x: Any, lo: Any, hi: Any, num_bits: int, narrow: bool, divide: bool):
    nmin, nmax, scale, inv = _nudge(xp, lo, hi, num_bits, narrow)
    with np.errstate(all="ignore"):
        quant_zero = xp.floor(-nmin * inv + _F(0.5))
        shifted = xp.maximum(xp.minimum(x, nmax), nmin) - nmin  # TF: min first, then max
        # TF's _vars kernel divides by the scale, the _args and per-channel ones multiply by
        # its recomputed inverse: the two differ in the last bit at some inputs.
        q = shifted / scale if divide else shifted * inv
        out = xp.floor(q - quant_zero + _F(0.5)) * scale
        # min == max == 0 (both): TF gives zeros rather than nan.
        return xp.where((lo == 0) & (hi == 0), _F(0), out).astype(_F)


def _masks(xp: Any, x: Any, lo: Any, hi: Any, num_bits: int, narrow: bool) -> tuple[Any, ...]:
    nmin, nmax, _, _ = _nudge(xp, lo, hi, num_bits, narrow)
    zero = (lo == 0) & (hi == 0)  # TF passes everything through to the input
    inside = ((x >= nmin) & (x <= nmax)) | zero
    return inside, (x < nmin) & ~zero, (x > nmax) & ~zero


def _float32(value: Any, what: str, opname: str) -> Any:
    t = convert_to_tensor(value, dtype_hint="float32")
    if t.dtype != "float32":
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: {what} must be float32, got {t.dtype.name}. Cast it with "
            "tf.cast(x, tf.float32).",
        )
    return t


# --- with min/max as attributes -----------------------------------------------------------


@op("fake_quant_with_min_max_args", grad_uses_out=False)
def _fq_args(xp: Any, x: Any, lo: float, hi: float, num_bits: int, narrow: bool) -> Any:
    return _fake_quant(xp, x, _F(lo), _F(hi), num_bits, narrow, divide=False)


@op("fake_quant_with_min_max_args_gradient", 2)
def _fq_args_grad(
    xp: Any, dy: Any, x: Any, lo: float, hi: float, num_bits: int, narrow: bool
) -> Any:
    inside = _masks(xp, x, _F(lo), _F(hi), num_bits, narrow)[0]
    return dy * inside.astype(_F)


@_fq_args.grad
def _(dy: Any, out: Any, x: Any, lo: float, hi: float, num_bits: int, narrow: bool) -> Any:
    return _fq_args_grad(dy, x, lo, hi, num_bits, narrow)


def _check_args(opname: str, lo: float, hi: float, num_bits: int) -> None:
    if not float(lo) < float(hi):
        raise errors.InvalidArgumentError(
            None, opname, f"{opname}: min has to be smaller than max, was: {lo:g} >= {hi:g}."
        )
    _check_bits(opname, num_bits)


def fake_quant_with_min_max_args(
    inputs: Any,
    min: float = -6.0,
    max: float = 6.0,  # noqa: A002
    num_bits: int = 8,
    narrow_range: bool = False,
    name: str | None = None,
) -> Any:
    """Fake-quantize float32 `inputs` to 2**num_bits levels over the nudged [min, max]."""
    _check_args("FakeQuantWithMinMaxArgs", min, max, num_bits)
    x = _float32(inputs, "inputs", "FakeQuantWithMinMaxArgs")
    return _fq_args(x, float(min), float(max), int(num_bits), bool(narrow_range))


def fake_quant_with_min_max_args_gradient(
    gradients: Any,
    inputs: Any,
    min: float = -6.0,  # noqa: A002
    max: float = 6.0,
    num_bits: int = 8,  # noqa: A002
    narrow_range: bool = False,
    name: str | None = None,
) -> Any:
    """The gradient of `fake_quant_with_min_max_args`: `gradients` where `inputs` lies in the
    nudged range, 0 elsewhere."""
    _check_args("FakeQuantWithMinMaxArgsGradient", min, max, num_bits)
    dy = _float32(gradients, "gradients", "FakeQuantWithMinMaxArgsGradient")
    x = _float32(inputs, "inputs", "FakeQuantWithMinMaxArgsGradient")
    return _fq_args_grad(dy, x, float(min), float(max), int(num_bits), bool(narrow_range))


# --- with min/max as tensors ------------------------------------------------------------------


@op("fake_quant_with_min_max_vars", 3, grad_uses_out=False)
def _fq_vars(xp: Any, x: Any, lo: Any, hi: Any, num_bits: int, narrow: bool) -> Any:
    return _fake_quant(xp, x, lo, hi, num_bits, narrow, divide=True)


@op("fake_quant_with_min_max_vars_gradient", 4, multi_out=True)
def _fq_vars_grad(xp: Any, dy: Any, x: Any, lo: Any, hi: Any, num_bits: int, narrow: bool) -> Any:
    inside, below, above = _masks(xp, x, lo, hi, num_bits, narrow)
    return (
        dy * inside.astype(_F),
        (dy * below.astype(_F)).sum(dtype=_F),
        (dy * above.astype(_F)).sum(dtype=_F),
    )


@_fq_vars.grad
def _(dy: Any, out: Any, x: Any, lo: Any, hi: Any, num_bits: int, narrow: bool) -> Any:
    return tuple(_fq_vars_grad(dy, x, lo, hi, num_bits, narrow))


def _vars_inputs(
    opname: str, tensors: list[Any], names: list[str], num_bits: int, rank: int
) -> list[Any]:
    _check_bits(opname, num_bits)
    out = [_float32(t, n, opname) for t, n in zip(tensors, names, strict=True)]
    for t, n in zip(out[-2:], ("min", "max"), strict=True):
        if t.ndim != rank:
            raise errors.InvalidArgumentError(
                None, opname, f"{opname}: `{n}` must be rank {rank} but is rank {t.ndim}."
            )
    return out


def fake_quant_with_min_max_vars(
    inputs: Any,
    min: Any,
    max: Any,
    num_bits: int = 8,  # noqa: A002
    narrow_range: bool = False,
    name: str | None = None,
) -> Any:
    """Fake-quantize float32 `inputs` over the nudged range of the scalar tensors [min, max];
    differentiable with respect to `inputs`, `min` and `max` (TF's straight-through rule)."""
    x, lo, hi = _vars_inputs(
        "FakeQuantWithMinMaxVars", [inputs, min, max], ["inputs", "min", "max"], num_bits, 0
    )
    return _fq_vars(x, lo, hi, int(num_bits), bool(narrow_range))


def fake_quant_with_min_max_vars_gradient(
    gradients: Any,
    inputs: Any,
    min: Any,  # noqa: A002
    max: Any,
    num_bits: int = 8,  # noqa: A002
    narrow_range: bool = False,
    name: str | None = None,
) -> Any:
    """The gradients of `fake_quant_with_min_max_vars` with respect to its inputs, min and max,
    as TF's `(backprops_wrt_input, backprop_wrt_min, backprop_wrt_max)`."""
    dy, x, lo, hi = _vars_inputs(
        "FakeQuantWithMinMaxVarsGradient",
        [gradients, inputs, min, max],
        ["gradients", "inputs", "min", "max"],
        num_bits,
        0,
    )
    return FakeQuantWithMinMaxVarsGradient(
        *_fq_vars_grad(dy, x, lo, hi, int(num_bits), bool(narrow_range))
    )


# --- per channel (the last axis) ------------------------------------------------------------


@op("fake_quant_with_min_max_vars_per_channel", 3, grad_uses_out=False)
def _fq_channel(xp: Any, x: Any, lo: Any, hi: Any, num_bits: int, narrow: bool) -> Any:
    return _fake_quant(xp, x, lo, hi, num_bits, narrow, divide=False)


@op("fake_quant_with_min_max_vars_per_channel_gradient", 4, multi_out=True)
def _fq_channel_grad(
    xp: Any, dy: Any, x: Any, lo: Any, hi: Any, num_bits: int, narrow: bool
) -> Any:
    inside, below, above = _masks(xp, x, lo, hi, num_bits, narrow)
    axes = tuple(range(x.ndim - 1))
    return (
        dy * inside.astype(_F),
        (dy * below.astype(_F)).sum(axis=axes, dtype=_F),
        (dy * above.astype(_F)).sum(axis=axes, dtype=_F),
    )


@_fq_channel.grad
def _(dy: Any, out: Any, x: Any, lo: Any, hi: Any, num_bits: int, narrow: bool) -> Any:
    return tuple(_fq_channel_grad(dy, x, lo, hi, num_bits, narrow))


def _channel_inputs(opname: str, tensors: list[Any], names: list[str], num_bits: int) -> list:
    out = _vars_inputs(opname, tensors, names, num_bits, 1)
    x, lo, hi = out[-3:]
    depth = x.shape[-1] if x.ndim else None
    for t, n in ((lo, "min"), (hi, "max")):
        if t.shape[0] != depth:
            raise errors.InvalidArgumentError(
                None,
                opname,
                f"{opname}: {n} has incorrect size, expected {depth} was "
                f"{t.shape[0]}: it needs one value per channel of the inputs' last axis.",
            )
    if len(out) == 4 and tuple(out[0].shape) != tuple(x.shape):
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: gradients and inputs must have the same shape, got "
            f"{list(out[0].shape)} and {list(x.shape)}.",
        )
    return out


def fake_quant_with_min_max_vars_per_channel(
    inputs: Any,
    min: Any,
    max: Any,  # noqa: A002
    num_bits: int = 8,
    narrow_range: bool = False,
    name: str | None = None,
) -> Any:
    """`fake_quant_with_min_max_vars` with one [min, max] per channel of the last axis (min
    and max of shape [d]); differentiable with respect to all three."""
    x, lo, hi = _channel_inputs(
        "FakeQuantWithMinMaxVarsPerChannel", [inputs, min, max], ["inputs", "min", "max"], num_bits
    )
    return _fq_channel(x, lo, hi, int(num_bits), bool(narrow_range))


def fake_quant_with_min_max_vars_per_channel_gradient(
    gradients: Any,
    inputs: Any,
    min: Any,
    max: Any,  # noqa: A002
    num_bits: int = 8,
    narrow_range: bool = False,
    name: str | None = None,
) -> Any:
    """The gradients of `fake_quant_with_min_max_vars_per_channel` with respect to its
    inputs, min and max (the last two of shape [d])."""
    dy, x, lo, hi = _channel_inputs(
        "FakeQuantWithMinMaxVarsPerChannelGradient",
        [gradients, inputs, min, max],
        ["gradients", "inputs", "min", "max"],
        num_bits,
    )
    return FakeQuantWithMinMaxVarsPerChannelGradient(
        *_fq_channel_grad(dy, x, lo, hi, int(num_bits), bool(narrow_range))
    )


# --- quantize and dequantize (QuantizeAndDequantizeV2 / V4) -----------------------------------


def _round(xp: Any, v: Any, round_mode: str) -> Any:
    if round_mode == "HALF_TO_EVEN":
        return xp.rint(v)
    return xp.floor(v + v.dtype.type(0.5))  # HALF_UP


def _qad_forward(
    xp: Any,
    x: Any,
    lo: Any,
    hi: Any,
    signed: bool,
    num_bits: int,
    range_given: bool,
    round_mode: str,
    narrow: bool,
    axis: int,
) -> Any:
    t = x.dtype.type
    if axis == -1:
        if not range_given:
            lo, hi = x.min(), x.max()
        shape: tuple[int, ...] = ()
    else:
        if not range_given:
            others = tuple(i for i in range(x.ndim) if i != axis)
            lo, hi = x.min(axis=others), x.max(axis=others)
        shape = (1,) * axis + (x.shape[axis],) + (1,) * (x.ndim - axis - 1)
    lo, hi = xp.asarray(lo, dtype=x.dtype), xp.asarray(hi, dtype=x.dtype)
    bits = int(num_bits)
    minq = (-(1 << (bits - 1)) + (1 if narrow else 0)) if signed else 0
    maxq = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    fminq, fmaxq, big = t(minq), t(maxq), t(np.finfo(x.dtype).max)
    with np.errstate(all="ignore"):
        # TF's ComputeQuantizationRange: the larger scale that keeps 0 exact and fits both ends
        # into [minq, maxq]; the side that sets it keeps its end, the other end moves.
        from_min = xp.where(fminq * lo > 0, fminq / lo, big)
        from_max = xp.where(fmaxq * hi > 0, fmaxq / hi, big)
        use_min = from_min < from_max
        scale = xp.where(use_min, from_min, from_max).reshape(shape)
        inv = xp.where(use_min, lo / fminq, hi / fmaxq)
        hi = xp.where(use_min, fmaxq * inv, hi).reshape(shape)
        lo = xp.where(use_min, lo, fminq * inv).reshape(shape)
        inv = inv.reshape(shape)
        if range_given:
            x = xp.minimum(xp.maximum(x, lo), hi)
        return (_round(xp, x * scale, round_mode) * inv).astype(x.dtype)


@op("quantize_and_dequantize_v2", 3, accepts="real_float", grad_uses_out=False)
def _qad_v2(xp: Any, x: Any, lo: Any, hi: Any, *attrs: Any) -> Any:
    return _qad_forward(xp, x, lo, hi, *attrs)


@_qad_v2.grad
def _(dy: Any, out: Any, x: Any, lo: Any, hi: Any, *attrs: Any) -> Any:
    return dy, None, None  # TF's V2 gradient: straight through everywhere


@op("quantize_and_dequantize_v4", 3, accepts="real_float", grad_uses_out=False)
def _qad_v4(xp: Any, x: Any, lo: Any, hi: Any, *attrs: Any) -> Any:
    return _qad_forward(xp, x, lo, hi, *attrs)


@_qad_v4.grad
def _(dy: Any, out: Any, x: Any, lo: Any, hi: Any, *attrs: Any) -> Any:
    # TF's QuantizeAndDequantizeV4Grad: straight through where `x` lies in the given
    # [input_min, input_max] (per slice along `axis`), 0 elsewhere; none to min and max.
    from layerflow._src.ops import math_ops as m

    axis, low, high = attrs[-1], lo, hi
    if axis != -1 and lo.ndim == 1:
        shape = [1] * x.ndim
        shape[axis] = -1
        low, high = m.reshape(lo, shape), m.reshape(hi, shape)
    inside = m.logical_and(m.greater_equal(x, low), m.less_equal(x, high))
    return m.multiply(dy, m.cast(inside, dy.dtype)), m.zeros_like(lo), m.zeros_like(hi)


_ROUND_MODES = ("HALF_TO_EVEN", "HALF_UP")


def _qad_call(
    prim: Any,
    opname: str,
    input: Any,
    input_min: Any,
    input_max: Any,  # noqa: A002
    signed_input: bool,
    num_bits: int,
    range_given: bool,
    round_mode: str,
    narrow_range: bool,
    axis: int | None,
) -> Any:
    x = convert_to_tensor(input)
    if round_mode not in _ROUND_MODES:
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"Value for attr 'round_mode' of {round_mode!r} is not in the list of "
            'allowed values: "HALF_TO_EVEN", "HALF_UP".',
        )
    bits = int(num_bits)
    if not 0 < bits < (62 if signed_input else 63):
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: num_bits is out of range: {bits} with signed_input_ "
            f"{int(bool(signed_input))}; it must be in [1, {61 if signed_input else 62}].",
        )
    if axis is None:
        axis = -1
    elif axis < 0:
        axis %= max(x.ndim, 1)
    if axis >= x.ndim:
        raise errors.InvalidArgumentError(
            None,
            opname,
            f"{opname}: axis {axis} is out of range for an input of rank "
            f"{x.ndim}: shape must be at least rank {axis + 1}.",
        )
    lo = convert_to_tensor(input_min, dtype_hint=x.dtype)
    hi = convert_to_tensor(input_max, dtype_hint=x.dtype)
    if range_given:
        want = () if axis == -1 else (x.shape[axis],)
        for t, n in ((lo, "input_min"), (hi, "input_max")):
            if tuple(t.shape) != want:
                raise errors.InvalidArgumentError(
                    None,
                    opname,
                    f"{opname}: {n} must have shape {list(want)} (a scalar, or one "
                    f"value per slice along axis {axis}), got {list(t.shape)}.",
                )
        bad = np.asarray(lo.numpy() > hi.numpy())
        if bad.any():
            i = int(np.argmax(bad.reshape(-1)))
            a, b = np.asarray(lo.numpy()).reshape(-1)[i], np.asarray(hi.numpy()).reshape(-1)[i]
            raise errors.InvalidArgumentError(
                None,
                opname,
                f"{opname}: Invalid range: input_min {a:g} > input_max {b:g}.",
            )
    return prim(
        x,
        lo,
        hi,
        bool(signed_input),
        bits,
        bool(range_given),
        round_mode,
        bool(narrow_range),
        int(axis),
    )


def quantize_and_dequantize(
    input: Any,
    input_min: Any,
    input_max: Any,  # noqa: A002
    signed_input: bool = True,
    num_bits: int = 8,
    range_given: bool = False,
    round_mode: str = "HALF_TO_EVEN",
    name: str | None = None,
    narrow_range: bool = False,
    axis: int | None = None,
) -> Any:
    """Quantize then dequantize `input` (TF's deprecated V1: its gradient passes straight
    through everywhere). Use `quantize_and_dequantize_v2` for the range-masked gradient.

    >>> import layerflow as tf
    >>> tf.quantization.quantize_and_dequantize([-1.0, 0.3, 0.5], -1.0, 1.0,
    ...                                         range_given=True).numpy()
    array([-1.       ,  0.2992126,  0.503937 ], dtype=float32)
    """
    return _qad_call(
        _qad_v2,
        "QuantizeAndDequantizeV2",
        input,
        input_min,
        input_max,
        signed_input,
        num_bits,
        range_given,
        round_mode,
        narrow_range,
        axis,
    )


def quantize_and_dequantize_v2(
    input: Any,
    input_min: Any,
    input_max: Any,  # noqa: A002
    signed_input: bool = True,
    num_bits: int = 8,
    range_given: bool = False,
    round_mode: str = "HALF_TO_EVEN",
    name: str | None = None,
    narrow_range: bool = False,
    axis: int | None = None,
) -> Any:
    """Quantize then dequantize `input` to `num_bits` (signed or not) over [input_min,
    input_max] (`range_given`) or the input's own range, per slice along `axis` if given. The
    gradient passes where `input` lies in [input_min, input_max] and is 0 elsewhere."""
    return _qad_call(
        _qad_v4,
        "QuantizeAndDequantizeV4",
        input,
        input_min,
        input_max,
        signed_input,
        num_bits,
        range_given,
        round_mode,
        narrow_range,
        axis,
    )
