"""`tf.custom_gradient`: a function that supplies its own gradient."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from layerflow._src.autodiff import tape as _tape
from layerflow._src.autodiff.op import Primitive
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.utils import nest


def custom_gradient(f: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate `f(*x) -> (y, grad_fn)`; `grad_fn(*dys)` returns one gradient per input.

    When `f` reads trainable variables, `grad_fn(*dys, variables=...)` returns
    `(input_grads, variable_grads)` as in TF.

    >>> import layerflow as tf
    >>> @tf.custom_gradient
    ... def clip_grad(x):
    ...     return tf.identity(x), lambda dy: tf.clip_by_value(dy, -1.0, 1.0)
    """

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        tapes = _tape._state.tapes
        inputs = [a for a in args if isinstance(a, TensorLike)]
        if not tapes:
            y, _ = f(*args, **kwargs)
            return y
        probe = _tape.GradientTape(persistent=True)
        with _tape.stop_recording_all():
            probe._push()
            try:
                y, grad_fn = f(*args, **kwargs)
            finally:
                probe._pop()
        used_vars = [v for v in probe.watched_variables() if not any(v is i for i in inputs)]
        outs = nest.flatten(y)
        multi = not (len(outs) == 1 and isinstance(y, TensorLike))
        prim = Primitive(f"custom_gradient:{getattr(f, '__name__', 'f')}", f, len(inputs),
                         multi, False, False, False)  # fmt: skip

        def grad(dy: Any, out: Any, *xs: Any) -> Any:
            dys = dy if multi else (dy,)
            if used_vars:
                in_g, var_g = grad_fn(*dys, variables=used_vars)
                return tuple(_as_list(in_g)) + tuple(var_g)
            return tuple(_as_list(grad_fn(*dys)))

        prim.grad_fn = grad
        node_inputs = inputs + used_vars
        result = (
            tuple(Tensor(o._data, o._device) for o in outs)
            if multi
            else Tensor(outs[0]._data, outs[0]._device)
        )
        _tape.record(tapes, prim, node_inputs, result, (), {})
        return nest.pack_sequence_as(y, list(result)) if multi else result

    return wrapper


def _as_list(grads: Any) -> list[Any]:
    return list(grads) if isinstance(grads, list | tuple) else [grads]
