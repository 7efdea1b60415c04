"""`tf.keras.layers.Layer`: state created by `build(input_shape)` on the first call, then `call`.

Tracking, weights and losses live in `layer_state.LayerState`, which `Layer` extends; this file
holds construction and the call machinery. The contract (Keras 2): `__init__` stores
configuration, `build` creates weights with `add_weight` (the only way state appears), `call`
computes, eagerly, so Python control flow on tensor values works anywhere. Weights are ordered
by creation: a layer's own weights first, then its sublayers' in the order the attributes
holding them were assigned.

Variables are named `<layer name>/<weight name>:0` (`dense_3/kernel:0`, `block-1/bias:0`), with
the layer's name as an absolute scope: names are for people. Checkpoints use structural paths
(`_trackable_children`), which do not depend on names.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.autodiff import specs
from layerflow._src.autograph.conversion import convert as autograph_convert
from layerflow._src.distribute import distribute_lib
from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.module import Module
from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.function.graph import GraphTensor
from layerflow._src.keras import regularizers as regularizers_mod
from layerflow._src.keras.engine import dtype_policy, masking
from layerflow._src.keras.engine import input_spec as input_spec_mod
from layerflow._src.keras.engine.arg_checks import check_count, check_dim, check_shape
from layerflow._src.keras.engine.backend_config import floatx
from layerflow._src.keras.engine.data_structures import wrap_container
from layerflow._src.keras.engine.input_spec import InputSpec
from layerflow._src.keras.engine.keras_tensor import KerasTensor, Node, is_symbolic
from layerflow._src.keras.engine.layer_api import LayerApi, record_input_spec
from layerflow._src.keras.engine.layer_state import LayerState
from layerflow._src.keras.engine.layer_utils import (
    build_lock,
    call_context,
    call_info,
    map_shapes,
    map_shapes_out,
    not_initialized_error,
    output_spec,
    release_build_lock,
    shapes_of,
    spec_by_running,
    to_shapes,
    who,
    wrap_build,
)
from layerflow._src.keras.saving import keras_weights
from layerflow._src.ops import array_ops, math_ops
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor
from layerflow._src.utils import naming, nest

_flags = backend.flags

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


class Layer(LayerApi, LayerState):
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
    # Layers that compute in floating point with their own weights (Dense, Conv, BatchNorm...)
    # set this: every numeric input (int, uint8 images, bool, other floats) is cast to the
    # compute dtype, as tf.keras's Dense does. Other layers cast only floating inputs (autocast)
    # and keep integer inputs integer (Flatten, MaxPooling, Reshape...), as in tf.keras.
    _cast_inputs_to_compute_dtype = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        build = cls.__dict__.get("build")
        if build is not None and getattr(build, "_lf_owner", None) is None:
            type.__setattr__(cls, "build", wrap_build(build, cls))

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
        policy = dtype_policy.policy_of(dtype)
        d["_dtype_policy"] = policy
        d["_dtype"] = None if policy is None else policy.variable_dtype
        d["_compute_dtype"] = (
            None
            if policy is None or policy.compute_dtype == policy.variable_dtype
            else policy.compute_dtype
        )
        d["built"] = False
        d["_dynamic"] = bool(dynamic)
        # Keras 2: a layer that overrides compute_mask supports masking unless it says otherwise.
        d["_supports_masking"] = type(self).compute_mask is not Layer.compute_mask
        d["_outbound_nodes"] = []
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
        d["_batch_input_shape"] = _batch_input_shape(self, kwargs)

    def __setattr__(self, name: str, value: Any) -> None:
        # A list/dict of layers becomes Keras 2's ListWrapper/DictWrapper (data_structures).
        if name[0] != "_":
            value = wrap_container(value)
        LayerState.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails.
        if name.startswith("__"):
            raise AttributeError(name)
        if "_module_initialized" not in self.__dict__:
            raise not_initialized_error(self)
        prop = getattr(type(self), name, None)
        if isinstance(prop, property) and prop.fget is not None:
            return prop.fget(self)  # the property's own AttributeError (`layer.input`...)
        if not name.startswith("_") and not self.__dict__.get("built", True):
            raise AttributeError(
                f"{who(self)} has no attribute {name!r} yet: the layer is not built, so the "
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
        return self.__dict__.get("_compute_dtype") or self.dtype

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
                    f"{who(self)}: input_spec must be InputSpec instances (or None), got {spec!r}."
                )
        self.__dict__["_input_spec"] = value

    @property
    def stateful(self) -> bool:
        return False

    # --- calling --------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        d = self.__dict__
        if "_module_initialized" not in d:
            raise not_initialized_error(self)
        if args:
            inputs, args = args[0], args[1:]
        elif "inputs" in kwargs:
            inputs = kwargs.pop("inputs")
        else:
            raise TypeError(f"{who(self)} was called without inputs: call it as layer(x).")
        info = call_info(type(self))
        ctx = call_context
        pos = info.training_position
        positional = pos is not None and len(args) > pos
        caller_training = "training" in kwargs
        training = args[pos] if positional else kwargs.get("training")
        if training is None:
            training = ctx.training
            if training is None:
                training = info.training_default
        if not info.expects_training:
            kwargs.pop("training", None)
        elif not positional:
            # Keras 2 always passes `training` (None when nothing sets it) to a call that names
            # it, even without a default, or that takes **kwargs.
            kwargs["training"] = training
        masks = None
        implicit_mask = False
        if d["_supports_masking"] or info.expects_mask:
            mpos = info.mask_position
            if "mask" in kwargs:
                masks = kwargs["mask"]
            elif mpos is not None and len(args) > mpos:
                masks = args[mpos]
            else:
                # Implicit masks: the ones the inputs carry (engine/masking.py).
                masks = (
                    getattr(inputs, "_keras_mask", None)
                    if isinstance(inputs, TensorLike)
                    else masking.input_masks(inputs)
                )
                if masks is not None and info.expects_mask:
                    kwargs["mask"] = masks
                    implicit_mask = True
        if isinstance(inputs, TensorLike):
            inputs = self._convert_one(inputs)
        elif is_symbolic(inputs):
            # A functional graph's node records what the caller passed, not the default, and
            # not a mask the inputs carry (the replay finds it on the real tensors again).
            node_kwargs = {
                k: v
                for k, v in kwargs.items()
                if (caller_training or k != "training") and not (implicit_mask and k == "mask")
            }
            return self._symbolic_call(inputs, args, kwargs, training, node_kwargs, masks)
        else:
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
                spec = d["_input_spec"]
                # Fast path for the common case; the full check explains any failure.
                if not (type(spec) is InputSpec and isinstance(inputs, TensorLike)) or not (
                    spec.fits(tuple(inputs.shape))
                ):
                    input_spec_mod.assert_input_compatibility(spec, inputs, self)
            call = self.call
            if _flags.general and _flags.tracer is not None:
                # Traced by tf.function (a compiled fit step): AutoGraph converts a user's call,
                # as tf_keras does, so `if`/`while` on tensors there become tf.cond/while_loop.
                call = autograph_convert(call)
            cast = d.get("_compute_dtype")  # a mixed policy: variables read in this dtype
            if cast is not None or (_flags.general and _flags.autocast is not None):
                outputs = dtype_policy.run_autocast(cast, call, inputs, *args, **kwargs)
            else:
                outputs = call(inputs, *args, **kwargs)
            if d["_activity_regularizer"] is not None:
                self._add_activity_loss(outputs)
            if d["_supports_masking"] and (
                masks is not None or type(self).compute_mask is not Layer.compute_mask
            ):
                masking.set_output_masks(self, inputs, outputs, masks, Layer.compute_mask)
        finally:
            ctx.training = saved
            ctx.depth -= 1
        d["_output_shape_record"] = shapes_of(outputs)
        if d["_post_build_callbacks"]:
            self._run_post_build_callbacks()
        return outputs

    def _run_post_build_callbacks(self) -> None:
        callbacks = self._post_build_callbacks
        while callbacks:
            try:
                callback = callbacks.pop(0)  # atomic: each runs once, whichever thread takes it
            except IndexError:
                break
            callback()

    def _convert_inputs(self, inputs: Any) -> Any:
        """Tensors from NumPy/Python values; floating inputs cast to the layer's dtype."""
        if isinstance(inputs, TensorLike | GraphTensor):
            x = inputs
        elif isinstance(inputs, list | tuple | dict) and any(
            isinstance(v, TensorLike | GraphTensor | np.ndarray) for v in nest.flatten(inputs)
        ):
            return nest.map_structure(self._convert_one, inputs)
        elif isinstance(inputs, SparseTensor | RaggedTensor):  # composites reach `call` as is
            return inputs
        else:
            x = convert_to_tensor(inputs)
        return self._convert_one(x)

    def _convert_one(self, x: Any) -> Any:
        if not isinstance(x, TensorLike | GraphTensor):  # (a tf.function trace's tensor)
            if isinstance(x, np.ndarray | float | int | list):
                x = convert_to_tensor(x)
            else:
                return x
        have = x.dtype.np
        if (have.kind == "f" and self._autocast) or (
            self._cast_inputs_to_compute_dtype and have.kind in "fiub"
        ):
            want = self.__dict__.get("_np_dtype")
            if want is None:
                want = self.__dict__["_np_dtype"] = dtypes.as_dtype(self.compute_dtype).np
            if have != want and want.kind == "f":
                return math_ops.cast(x, want)
        return x

    def _cast_symbolic(self, inputs: Any) -> Any:
        """The KerasTensors this layer's `call` sees: numeric inputs in the compute dtype."""

        def cast(kt: Any) -> Any:
            if not isinstance(kt, KerasTensor) or kt.dtype.name == self.compute_dtype:
                return kt
            if kt.dtype.is_floating or (
                self._cast_inputs_to_compute_dtype and (kt.dtype.is_integer or kt.dtype.is_bool)
            ):
                return KerasTensor(kt.shape, self.compute_dtype)
            return kt

        if not self._cast_inputs_to_compute_dtype and not self._autocast:
            return inputs
        return nest.map_structure(cast, inputs)

    def _maybe_build(self, inputs: Any) -> None:
        """Build for `inputs` unless built; threads calling an unbuilt layer at once build it
        once (the others wait, then use the weights the first one made)."""
        if distribute_lib.has_strategy() and not distribute_lib.in_cross_replica_context():
            # Replica threads of one strategy.run build together: each variable is created
            # once for all of them in a rendezvous (merge_call), so they must not wait here.
            self._build_from(inputs)
            return
        lock = build_lock(self)
        with lock:
            try:
                if not self.__dict__["built"]:
                    self._build_from(inputs)
            finally:
                release_build_lock(self, lock)

    def _build_from(self, inputs: Any) -> None:
        if self._input_spec is not None:
            input_spec_mod.assert_input_compatibility(self._input_spec, inputs, self)
        shapes = shapes_of(inputs)
        record_input_spec(self, inputs)
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
    def _symbolic_call(
        self,
        inputs: Any,
        args: tuple,
        kwargs: dict,
        training: Any,
        node_kwargs: dict | None = None,
        masks: Any = None,
    ) -> Any:
        shapes = shapes_of(inputs)
        if not self.built:
            self._maybe_build(inputs)
        elif self._input_spec is not None:
            input_spec_mod.assert_input_compatibility(self._input_spec, inputs, self)
        outputs = dtype_policy.run_autocast(
            self.__dict__.get("_compute_dtype"),
            self._output_spec, self._cast_symbolic(inputs), shapes, args, kwargs,
        )  # fmt: skip
        if self._supports_masking:
            masking.set_symbolic_masks(self, inputs, outputs, masks, Layer.compute_mask)
        if specs.is_tracing():
            return outputs  # inside another layer's traced call: a spec, not a node
        node = Node(self, inputs, args, kwargs if node_kwargs is None else node_kwargs, outputs)
        self._inbound_nodes.append(node)
        for t in node.input_tensors:  # one entry per input tensor, as tf_keras's Node
            if t._keras_history is not None:
                t._keras_history[0].__dict__.setdefault("_outbound_nodes", []).append(node)
        index = len(self._inbound_nodes) - 1
        for i, kt in enumerate(nest.flatten(outputs)):
            kt._keras_history = (self, index, i)
        self.__dict__["_output_shape_record"] = shapes_of(outputs)
        return outputs

    def _output_spec(self, inputs: Any, shapes: Any, args: tuple, kwargs: dict) -> Any:
        return output_spec(self, inputs, shapes, args, kwargs)

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
        kts = map_shapes(lambda s: KerasTensor(s, self.compute_dtype), shapes)
        if not self.built:
            self._maybe_build(kts)
        spec = spec_by_running(self, kts, shapes, (), {})
        return map_shapes_out(spec)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The output mask for `inputs` and their `mask` (Keras 2): a layer that supports
        masking passes the input mask on; one that does not refuses a mask.

        >>> import layerflow as tf
        >>> emb = tf.keras.layers.Embedding(5, 2, mask_zero=True)
        >>> emb(tf.constant([[3, 0]]))._keras_mask.numpy().tolist()
        [[True, False]]
        """
        if not self._supports_masking:
            if any(m is not None for m in nest.flatten(mask)):
                raise TypeError(
                    f"Layer {self.name} does not support masking, but was passed an "
                    f"input_mask: {mask}"
                )
            return None
        return mask

    @property
    def supports_masking(self) -> bool:
        """Whether `compute_mask` gives this layer's output mask (and masks pass through)."""
        return self._supports_masking

    @supports_masking.setter
    def supports_masking(self, value: bool) -> None:
        self.__dict__["_supports_masking"] = bool(value)

    def compute_output_signature(self, input_signature: Any) -> Any:
        return self.compute_output_shape(nest.map_structure(lambda s: s.shape, input_signature))

    def get_config(self) -> dict[str, Any]:
        """The constructor arguments (Keras 2: subclasses with other arguments must override)."""
        config: dict[str, Any] = {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": dtype_policy.serialize(self.__dict__.get("_dtype_policy"), self.dtype),
        }
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = self._batch_input_shape
        init = type(self).__init__
        if init is not Layer.__init__ and getattr(type(self).get_config, "_lf_default", False):
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


def _batch_input_shape(layer: Layer, kwargs: dict[str, Any]) -> tuple | None:
    """The batch input shape the Keras 2 arguments declare (integers checked), or None."""
    batch_shape = kwargs.get("batch_input_shape")
    if batch_shape is not None:
        return check_shape(batch_shape, "batch_input_shape", who(layer))
    if kwargs.get("input_shape") is None and kwargs.get("input_dim") is None:
        return None
    shape = kwargs.get("input_shape")
    if shape is None:
        shape = (check_dim(kwargs["input_dim"], "input_dim", who(layer), allow_none=False),)
    batch = kwargs.get("batch_size")
    batch = None if batch is None else check_count(batch, "batch_size", who(layer))
    return (batch,) + check_shape(shape, "input_shape", who(layer))


Layer.build = wrap_build(Layer.build, Layer)  # type: ignore[method-assign]
# The get_config that returns only the base arguments (a subclass with more must override it).
Layer.get_config._lf_default = True  # type: ignore[attr-defined]
# Marks the compute_output_shape implementations that work by running `call` on zeros.
Layer.compute_output_shape._lf_runs_call = True  # type: ignore[attr-defined]
