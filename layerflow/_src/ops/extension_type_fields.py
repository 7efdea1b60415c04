"""The typed fields of `tf.experimental.ExtensionType`: annotations parsed once per class, values
checked and converted on construction (TF's `extension_type_field`).

Supported annotations, as TF's: `int`, `float`, `str`, `bytes`, `bool`, `None`, `tf.Tensor`,
`tf.TensorShape`, `tf.DType`, composite types (`tf.SparseTensor`, `tf.RaggedTensor`, other
ExtensionTypes), `typing.Union`/`Optional`/`X | Y`, `Tuple[X, Y]`/`Tuple[X, ...]` (also
`tuple[...]`) and `Mapping[K, V]` (stored as an immutable `ImmutableDict`). A value is checked
against its annotation: Python types by `isinstance` (a float field rejects an int, as TF),
tensors converted with `tf.convert_to_tensor`, shapes and dtypes converted, tuples and mappings
element by element. Errors name the field path, e.g. `t[1]: expected 'int', got 'str'` (TF's
wording).
"""

from __future__ import annotations

import collections.abc
import types
import typing
from typing import Any

from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import ShapedValue, Tensor, TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.framework.type_spec import TensorSpec, TypeSpec

_BUILTIN = (int, float, str, bytes, bool, type(None))


class ImmutableDict(collections.abc.Mapping):
    """The read-only mapping that `Mapping[...]` fields hold (TF's `ImmutableDict`).

    >>> d = ImmutableDict({"a": 1})
    >>> d["a"], dict(d)
    (1, {'a': 1})
    """

    __slots__ = ("_dict",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        object.__setattr__(self, "_dict", dict(*args, **kwargs))

    def __getitem__(self, key: Any) -> Any:
        return self._dict[key]

    def __iter__(self) -> Any:
        return iter(self._dict)

    def __len__(self) -> int:
        return len(self._dict)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ImmutableDict is immutable.")

    def __repr__(self) -> str:
        return f"ImmutableDict({self._dict!r})"


class Field:
    """One parsed field: its name, its annotation and its default (`NO_DEFAULT` if none)."""

    __slots__ = ("name", "annotation", "default")

    def __init__(self, name: str, annotation: Any, default: Any) -> None:
        self.name = name
        self.annotation = annotation
        self.default = default


NO_DEFAULT = object()


def is_composite_class(annotation: Any) -> bool:
    """A composite value type: an ExtensionType, SparseTensor, RaggedTensor... (has a spec)."""
    return isinstance(annotation, type) and hasattr(annotation, "_type_spec")


def check_annotation(annotation: Any, where: str) -> None:
    """Raise TypeError at class creation for an annotation TF does not support."""
    if annotation in _BUILTIN or annotation is None:
        return
    if annotation in (Tensor, TensorShape, dtypes.DType) or is_composite_class(annotation):
        return
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        for a in args:
            check_annotation(a, where)
        return
    if origin is tuple:
        for a in args:
            if a is not Ellipsis:
                check_annotation(a, where)
        return
    if origin is collections.abc.Mapping and len(args) == 2:
        check_annotation(args[0], where)
        check_annotation(args[1], where)
        return
    raise TypeError(
        f"In field {where}: Unsupported type annotation {annotation!r}. ExtensionType fields may "
        "be int, float, str, bytes, bool, None, tf.Tensor, tf.TensorShape, tf.DType, a composite "
        "type (tf.SparseTensor, tf.RaggedTensor, an ExtensionType), or a typing.Union, Optional, "
        "Tuple or Mapping of those."
    )


def _name(annotation: Any) -> str:
    if annotation is None or annotation is type(None):
        return "NoneType"
    if isinstance(annotation, type):
        return annotation.__name__
    return repr(annotation)


def _fail(path: str, annotation: Any, value: Any) -> TypeError:
    return TypeError(f"{path}: expected {_name(annotation)!r}, got {type(value).__name__!r}")


def _as_tensor(value: Any) -> Any:
    # Tensors and the symbolic tensors of a tf.function trace stay as they are; Variables are read.
    if type(value) is Tensor or (
        isinstance(value, ShapedValue) and not isinstance(value, TensorLike)
    ):
        return value
    return convert_to_tensor(value)


def convert(value: Any, annotation: Any, path: str, for_spec: bool = False) -> Any:
    """`value` checked and converted for a field of `annotation` (a value, or with `for_spec`,
    the field's spec: a TensorSpec for a tensor, a TypeSpec for a composite)."""
    if annotation is None or annotation is type(None):
        if value is not None:
            raise _fail(path, annotation, value)
        return None
    if annotation in _BUILTIN:
        if not isinstance(value, annotation):
            raise _fail(path, annotation, value)
        return value
    if annotation is Tensor:
        if for_spec:
            if not isinstance(value, TensorSpec):
                raise TypeError(f"{path}: expected a TensorSpec, got {type(value).__name__!r}")
            return value
        return _as_tensor(value)
    if annotation is TensorShape:
        try:
            return TensorShape(value)
        except (TypeError, ValueError):
            raise _fail(path, annotation, value) from None
    if annotation is dtypes.DType:
        try:
            return dtypes.as_dtype(value)
        except (TypeError, ValueError):
            raise _fail(path, annotation, value) from None
    if is_composite_class(annotation):
        if for_spec:
            if not (isinstance(value, TypeSpec) and issubclass(value.value_type, annotation)):
                raise TypeError(
                    f"{path}: expected a TypeSpec for {annotation.__name__!r}, got {value!r}"
                )
            return value
        if not isinstance(value, annotation):
            raise _fail(path, annotation, value)
        return value
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        for a in args:
            try:
                return convert(value, a, path, for_spec)
            except (TypeError, ValueError):
                continue
        names = ", ".join(repr(_name(a)) for a in args)
        raise TypeError(f"{path}: expected one of ({names}), got {type(value).__name__!r}")
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise _fail(path, tuple, value)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(convert(v, args[0], f"{path}[{i}]", for_spec) for i, v in enumerate(value))
        if len(value) != len(args):
            raise TypeError(
                f"{path}: expected a tuple of length {len(args)}, got length {len(value)}"
            )
        return tuple(
            convert(v, a, f"{path}[{i}]", for_spec) for i, (v, a) in enumerate(zip(value, args))
        )
    if origin is collections.abc.Mapping:
        if not isinstance(value, collections.abc.Mapping):
            raise _fail(path, collections.abc.Mapping, value)
        k_type, v_type = args
        return ImmutableDict(
            (convert(k, k_type, f"{path}[{k!r}]"), convert(v, v_type, f"{path}[{k!r}]", for_spec))
            for k, v in value.items()
        )
    raise TypeError(f"{path}: unsupported type annotation {annotation!r}")


def spec_of(value: Any) -> Any:
    """The spec of a converted field value: TensorSpec for a tensor, a composite's TypeSpec, the
    same for the items of tuples and mappings, and Python values (shapes, dtypes) themselves."""
    if isinstance(value, ShapedValue):
        return TensorSpec(value.shape, value.dtype)
    own = getattr(type(value), "_type_spec", None)
    if own is not None:
        return value._type_spec
    if isinstance(value, collections.abc.Mapping):
        return ImmutableDict((k, spec_of(v)) for k, v in value.items())
    if isinstance(value, tuple):
        return tuple(spec_of(v) for v in value)
    return value


def holds_tensors(spec: Any) -> bool:
    """Whether a field's spec describes tensors (it then is a component of the value)."""
    if isinstance(spec, TypeSpec):
        return True
    if isinstance(spec, collections.abc.Mapping):
        return any(holds_tensors(v) for v in spec.values())
    if isinstance(spec, tuple):
        return any(holds_tensors(v) for v in spec)
    return False


def freeze(spec: Any) -> Any:
    """A hashable form of a field spec (mappings as sorted item tuples)."""
    if isinstance(spec, collections.abc.Mapping):
        return ("{}", tuple(sorted(((k, freeze(v)) for k, v in spec.items()), key=repr)))
    if isinstance(spec, tuple):
        return ("()", tuple(freeze(v) for v in spec))
    if isinstance(spec, TensorShape):
        return ("shape", None if spec.rank is None else tuple(spec.as_list()))
    return spec


def spec_repr(spec: Any) -> str:
    if isinstance(spec, collections.abc.Mapping):
        return "{" + ", ".join(f"{k!r}: {spec_repr(v)}" for k, v in spec.items()) + "}"
    if isinstance(spec, tuple):
        inner = ", ".join(spec_repr(v) for v in spec)
        return f"({inner},)" if len(spec) == 1 else f"({inner})"
    return repr(spec)


def is_subtype(a: Any, b: Any) -> bool:
    if isinstance(a, TypeSpec):
        return isinstance(b, TypeSpec) and a.is_subtype_of(b)
    if isinstance(a, collections.abc.Mapping):
        return (
            isinstance(b, collections.abc.Mapping)
            and set(a) == set(b)
            and all(is_subtype(a[k], b[k]) for k in a)
        )
    if isinstance(a, tuple):
        return (
            isinstance(b, tuple) and len(a) == len(b) and all(map(is_subtype, a, b))
        )  # fmt: skip
    return type(a) is type(b) and a == b


NONE = object()  # "no common supertype"


def supertype(a: Any, b: Any) -> Any:
    if isinstance(a, TypeSpec):
        if not isinstance(b, TypeSpec):
            return NONE
        found = a.most_specific_common_supertype([b])
        return NONE if found is None else found
    if isinstance(a, collections.abc.Mapping):
        if not isinstance(b, collections.abc.Mapping) or set(a) != set(b):
            return NONE
        items = [(k, supertype(a[k], b[k])) for k in a]
        return NONE if any(v is NONE for _, v in items) else ImmutableDict(items)
    if isinstance(a, tuple):
        if not isinstance(b, tuple) or len(a) != len(b):
            return NONE
        items = [supertype(x, y) for x, y in zip(a, b)]
        return NONE if any(v is NONE for v in items) else tuple(items)
    return a if type(a) is type(b) and a == b else NONE
