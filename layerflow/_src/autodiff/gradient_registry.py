"""`tf.RegisterGradient` and `tf.no_gradient`: gradients chosen by op name.

Every layerflow op is a primitive with a name (`autodiff/op.py`); TF's op types name the same
ops in CamelCase, so "MatMul", "mat_mul" and "matmul" are one key. A registered gradient has
TF's signature `fn(op, *output_grads)`: `op` shows the call being differentiated (`op.type`,
`op.inputs`, `op.outputs`, `op.get_attr(name)` for the op's attributes), and `fn` returns one
gradient (or None) per input. `no_gradient("OpName")` makes the op non-differentiable: it is no
longer recorded, so a value reached only through it gets a None gradient (TF's unconnected
gradient).

    >>> import layerflow as tf
    >>> @tf.RegisterGradient("Cumprod")             # doctest: +SKIP
    ... def _cumprod_grad(op, grad):
    ...     return grad * 2.0, None

Difference from TF, on purpose: TF refuses a gradient for an op type that already has one
(its built-in ops; graph code swaps them with `gradient_override_map`). layerflow has no graphs
to map, so the first registration for a built-in op replaces its gradient (in every later
tape and `tf.function` trace); a second registration for the same name raises KeyError with
TF's message, as TF does for any repeated name. A name that no op has yet is kept and applies
when an op of that name is defined (op modules load lazily).
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Callable
from typing import Any

from layerflow._src.autodiff import op as _op
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import TensorLike

# normalized name -> (the user's gradient function or None for no_gradient, where registered)
_registered: dict[str, tuple[Callable[..., Any] | None, str]] = {}
# What a registration replaced (primitive, gradient, grad_uses_out), so it can be undone.
_replaced: dict[str, list[tuple[Any, Any]]] = {}


class _OpView:
    """The `op` argument of a registered gradient: one recorded call of a primitive."""

    __slots__ = ("type", "name", "inputs", "outputs", "_attrs")

    def __init__(self, prim: Any, inputs: list, outputs: list, attrs: dict) -> None:
        self.type = prim.name
        self.name = prim.name
        self.inputs = inputs
        self.outputs = outputs
        self._attrs = attrs

    def get_attr(self, name: str) -> Any:
        """The op's attribute `name` (e.g. `transpose_a` of matmul)."""
        if name not in self._attrs:
            raise ValueError(
                f"Operation '{self.type}' has no attr named '{name}'; its attrs are "
                f"{sorted(self._attrs)}."
            )
        return self._attrs[name]

    def __repr__(self) -> str:
        return f"<op {self.type}: {len(self.inputs)} inputs, {len(self.outputs)} outputs>"


def _attr_names(prim: Any) -> list[str]:
    """The names of the forward's attribute parameters (after `xp` and the tensor inputs)."""
    try:
        params = list(inspect.signature(prim.forward).parameters.values())
    except (TypeError, ValueError):
        return []
    skip = 2 if prim.list_input else 1 + prim.n_inputs
    return [
        p.name
        for p in params[skip:]
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def _adapter(fn: Callable[..., Any], prim: Any, op_type: str) -> Callable[..., Any]:
    """A primitive gradient `(dy, out, *inputs, *rest, **kwargs)` that calls TF's `fn(op, *dys)`."""
    names = _attr_names(prim)

    def grad(dy: Any, out: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.pop("saved", None)  # a residual memo, not an attribute
        if prim.list_input:
            inputs, rest = list(args[0]), args[1:]
        else:
            inputs, rest = list(args[: prim.n_inputs]), args[prim.n_inputs :]
        attrs = dict(zip(names, rest))
        attrs.update(kwargs)
        outputs = list(out) if isinstance(out, tuple) else [out]
        dys = tuple(dy) if prim.multi_out else (dy,)
        result = fn(_OpView(prim, inputs, outputs, attrs), *dys)
        grads = list(result) if isinstance(result, list | tuple) else [result]
        if len(grads) != len(inputs):
            raise ValueError(
                f"The gradient registered for '{op_type}' returned {len(grads)} value(s), but "
                f"the op has {len(inputs)} input(s); return one gradient (or None) per input."
            )
        out_grads = []
        for x, g in zip(inputs, grads):
            if g is not None and not isinstance(g, TensorLike):
                g = convert_to_tensor(g, dtype=x.dtype)
            out_grads.append(g)
        return out_grads[0] if len(out_grads) == 1 and not prim.list_input else out_grads

    return grad


def _apply(prim: Any) -> None:
    """Give `prim` the registered gradient of its name, if any (op.py calls this)."""
    key = _op.normalize_op_name(prim.name)
    entry = _registered.get(key)
    if entry is None:
        return
    fn = entry[0]
    current = prim.grad_fn
    if getattr(current, "_registered_for", None) == key:
        return  # already applied
    _replaced.setdefault(key, []).append((prim, current, prim.grad_uses_out))
    if fn is None:
        prim.grad_fn = None  # not recorded: no gradient flows through the op
        return
    grad = _adapter(fn, prim, prim.name)
    grad._registered_for = key  # type: ignore[attr-defined]
    prim.grad_fn = grad
    prim.grad_uses_out = True  # a registered gradient may read `op.outputs`


_op.on_define.append(_apply)


def _where(fn: Callable[..., Any] | None) -> str:
    """Where a registration came from, for the repeated-name error (TF names its location)."""
    code = getattr(fn, "__code__", None)
    if code is not None:
        return f"{fn.__qualname__} {code.co_filename}:{code.co_firstlineno}"  # type: ignore[union-attr]
    frame = traceback.extract_stack(limit=4)[0]
    return f"{frame.name} {frame.filename}:{frame.lineno}"


def _register(op_type: Any, fn: Callable[..., Any] | None) -> None:
    if not isinstance(op_type, str):
        raise TypeError("op_type must be a string")
    key = _op.normalize_op_name(op_type)
    if key in _registered:
        raise KeyError(
            f"Registering two gradient with name '{op_type}'! (Previous registration was in "
            f"{_registered[key][1]})"
        )
    _registered[key] = (fn, _where(fn))
    for prim in _op.primitives.get(key, []):
        _apply(prim)


class RegisterGradient:
    """A decorator that registers `fn(op, *grads)` as the gradient of the op named `op_type`
    (TF's CamelCase op type or layerflow's op name); see the module docstring.

    >>> import layerflow as tf
    >>> tf.RegisterGradient(3)
    Traceback (most recent call last):
    ...
    TypeError: op_type must be a string
    """

    def __init__(self, op_type: str) -> None:
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, f: Callable[..., Any]) -> Callable[..., Any]:
        _register(self._op_type, f)
        return f


def no_gradient(op_type: str) -> None:
    """Mark the op named `op_type` as not differentiable: values reached only through it get
    None gradients (`tf.no_gradient`)."""
    _register(op_type, None)


def _unregister(op_type: str) -> None:
    """Undo a registration and restore the gradients it replaced (for tests)."""
    key = _op.normalize_op_name(op_type)
    _registered.pop(key, None)
    for prim, fn, uses_out in reversed(_replaced.pop(key, [])):
        prim.grad_fn = fn
        prim.grad_uses_out = uses_out


__all__ = ["RegisterGradient", "no_gradient"]
