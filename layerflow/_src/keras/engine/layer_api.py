"""The rest of Keras 2's `Layer` API: functional-graph accessors, metrics and updates added in
`call`, build/config hooks, the per-layer variable store protocol, and copying.

`Layer` inherits `LayerApi`; nothing here is on the hot path of a call. The node accessors
(`input`, `output`, `input_shape`, `get_input_at`, ...) read the nodes recorded by symbolic
calls (the functional API), with tf_keras's errors for a layer that has none: a layer only
ever called on real tensors has no input or output tensors to report.

An import cycle, on purpose: `add_metric` makes a `Mean` from `metrics/core` (imported inside
the method, when first called), and the metrics (`base_metric`, `core`, `confusion`,
`confusion_extra`, `extra`) are layers built on `base_layer`, which inherits this module.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

from layerflow._src.data.structure import TensorSpec
from layerflow._src.framework import dtypes
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import regularizers as regularizers_mod
from layerflow._src.keras.engine.dtype_policy import Policy
from layerflow._src.keras.engine.layer_utils import call_context, to_shapes, who
from layerflow._src.utils import nest


def _int_shape(t: Any) -> Any:
    return tuple(t.shape)


def _is_metric(obj: Any) -> bool:
    # Duck-typed: the metrics package builds on the engine, so the engine cannot import it.
    return all(callable(getattr(obj, n, None)) for n in ("update_state", "result", "reset_state"))


class LayerApi:
    """Mixin of `Layer` (see the module docstring)."""

    # --- nodes of the functional API ----------------------------------------------------------
    @property
    def inbound_nodes(self) -> list[Any]:
        """The nodes of this layer's symbolic calls, in call order."""
        return self._inbound_nodes

    @property
    def outbound_nodes(self) -> list[Any]:
        """The nodes of the layers called on this layer's symbolic outputs."""
        return self.__dict__.setdefault("_outbound_nodes", [])

    def _node_value(self, node_index: int, attr: str, attr_name: str) -> Any:
        nodes = self._inbound_nodes
        if not nodes:
            raise RuntimeError(
                f"The layer {self.name} has never been called and thus has no defined {attr_name}."
            )
        if not len(nodes) > node_index:
            raise ValueError(
                f"Asked to get {attr_name} at node {node_index}, but the layer has only "
                f"{len(nodes)} inbound nodes."
            )
        node = nodes[node_index]
        is_input = node.inputs is None
        if attr == "input_tensors":
            values = [node.outputs] if is_input else node.inputs
        elif attr == "output_tensors":
            values = [node.outputs] if is_input else node.outputs
        elif attr == "input_shapes":
            values = nest.map_structure(_int_shape, [node.outputs] if is_input else node.inputs)
        else:
            values = nest.map_structure(_int_shape, [node.outputs] if is_input else node.outputs)
        if isinstance(values, list) and len(values) == 1:
            return values[0]
        return values

    def get_input_at(self, node_index: int) -> Any:
        """The input tensor(s) of the layer's `node_index`-th symbolic call."""
        return self._node_value(node_index, "input_tensors", "input")

    def get_output_at(self, node_index: int) -> Any:
        """The output tensor(s) of the layer's `node_index`-th symbolic call."""
        return self._node_value(node_index, "output_tensors", "output")

    def get_input_shape_at(self, node_index: int) -> Any:
        return self._node_value(node_index, "input_shapes", "input shape")

    def get_output_shape_at(self, node_index: int) -> Any:
        return self._node_value(node_index, "output_shapes", "output shape")

    def get_input_mask_at(self, node_index: int) -> Any:
        inputs = self.get_input_at(node_index)
        if isinstance(inputs, list):
            return [getattr(x, "_keras_mask", None) for x in inputs]
        return getattr(inputs, "_keras_mask", None)

    def get_output_mask_at(self, node_index: int) -> Any:
        output = self.get_output_at(node_index)
        if isinstance(output, list):
            return [getattr(x, "_keras_mask", None) for x in output]
        return getattr(output, "_keras_mask", None)

    @property
    def input(self) -> Any:
        """The input tensor(s) of the layer's first symbolic call.

        >>> import layerflow as tf
        >>> x = tf.keras.Input((3,))
        >>> dense = tf.keras.layers.Dense(2)
        >>> _ = dense(x)
        >>> dense.input is x
        True
        """
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name} is not connected, no input to return.")
        return self._node_value(0, "input_tensors", "input")

    @property
    def output(self) -> Any:
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name} has no inbound nodes.")
        return self._node_value(0, "output_tensors", "output")

    @property
    def input_mask(self) -> Any:
        """The mask(s) of the layer's first symbolic input (None where there is none)."""
        inputs = self.input
        if isinstance(inputs, list):
            return [getattr(x, "_keras_mask", None) for x in inputs]
        return getattr(inputs, "_keras_mask", None)

    @property
    def output_mask(self) -> Any:
        output = self.output
        if isinstance(output, list):
            return [getattr(x, "_keras_mask", None) for x in output]
        return getattr(output, "_keras_mask", None)

    def _one_shape(self, attr: str, what: str, method: str) -> Any:
        nodes = self._inbound_nodes
        if not nodes:
            extra = (
                " Note that the `input_shape` property is only available for Functional and "
                "Sequential models."
                if what == "input"
                else ""
            )
            raise AttributeError(
                f'The layer "{self.name}" has never been called and thus has no defined '
                f"{what} shape.{extra}"
            )
        shapes = [self._node_value(i, attr, what) for i in range(len(nodes))]
        if all(str(s) == str(shapes[0]) for s in shapes):
            return shapes[0]
        raise AttributeError(
            f'The layer "{self.name}" has multiple inbound nodes, with different {what} '
            f'shapes. Hence the notion of "{what} shape" is ill-defined for the layer. Use '
            f"`{method}(node_index)` instead."
        )

    @property
    def input_shape(self) -> Any:
        """The input shape of the layer's symbolic calls (tf_keras: AttributeError when the
        layer was never called on symbolic tensors or saw different shapes)."""
        return self._one_shape("input_shapes", "input", "get_input_shape_at")

    @property
    def output_shape(self) -> Any:
        return self._one_shape("output_shapes", "output", "get_output_shape_at")

    # --- metrics and updates added in call ------------------------------------------------------
    def add_metric(self, value: Any, name: str | None = None, **kwargs: Any) -> None:
        """Track the mean of `value` over the epoch as a metric named `name` (from `call`).

        >>> import layerflow as tf
        >>> class Probe(tf.keras.layers.Layer):
        ...     def call(self, x):
        ...         self.add_metric(tf.reduce_mean(x), name="mean_in")
        ...         return x
        >>> probe = Probe()
        >>> _ = probe(tf.ones((2, 2)))
        >>> [m.name for m in probe.metrics], float(probe.metrics[0].result())
        (['mean_in'], 1.0)
        """
        if len(kwargs) > 1 or (kwargs and next(iter(kwargs)) != "aggregation"):
            raise TypeError(f"Unknown keyword arguments: {list(kwargs)}. Expected `aggregation`.")
        metric_obj = getattr(value, "_metric_obj", None)
        if name is None and metric_obj is None:
            raise ValueError(
                "Please provide a name for your metric like "
                "`self.add_metric(tf.reduce_sum(inputs), name='mean_activation')`"
            )
        from layerflow._src.keras.engine.keras_tensor import KerasTensor

        if isinstance(value, KerasTensor):
            raise NotImplementedError(
                f"{who(self)}.add_metric() got a symbolic tensor {value!r}: metrics of a "
                "functional model's symbolic tensors are not supported. Call add_metric inside "
                "a layer's call(), where it is computed on real data."
            )
        if call_context.depth == 0 and metric_obj is None:
            raise ValueError(
                f"Expected a symbolic Tensor for the metric value, received: {value!r}. "
                "Outside a layer's call, add_metric needs a metric's result."
            )
        name = metric_obj.name if metric_obj is not None else name
        own = self.__dict__.setdefault("_metrics", [])
        with self.__dict__.setdefault("_metrics_lock", threading.Lock()):
            match = next((m for m in own if m.name == name), None)
            if match is None:
                if metric_obj is not None:
                    match = metric_obj
                else:
                    # Deferred: the metrics package builds on the engine.
                    from layerflow._src.keras.metrics import core as metrics_core

                    match = metrics_core.Mean(name=name, dtype=getattr(value, "dtype", None))
                own.append(match)
        if metric_obj is None:
            match.update_state(value)

    @property
    def metrics(self) -> list[Any]:
        """Metrics added with `add_metric` and metric attributes, of this layer and its
        sublayers."""
        return self._layer_metrics()

    def _layer_metrics(self) -> list[Any]:
        out: list[Any] = []
        seen: set[int] = set()

        def take(m: Any) -> None:
            if id(m) not in seen:
                seen.add(id(m))
                out.append(m)

        # fit asks every step: the metric attributes are found once per structure (cached);
        # only the add_metric lists, which grow without a structure change, are read each time.
        for layer, attrs in self._cached("metric_attributes", self._metric_attributes):
            for m in attrs:
                take(m)
            for m in layer.__dict__.get("_metrics", ()):
                take(m)
        return out

    def _metric_attributes(self) -> list[tuple[Any, list[Any]]]:
        found = []
        for layer in self._flatten_layers(include_self=True):
            if layer is not self and _is_metric(layer):
                found.append((layer, [layer]))
                continue
            attrs = [
                item
                for _, value in layer._tracked_attributes()
                for item in nest.flatten(value)
                if _is_metric(item)
            ]
            found.append((layer, attrs))
        return found

    def add_update(self, updates: Any) -> None:
        """Run state updates from `call` (Keras 2 in eager mode: callables run now; tensors
        are already applied). A frozen layer (`trainable=False`) skips them."""
        if not self.trainable:
            return
        for update in nest.flatten(updates):
            if callable(update):
                update()

    @property
    def updates(self) -> list[Any]:
        warnings.warn(
            "`layer.updates` will be removed in a future version. This property should not be "
            "used in TensorFlow 2.0, as `updates` are applied automatically.",
            stacklevel=2,
        )
        return []

    # --- small properties -----------------------------------------------------------------------
    @property
    def activity_regularizer(self) -> Any:
        """The regularizer applied to this layer's outputs (added to `losses` on each call)."""
        return self._activity_regularizer

    @activity_regularizer.setter
    def activity_regularizer(self, value: Any) -> None:
        self.__dict__["_activity_regularizer"] = regularizers_mod.get(value)

    @property
    def dynamic(self) -> bool:
        """Whether this layer (or a sublayer) was made with `dynamic=True` (eager only; every
        layerflow layer runs eagerly anyway)."""
        return any(layer.__dict__.get("_dynamic", False) for layer in self._flatten_layers())

    @property
    def dtype_policy(self) -> Policy:
        return self.__dict__.get("_dtype_policy") or Policy(self.dtype)

    def add_variable(self, *args: Any, **kwargs: Any) -> Any:
        """Deprecated alias of `add_weight`."""
        warnings.warn(
            "`layer.add_variable` is deprecated and will be removed in a future version. "
            "Please use the `layer.add_weight()` method instead.",
            stacklevel=2,
        )
        return self.add_weight(*args, **kwargs)

    def finalize_state(self) -> None:
        """Called after the layer's weights were set or restored; override to refresh state
        derived from them."""

    # --- build and variable store hooks ---------------------------------------------------------
    def get_build_config(self) -> dict[str, Any] | None:
        """`{"input_shape": ...}` the layer was built with (None before it is built)."""
        shape = self._build_input_shape
        if shape is None:
            return None

        def as_tuple(s: Any) -> Any:
            return tuple(s) if isinstance(s, TensorShape) else s

        return {"input_shape": nest.map_structure(as_tuple, _plain(shape))}

    def build_from_config(self, config: dict[str, Any]) -> None:
        """Create the layer's weights from `get_build_config()`'s dict."""
        if not isinstance(config, dict) or "input_shape" not in config:
            raise ValueError(
                f"{who(self)}.build_from_config() takes the dict of get_build_config(), "
                f"{{'input_shape': ...}}; got {config!r}."
            )
        shape = config["input_shape"]
        if shape is not None:
            self.build(to_shapes(shape))

    def _own_store_variables(self) -> list[Any]:
        own = list(self._own_weights)
        return [v for v in own if v.trainable] + [v for v in own if not v.trainable]

    def save_own_variables(self, store: Any) -> None:
        """Write this layer's own variables (not its sublayers') into `store` as "0", "1", ...
        (trainable first), the per-layer protocol of Keras 3's `.keras` saving."""
        for i, v in enumerate(self._own_store_variables()):
            store[f"{i}"] = v.numpy()

    def load_own_variables(self, store: Any) -> None:
        """Read what `save_own_variables` wrote; checks the count and every shape first."""
        all_vars = self._own_store_variables()
        if len(store.keys()) != len(all_vars):
            raise ValueError(
                f"Layer '{self.name}' expected {len(all_vars)} variables, but received "
                f"{len(store.keys())} variables during loading. Expected: "
                f"{[v.name for v in all_vars]}"
            )
        values = [store[f"{i}"] for i in range(len(all_vars))]
        bad = [
            f"'{v.name}' has shape {tuple(v.shape)} but the store holds {tuple(a.shape)}"
            for v, a in zip(all_vars, values)
            if tuple(getattr(a, "shape", ())) != tuple(v.shape)
        ]
        if bad:
            raise ValueError(f"Layer '{self.name}': {'; '.join(bad)}. Nothing was assigned.")
        for v, a in zip(all_vars, values):
            v.assign(a)
        self.finalize_state()

    # --- copying --------------------------------------------------------------------------------
    def __setstate__(self, state: dict[str, Any]) -> None:
        # The build lock and the metrics lock are per process: never pickled, made anew.
        state = dict(state)
        state.pop("_build_lock", None)
        if "_metrics_lock" in state:
            state["_metrics_lock"] = threading.Lock()
        self.__dict__.update(state)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_build_lock", None)
        state.pop("_metrics_lock", None)
        state.pop("_structure_cache", None)  # ids of this object's containers, not a copy's
        return state


def _plain(shape: Any) -> Any:
    """TensorShapes as tuples inside a nested structure (TensorShape is a leaf here)."""
    if shape is None or isinstance(shape, TensorShape):
        return None if shape is None else tuple(shape)
    if isinstance(shape, dict):
        return {k: _plain(v) for k, v in shape.items()}
    if isinstance(shape, list | tuple):
        return type(shape)(_plain(s) for s in shape)
    return shape


def save_spec_of(layer: Any, dynamic_batch: bool = True) -> Any:
    """`(args, kwargs)` of TensorSpecs for the inputs `layer` was first called (built) with,
    or None before that."""
    spec = layer.__dict__.get("_saved_input_spec")
    if spec is None:
        return None

    def one(s: Any) -> Any:
        if not isinstance(s, TensorSpec):
            return s
        shape = tuple(s.shape)
        if dynamic_batch and shape:
            shape = (None,) + shape[1:]
        return TensorSpec(shape, s.dtype)

    return ([nest.map_structure(one, spec)], {})


def record_input_spec(layer: Any, inputs: Any) -> None:
    """Remember the structure, shapes and dtypes of the inputs `layer` is built from."""

    def one(t: Any) -> Any:
        dtype = getattr(t, "dtype", None)
        shape = getattr(t, "shape", None)
        if dtype is None or shape is None:
            return None
        return TensorSpec(tuple(shape), dtypes.as_dtype(dtype))

    layer.__dict__["_saved_input_spec"] = nest.map_structure(one, inputs)


__all__ = ["LayerApi", "Policy", "record_input_spec", "save_spec_of"]
