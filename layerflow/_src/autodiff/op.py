"""The `@op` decorator: every layerflow op is a forward on arrays plus a gradient on tensors.

    @op("square")
    def square(xp, x):                  # arrays in, array out; `xp` is NumPy or CuPy
        return x * x

    @square.grad
    def _(dy, out, x):                  # tensors in: written with layerflow ops, so
        return dy * 2.0 * x             # nested tapes give higher-order gradients

The wrapper converts inputs (Python values take the dtype of their tensor partner, as in TF),
checks dtypes, picks the array module of the inputs' device, runs the forward, wraps the result
and records a node on every active tape that watches an input. With no tape active, nothing is
recorded and nothing retained.

Dtype families. `@op("sqrt", accepts="float")` declares in one word which dtypes the op's
first input may have (the others share its dtype unless `same_dtype=False`); any other dtype
raises TF's `InvalidArgumentError` before the forward runs, so e.g. `sqrt` of an int32 tensor
never silently becomes float64. Families: `"float"` (float16/32/64, complex64/128: TF's exp,
log, sqrt, trigonometry, ...), `"real_float"` (float16/32/64: erf, floor, is_nan, softplus,
...), `"numeric"` (everything but bool and string: reduce_max, ...). None (the default) accepts
every dtype. (TF raises NotFoundError rather than InvalidArgumentError for `reciprocal` of an
integer tensor; layerflow raises InvalidArgumentError for every family violation.)

Out of memory. A forward that fails to allocate (NumPy's or CuPy's MemoryError, or NumPy's
"array is too big") raises `errors.OutOfMemoryError`, which is TF's `ResourceExhaustedError`
and also a `MemoryError`, naming the op and its input shapes.

Residuals (values a forward saves for its gradient). Declare `saves=True`; the forward then
returns `(out, saved)`, where `saved` is anything (arrays, a tuple of arrays, None), and the
gradient receives it as the keyword argument `saved`:

    @op("sparse_softmax_cross_entropy_with_logits", 2, same_dtype=False, saves=True)
    def _sparse_xent(xp, logits, labels):
        loss, backprop = ...
        return loss, (backprop if recording() else None)   # skip the work nobody will use

    @_sparse_xent.grad
    def _(dy, out, logits, labels, saved=None):
        return _sparse_xent_grad(dy, logits, labels, saved), None

The tape keeps `saved` in the op's node only when it records the op (never without a tape,
and only as long as the node lives: until a non-persistent tape's `gradient`, or the tape's
end). The rules that keep one gradient per op and higher-order gradients right:

1. `saved` is a memo, never a differentiable value: the gradient does not compute on it with
   ops. It passes it as an *attribute* to a gradient op (`_sparse_xent_grad` above) whose
   forward uses the memo when given and recomputes it from its tensor inputs when it is None,
   and whose own gradient is written with ops on those tensor inputs. Mathematically the
   gradient op is a function of its tensor inputs alone, so nested tapes differentiate it
   correctly; the memo only saves the forward's work.
2. `saved` may be None (the forward decides; `recording()` tells it whether a tape is
   active), so every gradient op must be able to recompute.
3. Nothing is keyed by `id()` and nothing global is kept: the residual travels in the tape's
   node and dies with it.

Conv is the larger example (`ops/conv_ops.py`): its forward saves `(cols, mask)`, the im2col
patches when they fit the temporary budget and, with a fused relu, a bit mask of the positive
outputs; the filter gradient takes `cols` as a memo attribute and rebuilds the patches when it
is None, and its own gradient is written with ops on `x` and `dy`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from layerflow._src import backend
from layerflow._src.autodiff import tape as _tape
from layerflow._src.backend import fp_errors
from layerflow._src.framework import composite_dispatch as _composite
from layerflow._src.framework import convert as _convert
from layerflow._src.framework import dtypes, errors
from layerflow._src.framework.convert import to_array
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.variables import Variable

_state = _tape._state
_flags = backend.flags
# Gradient functions ask this which inputs need a gradient (re-exported for the ops).
input_needed = _tape.input_needed


class Primitive:
    """An op's identity: its forward, its gradient, and how its inputs are treated."""

    __slots__ = ("name", "forward", "grad_fn", "n_inputs", "multi_out", "same_dtype",
                 "may_alias", "list_input", "accepts", "saves", "grad_uses_out",
                 "spec")  # fmt: skip

    def __init__(self, name: str, forward: Callable[..., Any], n_inputs: int, multi_out: bool,
                 same_dtype: bool, may_alias: bool, list_input: bool, accepts: str | None = None,
                 saves: bool = False, grad_uses_out: bool = True) -> None:  # fmt: skip
        if accepts is not None and accepts not in FAMILIES:
            raise ValueError(
                f"op {name!r}: accepts={accepts!r} is not a dtype family; use one of "
                f"{sorted(FAMILIES)} or None."
            )
        self.name = name
        # The NumPy dtype kinds the first input may have (None: any).
        self.accepts = None if accepts is None else FAMILIES[accepts][0]
        self.saves = saves
        # False: the gradient never reads `out` (it gets None), and a non-persistent tape's
        # walk lets the output go as soon as its consumers' gradients have run.
        self.grad_uses_out = grad_uses_out
        self.forward = forward
        self.grad_fn: Callable[..., Any] | None = None
        self.n_inputs = n_inputs
        self.multi_out = multi_out
        self.same_dtype = same_dtype
        self.may_alias = may_alias
        self.list_input = list_input
        # The output-spec rule (a function of input ArraySpecs and attributes) or the name of
        # a rule family; None: symbolic calls run the forward twice (`autodiff/specs.py`).
        self.spec: Callable[..., Any] | str | None = None

    def __repr__(self) -> str:
        return f"<op {self.name}>"


# Dtype families an op can declare with `accepts=`: (NumPy kinds, what the error lists).
# 'V' is the kind NumPy gives ml_dtypes' bfloat16 (tensors hold no other void arrays).
FAMILIES = {
    "float": ("fcV", "bfloat16, float16, float32, float64, complex64 or complex128"),
    "real_float": ("fV", "bfloat16, float16, float32 or float64"),
    "numeric": ("iufcV", "an integer, float or complex dtype"),
    # Ops NumPy would run on object arrays but TF defines for no string (comparisons <, >,
    # maximum, sums): strings are rejected, every other dtype passes.
    "non_string": ("biufcmMV", "any dtype but string"),
}


# Every primitive by its normalized name ("MatMul", "mat_mul" and "matmul" are one key), for
# `tf.RegisterGradient` / `tf.no_gradient` (autodiff/gradient_registry.py). `on_define` is
# that module's hook: called with each primitive defined after it (op modules load lazily).
primitives: dict[str, list[Primitive]] = {}
on_define: list[Callable[[Primitive], None]] = []


def normalize_op_name(name: str) -> str:
    """The registry key of an op name: TF's CamelCase type or layerflow's snake_case name."""
    return name.replace("_", "").lower()


def recording() -> bool:
    """Whether a tape is active, i.e. whether a forward's residuals may be kept (see above)."""
    return bool(_state.tapes)


def _family_error(prim: Primitive, dt: Any) -> errors.InvalidArgumentError:
    name = dtypes.from_numpy(dt).name
    allowed = next(text for kinds, text in FAMILIES.values() if kinds == prim.accepts)
    hint = "tf.float32" if prim.accepts != FAMILIES["numeric"][0] else "tf.int32"
    fix = f"Cast the input first, e.g. tf.cast(x, {hint})."
    if getattr(dt, "kind", "") == "O":
        fix = "Parse strings into numbers first with tf.strings.to_number(x)."
    return errors.InvalidArgumentError(
        None,
        prim.name,
        f"{prim.name}: a tensor of dtype {name} is not allowed; {prim.name} takes {allowed}. "
        + fix,
    )


def _oom_error(prim: Primitive, arrays: Any, err: Exception) -> errors.OutOfMemoryError:
    described = ", ".join(
        f"{dtypes.from_numpy(a.dtype).name}{tuple(a.shape)}" for a in arrays if hasattr(a, "shape")
    )
    return errors.OutOfMemoryError(
        None,
        prim.name,
        f"{prim.name}: out of memory running on inputs [{described}] ({err}). Use smaller "
        "tensors (a smaller batch), or free memory first.",
    )


def _too_big(err: ValueError) -> bool:
    """NumPy's errors for an array larger than the address space: an allocation failure."""
    text = str(err)
    return "array is too big" in text or "Maximum allowed dimension exceeded" in text


def _dtype_error(prim: Primitive, a: Any, b: Any) -> errors.InvalidArgumentError:
    first, second = dtypes.from_numpy(a).name, dtypes.from_numpy(b).name
    return errors.InvalidArgumentError(
        None,
        prim.name,
        f"{prim.name}: all inputs must have the same dtype, got {first} and {second}. "
        f"Cast one of them with tf.cast(x, tf.{first}).",
    )


def _shape_error(prim: Primitive, err: Exception, arrays: Any) -> errors.OpError:
    if isinstance(err, TypeError):
        quantized = [a.dtype for a in arrays if getattr(getattr(a, "dtype", None), "names", None)]
        if quantized:  # TF has no arithmetic kernels for qint8, quint8, ...
            name = dtypes.from_numpy(quantized[0]).name
            return errors.InvalidArgumentError(
                None,
                prim.name,
                f"{prim.name} is not defined for the quantized dtype {name}. Convert it first: "
                "tf.quantization.dequantize(x, min_range, max_range), or tf.cast(x, tf.int32) "
                "for its integers.",
            )
        # NumPy's TypeError from an object (string) array: TF's "not in the list of allowed
        # values"; any other TypeError is a bug and propagates unchanged.
        if not any(getattr(getattr(a, "dtype", None), "kind", "") == "O" for a in arrays):
            raise err
        return errors.InvalidArgumentError(
            None,
            prim.name,
            f"{prim.name}: a tensor of dtype string is not allowed ({err}); {prim.name} is not "
            "defined for strings. Use the tf.strings ops (e.g. tf.strings.to_number) instead.",
        )
    if isinstance(err, MemoryError) or (isinstance(err, ValueError) and _too_big(err)):
        return _oom_error(prim, arrays, err)
    described = ", ".join(
        f"{dtypes.from_numpy(a.dtype).name}{tuple(a.shape)}" for a in arrays if hasattr(a, "shape")
    )
    return errors.InvalidArgumentError(
        None, prim.name, f"{prim.name} cannot run on inputs [{described}]: {err}"
    )


def _convert_inputs(prim: Primitive, values: Any) -> tuple[Any, Any]:
    """Tensor-like inputs as they are; Python and NumPy values converted (TF's rules).

    `(None, None)` when an input is symbolic (a KerasTensor): the caller hands the whole call
    to the registered handler instead (see `framework/convert.register_symbolic`).
    """
    if _flags.general and _flags.autocast is not None and prim is not _autocast.prim:
        values = autocast_values(values)
    if _flags.general and _flags.tracer is not None:
        return None, None  # a tf.function trace records every op call (see `_symbolic_call`)
    anchor = None
    for v in values:
        if isinstance(v, TensorLike):
            anchor = v
            break
    symbolic = _convert.symbolic[0]
    if symbolic and anchor is None and any(isinstance(v, symbolic) for v in values):
        return None, None
    composite = _composite.types[0]  # a RaggedTensor: its registered override runs the op
    scoped = backend.scoped_device()
    if anchor is None:
        if composite and any(isinstance(v, composite) for v in values):
            return None, None
        device = scoped or backend.current_device()
        first = to_array(values[0], None, device) if values else None
        hint = dtypes.from_numpy(first.dtype) if prim.same_dtype and values else None
        out = [Tensor(first, device)] if values else []
        out += [Tensor(to_array(v, hint, device), device) for v in values[1:]]
        return out, device
    device = scoped if scoped is not None else anchor._device
    hint = anchor.dtype if prim.same_dtype else None
    out = []
    for v in values:
        if isinstance(v, TensorLike):
            out.append(v if v._device is device else copy_to_device(v, device))
        elif (symbolic and isinstance(v, symbolic)) or isinstance(v, composite):
            return None, None
        else:
            out.append(Tensor(to_array(v, hint, device), device))
    return out, device


def _symbolic_call(wrapper: Any, args: tuple, kwargs: dict) -> Any:
    """An op called on symbolic inputs, or during a `tf.function` trace: the registered
    handler, or the trace, records the call; a composite argument (a RaggedTensor) runs the
    op's registered override (`framework/composite_dispatch.py`)."""
    if _composite.types[0] and _composite.has_composite(args, kwargs):
        return _composite.dispatch(wrapper, args, kwargs)
    if _flags.autocast is not None and wrapper is not _autocast:
        args = tuple(autocast_values(a) if isinstance(a, list) else a for a in args)
        args = autocast_values(args)
    tracer = _flags.tracer
    if tracer is not None:
        return tracer.op_call(wrapper, args, kwargs)
    return _convert.symbolic[1](wrapper, args, kwargs)


def _copy_forward(xp: Any, x: Any, device: backend.Device) -> Any:
    return backend.to_device(x, device)


_COPY = Primitive("copy_to_device", _copy_forward, 1, False, True, False, False)


def copy_to_device(x: Any, device: backend.Device) -> Tensor:
    """`x` on `device`, recorded so that gradients travel back to `x`'s own device."""
    result = Tensor(backend.to_device(x._data, device), device)
    if _state.tapes:
        _tape.record(_state.tapes, _COPY, [x], result, (device,), {})
    return result


_COPY.grad_fn = lambda dy, out, x, device: copy_to_device(dy, x._device)


def op(
    name: str,
    n_inputs: int = 1,
    *,
    multi_out: bool = False,
    same_dtype: bool = True,
    may_alias: bool = False,
    list_input: bool = False,
    accepts: str | None = None,
    saves: bool = False,
    grad_uses_out: bool = True,
    spec: Callable[..., Any] | str | None = None,
    quiet: bool | None = None,
) -> Callable[[Callable[..., Any]], Any]:
    """Make an op from a forward `fn(xp, *arrays, *attrs, **attrs)`; see the module docstring.

    `n_inputs` leading positional arguments are tensors (with `list_input`, the first argument is
    a list of tensors); the rest are attributes passed unchanged to forward and gradient.
    `accepts` names the dtype family of the inputs, `saves` lets the forward return
    `(out, saved)` for its gradient (both in the module docstring). `grad_uses_out=False`
    says that the gradient does not read the op's output (it receives None), so a
    non-persistent tape need not keep the output alive for it (TF's unused-outputs list).
    `spec` is the op's output-spec rule or the name of a rule family (`autodiff/specs.py`);
    `@the_op.spec` declares one after the definition.

    `quiet=True` runs the forward with NumPy's floating-point warnings off, so singular points
    give TF's inf/nan silently (`log(0.)`, `1. / 0.`, `exp(1000.)`); by default the ops of the
    `"float"` and `"real_float"` families are quiet. It costs ~0.2 us a call, which is why it
    is not applied to every op (an eager add takes ~0.75 us).
    """
    if quiet is None:
        quiet = accepts in ("float", "real_float")

    def decorate(forward: Callable[..., Any]) -> Any:
        if quiet:
            forward = _quieted(forward)
        prim = Primitive(name, forward, n_inputs, multi_out, same_dtype, may_alias, list_input,
                         accepts, saves, grad_uses_out)  # fmt: skip
        prim.spec = spec
        kinds = prim.accepts
        # One array out, never aliasing a Variable's buffer: the wrappers' fast path applies.
        simple = not multi_out and not may_alias and not saves

        def run(inputs: list[Any], device: backend.Device, rest: tuple, kwargs: dict) -> Any:
            arrays = [t._data for t in inputs]
            if kinds is not None and arrays and arrays[0].dtype.kind not in kinds:
                raise _family_error(prim, arrays[0].dtype)
            if prim.same_dtype and len(arrays) > 1:
                dt = arrays[0].dtype
                for a in arrays[1:]:
                    if a.dtype != dt:
                        raise _dtype_error(prim, dt, a.dtype)
            try:
                if list_input:
                    out = forward(device.xp, arrays, *rest, **kwargs)
                else:
                    out = forward(device.xp, *arrays, *rest, **kwargs)
            except (ValueError, IndexError, MemoryError, TypeError) as err:
                raise _shape_error(prim, err, arrays) from None
            return _finish(prim, inputs, out, device, rest, kwargs)

        if list_input:

            @functools.wraps(forward)
            def wrapper(values: Any, *rest: Any, name: str | None = None, **kwargs: Any) -> Any:
                inputs, device = _convert_inputs(prim, list(values))
                if inputs is None:
                    return _symbolic_call(wrapper, (values, *rest), kwargs)
                return run(inputs, device, rest, kwargs)

        elif n_inputs == 1:

            @functools.wraps(forward)
            def wrapper(x: Any, *rest: Any, name: str | None = None, **kwargs: Any) -> Any:
                if isinstance(x, TensorLike) and not _flags.general:
                    device = x._device
                    if kinds is not None and x._data.dtype.kind not in kinds:
                        raise _family_error(prim, x._data.dtype)
                    try:
                        if rest or kwargs:
                            out = forward(device.xp, x._data, *rest, **kwargs)
                        else:
                            out = forward(device.xp, x._data)
                    except (ValueError, IndexError, MemoryError, TypeError) as err:
                        raise _shape_error(prim, err, [x._data]) from None
                    if simple and type(out) is device.ndarray:
                        result = Tensor(out, device)
                        tapes = _state.tapes
                        if tapes and prim.grad_fn is not None:
                            _tape.record(tapes, prim, (x,), result, rest, kwargs)
                        return result
                    return _finish(prim, (x,), out, device, rest, kwargs)
                inputs, device = _convert_inputs(prim, [x])
                if inputs is None:
                    return _symbolic_call(wrapper, (x, *rest), kwargs)
                return run(inputs, device, rest, kwargs)

        elif n_inputs == 2:

            @functools.wraps(forward)
            def wrapper(x: Any, y: Any, *rest: Any, name: str | None = None, **kwargs: Any) -> Any:
                # The hot path: two tensors on one device. Everything else goes through `run`.
                if (
                    isinstance(x, TensorLike)
                    and isinstance(y, TensorLike)
                    and x._device is y._device
                    and not _flags.general
                ):
                    xa, ya = x._data, y._data
                    # `is` first: NumPy reuses one dtype object per builtin type.
                    if same_dtype and xa.dtype is not ya.dtype and xa.dtype != ya.dtype:
                        raise _dtype_error(prim, xa.dtype, ya.dtype)
                    if kinds is not None and xa.dtype.kind not in kinds:
                        raise _family_error(prim, xa.dtype)
                    device = x._device
                    try:
                        if rest or kwargs:
                            out = forward(device.xp, xa, ya, *rest, **kwargs)
                        else:
                            out = forward(device.xp, xa, ya)
                    except (ValueError, IndexError, MemoryError, TypeError) as err:
                        raise _shape_error(prim, err, [xa, ya]) from None
                    if simple and type(out) is device.ndarray:
                        result = Tensor(out, device)
                        tapes = _state.tapes
                        if tapes and prim.grad_fn is not None:
                            _tape.record(tapes, prim, (x, y), result, rest, kwargs)
                        return result
                    return _finish(prim, (x, y), out, device, rest, kwargs)
                inputs, device = _convert_inputs(prim, [x, y])
                if inputs is None:
                    return _symbolic_call(wrapper, (x, y, *rest), kwargs)
                return run(inputs, device, rest, kwargs)

        else:

            @functools.wraps(forward)
            def wrapper(*args: Any, name: str | None = None, **kwargs: Any) -> Any:
                if len(args) < n_inputs:
                    raise TypeError(
                        f"{prim.name} takes {n_inputs} tensor arguments, got {len(args)}."
                    )
                # Tensors already on one device (a fused layer op's common case): no conversion.
                first = args[0]
                if isinstance(first, TensorLike) and not _flags.general:
                    device = first._device
                    for t in args[1:n_inputs]:
                        if not isinstance(t, TensorLike) or t._device is not device:
                            break
                    else:
                        return run(args[:n_inputs], device, args[n_inputs:], kwargs)
                inputs, device = _convert_inputs(prim, list(args[:n_inputs]))
                if inputs is None:
                    return _symbolic_call(wrapper, args, kwargs)
                return run(inputs, device, args[n_inputs:], kwargs)

        def set_grad(fn: Callable[..., Any]) -> Callable[..., Any]:
            prim.grad_fn = fn
            for hook in on_define:  # a user's registered gradient replaces the built-in one
                hook(prim)
            return fn

        def set_spec(rule: Callable[..., Any] | str) -> Callable[..., Any] | str:
            prim.spec = rule
            return rule

        wrapper.grad = set_grad  # type: ignore[attr-defined]
        wrapper.spec = set_spec  # type: ignore[attr-defined]
        wrapper.prim = prim  # type: ignore[attr-defined]
        primitives.setdefault(normalize_op_name(name), []).append(prim)
        for hook in on_define:
            hook(prim)
        return wrapper

    return decorate


def _quieted(forward: Callable[..., Any]) -> Callable[..., Any]:
    """`forward` run with NumPy's floating-point warnings off (see `backend/fp_errors.py`)."""

    @functools.wraps(forward)
    def quiet_forward(*args: Any, **kwargs: Any) -> Any:
        token = fp_errors.quiet()
        try:
            return forward(*args, **kwargs)
        finally:
            fp_errors.restore(token)

    return quiet_forward


def _finish(prim: Primitive, inputs: Any, out: Any, device: backend.Device, rest: tuple,
            kwargs: dict) -> Any:  # fmt: skip
    """Wrap the forward's result (copying it if it may alias a Variable) and record it."""
    xp = device.xp
    ndarray = device.ndarray
    saved = None
    if prim.saves:
        out, saved = out
    if prim.multi_out:
        outs = tuple(Tensor(o if type(o) is ndarray else xp.asarray(o), device) for o in out)
        result: Any = outs
    else:
        if type(out) is not ndarray:
            out = xp.asarray(out)
        if prim.may_alias:
            for t in inputs:
                if isinstance(t, Variable):
                    out = out.copy()
                    break
        result = Tensor(out, device)
    tapes = _state.tapes
    if tapes and prim.grad_fn is not None:
        if saved is not None:
            # The residual travels in the node (see the module docstring): the gradient gets
            # it as `saved=`, and it is dropped with the node.
            kwargs = {**kwargs, "saved": saved}
        _tape.record(tapes, prim, inputs, result, rest, kwargs)
    return result


@op("accumulate_grad", 2)
def _accumulate_grad(xp: Any, a: Any, b: Any) -> Any:
    return a + b


@_accumulate_grad.grad
def _(dy: Any, out: Any, a: Any, b: Any) -> Any:
    return dy, dy


_tape._sum_grads = _accumulate_grad


# --- mixed precision: variables read in a layer's compute dtype ------------------------------
# A Keras layer with a mixed policy (`mixed_float16`) keeps float32 variables marked
# `_lf_autocast` and calls its `call` with `backend.flags.autocast` set to its compute dtype:
# every op that takes such a variable then takes it through this cast (recorded like any op,
# so the gradient reaching the variable is float32), as tf_keras's AutoCastVariable reads.
@op("cast", 1, may_alias=True)
def _autocast(xp: Any, x: Any, dtype: Any) -> Any:
    return x.astype(dtype, copy=False)


@_autocast.grad
def _(dy: Any, out: Any, x: Any, dtype: Any) -> Any:
    return _autocast(dy, x._data.dtype)


def autocast_values(values: Any) -> Any:
    """`values` with each autocast variable read in the current autocast dtype (a list, or
    the same sequence when nothing is cast)."""
    target = _flags.autocast
    out = None
    for i, v in enumerate(values):
        if (
            isinstance(v, Variable)
            and v.__dict__.get("_lf_autocast", False)
            and v._data.dtype.kind == "f"
            and v._data.dtype != target
        ):
            if out is None:
                out = list(values)
            out[i] = _autocast(v, target)
    if out is None:
        return values
    return tuple(out) if isinstance(values, tuple) else out
