"""Helpers of the Layer base class: the call context, build wrapping, shapes, weight lists."""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from layerflow._src.autodiff import specs
from layerflow._src.autodiff.tape import stop_recording_all
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.variables import Variable
from layerflow._src.keras.engine.keras_tensor import KerasTensor, from_spec
from layerflow._src.utils import naming, nest


class CallContext(threading.local):
    def __init__(self) -> None:
        self.training: Any = None
        self.depth = 0


call_context = CallContext()


_build_locks_guard = threading.Lock()


def build_lock(layer: Any) -> threading.RLock:
    """The lock a first build of `layer` holds (made on demand, shared by racing threads).

    Reentrant, so a build that calls the layer again does not block itself; nested layers
    take their own locks inside their parent's, always outer before inner, so there is no
    lock-order cycle. It is dropped once the layer is built (`release_build_lock`) and so
    never travels with a built layer that is copied or pickled.
    """
    d = layer.__dict__
    lock = d.get("_build_lock")
    if lock is None:
        with _build_locks_guard:
            lock = d.get("_build_lock")
            if lock is None:
                lock = d["_build_lock"] = threading.RLock()
    return lock


def release_build_lock(layer: Any, lock: threading.RLock) -> None:
    """Forget `lock` once `layer` is built (threads still waiting on it hold it themselves)."""
    d = layer.__dict__
    if d.get("built"):
        with _build_locks_guard:
            if d.get("_build_lock") is lock:
                del d["_build_lock"]


def not_initialized_error(obj: Any) -> RuntimeError:
    cls = type(obj).__name__
    return RuntimeError(
        f"{cls} is used before Layer.__init__() was called: {cls}.__init__ must call "
        f"super().__init__() before it assigns layers or weights and before the layer is used. "
        f"Add `super().__init__()` as the first line of {cls}.__init__."
    )


def who(layer: Any) -> str:
    return f"{type(layer).__name__} '{layer.name}'"


class CallInfo:
    """What a layer class's `call` accepts (computed once per class).

    Keras 2 rules: `training` is passed to a `call` that names it or takes `**kwargs` (unless
    the class sets `_kwargs_take_training = False`), always, as None when nothing sets it and
    the signature gives no default; `training_position` is its index among the positional
    arguments after the inputs, so `layer(x, True)` is seen as `training=True`.
    """

    __slots__ = (
        "expects_training",
        "training_default",
        "training_position",
        "expects_mask",
        "mask_position",
        "var_kwargs",
    )

    def __init__(self, cls: type) -> None:
        params = inspect.signature(cls.call).parameters
        self.var_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
        training = params.get("training")
        self.expects_training = training is not None or (
            self.var_kwargs and getattr(cls, "_kwargs_take_training", True)
        )
        self.training_default = (
            training.default
            if training is not None and training.default is not training.empty
            else None
        )
        positional = [
            name
            for name, p in params.items()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        # Positional parameters are (self, inputs, ...): args after the inputs start at 2.
        self.training_position = (
            positional.index("training") - 2 if "training" in positional[2:] else None
        )
        self.expects_mask = "mask" in params
        self.mask_position = positional.index("mask") - 2 if "mask" in positional[2:] else None


def call_info(cls: type) -> CallInfo:
    info = cls.__dict__.get("_lf_call_info")
    if info is None or info[0] is not cls.call:
        info = (cls.call, CallInfo(cls))
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


def wrap_build(fn: Callable[..., Any], owner: type) -> Callable[..., Any]:
    """Every `build` runs in the layer's name scope, takes TensorShapes and sets `built`."""

    @functools.wraps(fn)
    def build(self: Any, input_shape: Any = None, *args: Any, **kwargs: Any) -> Any:
        if "_module_initialized" not in self.__dict__:
            raise not_initialized_error(self)
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


class WeightList(list):
    """A list of weights that explains an out-of-range index on an unbuilt layer."""

    def __init__(self, items: Any = (), layer: Any = None) -> None:
        super().__init__(items)
        self._layer = layer

    def __getitem__(self, index: Any) -> Any:
        try:
            return super().__getitem__(index)
        except IndexError:
            layer = self._layer
            if layer is not None and not layer._all_built():
                raise IndexError(
                    f"{who(layer)} has {len(self)} weights so far because it is not built yet: "
                    "weights are created on the first call, when the input shape is known. "
                    "Call it on data first (`layer(x)`), or build it with "
                    "`layer.build(input_shape)`, or give the first layer `input_shape=`."
                ) from None
            raise


def regularization_loss(regularizer: Callable[[Any], Any], var: Variable) -> Any:
    return regularizer(var)


def shapes_of(value: Any) -> Any:
    if isinstance(value, TensorLike):
        return value.shape
    if isinstance(value, KerasTensor):
        return value.shape
    if isinstance(value, list | tuple | dict):
        return nest.map_structure(lambda t: getattr(t, "shape", None), value)
    return getattr(value, "shape", None)


def map_shapes(fn: Callable[[TensorShape], Any], shapes: Any) -> Any:
    if isinstance(shapes, TensorShape):
        return fn(shapes)
    if isinstance(shapes, dict):
        return {k: map_shapes(fn, v) for k, v in shapes.items()}
    if isinstance(shapes, list | tuple):
        return type(shapes)(map_shapes(fn, s) for s in shapes)
    return fn(TensorShape(shapes))


def flat_shapes(shapes: Any) -> list[Any]:
    """The TensorShapes in a nested structure (a TensorShape is a tuple, but a leaf here)."""
    if shapes is None or isinstance(shapes, TensorShape):
        return [shapes]
    if isinstance(shapes, dict):
        return [s for v in shapes.values() for s in flat_shapes(v)]
    if isinstance(shapes, list | tuple):
        return [s for v in shapes for s in flat_shapes(v)]
    return [TensorShape(shapes)]


def map_shapes_out(spec: Any) -> Any:
    if isinstance(spec, KerasTensor):
        return spec.shape
    if isinstance(spec, dict):
        return {k: map_shapes_out(v) for k, v in spec.items()}
    return type(spec)(map_shapes_out(s) for s in spec)


def output_spec(layer: Any, inputs: Any, shapes: Any, args: tuple, kwargs: dict) -> Any:
    """KerasTensors for the outputs: from `compute_output_shape` if the class defines it,
    else computed symbolically from `call` (`spec_by_tracing`)."""
    if not getattr(type(layer).compute_output_shape, "_lf_runs_call", False):
        out_shapes = layer.compute_output_shape(shapes)
        first = nest.flatten(inputs)[0]
        dt = layer.compute_dtype if first.dtype.is_floating else first.dtype.name
        return map_shapes(lambda s: KerasTensor(s, dt), to_shapes(out_shapes))
    return spec_by_running(layer, inputs, shapes, args, kwargs)


def spec_by_running(layer: Any, inputs: Any, shapes: Any, args: tuple, kwargs: dict) -> Any:
    """Output KerasTensors of `layer.call` on symbolic `inputs` (the base
    `compute_output_shape`; never dispatches to an override, so `super().compute_output_shape()`
    cannot recurse).

    `call` runs on the KerasTensors inside `specs.tracing()`: every op computes its output
    spec from its inputs' specs (`autodiff/specs.py`) and nothing is recorded. A `call` that
    needs values (Python control flow on a tensor, `.numpy()`) cannot be traced; it runs on
    zeros twice, unknown dimensions 2 then 3, and exactly the output axes whose sizes differ
    are unknown.
    """
    # `training` stays as the caller resolved it (None when nothing set it), as in Keras 2's
    # symbolic build: a `call(x, training)` without a default sees None, not False.
    call_context.depth += 1
    try:
        try:
            with specs.tracing():
                out = layer.call(inputs, *args, **kwargs)
            return from_spec(out)
        except specs.SpecError:
            raise
        except Exception:  # noqa: BLE001 - any untraceable call: the two-size run decides
            pass
        out = specs.run_twice(lambda x, *a, **k: _call_quietly(layer, x, a, k), (inputs, *args),
                              kwargs, what=f"layer '{layer.name}'")  # fmt: skip
        return from_spec(out)
    finally:
        call_context.depth -= 1


def _call_quietly(layer: Any, inputs: Any, args: tuple, kwargs: dict) -> Any:
    with stop_recording_all():
        return layer.call(inputs, *args, **kwargs)
