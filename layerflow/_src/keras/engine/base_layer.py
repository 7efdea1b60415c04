"""`tf.keras.layers.Layer`: state created by `build(input_shape)` on the first call, then `call`.

The contract (Keras 2): `__init__` stores configuration, `build` creates weights with
`add_weight` (the only way state appears), `call` computes, eagerly, so Python control flow on
tensor values works anywhere. Weights are ordered by creation: a layer's own weights first, then
its sublayers' in the order the attributes holding them were assigned.

Variables are named `<layer name>/<weight name>:0` (`dense_3/kernel:0`, `block-1/bias:0`), with
the layer's name as an absolute scope: names are for people. Checkpoints use structural paths
(`_trackable_children`), which do not depend on names.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff.tape import stop_recording_all
from layerflow._src.distribute import distribute_lib
from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.module import Module, flatten_state
from layerflow._src.framework.tensor import Tensor, TensorLike
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
from layerflow._src.keras.engine import input_spec as input_spec_mod
from layerflow._src.keras.engine.backend_config import floatx
from layerflow._src.keras.engine.keras_tensor import KerasTensor, Node, is_symbolic
from layerflow._src.ops import array_ops, math_ops
from layerflow._src.saving import keras_weights
from layerflow._src.utils import naming, nest

_KERAS_KWARGS = frozenset(
    {
        "input_shape",
        "input_dim",
        "batch_input_shape",
        "batch_size",
        "weights",
        "activity_regularizer",
        "autocast",
        "implementation",
    }
)
_layers_with_eager_losses: weakref.WeakSet[Layer] = weakref.WeakSet()


class _CallContext(threading.local):
    def __init__(self) -> None:
        self.training: Any = None
        self.depth = 0


_ctx = _CallContext()


def _not_initialized(obj: Any) -> RuntimeError:
    cls = type(obj).__name__
    return RuntimeError(
        f"{cls} is used before Layer.__init__() was called: {cls}.__init__ must call "
        f"super().__init__() before it assigns layers or weights and before the layer is used. "
        f"Add `super().__init__()` as the first line of {cls}.__init__."
    )


def _who(layer: Layer) -> str:
    return f"{type(layer).__name__} '{layer.name}'"


class _CallInfo:
    """What a layer class's `call` accepts (computed once per class)."""

    __slots__ = ("expects_training", "training_default", "expects_mask", "var_kwargs")

    def __init__(self, call: Callable[..., Any]) -> None:
        params = inspect.signature(call).parameters
        self.var_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
        training = params.get("training")
        self.expects_training = training is not None
        self.training_default = (
            training.default
            if training is not None and training.default is not training.empty
            else None
        )
        self.expects_mask = "mask" in params


def _call_info(cls: type) -> _CallInfo:
    info = cls.__dict__.get("_lf_call_info")
    if info is None or info[0] is not cls.call:
        info = (cls.call, _CallInfo(cls.call))
        type.__setattr__(cls, "_lf_call_info", info)
    return info[1]


def to_shapes(value: Any) -> Any:
    """A TensorShape for a shape-like value; nested structures of them for nested inputs."""
    if value is None or isinstance(value, TensorShape):
        return value
    if isinstance(value, dict):
        return {k: to_shapes(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if all(d is None or isinstance(d, int | np.integer) for d in value):
            return TensorShape(value)
        return (
            type(value)(to_shapes(v) for v in value)
            if type(value) in (list, tuple)
            else [to_shapes(v) for v in value]
        )
    return TensorShape(value)


def _wrap_build(fn: Callable[..., Any], owner: type) -> Callable[..., Any]:
    """Every `build` runs in the layer's name scope, takes TensorShapes and sets `built`."""

    @functools.wraps(fn)
    def build(self: Layer, input_shape: Any = None, *args: Any, **kwargs: Any) -> Any:
        if "_module_initialized" not in self.__dict__:
            raise _not_initialized(self)
        input_shape = to_shapes(input_shape)
        if self._build_input_shape is None and input_shape is not None:
            object.__setattr__(self, "_build_input_shape", input_shape)
        with naming.name_scope(self.name + "/"):
            out = fn(self, input_shape, *args, **kwargs)
        object.__setattr__(self, "built", True)
        if self._initial_weights is not None:
            weights, self._initial_weights = self._initial_weights, None
            self.set_weights(weights)
        return out

    build._lf_owner = owner  # type: ignore[attr-defined]
    return build


class _WeightList(list):
    """A list of weights that explains an out-of-range index on an unbuilt layer."""

    def __init__(self, items: list[Variable], layer: Layer) -> None:
        super().__init__(items)
        self._layer = layer

    def __getitem__(self, index: Any) -> Any:
        try:
            return super().__getitem__(index)
        except IndexError:
            layer = self._layer
            if not layer._all_built():
                raise IndexError(
                    f"{_who(layer)} has {len(self)} weights so far because it is not built yet: "
                    "weights are created on the first call, when the input shape is known. "
                    "Call it on data first (`layer(x)`), or build it with "
                    "`layer.build(input_shape)`, or give the first layer `input_shape=`."
                ) from None
            raise


class Layer(Module):
    """Base class of all Keras layers.

    >>> import layerflow as tf
    >>> class Scale(tf.keras.layers.Layer):
    ...     def build(self, input_shape):
    ...         self.w = self.add_weight("w", (input_shape[-1],), initializer="ones")
    ...     def call(self, x):
    ...         return x * self.w
    >>> layer = Scale(name="scale")
    >>> layer(tf.ones((2, 3))).shape, layer.weights[0].name
    (TensorShape([2, 3]), 'scale/w:0')
    """

    _sorted_tracking = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        build = cls.__dict__.get("build")
        if build is not None and getattr(build, "_lf_owner", None) is None:
            type.__setattr__(cls, "build", _wrap_build(build, cls))

    def __init__(
        self,
        trainable: bool = True,
        name: str | None = None,
        dtype: Any = None,
        dynamic: bool = False,
        **kwargs: Any,
    ) -> None:
        unknown = sorted(set(kwargs) - _KERAS_KWARGS)
        if unknown:
            raise TypeError(
                f"{type(self).__name__}.__init__() got unexpected keyword argument(s) {unknown}. "
                f"Layers accept trainable, name, dtype, dynamic and "
                f"{sorted(_KERAS_KWARGS)}; check the spelling."
            )
        if name is None:
            name = naming.unique_name(naming.to_snake_case(type(self).__name__))
        Module.__init__(self, name)
        d = self.__dict__
        d["_trainable"] = bool(trainable)
        d["_dtype"] = None if dtype is None else dtypes.as_dtype(getattr(dtype, "name", dtype)).name
        d["built"] = False
        d["dynamic"] = dynamic
        d["supports_masking"] = False
        d["_input_spec"] = None
        d["_own_weights"] = []
        d["_own_names"] = {}
        d["_callable_losses"] = []
        d["_eager_losses"] = []
        d["_post_build_callbacks"] = []
        d["_pending_restore"] = None
        d["_build_input_shape"] = None
        d["_output_shape_record"] = None
        d["_inbound_nodes"] = []
        d["_initial_weights"] = kwargs.get("weights")
        d["_autocast"] = kwargs.get("autocast", True)
        d["_activity_regularizer"] = regularizers_mod.get(kwargs.get("activity_regularizer"))
        # A layer made inside `strategy.scope()` creates its weights under that strategy even
        # when it is first called outside the scope (TF's Layer._distribution_strategy).
        d["_distribution_strategy"] = (
            distribute_lib.get_strategy()
            if (distribute_lib.has_strategy() and distribute_lib.in_cross_replica_context())
            else None
        )
        batch_shape = kwargs.get("batch_input_shape")
        if batch_shape is None and ("input_shape" in kwargs or "input_dim" in kwargs):
            shape = kwargs.get("input_shape")
            if shape is None:
                shape = (kwargs["input_dim"],)
            elif isinstance(shape, int):
                shape = (shape,)
            batch_shape = (kwargs.get("batch_size"),) + tuple(shape)
        d["_batch_input_shape"] = None if batch_shape is None else tuple(batch_shape)

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails.
        if name.startswith("__"):
            raise AttributeError(name)
        if "_module_initialized" not in self.__dict__:
            raise _not_initialized(self)
        if not name.startswith("_") and not self.__dict__.get("built", True):
            raise AttributeError(
                f"{_who(self)} has no attribute {name!r} yet: the layer is not built, so the "
                "weights its build() creates do not exist. They are created on the first call, "
                "when the input shape is known. Call it on data first (`layer(x)`), or build it "
                "with `layer.build(input_shape)`, or pass `input_shape=` to the first layer."
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # --- properties ---------------------------------------------------------------------------
    @property
    def dtype(self) -> str:
        return self._dtype or floatx()

    @property
    def compute_dtype(self) -> str:
        return self.dtype

    @property
    def variable_dtype(self) -> str:
        return self.dtype

    @property
    def input_spec(self) -> Any:
        return self._input_spec

    @input_spec.setter
    def input_spec(self, value: Any) -> None:
        for spec in nest.flatten(value):
            if spec is not None and not isinstance(spec, input_spec_mod.InputSpec):
                raise TypeError(
                    f"{_who(self)}: input_spec must be InputSpec instances (or None), got {spec!r}."
                )
        self.__dict__["_input_spec"] = value

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        for layer in self._flatten_layers(include_self=True):
            layer.__dict__["_trainable"] = bool(value)

    @property
    def stateful(self) -> bool:
        return False

    # --- tracking -------------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if "_module_initialized" not in self.__dict__ and isinstance(value, Layer | Variable):
            raise _not_initialized(self)
        object.__setattr__(self, name, value)

    def _tracked_attributes(self) -> Iterator[tuple[str, Any]]:
        own = {id(v) for v in self._own_weights}
        for key, value in Module._tracked_attributes(self):
            if isinstance(value, Variable) and id(value) in own:
                continue
            yield key, value

    def _trackable_children(self) -> dict[str, Any]:
        children: dict[str, Any] = dict(self._own_names)
        children.update(Module._trackable_children(self))
        return children

    def _flatten_layers(self, include_self: bool = True, recursive: bool = True) -> list[Layer]:
        """Unique layers reachable through tracked attributes, depth first, in tracking order."""
        out: list[Layer] = [self] if include_self else []
        seen = {id(self)}

        def visit(layer: Layer) -> None:
            for _, value in layer._tracked_attributes():
                for item in flatten_state(value, Layer):
                    if id(item) in seen:
                        continue
                    seen.add(id(item))
                    out.append(item)
                    if recursive:
                        visit(item)

        visit(self)
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
                elif isinstance(item, Layer):
                    if id(item) not in visiting:
                        out.extend(item._collect(kind, seen, visiting))
                elif isinstance(item, Module):
                    for v in item.variables:
                        take(v)
        return out

    @property
    def weights(self) -> list[Variable]:
        """All weights, own first then sublayers', in creation/tracking order (each once)."""
        return _WeightList(self._collect("all", set(), set()), self)

    @property
    def variables(self) -> list[Variable]:
        return self.weights

    @property
    def trainable_weights(self) -> list[Variable]:
        return _WeightList(self._collect("trainable", set(), set()), self)

    @property
    def non_trainable_weights(self) -> list[Variable]:
        return _WeightList(self._collect("non_trainable", set(), set()), self)

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
            raise _not_initialized(self)
        if shape is None and isinstance(name, list | tuple | TensorShape):
            name, shape = None, name  # Keras 3's add_weight(shape, ...)
        unknown = sorted(
            set(kwargs) - {"partitioner", "caching_device", "getter", "experimental_autocast"}
        )
        if unknown:
            raise TypeError(
                f"{_who(self)}.add_weight() got unexpected keyword arguments {unknown}."
            )
        shape = TensorShape(() if shape is None else shape)
        if not shape.is_fully_defined():
            raise ValueError(
                f"{_who(self)}.add_weight({name!r}): every dimension of the shape must be known, "
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
                    f"{_who(self)}.add_weight({name!r}): synchronization=ON_READ variables cannot "
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
                f"{_who(self)}.add_weight({name!r}): the initializer returned shape {var.shape}, "
                f"but the weight's shape is {shape}."
            )
        self._own_weights.append(var)
        self._own_names[key] = var
        reg = regularizers_mod.get(regularizer)
        if reg is not None:
            self._callable_losses.append(functools.partial(_regularize, reg, var))
        return var

    def _restored_value(self, key: str, shape: TensorShape, dt: dtypes.DType) -> Any:
        """The value `load_weights` left for this weight before the layer was built, if any."""
        pending = self._pending_restore
        if not pending or key not in pending:
            return None
        array = np.asarray(pending[key])
        if tuple(array.shape) != tuple(shape):
            raise ValueError(
                f"{_who(self)}: the weights file holds shape {TensorShape(array.shape)} for "
                f"weight '{key}', but the layer creates it with shape {shape}. Build the model "
                "with the same configuration as the one that saved the file."
            )
        if array.dtype != dt.np:
            if array.dtype.kind != dt.np.kind:
                raise ValueError(
                    f"{_who(self)}: the weights file holds dtype {array.dtype} for weight "
                    f"'{key}', but the layer creates it as {dt.name}."
                )
            array = array.astype(dt.np)
        del pending[key]
        return array

    def get_weights(self) -> list[np.ndarray]:
        """NumPy copies of the weights, in `weights` order (`[]` before the layer is built)."""
        return [np.array(backend.to_host(v._data), copy=True) for v in self.weights]

    def set_weights(self, weights: Any) -> None:
        """Assign NumPy values to the weights; checks the count and every shape first."""
        params = list(self.weights)
        weights = list(weights)
        if len(weights) != len(params):
            raise ValueError(
                f"{_who(self)}.set_weights() got {len(weights)} arrays, but the layer has "
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
                f"{_who(self)}.set_weights(): {len(bad)} shape mismatch(es); nothing was "
                "assigned: " + "; ".join(bad) + "."
            )
        for p, a in zip(params, arrays):
            p._data[...] = backend.to_device(a.astype(p._data.dtype, copy=False), p._device)

    def count_params(self) -> int:
        """Number of scalars in all weights (each shared weight once)."""
        if not self._all_built():
            raise ValueError(
                f"{_who(self)} is not built yet, so its parameters do not exist. Call it on data "
                "or build it with `layer.build(input_shape)` first."
            )
        return int(sum(int(np.prod(v.shape)) for v in self.weights))

    # --- losses ---------------------------------------------------------------------------------
    def add_loss(self, losses: Any, inputs: Any = None) -> None:
        """Add a loss tensor (from `call`) or a zero-argument callable (evaluated on access)."""
        for loss in nest.flatten(losses):
            if loss is None:
                continue
            if callable(loss) and not isinstance(loss, TensorLike):
                self._callable_losses.append(loss)
            else:
                self._eager_losses.append(convert_to_tensor(loss))
                _layers_with_eager_losses.add(self)

    @property
    def losses(self) -> list[Any]:
        """Losses added by `add_loss` in the last call and regularization losses, nested too."""
        out: list[Any] = []
        for layer in self._flatten_layers():
            out.extend(layer._eager_losses)
            out.extend(fn() for fn in layer._callable_losses)
        return out

    def _clear_losses(self) -> None:
        if not _layers_with_eager_losses:
            return
        for layer in self._flatten_layers():
            if layer._eager_losses:
                layer._eager_losses.clear()
                _layers_with_eager_losses.discard(layer)

    # --- calling --------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        d = self.__dict__
        if "_module_initialized" not in d:
            raise _not_initialized(self)
        if args:
            inputs, args = args[0], args[1:]
        elif "inputs" in kwargs:
            inputs = kwargs.pop("inputs")
        else:
            raise TypeError(f"{_who(self)} was called without inputs: call it as layer(x).")
        info = _call_info(type(self))
        ctx = _ctx
        training = kwargs.get("training")
        if training is None:
            training = ctx.training
            if training is None:
                training = info.training_default
        if info.expects_training:
            if training is not None or "training" in kwargs:
                kwargs["training"] = training
        else:
            kwargs.pop("training", None)
        if is_symbolic(inputs):
            return self._symbolic_call(inputs, args, kwargs, training)
        inputs = self._convert_inputs(inputs)
        if ctx.depth == 0:
            self._clear_losses()
        saved = ctx.training
        ctx.training = training
        ctx.depth += 1
        try:
            if not d["built"]:
                self._maybe_build(inputs)
            elif d["_input_spec"] is not None:
                input_spec_mod.assert_input_compatibility(d["_input_spec"], inputs, self)
            outputs = self.call(inputs, *args, **kwargs)
            if d["_activity_regularizer"] is not None:
                self._add_activity_loss(outputs)
        finally:
            ctx.training = saved
            ctx.depth -= 1
        d["_output_shape_record"] = _shapes_of(outputs)
        if d["_post_build_callbacks"]:
            self._run_post_build_callbacks()
        return outputs

    def _run_post_build_callbacks(self) -> None:
        callbacks = list(self._post_build_callbacks)
        self._post_build_callbacks.clear()
        for callback in callbacks:
            callback()

    def _convert_inputs(self, inputs: Any) -> Any:
        """Tensors from NumPy/Python values; floating inputs cast to the layer's dtype."""
        if isinstance(inputs, TensorLike):
            x = inputs
        elif isinstance(inputs, list | tuple | dict) and any(
            isinstance(v, TensorLike) for v in nest.flatten(inputs)
        ):
            return nest.map_structure(self._convert_one, inputs)
        else:
            x = convert_to_tensor(inputs)
        return self._convert_one(x)

    def _convert_one(self, x: Any) -> Any:
        if not isinstance(x, TensorLike):
            if isinstance(x, np.ndarray | float | int | list):
                x = convert_to_tensor(x)
            else:
                return x
        if self._autocast and x._data.dtype.kind == "f":
            want = self.dtype
            if x.dtype.name != want and dtypes.as_dtype(want).is_floating:
                return math_ops.cast(x, want)
        return x

    def _maybe_build(self, inputs: Any) -> None:
        if self._input_spec is not None:
            input_spec_mod.assert_input_compatibility(self._input_spec, inputs, self)
        shapes = _shapes_of(inputs)
        self.__dict__["_building_from_call"] = True
        try:
            self.build(shapes)
        finally:
            self.__dict__["_building_from_call"] = False

    def _add_activity_loss(self, outputs: Any) -> None:
        for out in nest.flatten(outputs):
            if isinstance(out, TensorLike):
                loss = self._activity_regularizer(out)
                batch = math_ops.cast(array_ops.shape(out)[0], loss.dtype) if out.ndim else 1.0
                self.add_loss(loss / batch)

    # --- symbolic (functional API) --------------------------------------------------------------
    def _symbolic_call(self, inputs: Any, args: tuple, kwargs: dict, training: Any) -> Any:
        shapes = _shapes_of(inputs)
        if not self.built:
            self._maybe_build(inputs)
        elif self._input_spec is not None:
            input_spec_mod.assert_input_compatibility(self._input_spec, inputs, self)
        outputs = self._output_spec(inputs, shapes, args, kwargs)
        node = Node(self, inputs, args, kwargs, outputs)
        self._inbound_nodes.append(node)
        index = len(self._inbound_nodes) - 1
        for i, kt in enumerate(nest.flatten(outputs)):
            kt._keras_history = (self, index, i)
        self.__dict__["_output_shape_record"] = _shapes_of(outputs)
        return outputs

    def _output_spec(self, inputs: Any, shapes: Any, args: tuple, kwargs: dict) -> Any:
        """KerasTensors for the outputs: from `compute_output_shape` if the class defines it,
        else by running `call` eagerly on zeros (None dims as 2) and putting back a None batch."""
        if not getattr(type(self).compute_output_shape, "_lf_runs_call", False):
            out_shapes = self.compute_output_shape(shapes)
            first = nest.flatten(inputs)[0]
            dt = self.dtype if first.dtype.is_floating else first.dtype.name
            return _map_shapes(lambda s: KerasTensor(s, dt), to_shapes(out_shapes))
        outputs = self._placeholder_run(inputs, args, kwargs)
        none_batch = any(s.rank and s[0] is None for s in _flat_shapes(shapes) if s is not None)

        def spec(t: Any) -> KerasTensor:
            shape = list(t.shape)
            if none_batch and shape and shape[0] == _PLACEHOLDER_DIM:
                shape[0] = None
            return KerasTensor(shape, t.dtype)

        return nest.map_structure(spec, outputs)

    def _placeholder_run(self, inputs: Any, args: tuple, kwargs: dict) -> Any:
        def zeros(kt: Any) -> Any:
            if not isinstance(kt, KerasTensor):
                return kt
            shape = tuple(_PLACEHOLDER_DIM if d is None else d for d in kt.shape)
            return Tensor(
                backend.to_device(np.zeros(shape, kt.dtype.np), backend.current_device()),
                backend.current_device(),
            )

        real = nest.map_structure(zeros, inputs)
        kwargs = {k: nest.map_structure(zeros, v) for k, v in kwargs.items()}
        if "training" in kwargs and kwargs["training"] is None:
            kwargs["training"] = False
        saved = _ctx.training
        _ctx.training = False if saved is None else saved
        _ctx.depth += 1
        try:
            with stop_recording_all():
                return self.call(real, *args, **kwargs)
        finally:
            _ctx.training = saved
            _ctx.depth -= 1

    # --- the layer contract -----------------------------------------------------------------------
    def build(self, input_shape: Any) -> None:
        """Create the layer's weights for inputs of `input_shape` (subclasses override)."""
        self.built = True

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """The computation (subclasses override); the base layer returns its input."""
        return inputs

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The output shape for `input_shape`, found by running the layer on zeros."""
        shapes = to_shapes(input_shape)
        kts = _map_shapes(lambda s: KerasTensor(s, self.dtype), shapes)
        if not self.built:
            self._maybe_build(kts)
        spec = self._output_spec(kts, shapes, (), {})
        return _map_shapes_out(spec)

    def compute_output_signature(self, input_signature: Any) -> Any:
        return self.compute_output_shape(nest.map_structure(lambda s: s.shape, input_signature))

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments (Keras 2: subclasses with other arguments must override)."""
        config: dict[str, Any] = {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": self.dtype,
        }
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = self._batch_input_shape
        init = type(self).__init__
        if init is not Layer.__init__ and type(self).get_config is Layer.get_config:
            params = inspect.signature(init).parameters
            extra = [
                n
                for n, p in params.items()
                if n != "self"
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                and n not in config
            ]
            if extra:
                raise NotImplementedError(
                    f"Layer {type(self).__name__} has arguments {extra} in `__init__` and "
                    "therefore must override `get_config()` to return them."
                )
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Layer:
        return cls(**config)

    # --- saving ---------------------------------------------------------------------------
    def save_weights(
        self, filepath: Any, overwrite: bool = True, save_format: Any = None, options: Any = None
    ) -> None:
        """Write all weights to one file, keyed by structural path (see `load_weights`)."""
        return keras_weights.save_weights(
            self, filepath, overwrite=overwrite, save_format=save_format, options=options
        )

    def load_weights(
        self, filepath: Any, skip_mismatch: bool = False, by_name: bool = False, options: Any = None
    ) -> Any:
        """Read weights saved by `save_weights`; an unbuilt model restores them when built."""
        return keras_weights.load_weights(
            self, filepath, skip_mismatch=skip_mismatch, by_name=by_name, options=options
        )

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__name__} object named {self.name!r}>"


Layer.build = _wrap_build(Layer.build, Layer)  # type: ignore[method-assign]
# Marks the compute_output_shape implementations that work by running `call` on zeros.
Layer.compute_output_shape._lf_runs_call = True  # type: ignore[attr-defined]

_PLACEHOLDER_DIM = 2


def _regularize(regularizer: Callable[[Any], Any], var: Variable) -> Any:
    return regularizer(var)


def _shapes_of(value: Any) -> Any:
    if isinstance(value, TensorLike | KerasTensor):
        return value.shape
    if isinstance(value, list | tuple | dict):
        return nest.map_structure(lambda t: getattr(t, "shape", None), value)
    return getattr(value, "shape", None)


def _map_shapes(fn: Callable[[TensorShape], Any], shapes: Any) -> Any:
    if isinstance(shapes, TensorShape):
        return fn(shapes)
    if isinstance(shapes, dict):
        return {k: _map_shapes(fn, v) for k, v in shapes.items()}
    if isinstance(shapes, list | tuple):
        return type(shapes)(_map_shapes(fn, s) for s in shapes)
    return fn(TensorShape(shapes))


def _flat_shapes(shapes: Any) -> list[Any]:
    """The TensorShapes in a nested structure (a TensorShape is a tuple, but a leaf here)."""
    if shapes is None or isinstance(shapes, TensorShape):
        return [shapes]
    if isinstance(shapes, dict):
        return [s for v in shapes.values() for s in _flat_shapes(v)]
    if isinstance(shapes, list | tuple):
        return [s for v in shapes for s in _flat_shapes(v)]
    return [TensorShape(shapes)]


def _map_shapes_out(spec: Any) -> Any:
    if isinstance(spec, KerasTensor):
        return spec.shape
    if isinstance(spec, dict):
        return {k: _map_shapes_out(v) for k, v in spec.items()}
    return type(spec)(_map_shapes_out(s) for s in spec)
