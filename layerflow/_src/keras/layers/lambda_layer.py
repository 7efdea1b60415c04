"""Lambda: wrap a Python function as a layer.

Its config stores a named function by module and name. A Python `lambda` (or closure) is stored
as marshalled bytecode, like Keras 2; rebuilding one runs code from the file.

Loading under `safe_mode=True` (the default) resolves the function only among Keras built-ins
(layerflow's own tensor ops and activations), registered objects and `custom_objects`; bytecode and
any other named function (`os._exit`, `subprocess.Popen`, ...) are refused with an error naming
the layer. With `safe_mode=False` the caller trusts the file: bytecode is rebuilt and a named
function is looked up in its module if that module is already imported (never imported).
"""

from __future__ import annotations

import base64
import functools
import inspect
import marshal
import sys
import types
from collections.abc import Callable
from typing import Any

from layerflow._src.autodiff.tape import stop_recording_all
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.keras import activations, serialization
from layerflow._src.keras.engine.base_layer import Layer
from layerflow._src.ops import (
    array_ops,
    compare_ops,
    conv_ops,
    core_ops,
    dense_ops,
    elementwise_ops,
    gather_ops,
    image_ops,
    linalg_ops,
    manip_ops,
    math_ops,
    nn_ops,
    reduce_ops,
    segment_ops,
)
from layerflow._src.utils import nest


def _is_plain_function(fn: Any) -> bool:
    """A module-level function that can be found again by module and name."""
    if not isinstance(fn, types.FunctionType) or fn.__name__ == "<lambda>":
        return False
    if "<locals>" in fn.__qualname__:
        return False
    return getattr(sys.modules.get(fn.__module__), fn.__name__, None) is fn


def _dump(fn: Callable[..., Any]) -> tuple[Any, str, str | None]:
    if not isinstance(fn, types.FunctionType):
        return serialization.serialize_keras_object(fn), "function", getattr(fn, "__module__", None)
    registered = serialization.get_registered_name(fn)
    if _is_plain_function(fn) or registered != fn.__name__:  # registered: by name, even if local
        return registered, "function", fn.__module__
    code = base64.b64encode(marshal.dumps(fn.__code__)).decode("ascii")
    closure = None if not fn.__closure__ else [c.cell_contents for c in fn.__closure__]
    defaults = None if fn.__defaults__ is None else list(fn.__defaults__)
    return [code, defaults, closure], "lambda", fn.__module__


# layerflow's own tensor functions a config may name by module and name under safe_mode: pure
# math on tensors (no files, no processes, no global state; random ops set seeds, so they are out).
_BUILTIN_MODULES = (array_ops, compare_ops, conv_ops, core_ops, dense_ops, elementwise_ops,
                    gather_ops, image_ops, linalg_ops, manip_ops, math_ops, nn_ops, reduce_ops,
                    segment_ops, activations)  # fmt: skip


@functools.cache
def _builtin_functions() -> dict[tuple[str, str], Callable[..., Any]]:
    return {
        (mod.__name__, attr): fn
        for mod in _BUILTIN_MODULES
        for attr, fn in vars(mod).items()
        if isinstance(fn, types.FunctionType)
        and not attr.startswith("_")
        and fn.__module__ == mod.__name__  # defined there, not imported into it
    }


def _builtin_function(module: Any, name: str) -> Callable[..., Any] | None:
    return _builtin_functions().get((module, name)) if isinstance(module, str) else None


def _refused(layer: str, what: str, named: bool) -> ValueError:
    also = (
        " Or, if the function is yours, pass it in `custom_objects` (or register it)."
        if named
        else " Or rebuild the layer with a named function that you register."
    )
    return ValueError(
        f"Lambda layer {layer!r}: {what} Under safe_mode=True (the default) a file may only name "
        "Keras built-ins, objects registered with "
        "`@tf.keras.utils.register_keras_serializable()` and objects passed in `custom_objects`, "
        "so this is refused: loading it would run code chosen by the file. If you trust the "
        f"source of the file, pass `safe_mode=False` to the loading function.{also}"
    )


def _load(layer: str, what: str, value: Any, kind: str, module: Any,
          custom_objects: dict | None, safe_mode: bool | None) -> Any:  # fmt: skip
    if value is None or kind == "raw":
        return value
    safe = serialization.in_safe_mode() if safe_mode is None else bool(safe_mode)
    if isinstance(value, dict) and value.get("class_name") == "__lambda__":  # Keras 3's bytecode
        inner = value.get("config")
        kind = "lambda"
        value = [inner.get(k) for k in ("code", "defaults", "closure")] if isinstance(
            inner, dict) else inner  # fmt: skip
    elif (isinstance(value, dict) and value.get("class_name") == "function"
          and isinstance(value.get("config"), str)):  # fmt: skip
        # Keras 3's reference to a named function: resolved like Keras 2's name and module.
        module = value.get("module")
        value = value.get("registered_name") or value["config"]
    if kind == "function":
        if isinstance(value, dict):  # a callable object with a config: resolved like any object
            return serialization.deserialize_keras_object(
                value, custom_objects=custom_objects, printable_module_name=f"Lambda {what}"
            )
        if not isinstance(value, str):
            raise TypeError(
                f"Lambda layer {layer!r}: the {what} must be named by a string, got "
                f"{type(value).__name__}."
            )
        found = serialization.get_registered_object(value, custom_objects)
        if found is None:
            found = _builtin_function(module, value)
        if found is None and not safe:
            # The caller trusts the file: a function of a module that is already imported (never
            # an import, never a dotted path).
            mod = sys.modules.get(module) if isinstance(module, str) else None
            found = vars(mod).get(value) if mod is not None else None
            if found is not None and not callable(found):
                found = None
        if found is None and safe:
            raise _refused(
                layer, f"its {what} is {value!r} of module {module!r}, which is not a Keras "
                "built-in, a registered object or in `custom_objects`.", named=True
            )  # fmt: skip
        if found is None:
            raise ValueError(
                f"Lambda layer {layer!r}: unknown {what} {value!r} (module {module!r}). Pass it "
                "in `custom_objects`, or import the module that defines it first."
            )
        return found
    if kind != "lambda":
        raise ValueError(f"Lambda layer {layer!r}: unknown {what}_type {kind!r} in the config.")
    if safe:
        raise _refused(
            layer, f"its {what} is a Python lambda stored as bytecode; rebuilding it runs code "
            "from the file.", named=False
        )  # fmt: skip
    code_b64, defaults, closure = value
    code = marshal.loads(base64.b64decode(code_b64))
    mod = sys.modules.get(module) if isinstance(module, str) else None
    globs = dict(vars(mod)) if mod is not None else {"__builtins__": __builtins__}
    cells = None if closure is None else tuple(types.CellType(c) for c in closure)
    return types.FunctionType(code, globs, code.co_name,
                              None if defaults is None else tuple(defaults), cells)  # fmt: skip


class Lambda(Layer):
    """A layer computing `function(inputs, **arguments)`.

    >>> import layerflow as tf
    >>> tf.keras.layers.Lambda(lambda x: x * 2)(tf.constant([[1.0, 2.0]])).numpy()
    array([[2., 4.]], dtype=float32)
    """

    def __init__(self, function: Callable[..., Any], output_shape: Any = None, mask: Any = None,
                 arguments: dict | None = None, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda: function must be callable, got {function!r}.")
        self.function = function
        self.arguments = dict(arguments or {})
        self.mask = mask
        self._output_shape = output_shape
        params = inspect.signature(function).parameters if _has_signature(function) else {}
        self._fn_expects_training = "training" in params
        self._fn_expects_mask = "mask" in params

    def call(self, inputs: Any, mask: Any = None, training: Any = None) -> Any:
        kwargs = dict(self.arguments)
        if self._fn_expects_mask:
            kwargs["mask"] = mask
        if self._fn_expects_training:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if callable(self.mask):
            return self.mask(inputs, mask)
        return self.mask

    def compute_output_shape(self, input_shape: Any) -> Any:
        if self._output_shape is None:
            return self._shape_by_running(input_shape)
        if callable(self._output_shape):
            return TensorShape(self._output_shape(input_shape))
        batch = TensorShape(input_shape)[0] if not isinstance(input_shape, list) else None
        return TensorShape([batch] + list(self._output_shape))

    def _shape_by_running(self, input_shape: Any) -> Any:
        # Run the function on zeros (unknown sizes as 1) and put unknown batch sizes back.
        multi = isinstance(input_shape, (list, tuple)) and any(
            isinstance(s, (list, tuple, TensorShape)) for s in input_shape
        )
        shapes = [TensorShape(s) for s in input_shape] if multi else [TensorShape(input_shape)]
        zeros = [array_ops.zeros([1 if d is None else d for d in s.as_list()], self.dtype)
                 for s in shapes]  # fmt: skip
        with stop_recording_all():
            out = self.call(zeros if multi else zeros[0])
        unknown_batch = any(s.rank and s[0] is None for s in shapes)

        def fix(t: Any) -> TensorShape:
            dims = list(t.shape)
            if unknown_batch and dims:
                dims[0] = None
            return TensorShape(dims)

        return nest.map_structure(fix, out)

    def get_config(self) -> dict:
        function, function_type, module = _dump(self.function)
        config = {**super().get_config(), "function": function, "function_type": function_type,
                  "module": module}  # fmt: skip
        if callable(self._output_shape):
            shape, shape_type, shape_module = _dump(self._output_shape)
        else:
            shape = None if self._output_shape is None else list(self._output_shape)
            shape_type, shape_module = "raw", None
        config.update(output_shape=shape, output_shape_type=shape_type,
                      output_shape_module=shape_module, arguments=self.arguments)  # fmt: skip
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None,
                    safe_mode: bool | None = None) -> Lambda:  # fmt: skip
        config = dict(config)
        layer = config.get("name", "lambda")
        if "function" not in config:
            raise ValueError(f"Lambda layer {layer!r}: the config has no 'function'.")
        kind = config.pop("function_type", "function")
        module = config.pop("module", None)
        function = _load(layer, "function", config.pop("function"), kind, module, custom_objects,
                         safe_mode)  # fmt: skip
        shape = config.pop("output_shape", None)
        shape_kind = config.pop("output_shape_type", "raw" if not isinstance(shape, dict)
                                else "function")  # fmt: skip
        shape_module = config.pop("output_shape_module", None)
        shape = _load(layer, "output_shape", shape, shape_kind, shape_module, custom_objects,
                      safe_mode)  # fmt: skip
        if isinstance(shape, list):
            shape = tuple(shape)
        return cls(function, output_shape=shape, **config)


def _has_signature(fn: Any) -> bool:
    try:
        inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return True
