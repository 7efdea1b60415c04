"""`tf.experimental.ExtensionType`: user-defined composite types (TF's extension types).

A subclass declares typed fields with class annotations; the class gets a generated `__init__`
that binds, checks and converts them (`extension_type_fields.py`), calls `__validate__` if the
class defines one, and freezes the value: setting or deleting a field afterwards raises
AttributeError. A user `__init__` may set the fields itself; they are then converted and
validated when it returns. Values have TF's `__repr__`, `__eq__` (a scalar bool tensor when both
sides have the same spec, else False), no hash, and a `_type_spec`: an instance of the generated
nested class `MyType.Spec` (a TypeSpec holding a TensorSpec per tensor field, the composites'
specs, and the Python fields themselves; a nested `class Spec:` in the body is mixed into it).

Composite protocol: `tf.nest.flatten(value, expand_composites=True)` gives the tensors of the
value (fields in declaration order, mappings by sorted key, nested extension types expanded) and
`pack_sequence_as(..., expand_composites=True)` rebuilds it without re-running `__init__` (TF's
`_from_components`); `tf.function` takes and returns extension types through that protocol, so
a new value with the same spec reuses the trace. `BatchableExtensionType` adds TF's batching of
specs (`Spec._batch(n)`, `Spec._unbatch()`) through `ExtensionTypeBatchEncoder`.

>>> import layerflow as tf
>>> class MaskedTensor(tf.experimental.ExtensionType):
...     values: tf.Tensor
...     mask: tf.Tensor
>>> mt = MaskedTensor(values=[1, 2, 3], mask=[True, False, True])
>>> mt.values.dtype, mt._type_spec.mask
(tf.int32, TensorSpec(shape=(3,), dtype=tf.bool, name=None))
"""

from __future__ import annotations

import inspect
import sys
import types
import typing
from typing import Any

from layerflow._src.framework.tensor import ShapedValue
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.type_spec import TensorSpec, TypeSpec
from layerflow._src.ops import extension_type_fields as F
from layerflow._src.ops.array_ops import stack
from layerflow._src.ops.compare_ops import equal, logical_not
from layerflow._src.ops.reduce_ops import reduce_all
from layerflow._src.utils import nest

_RESERVED = ("Spec", "_type_spec", "__validate__", "__init__", "__eq__", "__ne__", "__repr__")


def _fields_of(cls: type, scope: dict[str, Any]) -> dict[str, F.Field]:
    """The fields of `cls` and its ExtensionType bases, in declaration order. String annotations
    (`from __future__ import annotations`) resolve in the class's module, then in `scope` (the
    names visible where the class statement ran: a function's locals, a doctest's globals)."""
    fields: dict[str, F.Field] = {}
    for base in reversed(cls.__mro__):
        own = base.__dict__.get("__annotations__", {})
        if not own or base.__dict__.get("_tf_extension_type_abstract"):
            continue
        module = sys.modules.get(base.__module__)
        try:  # this class's own annotations only (strings under `from __future__ import ...`)
            hints = typing.get_type_hints(
                types.SimpleNamespace(__annotations__=own),
                {**scope, **(vars(module) if module else {})},
                {**scope, **vars(base)},
            )
        except Exception as err:  # an annotation naming something undefined
            raise TypeError(
                f"{cls.__name__}: could not resolve its field annotations ({err}). Annotations "
                "must name types visible at module level."
            ) from None
        for name in own:
            hint = hints[name]
            if typing.get_origin(hint) is typing.ClassVar:
                continue
            if name in _RESERVED or name.startswith("_tf_extension_type"):
                raise ValueError(f"{cls.__name__}: the field name {name!r} is reserved.")
            F.check_annotation(hint, name)
            default = base.__dict__.get(name, F.NO_DEFAULT)
            fields[name] = F.Field(name, hint, default)
    return fields


def _signature(fields: dict[str, F.Field]) -> inspect.Signature:
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
    params += [
        inspect.Parameter(
            f.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=inspect.Parameter.empty if f.default is F.NO_DEFAULT else f.default,
        )
        for f in fields.values()
    ]
    return inspect.Signature(params)


class ExtensionType:
    """The base class of user-defined composite types; see the module docstring.

    >>> import layerflow as tf
    >>> class Point(tf.experimental.ExtensionType):
    ...     x: tf.Tensor
    ...     label: str = "p"
    >>> Point(1.0)
    Point(x=<tf.Tensor: shape=(), dtype=float32, numpy=1.0>, label='p')
    """

    _tf_extension_type_fields: dict[str, F.Field] = {}
    _tf_extension_type_abstract = True  # the library's base classes, which have no fields
    __hash__ = None  # type: ignore[assignment] - TF's extension types are unhashable

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("_tf_extension_type_abstract"):
            return
        caller = sys._getframe(1)  # the frame that runs the class statement
        scope = {**caller.f_globals, **caller.f_locals}
        del caller
        cls._tf_extension_type_fields = _fields_of(cls, scope)
        cls.__hash__ = None  # defining __eq__ in a base leaves subclasses unhashable too
        user_init = cls.__dict__.get("__init__")
        if user_init is None:
            cls.__init__ = _generated_init(cls)  # type: ignore[method-assign]
        else:
            cls.__init__ = _wrapped_init(user_init)  # type: ignore[method-assign]
        cls.Spec = _make_spec_class(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "Cannot create an instance of ExtensionType because ExtensionType is an abstract "
            "base class: subclass it with annotated fields, e.g. "
            "`class MaskedTensor(tf.experimental.ExtensionType): values: tf.Tensor`."
        )

    # --- construction ---------------------------------------------------------------------------
    def _tf_extension_type_convert_fields(self) -> None:
        fields = type(self)._tf_extension_type_fields
        missing = {
            n for n, f in fields.items() if n not in self.__dict__ and f.default is F.NO_DEFAULT
        }
        if missing:
            raise ValueError(
                f"Missing required fields: {missing} ({type(self).__name__}'s constructor must "
                "set every field without a default)."
            )
        for name, field in fields.items():
            if name not in self.__dict__:
                self.__dict__[name] = field.default
            self.__dict__[name] = F.convert(self.__dict__[name], field.annotation, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if not self.__dict__.get("_tf_extension_type_constructing", False):
            raise AttributeError(
                f"Cannot mutate attribute `{name}` outside the custom constructor of "
                "ExtensionType. Build a new value instead, e.g. with a field changed."
            )
        self.__dict__[name] = value

    def __delattr__(self, name: str) -> None:
        raise AttributeError(
            f"Cannot mutate attribute `{name}` outside the custom constructor of ExtensionType."
        )

    # --- value protocol -------------------------------------------------------------------------
    @property
    def _type_spec(self) -> ExtensionTypeSpec:
        return type(self).Spec.from_value(self)

    def _field_values(self) -> list[tuple[str, Any]]:
        return [(n, self.__dict__[n]) for n in type(self)._tf_extension_type_fields]

    def _structure_spec(self) -> ExtensionTypeSpec:
        # A value rebuilt from components may hold stand-ins (tf.function's output markers,
        # TensorSpecs): the spec it was rebuilt from says which fields are components.
        return self.__dict__.get("_tf_extension_type_spec") or self._type_spec

    def _nest_components(self) -> tuple[Any, ...]:
        """The fields that hold tensors, in declaration order (nest's composite protocol)."""
        return self._structure_spec()._to_components(self)

    def _nest_rebuild(self, components: Any) -> Any:
        """A value of this value's spec from new components (no `__init__`, no validation)."""
        return self._structure_spec()._from_components(components)

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={v!r}" for n, v in self._field_values())
        return f"{type(self).__name__}({body})"

    def __eq__(self, other: object) -> Any:
        if type(other) is not type(self):
            return False
        if self._type_spec != other._type_spec:
            return False
        mine = nest.flatten(self, expand_composites=True)
        theirs = nest.flatten(other, expand_composites=True)
        checks = [
            reduce_all(equal(a, b)) for a, b in zip(mine, theirs) if isinstance(a, ShapedValue)
        ]
        if not checks:
            return True
        return reduce_all(stack(checks))

    def __ne__(self, other: object) -> Any:
        eq = self.__eq__(other)
        return logical_not(eq) if isinstance(eq, ShapedValue) else not eq


class BatchableExtensionType(ExtensionType):
    """An ExtensionType whose specs batch and unbatch: each tensor field gains (or loses) a
    leading dimension, Python fields stay (TF's `BatchableExtensionType`).

    >>> import layerflow as tf
    >>> class Pair(tf.experimental.BatchableExtensionType):
    ...     a: tf.Tensor
    >>> Pair([1, 2])._type_spec._batch(4)
    Pair.Spec(a=TensorSpec(shape=(4, 2), dtype=tf.int32, name=None))
    """

    _tf_extension_type_abstract = True


def _generated_init(cls: type) -> Any:
    sig = _signature(cls._tf_extension_type_fields)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        try:
            bound = sig.bind(self, *args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{type(self).__name__}: {err}") from None
        bound.apply_defaults()
        values = dict(list(bound.arguments.items())[1:])
        _finish(self, values)

    __init__.__signature__ = sig  # type: ignore[attr-defined]
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _wrapped_init(user_init: Any) -> Any:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        self.__dict__["_tf_extension_type_constructing"] = True
        try:
            user_init(self, *args, **kwargs)
        finally:
            del self.__dict__["_tf_extension_type_constructing"]
        _finish(self, {})

    __init__.__wrapped__ = user_init  # type: ignore[attr-defined]
    return __init__


def _finish(self: Any, values: dict[str, Any]) -> None:
    self.__dict__.update(values)
    self._tf_extension_type_convert_fields()
    validate = getattr(self, "__validate__", None)
    if validate is not None:
        validate()


# --- specs ----------------------------------------------------------------------------------------


class ExtensionTypeSpec(TypeSpec):
    """The base class of `MyType.Spec`: a spec per field (see the module docstring).

    `MyType.Spec(field=..., ...)` takes a TensorSpec for each tensor field, a TypeSpec for each
    composite field and the Python value of the others; `MyType.Spec.from_value(v)` is `v`'s.
    """

    _value_type: type = ExtensionType

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._value_type._tf_extension_type_fields
        sig = _signature(fields)
        try:
            bound = sig.bind(self, *args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{type(self).__qualname__}: {err}") from None
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            self.__dict__[name] = value
        self._tf_extension_type_convert_fields()

    def _tf_extension_type_convert_fields(self) -> None:
        for name, field in self._value_type._tf_extension_type_fields.items():
            if name not in self.__dict__:
                raise ValueError(f"{type(self).__qualname__}: field {name!r} was not set.")
            self.__dict__[name] = F.convert(self.__dict__[name], field.annotation, name, True)

    @classmethod
    def from_value(cls, value: Any) -> ExtensionTypeSpec:
        if not isinstance(value, cls._value_type):
            raise TypeError(
                f"{cls.__qualname__}.from_value: expected a {cls._value_type.__name__}, got "
                f"{type(value).__name__}."
            )
        spec = object.__new__(cls)
        for name, v in value._field_values():
            spec.__dict__[name] = F.spec_of(v)
        return spec

    @property
    def value_type(self) -> type:
        return self._value_type

    def _field_specs(self) -> list[tuple[str, Any]]:
        return [(n, self.__dict__[n]) for n in self._value_type._tf_extension_type_fields]

    def _serialize(self) -> tuple[Any, ...]:
        return tuple(v for _, v in self._field_specs())

    def _from_fields(self, fields: tuple[Any, ...]) -> ExtensionTypeSpec:
        spec = object.__new__(type(self))
        for name, v in zip(self._value_type._tf_extension_type_fields, fields):
            spec.__dict__[name] = v
        return spec

    # --- relations (field by field, into mappings and tuples) -----------------------------------
    def is_subtype_of(self, other: Any) -> bool:
        return type(other) is type(self) and all(
            F.is_subtype(a, b) for a, b in zip(self._serialize(), other._serialize())
        )

    def most_specific_common_supertype(self, others: Any) -> ExtensionTypeSpec | None:
        fields = list(self._serialize())
        for other in others:
            if type(other) is not type(self):
                return None
            for i, b in enumerate(other._serialize()):
                fields[i] = F.supertype(fields[i], b)
                if fields[i] is F.NONE:
                    return None
        return self._from_fields(tuple(fields))

    def is_compatible_with(self, spec_or_value: Any) -> bool:
        other = spec_or_value
        if isinstance(other, self._value_type):
            other = other._type_spec
        return self.most_specific_common_supertype([other]) is not None

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.__hash_key() == other.__hash_key()

    def __hash__(self) -> int:
        return hash(self.__hash_key())

    def __hash_key(self) -> tuple:
        return (type(self).__qualname__, tuple(F.freeze(v) for v in self._serialize()))

    def __reduce__(self) -> Any:
        return _rebuild_spec, (type(self), self._serialize())

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={F.spec_repr(v)}" for n, v in self._field_specs())
        return f"{type(self).__qualname__}({body})"

    # --- components ------------------------------------------------------------------------------
    def _to_components(self, value: Any) -> tuple[Any, ...]:
        return tuple(
            value.__dict__[n] for n, spec in self._field_specs() if F.holds_tensors(spec)
        )  # fmt: skip

    def _from_components(self, components: Any) -> Any:
        components = tuple(components)
        if components and all(_only_specs(c) for c in components):
            # specs in place of every tensor (a traced signature): the spec they describe
            it = iter(components)
            return self._from_fields(
                tuple(next(it) if F.holds_tensors(s) else s for s in self._serialize())
            )
        value = object.__new__(self._value_type)
        value.__dict__["_tf_extension_type_spec"] = self
        it = iter(components)
        for name, spec in self._field_specs():
            value.__dict__[name] = next(it) if F.holds_tensors(spec) else spec
        return value

    # nest's composite protocol, as TF's for TypeSpecs: a spec expands into its component
    # specs, and packing tensors (or anything) into a spec gives a value of its type.
    def _nest_components(self) -> tuple[Any, ...]:
        return tuple(spec for _, spec in self._field_specs() if F.holds_tensors(spec))

    def _nest_rebuild(self, components: Any) -> Any:
        return self._from_components(components)

    def flatten(self) -> list[Any]:
        """The TensorSpecs of the value's tensors, in `nest.flatten` order."""
        return [s for s in nest.flatten(self, expand_composites=True) if isinstance(s, TypeSpec)]

    def to_tensors(self, value: Any) -> list[Any]:
        return [
            t for t in nest.flatten(value, expand_composites=True) if isinstance(t, ShapedValue)
        ]

    def from_tensors(self, tensors: Any) -> Any:
        flat = [next(tensors) for _ in self.flatten()]
        return nest.pack_sequence_as(self, flat, expand_composites=True)


def _only_specs(component: Any) -> bool:
    if isinstance(component, TypeSpec):
        return True
    if isinstance(component, F.ImmutableDict | tuple):
        items = component.values() if isinstance(component, F.ImmutableDict) else component
        return all(_only_specs(c) for c in items)
    return False


def _rebuild_spec(cls: type, fields: tuple[Any, ...]) -> ExtensionTypeSpec:
    spec = object.__new__(cls)
    for name, v in zip(cls._value_type._tf_extension_type_fields, fields):
        spec.__dict__[name] = v
    return spec


def _make_spec_class(cls: type) -> type:
    user = cls.__dict__.get("Spec")
    base = (
        BatchableExtensionTypeSpec if issubclass(cls, BatchableExtensionType) else ExtensionTypeSpec
    )
    bases: tuple[type, ...] = (base,)
    if user is not None and not issubclass(user, ExtensionTypeSpec):
        bases = (user, base)  # the body's `class Spec:` adds its methods and may set __init__
    ns = {"_value_type": cls, "__qualname__": f"{cls.__qualname__}.Spec"}
    ns["__module__"] = cls.__module__
    spec_cls = type("Spec", bases, ns)
    if user is not None and "__init__" in user.__dict__:
        spec_cls.__init__ = _wrapped_spec_init(user.__dict__["__init__"])
    return spec_cls


def _wrapped_spec_init(user_init: Any) -> Any:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        user_init(self, *args, **kwargs)
        self._tf_extension_type_convert_fields()

    return __init__


# --- batching -------------------------------------------------------------------------------------


def _batched(spec: Any, batch_size: Any) -> Any:
    if isinstance(spec, TensorSpec):
        return TensorSpec(TensorShape([batch_size]).concatenate(spec.shape), spec.dtype)
    if isinstance(spec, BatchableExtensionTypeSpec):
        return spec._batch(batch_size)
    if isinstance(spec, TypeSpec):
        raise ValueError(f"{spec!r} can not be batched (it is not a batchable spec).")
    if isinstance(spec, F.ImmutableDict):
        return F.ImmutableDict((k, _batched(v, batch_size)) for k, v in spec.items())
    if isinstance(spec, tuple):
        return tuple(_batched(v, batch_size) for v in spec)
    return spec


def _unbatched(spec: Any) -> Any:
    if isinstance(spec, TensorSpec):
        if spec.shape.rank == 0:
            raise ValueError(
                f"Unbatching a tensor is only supported for rank >= 1 (got {spec!r}, a scalar)."
            )
        return TensorSpec(spec.shape[1:], spec.dtype)
    if isinstance(spec, BatchableExtensionTypeSpec):
        return spec._unbatch()
    if isinstance(spec, F.ImmutableDict):
        return F.ImmutableDict((k, _unbatched(v)) for k, v in spec.items())
    if isinstance(spec, tuple):
        return tuple(_unbatched(v) for v in spec)
    return spec


class ExtensionTypeBatchEncoder:
    """TF's default batch encoder of BatchableExtensionType specs: a batch of values is the value
    whose tensor fields are stacked (each gains a leading dimension); `encode` gives a value's
    component tensors and `decode` rebuilds it from them.

    >>> import layerflow as tf
    >>> class P(tf.experimental.BatchableExtensionType):
    ...     a: tf.Tensor
    >>> tf.experimental.ExtensionTypeBatchEncoder().unbatch(P.Spec(tf.TensorSpec([5, 2])))
    P.Spec(a=TensorSpec(shape=(2,), dtype=tf.float32, name=None))
    """

    def batch(self, spec: Any, batch_size: Any) -> Any:
        return spec._from_fields(tuple(_batched(s, batch_size) for s in spec._serialize()))

    def unbatch(self, spec: Any) -> Any:
        return spec._from_fields(tuple(_unbatched(s) for s in spec._serialize()))

    def encode(self, spec: Any, value: Any, minimum_rank: int = 0) -> list[Any]:
        return spec.to_tensors(value)

    def decode(self, spec: Any, encoded_value: Any) -> Any:
        return spec.from_tensors(iter(encoded_value))

    def encoding_specs(self, spec: Any) -> list[Any]:
        return spec.flatten()


class BatchableExtensionTypeSpec(ExtensionTypeSpec):
    """The spec of a BatchableExtensionType: `_batch(n)` and `_unbatch()` through its
    `__batch_encoder__` (a nested `class Spec` may set its own, as in TF)."""

    __batch_encoder__ = ExtensionTypeBatchEncoder()

    def _batch(self, batch_size: Any) -> Any:
        return self.__batch_encoder__.batch(self, batch_size)

    def _unbatch(self) -> Any:
        return self.__batch_encoder__.unbatch(self)


__all__ = [
    "BatchableExtensionType",
    "ExtensionType",
    "ExtensionTypeBatchEncoder",
    "ExtensionTypeSpec",
]
