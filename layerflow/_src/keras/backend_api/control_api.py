"""Keras backend control flow: `switch`, train/test phase selection, `rnn`, `map_fn`, folds."""

from __future__ import annotations

from typing import Any

from layerflow._src.framework import dtypes
from layerflow._src.framework.tensor import is_tensor
from layerflow._src.keras.backend_api.math_api import _t, ndim
from layerflow._src.keras.backend_api.session_api import current_training
from layerflow._src.ops import (
    array_ops,
    compare_ops,
    control_flow_ops,
    core_ops,
    functional_ops,
    manip_ops,
    math_ops,
)
from layerflow._src.utils import nest


def switch(condition: Any, then_expression: Any, else_expression: Any) -> Any:
    """Pick `then_expression` where `condition` holds (a scalar picks a whole branch; callables
    are called)."""
    condition = _t(condition)
    if condition.dtype != dtypes.bool_:
        condition = compare_ops.cast(condition, "bool")
    cond_ndim = ndim(condition)
    if not cond_ndim:
        then_fn = then_expression if callable(then_expression) else (lambda: then_expression)
        else_fn = else_expression if callable(else_expression) else (lambda: else_expression)
        return control_flow_ops.cond(condition, then_fn, else_fn)
    if callable(then_expression):
        then_expression = then_expression()
    if callable(else_expression):
        else_expression = else_expression()
    then_expression = _t(then_expression)
    expr_ndim = ndim(then_expression)
    if cond_ndim > expr_ndim:
        raise ValueError(
            "Rank of `condition` should be less than or equal to rank of `then_expression` and "
            f"`else_expression`. ndim(condition)={cond_ndim}, ndim(then_expression)={expr_ndim}"
        )
    if cond_ndim > 1:
        cond_shape = list(condition.shape) + [1] * (expr_ndim - cond_ndim)
        condition = core_ops.reshape(condition, cond_shape)
        expr_shape = list(then_expression.shape)
        tiles = [e if e - c > 0 else 1 for e, c in zip(expr_shape, cond_shape)]
        condition = manip_ops.tile(condition, tiles)
    return math_ops.where(condition, then_expression, else_expression)


def in_train_phase(x: Any, alt: Any, training: Any = None) -> Any:
    """`x` in training, `alt` otherwise (`training` defaults to the layer call's flag, then
    the learning phase)."""
    if training is None:
        training = current_training()
    if not is_tensor(training):
        if training == 1 or training is True:
            return x() if callable(x) else x
        if training == 0 or training is False:
            return alt() if callable(alt) else alt
    return switch(training, x, alt)


def in_test_phase(x: Any, alt: Any, training: Any = None) -> Any:
    return in_train_phase(alt, x, training=training)


def map_fn(fn: Any, elems: Any, name: str | None = None, dtype: Any = None) -> Any:
    return functional_ops.map_fn(fn, elems, name=name, dtype=dtype)


def foldl(fn: Any, elems: Any, initializer: Any = None, name: str | None = None) -> Any:
    return functional_ops.foldl(fn, elems, initializer=initializer, name=name)


def foldr(fn: Any, elems: Any, initializer: Any = None, name: str | None = None) -> Any:
    return functional_ops.foldr(fn, elems, initializer=initializer, name=name)


def _swap(t: Any) -> Any:
    axes = list(range(len(t.shape)))
    axes[0], axes[1] = 1, 0
    return array_ops.transpose(t, axes)


def _expand_mask(mask_t: Any, out: Any) -> Any:
    for _ in range(len(out.shape) - len(mask_t.shape)):
        mask_t = array_ops.expand_dims(mask_t, -1)
    return manip_ops.tile(mask_t, [1] * len(mask_t.shape[:1]) + list(out.shape)[1:])


def rnn(
    step_function: Any,
    inputs: Any,
    initial_states: Any,
    go_backwards: bool = False,
    mask: Any = None,
    constants: Any = None,
    unroll: bool = False,
    input_length: Any = None,
    time_major: bool = False,
    zero_output_for_mask: bool = False,
    return_all_outputs: bool = True,
) -> tuple:
    """Iterate `step_function(input_t, states + constants) -> (output, new_states)` over the
    time axis; returns `(last_output, outputs, new_states)`.

    Masked steps keep the previous output (zeros with `zero_output_for_mask`) and states.
    Eager execution runs the same loop whether `unroll` is set or not.
    """
    if not time_major:
        inputs = nest.map_structure(lambda t: _swap(_t(t)), inputs)
    flat_inputs = nest.flatten(inputs)
    for inp in flat_inputs:
        if len(inp.shape) < 3:
            raise ValueError(
                f"K.rnn expects inputs of rank >= 3 (batch, time, ...), got shape {inp.shape}."
            )
    time_steps = int(flat_inputs[0].shape[0])
    if unroll and not time_steps:
        raise ValueError("Unrolling requires a fixed number of timesteps.")
    if mask is not None:
        mask = _t(mask)
        if mask.dtype != dtypes.bool_:
            mask = compare_ops.cast(mask, "bool")
        if len(mask.shape) == 2:
            mask = array_ops.expand_dims(mask, -1)
        if not time_major:
            mask = _swap(mask)
    constants = list(constants or [])
    per_input = [array_ops.unstack(t) for t in flat_inputs]
    masks = array_ops.unstack(mask) if mask is not None else None
    order = list(range(time_steps))
    if go_backwards:
        order.reverse()
    states = tuple(initial_states)
    outputs: list = []
    prev = None
    for step, t in enumerate(order):
        current = nest.pack_sequence_as(inputs, [p[t] for p in per_input])
        output, new_states = step_function(current, tuple(states) + tuple(constants))
        flat_out = nest.flatten(output)
        flat_new = nest.flatten(new_states)
        if masks is not None:
            mask_t = masks[t]
            if prev is None or zero_output_for_mask:
                keep = [compare_ops.zeros_like(o) for o in flat_out]
            else:
                keep = prev
            flat_out = [math_ops.where(_expand_mask(mask_t, o), o, k)
                        for o, k in zip(flat_out, keep)]  # fmt: skip
            flat_old = nest.flatten(states)
            flat_new = [math_ops.where(_expand_mask(mask_t, n), n, o)
                        for n, o in zip(flat_new, flat_old)]  # fmt: skip
        elif is_tensor(input_length):
            if go_backwards:
                rev = core_ops.reduce_max(input_length, axis=0) - 1 - input_length
                mask_t = compare_ops.less(rev, step)
            else:
                mask_t = compare_ops.greater(input_length, step)
            keep = prev if prev is not None else [compare_ops.zeros_like(o) for o in flat_out]
            if zero_output_for_mask:
                keep = [compare_ops.zeros_like(o) for o in flat_out]
            flat_out = [math_ops.where(_expand_mask(mask_t, o), o, k)
                        for o, k in zip(flat_out, keep)]  # fmt: skip
            flat_new = [math_ops.where(_expand_mask(mask_t, n), n, o)
                        for n, o in zip(flat_new, nest.flatten(states))]  # fmt: skip
        prev = flat_out
        states = tuple(nest.pack_sequence_as(initial_states, flat_new))
        output = nest.pack_sequence_as(output, flat_out)
        if return_all_outputs or not outputs:
            outputs.append(output)
        else:
            outputs[0] = output
    last_output = outputs[-1]
    stacked = nest.map_structure(lambda *o: array_ops.stack(list(o)), *outputs)
    if not time_major:
        stacked = nest.map_structure(_swap, stacked)
    return last_output, stacked, tuple(states)
