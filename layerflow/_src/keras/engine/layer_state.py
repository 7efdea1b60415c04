"""The state half of `Layer`: attribute tracking, weights, losses and the structure cache.

`Layer` (base_layer.py) inherits this; the split keeps the call machinery apart from the
bookkeeping of what a layer owns. `fit` asks for `trainable_variables` and `losses` on every
step, and both walk the layer tree; the walks are cached per root layer and validated on read
by two cheap checks: a global structure version, bumped by every change this module can see
(tracked attribute set or deleted, `add_weight`, a callable loss, `trainable` set on any layer,
`Sequential.add/pop`), and a snapshot of the ids in every list/dict attribute of the tree, for
appends to plain lists that no hook sees (`self.blocks.append(Dense(2))`).
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from layerflow._src.distribute import distribute_lib
from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.module import Module, flatten_state, holds_state
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.trackable import Trackable
from layerflow._src.framework.variables import (
    Variable,
    VariableAggregation,
    VariableSynchronization,
)
from layerflow._src.keras import constraints as constraints_mod
from layerflow._src.keras import initializers as initializers_mod
from layerflow._src.keras import regularizers as regularizers_mod
from layerflow._src.keras.engine.keras_tensor import KerasTensor
from layerflow._src.keras.engine.layer_utils import (
    WeightList,
    not_initialized_error,
    regularization_loss,
    who,
)
from layerflow._src.utils import naming, nest

_layers_with_eager_losses: weakref.WeakSet[LayerState] = weakref.WeakSet()
# One counter for every layer tree: a change anywhere invalidates every cache (simple, and
# structure changes are rare next to the per-step reads the cache serves).
_structure_version = [0]


def structure_changed() -> None:
    """Invalidate every layer's cached walks (call after changing what a layer tracks)."""
    _structure_version[0] += 1


def _ids(container: Any) -> tuple[Any, ...]:
    if isinstance(container, dict):
        return tuple((k, id(v)) for k, v in container.items())
    return tuple(map(id, container))


def _containers(value: Any, out: list[tuple[Any, tuple[Any, ...]]]) -> bool:
    """Append (container, ids) for every list/dict inside `value`; False if `value` holds a
    non-Layer Module (its variables change without telling anyone: never cache then)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list | dict):
            out.append((item, _ids(item)))
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, Module) and not isinstance(item, LayerState):
            return False
    return True


class LayerState(Module):
    """Tracking, weights and losses of a layer (see the module docstring)."""

    _is_metric = False  # keras.metrics.Metric sets it: held as state, not listed as a layer

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        for layer in self._flatten_layers(include_self=True):
            layer.__dict__["_trainable"] = bool(value)
        structure_changed()

    # --- tracking -------------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        if "_module_initialized" not in d and isinstance(value, LayerState | Variable):
            raise not_initialized_error(self)
        object.__setattr__(self, name, value)
        if name[0] == "_":
            return
        # Remember which public attributes may hold state, so tracking does not rescan every
        # attribute; containers are remembered because they may be filled later.
        keys = d.get("_tracked_keys")
        if isinstance(value, Variable | Trackable | list | tuple | dict):
            if keys is None:
                keys = d["_tracked_keys"] = {}
            keys[name] = None
            structure_changed()
        elif keys and name in keys:
            structure_changed()  # a tracked attribute replaced by a plain value

    def __delattr__(self, name: str) -> None:
        object.__delattr__(self, name)
        if self.__dict__.get("_tracked_keys", {}).pop(name, None) is not None or name[0] != "_":
            structure_changed()

    # --- the structure cache --------------------------------------------------------------------
    def _lookup(self, key: Any) -> Any:
        """The cached value for `key` if the tree has not changed since, else None (fast)."""
        cache = self.__dict__.get("_structure_cache")
        if cache is None or cache[0] != _structure_version[0]:
            return None
        for container, ids in cache[1]:
            if _ids(container) != ids:
                return None
        return cache[2].get(key)

    def _cached(self, key: Any, compute: Callable[[], Any]) -> Any:
        """`compute()`, remembered until the structure of this layer's tree changes."""
        d = self.__dict__
        cache = d.get("_structure_cache")
        version = _structure_version[0]
        if cache is not None and cache[0] == version:
            for container, ids in cache[1]:
                if _ids(container) != ids:
                    cache = None
                    break
            else:
                found = cache[2].get(key)
                if found is not None:
                    return found
        if cache is None or cache[0] != version:
            containers: list[tuple[Any, tuple[Any, ...]]] = []
            cacheable = True
            for layer in self._walk_layers(True, True):
                for name in layer.__dict__.get("_tracked_keys") or ():
                    cacheable = _containers(layer.__dict__.get(name), containers) and cacheable
                stack = layer.__dict__.get("_stack")
                if stack is not None:
                    containers.append((stack, _ids(stack)))
            if not cacheable:
                return compute()
            cache = d["_structure_cache"] = (version, containers, {})
        found = cache[2][key] = compute()
        return found

    def _tracked_attributes(self) -> Iterator[tuple[str, Any]]:
        d = self.__dict__
        keys = d.get("_tracked_keys")
        if not keys:
            return
        own = {id(v) for v in d["_own_weights"]} if d.get("_own_weights") else ()
        for key in list(keys):
            value = d.get(key)
            if isinstance(value, Variable):
                if id(value) not in own:
                    yield key, value
            elif isinstance(value, Trackable) or (
                isinstance(value, list | tuple | dict) and holds_state(value)
            ):
                yield key, value

    def _trackable_children(self) -> dict[str, Any]:
        children: dict[str, Any] = dict(self._own_names)
        children.update(Module._trackable_children(self))
        return children

    def _flatten_layers(self, include_self: bool = True, recursive: bool = True) -> list[Any]:
        """Unique layers reachable through tracked attributes, depth first, in tracking order."""
        key = ("layers", include_self, recursive)
        found = self._lookup(key)
        if found is None:
            found = self._cached(key, lambda: self._walk_layers(include_self, recursive))
        return list(found)

    def _walk_layers(self, include_self: bool, recursive: bool) -> list[Any]:
        out: list[LayerState] = [self] if include_self else []
        seen = {id(self)}

        def visit(layer: LayerState) -> None:
            for _, value in layer._tracked_attributes():
                for item in flatten_state(value, LayerState):
                    # A metric is a Layer but not one of the model's layers (Keras 2): its
                    # weights count, `layers` leaves it out.
                    if id(item) in seen or item._is_metric:
                        continue
                    seen.add(id(item))
                    out.append(item)
                    if recursive:
                        visit(item)

        visit(self)
        return out

    def _tracked_metrics(self) -> list[Any]:
        """Metrics held by attributes of this layer and of its layers, each once (Keras 2's
        `Model.metrics` lists them after the compiled ones); cached like `layers`."""
        found = self._lookup("metrics")
        if found is None:
            found = self._cached("metrics", self._walk_metrics)
        return list(found)

    def _walk_metrics(self) -> list[Any]:
        out: list[Any] = []
        seen: set[int] = set()
        for layer in self._flatten_layers():
            for _, value in layer._tracked_attributes():
                for item in flatten_state(value, LayerState):
                    if item._is_metric and id(item) not in seen:
                        seen.add(id(item))
                        out.append(item)
        return out

    def _all_built(self) -> bool:
        return all(layer.built for layer in self._flatten_layers())

    # --- weights --------------------------------------------------------------------------------
    def _collect(self, kind: str, seen: set[int], visiting: set[int]) -> list[Variable]:
        """Weights of `kind` ('all', 'trainable', 'non_trainable') in Keras order, each once.

        A frozen layer (`trainable = False`) has no trainable weights: all of its weights and
        its sublayers' count as non-trainable, as in Keras.
        """
        frozen = not self._trainable
        if frozen and kind == "trainable":
            return []
        if frozen and kind == "non_trainable":
            kind = "all"
        visiting.add(id(self))
        out: list[Variable] = []

        def take(v: Variable) -> None:
            if id(v) in seen:
                return
            if kind != "all" and v.trainable != (kind == "trainable"):
                return
            seen.add(id(v))
            out.append(v)

        for v in self._own_weights:
            take(v)
        for _, value in self._tracked_attributes():
            for item in flatten_state(value, Variable | Trackable):
                if isinstance(item, Variable):
                    take(item)
                elif isinstance(item, LayerState):
                    if id(item) not in visiting:
                        out.extend(item._collect(kind, seen, visiting))
                elif isinstance(item, Module):
                    for v in item.variables:
                        take(v)
        return out

    def _weight_list(self, items: list[Variable]) -> list[Variable]:
        # An empty list explains, on IndexError, that weights appear when the layer is built.
        return items if items else WeightList(items, self)

    def _weights_of(self, kind: str) -> list[Variable]:
        found = self._lookup(kind)
        if found is None:
            found = self._cached(kind, lambda: self._collect(kind, set(), set()))
        return list(found) if found else WeightList([], self)

    @property
    def weights(self) -> list[Variable]:
        """All weights, own first then sublayers', in creation/tracking order (each once)."""
        return self._weights_of("all")

    @property
    def variables(self) -> list[Variable]:
        return self.weights

    @property
    def trainable_weights(self) -> list[Variable]:
        return self._weights_of("trainable")

    @property
    def non_trainable_weights(self) -> list[Variable]:
        return self._weights_of("non_trainable")

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    def add_weight(
        self,
        name: Any = None,
        shape: Any = None,
        dtype: Any = None,
        initializer: Any = None,
        regularizer: Any = None,
        trainable: bool | None = None,
        constraint: Any = None,
        use_resource: Any = None,
        synchronization: int = VariableSynchronization.AUTO,
        aggregation: int = VariableAggregation.NONE,
        **kwargs: Any,
    ) -> Variable:
        """Create a weight of this layer: the only way a layer gets state.

        >>> import layerflow as tf
        >>> layer = tf.keras.layers.Layer(name="holder")
        >>> layer.add_weight("w", (3, 4)).name
        'holder/w:0'
        """
        if "_module_initialized" not in self.__dict__:
            raise not_initialized_error(self)
        if shape is None and isinstance(name, list | tuple | TensorShape):
            name, shape = None, name  # Keras 3's add_weight(shape, ...)
        unknown = sorted(
            set(kwargs) - {"partitioner", "caching_device", "getter", "experimental_autocast"}
        )
        if unknown:
            raise TypeError(f"{who(self)}.add_weight() got unexpected keyword arguments {unknown}.")
        shape = TensorShape(() if shape is None else shape)
        if not shape.is_fully_defined():
            raise ValueError(
                f"{who(self)}.add_weight({name!r}): every dimension of the shape must be known, "
                f"got {shape}. Weights are usually created in build(input_shape), from known "
                "dimensions such as input_shape[-1]."
            )
        dt = dtypes.as_dtype(dtype or self.dtype)
        if initializer is None:
            initializer = "glorot_uniform" if dt.is_floating else "zeros"
        init = initializers_mod.get(initializer)
        if synchronization == VariableSynchronization.ON_READ:
            if trainable:
                raise ValueError(
                    f"{who(self)}.add_weight({name!r}): synchronization=ON_READ variables cannot "
                    "be trainable. Set trainable=False."
                )
            trainable = False
        elif trainable is None:
            trainable = True
        base = name or "weight"
        key = base
        i = 0
        while key in self._own_names:
            i += 1
            key = f"{base}_{i}"
        value = self._restored_value(key, shape, dt)
        if value is None:
            value = init(tuple(shape), dtype=dt)
            if callable(value) and not isinstance(value, TensorLike | np.ndarray):
                value = value()
        strategy = self._distribution_strategy
        scope = (
            strategy.scope()
            if strategy is not None and not distribute_lib.has_strategy()
            else contextlib.nullcontext()
        )
        with scope, naming.name_scope(self.name + "/"):
            var = Variable(
                value,
                name=base,
                trainable=trainable,
                dtype=dt,
                constraint=constraints_mod.get(constraint),
                synchronization=synchronization,
                aggregation=aggregation,
            )
        if tuple(var.shape) != tuple(shape):
            raise ValueError(
                f"{who(self)}.add_weight({name!r}): the initializer returned shape {var.shape}, "
                f"but the weight's shape is {shape}."
            )
        if (
            self.__dict__.get("_compute_dtype") is not None
            and dt.is_floating
            and kwargs.get("experimental_autocast", True)
        ):
            var._lf_autocast = True  # read in the compute dtype inside call (dtype_policy.py)
        self._own_weights.append(var)
        self._own_names[key] = var
        reg = regularizers_mod.get(regularizer)
        if reg is not None:
            self._callable_losses.append(functools.partial(regularization_loss, reg, var))
        structure_changed()
        return var

    # --- Trackable's restore protocol ---------------------------------------------------------
    def _restore_on_create(self, source: Any) -> None:
        """Weights this layer creates from now on take their values from `source` (newest
        load first); see `Trackable._restore_on_create`."""
        self.__dict__["_pending_restore"] = [source, *(self._pending_restore or ())]

    def _call_after_build(self, fn: Callable[[], None]) -> bool:
        """`fn` runs once, after this layer's next call (the one that builds it)."""
        self._post_build_callbacks.append(fn)
        return True

    def _restored_value(self, key: str, shape: TensorShape, dt: dtypes.DType) -> Any:
        """The value `load_weights` left for this weight before the layer was built, if any."""
        value = None
        for source in self._pending_restore or ():
            taken = source.take(key)  # every source gives it up; the newest one's value wins
            value = taken if value is None else value
        if value is None:
            return None
        array = np.asarray(value)
        if tuple(array.shape) != tuple(shape):
            raise ValueError(
                f"{who(self)}: the weights file holds shape {TensorShape(array.shape)} for "
                f"weight '{key}', but the layer creates it with shape {shape}. Build the model "
                "with the same configuration as the one that saved the file."
            )
        if array.dtype != dt.np:
            if array.dtype.kind != dt.np.kind:
                raise ValueError(
                    f"{who(self)}: the weights file holds dtype {array.dtype} for weight "
                    f"'{key}', but the layer creates it as {dt.name}."
                )
            array = array.astype(dt.np)
        return array

    def get_weights(self) -> list[np.ndarray]:
        """NumPy copies of the weights, in `weights` order (`[]` before the layer is built)."""
        return [np.array(v.numpy(), copy=True) for v in self.weights]

    def set_weights(self, weights: Any) -> None:
        """Assign NumPy values to the weights; checks the count and every shape first."""
        params = list(self.weights)
        weights = list(weights)
        if len(weights) != len(params):
            raise ValueError(
                f"{who(self)}.set_weights() got {len(weights)} arrays, but the layer has "
                f"{len(params)} weights with shapes {[tuple(p.shape) for p in params]}. "
                + ("" if params else "It is not built yet: call it on data or build() first.")
            )
        arrays = [np.asarray(w.numpy() if isinstance(w, TensorLike) else w) for w in weights]
        bad = [
            f"'{p.name}' has shape {tuple(p.shape)} but the value has shape {a.shape}"
            for p, a in zip(params, arrays)
            if tuple(a.shape) != tuple(p.shape)
        ]
        if bad:
            raise ValueError(
                f"{who(self)}.set_weights(): {len(bad)} shape mismatch(es); nothing was "
                "assigned: " + "; ".join(bad) + "."
            )
        for p, a in zip(params, arrays):
            p._write(a.astype(p.dtype.np, copy=False))
        for layer in self._flatten_layers():
            layer.finalize_state()  # Keras 2: layers refresh state derived from the weights

    def count_params(self) -> int:
        """Number of scalars in all weights (each shared weight once)."""
        if not self._all_built():
            raise ValueError(
                f"{who(self)} is not built yet, so its parameters do not exist. Call it on data "
                "or build it with `layer.build(input_shape)` first."
            )
        return int(sum(int(np.prod(v.shape)) for v in self.weights))

    # --- losses ---------------------------------------------------------------------------------
    def add_loss(self, losses: Any, inputs: Any = None) -> None:
        """Add a loss tensor (from `call`) or a zero-argument callable (evaluated on access)."""
        for loss in nest.flatten(losses):
            if loss is None:
                continue
            if isinstance(loss, KerasTensor):
                raise TypeError(
                    f"{who(self)}.add_loss() got a symbolic tensor {loss!r}: losses of a "
                    "functional model's symbolic tensors are not supported. Add the loss inside "
                    "a layer's call() (self.add_loss(...)), where it is computed on real data."
                )
            if callable(loss) and not isinstance(loss, TensorLike):
                self._callable_losses.append(loss)
                structure_changed()
            else:
                self._eager_losses.append(convert_to_tensor(loss))
                _layers_with_eager_losses.add(self)

    @property
    def losses(self) -> list[Any]:
        """Losses added by `add_loss` in the last call and regularization losses, nested too."""
        out: list[Any] = []
        if _layers_with_eager_losses:
            layers = self._cached(("layers", True, True), lambda: self._walk_layers(True, True))
        else:  # only regularizers: skip the layers that have none
            layers = self._lookup("with_losses")
            if layers is None:
                layers = self._cached("with_losses", self._layers_with_callable_losses)
        for layer in layers:
            out.extend(layer._eager_losses)
            out.extend(fn() for fn in layer._callable_losses)
        return out

    def _layers_with_callable_losses(self) -> list[Any]:
        return [layer for layer in self._walk_layers(True, True) if layer._callable_losses]

    def _clear_losses(self) -> None:
        if not _layers_with_eager_losses:
            return
        for layer in self._cached(("layers", True, True), lambda: self._walk_layers(True, True)):
            if layer._eager_losses:
                layer._eager_losses.clear()
                _layers_with_eager_losses.discard(layer)
