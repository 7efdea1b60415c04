"""Keras 2 object (de)serialization: `{"class_name": ..., "config": {...}}` and a name registry.

Classes and functions are found by name in, first to last: the `custom_objects` argument, the
active `custom_object_scope`s, the global registry filled by `register_keras_serializable`, and
the `module_objects` of the caller: an explicit table of Keras's own built-ins (initializers,
activations, layers, ...).

Security rule: `resolve` is the one place a name read from a config becomes a Python object, and
it looks only in those four places. It never imports a module, never reads `sys.modules` and never
follows a dotted path or a `module` key, so a file cannot name `os._exit` or `subprocess.Popen`.
(Only a `Lambda` layer loaded with `safe_mode=False` may still name a function of an imported
module; see `layers/lambda_layer.py`.)
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

_GLOBAL_CUSTOM_OBJECTS: dict[str, Any] = {}
_GLOBAL_CUSTOM_NAMES: dict[Any, str] = {}


class _ScopeState(threading.local):
    def __init__(self) -> None:
        self.stack: list[dict[str, Any]] = []
        self.safe_mode: list[bool] = []


_scope = _ScopeState()


def register_keras_serializable(package: str = "Custom", name: str | None = None) -> Callable:
    """Register a class or function under `"<package>>name"` so configs can name it.

    >>> import layerflow as tf
    >>> @tf.keras.utils.register_keras_serializable(package="Demo")
    ... def twice(x):
    ...     return 2 * x
    >>> tf.keras.utils.get_registered_name(twice)
    'Demo>twice'
    """

    def decorator(arg: Any) -> Any:
        class_name = name if name is not None else arg.__name__
        registered = f"{package}>{class_name}"
        if inspect.isclass(arg) and not hasattr(arg, "get_config"):
            raise ValueError(
                f"Cannot register {arg.__name__!r}: a registered class must define get_config() "
                "so that it can be serialized."
            )
        if registered in _GLOBAL_CUSTOM_OBJECTS and _GLOBAL_CUSTOM_OBJECTS[registered] is not arg:
            raise ValueError(
                f"{registered!r} is already registered to {_GLOBAL_CUSTOM_OBJECTS[registered]!r}. "
                "Pass a different `package=` or `name=`."
            )
        _GLOBAL_CUSTOM_OBJECTS[registered] = arg
        _GLOBAL_CUSTOM_NAMES[arg] = registered
        return arg

    return decorator


def get_registered_name(obj: Any) -> str:
    """The name `obj` is serialized under: its registered name, else its `__name__`."""
    try:
        registered = _GLOBAL_CUSTOM_NAMES.get(obj)
    except TypeError:  # unhashable
        registered = None
    if registered is not None:
        return registered
    return obj.__name__


def get_registered_object(name: str, custom_objects: dict | None = None,
                          module_objects: dict | None = None) -> Any:  # fmt: skip
    """The object registered under `name`, or None.

    >>> from layerflow._src.keras import serialization
    >>> serialization.get_registered_object("nothing-here") is None
    True
    """
    if not isinstance(name, str):  # names come from files: a list or dict is never a name
        return None
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    for scope in reversed(_scope.stack):
        if name in scope:
            return scope[name]
    if name in _GLOBAL_CUSTOM_OBJECTS:
        return _GLOBAL_CUSTOM_OBJECTS[name]
    if module_objects and name in module_objects:
        return module_objects[name]
    return None


class custom_object_scope:  # noqa: N801 - Keras's name
    """Within this `with` block, configs may name the given custom classes and functions.

    >>> import layerflow as tf
    >>> def my_act(x):
    ...     return x
    >>> with tf.keras.utils.custom_object_scope({"my_act": my_act}):
    ...     tf.keras.activations.get("my_act") is my_act
    True
    """

    def __init__(self, *args: dict | None) -> None:
        self.custom_objects: dict[str, Any] = {}
        for arg in args:
            if arg is None:
                continue
            if not isinstance(arg, dict):
                raise TypeError(
                    f"custom_object_scope takes dicts of name -> object, got {type(arg).__name__}."
                )
            self.custom_objects.update(arg)

    def __enter__(self) -> custom_object_scope:
        _scope.stack.append(self.custom_objects)
        return self

    def __exit__(self, *exc: Any) -> None:
        _scope.stack.pop()


CustomObjectScope = custom_object_scope


def get_custom_objects() -> dict[str, Any]:
    """The global registry (mutable, as in Keras)."""
    return _GLOBAL_CUSTOM_OBJECTS


class safe_mode_scope:  # noqa: N801 - context manager used like a function
    """Set whether deserialization may rebuild Python lambdas (refused by default)."""

    def __init__(self, safe_mode: bool | None = True) -> None:
        self.safe_mode = safe_mode

    def __enter__(self) -> safe_mode_scope:
        if self.safe_mode is not None:
            _scope.safe_mode.append(bool(self.safe_mode))
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.safe_mode is not None:
            _scope.safe_mode.pop()


def in_safe_mode() -> bool:
    return _scope.safe_mode[-1] if _scope.safe_mode else True


def _serialize_value(value: Any) -> Any:
    if hasattr(value, "get_config") and not inspect.isclass(value):
        return serialize_keras_object(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_serialize_value(v) for v in value)
    if isinstance(value, dict):
        return {k: _serialize_value(v) for k, v in value.items()}
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # NumPy scalars and arrays
        return value.tolist()
    return value


class NotSerializableError(NotImplementedError):
    """Raised by a `get_config()` that refuses on purpose; its message is the whole story."""


def serialize_keras_object(instance: Any) -> Any:
    """A JSON-friendly description of a Keras object: a config dict, or a function's name.

    >>> import layerflow as tf
    >>> tf.keras.utils.serialize_keras_object(tf.keras.initializers.Constant(2.0))
    {'class_name': 'Constant', 'config': {'value': 2.0}}
    """
    if instance is None:
        return None
    if hasattr(instance, "get_config") and not inspect.isclass(instance):
        try:
            config = instance.get_config()
        except NotSerializableError:
            raise
        except NotImplementedError as err:
            raise NotImplementedError(
                f"{type(instance).__name__} cannot be serialized: its get_config() is not "
                f"implemented ({err}). Define get_config() returning the constructor arguments."
            ) from None
        return {
            "class_name": get_registered_name(type(instance)),
            "config": {k: _serialize_value(v) for k, v in config.items()},
        }
    if hasattr(instance, "__name__"):
        return get_registered_name(instance)
    raise ValueError(f"Cannot serialize {instance!r}: it has neither get_config() nor a __name__.")


class Configurable:
    """Base of the small config objects (initializers, regularizers, constraints).

    `get_config()` gives the constructor arguments, `from_config` calls the constructor with
    them, and the repr shows them.
    """

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Any:
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def get_object(
    identifier: Any,
    deserialize: Callable[[Any], Any],
    kind: str,
    fix: str,
    *,
    default: Any = None,
    instantiate_classes: bool = False,
    error: type[Exception] = ValueError,
) -> Any:
    """The body of each module's `get`: None, a name or config dict, or a callable as it is.

    `default` is what None gives; `instantiate_classes` builds a class given as the identifier
    (initializers, as Keras 2); anything else raises `error` naming the `kind` and the `fix`.

    >>> from layerflow._src.keras import serialization
    >>> serialization.get_object(None, str, "thing", "", default="none")
    'none'
    >>> serialization.get_object(3, str, "thing", "Pass a name.")
    Traceback (most recent call last):
    ...
    ValueError: Could not interpret thing identifier: 3. Pass a name.
    """
    if identifier is None:
        return default
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        if instantiate_classes and inspect.isclass(identifier):
            return identifier()
        return identifier
    raise error(f"Could not interpret {kind} identifier: {identifier!r}. {fix}")


def _unknown(kind: str, name: str) -> ValueError:
    hint = ""
    if "." in name or ":" in name:
        hint = (
            " Configs name objects by their Keras name only: layerflow never imports modules or "
            "follows dotted paths named by a file."
        )
    return ValueError(
        f"Unknown {kind}: {name!r}.{hint} If this is a custom {kind}, pass it in "
        "`custom_objects`, wrap the call in `tf.keras.utils.custom_object_scope`, or register it "
        "with `@tf.keras.utils.register_keras_serializable()`."
    )


def resolve(name: Any, module_objects: dict | None = None, custom_objects: dict | None = None,
            kind: str = "object") -> Any:  # fmt: skip
    """The object a config names: the one lookup every deserializer goes through.

    Only `custom_objects`, the active `custom_object_scope`s, registered objects and the
    built-in table `module_objects` are searched; anything else raises ValueError (TypeError
    for a name that is not a string).

    >>> from layerflow._src.keras import serialization
    >>> serialization.resolve("os._exit", kind="layer")
    Traceback (most recent call last):
    ...
    ValueError: Unknown layer: 'os._exit'. Configs name objects by their Keras name only: ...
    """
    if not isinstance(name, str):
        raise TypeError(
            f"Cannot deserialize {kind}: a class or function name must be a string, got "
            f"{_short(name)} ({type(name).__name__})."
        )
    obj = get_registered_object(name, custom_objects, module_objects)
    if obj is None:
        raise _unknown(kind, name)
    return obj


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def deserialize_keras_object(identifier: Any, module_objects: dict | None = None,
                             custom_objects: dict | None = None,
                             printable_module_name: str = "object",
                             safe_mode: bool | None = None) -> Any:  # fmt: skip
    """Rebuild an object from `serialize_keras_object`'s output (a dict or a name).

    >>> import layerflow as tf
    >>> from layerflow._src.keras import initializers
    >>> init = tf.keras.utils.deserialize_keras_object(
    ...     {"class_name": "Constant", "config": {"value": 3.0}},
    ...     module_objects={"Constant": initializers.Constant})
    >>> float(init((1,))[0])
    3.0
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        if "class_name" not in identifier or "config" not in identifier:
            raise ValueError(
                f"Cannot deserialize {printable_module_name} from {identifier!r}: expected a dict "
                "with keys 'class_name' and 'config'."
            )
        class_name = identifier["class_name"]
        cls = resolve(class_name, module_objects, custom_objects, printable_module_name)
        config = identifier["config"]
        if not isinstance(config, dict):
            raise TypeError(
                f"Cannot deserialize {printable_module_name} {class_name!r}: its 'config' must be "
                f"a dict of constructor arguments, got {_short(config)} ({type(config).__name__})."
            )
        with custom_object_scope(custom_objects), safe_mode_scope(safe_mode):
            if hasattr(cls, "from_config"):
                params = inspect.signature(cls.from_config).parameters
                if "custom_objects" in params:
                    return cls.from_config(config, custom_objects=custom_objects)
                return cls.from_config(config)
            return cls(**config)
    if isinstance(identifier, str):
        obj = resolve(identifier, module_objects, custom_objects, printable_module_name)
        if inspect.isclass(obj):
            return obj()
        return obj
    if callable(identifier):
        return identifier
    raise ValueError(
        f"Cannot deserialize {printable_module_name} from {identifier!r} "
        f"({type(identifier).__name__}); expected a config dict, a name, or a callable."
    )
