"""The rest of Keras 2's `Model` API beside structure and training: symbolic `input`/`output`,
weight paths, state resets, compile/build configs, save specs, and the names tf_keras keeps
only to refuse (`to_yaml`) or that have no meaning here (`export`).

`Model` inherits `ModelApi` first, so these override `Layer`'s node-based versions for
functional models.

Import cycle, on purpose (the one `model` explains): the compile config is written and read by
`saving_lib` (which `h5_model` and `functional_config` build on, through `model_config`,
`sequential` and `layer_serialization`, all of which name `model`), so those imports happen
when called, as `Model.save` does.
"""

from __future__ import annotations

import copy
import logging
import warnings
from collections import deque
from typing import Any

from layerflow._src.distribute import distribute_lib
from layerflow._src.framework.variables import Variable
from layerflow._src.keras.engine.layer_api import LayerApi, save_spec_of
from layerflow._src.keras.engine.layer_utils import who
from layerflow._src.utils import nest

_log = logging.getLogger("layerflow")


def _children(obj: Any) -> list[tuple[str, Any]]:
    """(name, child) pairs of `obj`'s state, lists and dicts expanded (index or key)."""
    out: list[tuple[str, Any]] = []
    children = obj._trackable_children() if hasattr(obj, "_trackable_children") else {}
    for name, value in children.items():
        stack = [(str(name), value)]
        while stack:
            path, item = stack.pop(0)
            if isinstance(item, dict):
                stack[:0] = [(f"{path}.{k}", v) for k, v in item.items()]
            elif isinstance(item, list | tuple):
                stack[:0] = [(f"{path}.{i}", v) for i, v in enumerate(item)]
            elif item is not None:
                out.append((path, item))
    return out


class ModelApi:
    """Mixin of `Model` (see the module docstring)."""

    # --- symbolic inputs and outputs -------------------------------------------------------
    @property
    def input(self) -> Any:
        """A functional model's input tensor(s) (`tf.keras.Input`)."""
        if self._is_graph_network:
            return self._graph_inputs
        graph_input = self.__dict__.get("_graph_input")
        if graph_input is not None:  # a Sequential built symbolically
            return graph_input
        return LayerApi.input.fget(self)

    @property
    def output(self) -> Any:
        """A functional model's output tensor(s)."""
        if self._is_graph_network:
            return self._graph_outputs
        graph_output = self.__dict__.get("_graph_output")
        if graph_output is not None and self.__dict__.get("_graph_input") is not None:
            return graph_output
        return LayerApi.output.fget(self)

    # --- weights by path ---------------------------------------------------------------------
    def get_weight_paths(self) -> dict[str, Variable]:
        """Every variable by its dotted object path, breadth first (tf_keras): attribute paths
        for subclassed models (`d1.kernel`), layer names for functional and Sequential models.

        >>> import layerflow as tf
        >>> x = tf.keras.Input((3,))
        >>> model = tf.keras.Model(x, tf.keras.layers.Dense(2, name="d1")(x))
        >>> sorted(model.get_weight_paths())
        ['d1.bias', 'd1.kernel']
        """
        result: dict[str, Variable] = {}
        seen: set[int] = set()
        queue: deque[tuple[str, Any]] = deque()
        if self._is_graph_network or hasattr(self, "_stack"):
            for layer in self.layers:
                seen.add(id(layer))
                queue.append((layer.name, layer))
            own = [(n, c) for n, c in _children(self) if isinstance(c, Variable)]
            for name, var in own:
                if id(var) not in seen:
                    seen.add(id(var))
                    result[name] = var
        else:
            queue.append(("", self))
        while queue:
            prefix, obj = queue.popleft()
            for name, child in _children(obj):
                if id(child) in seen:
                    continue
                seen.add(id(child))
                path = f"{prefix}.{name}" if prefix else name
                if isinstance(child, Variable):
                    result[path] = child
                else:
                    queue.append((path, child))
        return result

    def reset_states(self) -> None:
        """Reset the states of every stateful layer (stateful RNNs)."""
        for layer in self.layers:
            if hasattr(layer, "reset_states") and getattr(layer, "stateful", False):
                layer.reset_states()

    @property
    def state_updates(self) -> list[Any]:
        warnings.warn(
            "`Model.state_updates` will be removed in a future version. This property should "
            "not be used in TensorFlow 2.0, as `updates` are applied automatically.",
            stacklevel=2,
        )
        return []

    # --- distribution ------------------------------------------------------------------------
    @property
    def distribute_strategy(self) -> Any:
        """The strategy the model was made under (its `strategy.scope()`), else the current
        one."""
        return self.__dict__.get("_distribution_strategy") or distribute_lib.get_strategy()

    @property
    def distribute_reduction_method(self) -> str:
        """How per-replica values are reduced; "auto" unless set."""
        return self.__dict__.get("_distribute_reduction_method") or "auto"

    @distribute_reduction_method.setter
    def distribute_reduction_method(self, value: Any) -> None:
        if value not in (None, "auto", "first", "sum"):
            raise ValueError(
                f"distribute_reduction_method must be 'auto', 'first' or 'sum', got {value!r}."
            )
        self.__dict__["_distribute_reduction_method"] = value

    # --- configs ------------------------------------------------------------------------------
    def get_compile_config(self) -> dict[str, Any] | None:
        """The arguments `compile` was called with, serialized (None before compile)."""
        if not self._is_compiled:
            return None
        from layerflow._src.keras.saving import saving_lib  # deferred: saving builds Models

        return saving_lib._compile_config(self)

    def compile_from_config(self, config: dict[str, Any]) -> None:
        """`compile(**...)` from `get_compile_config()`'s dict (skipped, with a warning, when
        the class overrides `compile`, as in tf_keras)."""
        from layerflow._src.keras.engine.model import Model
        from layerflow._src.keras.saving import saving_lib

        if type(self).compile is not Model.compile:
            _log.warning(
                "`compile()` was not called as part of model loading because the model's "
                "`compile()` method is custom. All subclassed Models that have `compile()` "
                "overridden should also override `get_compile_config()` and "
                "`compile_from_config(config)`. Alternatively, you can call `compile()` "
                "manually after loading."
            )
            return
        if not isinstance(config, dict):
            raise TypeError(
                f"{who(self)}.compile_from_config() takes the dict of get_compile_config(), "
                f"got {type(config).__name__}."
            )
        saving_lib._compile_from_config(self, config, None, "the compile config")

    def save_spec(self, dynamic_batch: bool = True) -> Any:
        """`(args, kwargs)` of `tf.TensorSpec`s for the inputs the model was first called
        with (batch dimension None when `dynamic_batch`), or None before any call."""
        if self._is_graph_network:
            from layerflow._src.data.structure import TensorSpec

            def one(kt: Any) -> Any:
                shape = tuple(kt.shape)
                if dynamic_batch and shape:
                    shape = (None,) + shape[1:]
                return TensorSpec(shape, kt.dtype, name=kt.name)

            return ([nest.map_structure(one, self._graph_inputs)], {})
        return save_spec_of(self, dynamic_batch)

    # --- copies -------------------------------------------------------------------------------
    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        """A new model with the same structure and copies of the weights (tf_keras)."""
        cls = type(self)
        new = cls.__new__(cls)
        memo[id(self)] = new
        new.__setstate__(copy.deepcopy(self.__getstate__(), memo))
        return new

    def __copy__(self) -> Any:
        """As in tf_keras, a copy of a model is a deep copy: it never shares weights."""
        return self.__deepcopy__({})

    # --- names tf_keras keeps only to refuse ------------------------------------------------
    def to_yaml(self, **kwargs: Any) -> str:
        raise RuntimeError(
            "Method `model.to_yaml()` has been removed due to security risk of arbitrary code "
            "execution. Please use `model.to_json()` instead."
        )

    def export(self, filepath: Any) -> None:
        raise NotImplementedError(
            f"{who(self)}.export({filepath!r}): exporting a TensorFlow SavedModel for serving "
            "is not supported by layerflow (it has no TF graph runtime). Save the model with "
            "model.save('model.keras') (or 'model.h5') and load it with "
            "tf.keras.models.load_model."
        )


def model_from_yaml(yaml_string: Any, custom_objects: dict | None = None) -> Any:
    """Removed in TF 2.6 (tf_keras raises): use `to_json` and `model_from_json`."""
    raise RuntimeError(
        "Method `model_from_yaml()` has been removed due to security risk of arbitrary code "
        "execution. Please use `Model.to_json()` and `model_from_json()` instead."
    )
