"""Keras 2's implicit masks: how a mask travels from the layer that makes it to those that use it.

A layer that makes a mask (`Embedding(mask_zero=True)`, `Masking`) returns tensors whose
`_keras_mask` attribute holds it. The next layer's `__call__` reads the masks of its inputs
(`input_masks`): if its `call` names a `mask` argument and the caller passed none, it receives
them; if the layer `supports_masking`, its `compute_mask(inputs, mask)` gives the masks of its
outputs (`set_output_masks`), which by default is the input mask passed on. A layer that
neither supports masking nor takes `mask` ends the mask's way, as in tf_keras.

Symbolic calls (the functional API) do the same on KerasTensors: `compute_mask` runs on specs
(`specs.tracing()`), so a KerasTensor's `_keras_mask` is the mask's spec, and a functional model
replays each layer eagerly, where the real masks travel on the real tensors.
"""

from __future__ import annotations

from typing import Any

from layerflow._src.autodiff import specs
from layerflow._src.keras.engine.keras_tensor import KerasTensor, from_spec
from layerflow._src.utils import nest


def mask_of(value: Any) -> Any:
    """The `_keras_mask` of a tensor (None when it has none)."""
    return getattr(value, "_keras_mask", None)


def input_masks(inputs: Any) -> Any:
    """The masks carried by `inputs`, in their structure, or None when none carries one."""
    if not isinstance(inputs, list | tuple | dict):
        # A tensor: eager, a KerasTensor or a tf.function trace's GraphTensor.
        return getattr(inputs, "_keras_mask", None)
    flat = nest.flatten(inputs)
    masks = [getattr(t, "_keras_mask", None) for t in flat]
    if all(m is None for m in masks):
        return None
    return nest.pack_sequence_as(inputs, masks)


def _attach(outputs: Any, masks: Any) -> None:
    flat_out = nest.flatten(outputs)
    flat_masks = [None] * len(flat_out) if masks is None else nest.flatten(masks)
    for tensor, mask in zip(flat_out, flat_masks):
        if mask is None:
            continue
        try:
            tensor._keras_mask = mask
        except AttributeError:  # a NumPy array or a Variable: nothing to carry it
            pass


def _already_masked(outputs: Any) -> bool:
    return all(getattr(t, "_keras_mask", None) is not None for t in nest.flatten(outputs))


def set_output_masks(layer: Any, inputs: Any, outputs: Any, masks: Any, base: Any) -> None:
    """Give `outputs` the masks `layer.compute_mask(inputs, masks)` returns (eager call).

    `base` is `Layer.compute_mask`: a layer that does not override it and got no mask has
    nothing to compute, the common case, which costs one comparison.
    """
    if masks is None and type(layer).compute_mask is base:
        return
    if layer.__dict__.get("_compute_output_and_mask_jointly") or _already_masked(outputs):
        return
    _attach(outputs, layer.compute_mask(inputs, masks))


def set_symbolic_masks(layer: Any, inputs: Any, outputs: Any, masks: Any, base: Any) -> None:
    """`set_output_masks` for a symbolic call: the output masks as KerasTensor specs."""
    if masks is None and type(layer).compute_mask is base:
        return
    if layer.__dict__.get("_compute_output_and_mask_jointly") or _already_masked(outputs):
        return
    try:
        with specs.tracing():
            out = layer.compute_mask(inputs, masks)
    except specs.SpecError:
        raise
    except Exception:  # noqa: BLE001 - a mask that needs values is known only when run eagerly
        return
    if out is None:
        return
    _attach(outputs, nest.map_structure(_as_spec, out))


def _as_spec(mask: Any) -> Any:
    if mask is None or isinstance(mask, KerasTensor):
        return mask
    return from_spec(mask)
