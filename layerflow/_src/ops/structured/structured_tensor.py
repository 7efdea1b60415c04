"""`tf.experimental.StructuredTensor`: a tensor of structures (records) that share a schema.

Field-major, as in TF: each field holds one Tensor, RaggedTensor or nested StructuredTensor
whose outer `rank` dimensions are the StructuredTensor's shape. The shape is kept as TF keeps
it: `nrows` (rank >= 1) and one `RowPartition` per dimension after the first (rank >= 2), so a
ragged StructuredTensor (rows of different lengths) has ragged fields that share its splits.
Everything is eager: partitions are small integer vectors read on the host.

Import cycle, on purpose (as RaggedTensor's): `from_pyval` (structured_pyval), indexing and the
transforms (structured_transforms) and `_type_spec` (structured_spec) live in modules that
operate on this class, so those methods import them when called.

>>> import layerflow as tf
>>> st = tf.experimental.StructuredTensor.from_pyval([{"age": 12}, {"age": 82}])
>>> st.shape, st[1]["age"].numpy()
(TensorShape([2]), np.int32(82))
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from layerflow._src.framework import dtypes
from layerflow._src.framework.convert import convert_to_tensor
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.tensor_shape import TensorShape
from layerflow._src.ops.extension_type import BatchableExtensionType, ExtensionType
from layerflow._src.ops.ragged.ragged_shape import RowPartition
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor, _host
from layerflow._src.utils import nest

_FIELD_NAME_RE = re.compile("^[a-zA-Z][a-zA-Z0-9_]*$")


class StructuredTensor(BatchableExtensionType):
    """A multidimensional collection of structures with the same schema (module docstring).

    >>> import layerflow as tf
    >>> tf.experimental.StructuredTensor.from_fields({"x": 1})["x"].numpy()
    np.int32(1)
    """

    _tf_extension_type_abstract = True  # its own fields and spec, not ExtensionType's
    __name__ = "tf.StructuredTensor"

    def __init__(self, fields: dict, shape: TensorShape, nrows: int | None,
                 partitions: tuple, dtype: Any) -> None:  # fmt: skip
        # Private: use from_fields / from_fields_and_rank / from_pyval.
        self.__dict__.update(
            _fields=fields, _shape=shape, _nrows=nrows, _partitions=partitions, _dtype=dtype
        )

    # --- factories ------------------------------------------------------------------------------

    @classmethod
    def from_fields(
        cls,
        fields: Any,
        shape: Any = (),
        nrows: Any = None,
        row_partitions: Any = None,
        validate: bool = False,
    ) -> StructuredTensor:
        """A StructuredTensor from a dict of fields whose outer dims are `shape`.

        >>> import layerflow as tf
        >>> tf.experimental.StructuredTensor.from_fields({"a": [1, 2]}, shape=[2]).to_pyval()
        [{'a': 1}, {'a': 2}]
        """
        shape = TensorShape(shape)
        rank = shape.rank
        if rank is None:
            raise ValueError("StructuredTensor's shape must have known rank.")
        if not isinstance(fields, dict):
            raise TypeError(f"fields must be a dictionary, got {type(fields).__name__}")
        if rank < 2 and row_partitions:
            raise ValueError("row_partitions must be None or [] if shape.rank<2")
        if rank == 0 and nrows is not None:
            raise ValueError("nrows must be None if shape.rank==0")
        if row_partitions is not None:
            row_partitions = tuple(row_partitions)
            if len(row_partitions) != max(0, rank - 1):
                raise ValueError("len(row_partitions) must be shape.rank-1")
            for rp in row_partitions:
                if not isinstance(rp, RowPartition):
                    raise TypeError(
                        f"row_partitions must hold tf.experimental.RowPartition values, got "
                        f"{type(rp).__name__}."
                    )
        converted = {}
        for key, value in fields.items():
            if not isinstance(key, str):
                raise TypeError(f"Unexpected type for key in `fields`: {key}")
            if not _FIELD_NAME_RE.match(key):
                raise ValueError(f"Field name {key!r} is not currently allowed.")
            converted[key] = _convert_field(value)
        nrows_t = None if nrows is None else int(_host(convert_to_tensor(nrows)))
        # TF leaves the fields' own row-splits dtypes as they are here (from_fields_and_rank
        # converts them); the shape takes int64 if anything has it
        dtype = _find_shape_dtype(converted, nrows, row_partitions)
        return _build(converted, shape, nrows_t, row_partitions, dtype)

    @classmethod
    def from_fields_and_rank(cls, fields: Any, rank: Any, validate: bool = False,
                             dtype: Any = None) -> StructuredTensor:  # fmt: skip
        """A StructuredTensor of rank `rank` from a nonempty dict of fields.

        >>> import layerflow as tf
        >>> tf.experimental.StructuredTensor.from_fields_and_rank({"a": [1, 2]}, 1).shape
        TensorShape([2])
        """
        if not fields:
            raise ValueError("Must provide at least one field")
        if not isinstance(rank, int) or isinstance(rank, bool):
            raise ValueError("rank must be an integer")
        if rank < 0:
            raise ValueError("rank must be nonnegative")
        converted = {k: _convert_field(v) for k, v in fields.items()}
        dt = _find_shape_dtype(converted, None, None) if dtype is None else dtypes.as_dtype(dtype)
        converted = {k: _with_shape_dtype(v, dt) for k, v in converted.items()}
        for k, v in converted.items():
            if v.shape.rank is not None and v.shape.rank < rank:
                raise ValueError(f"Error in shape of {k}")
        return _build(converted, TensorShape([None] * rank), None, None, dt)

    @classmethod
    def from_shape(cls, ragged_shape: Any) -> StructuredTensor:
        """A StructuredTensor with no fields and the shape of a DynamicRaggedShape."""
        parts = tuple(ragged_shape.row_partitions)
        lengths = ragged_shape.static_lengths(ragged_lengths=False)
        nrows = None if not lengths else int(ragged_shape._lengths[0])
        dt = ragged_shape.dtype
        return cls({}, TensorShape(lengths), nrows, parts, dt)

    @classmethod
    def from_pyval(cls, pyval: Any, typespec: Any = None) -> StructuredTensor:
        """A StructuredTensor from nested dicts and lists (dicts become structures).

        >>> import layerflow as tf
        >>> st = tf.experimental.StructuredTensor.from_pyval({"a": [1, 2], "b": {"c": [3]}})
        >>> st.to_pyval()
        {'a': [1, 2], 'b': {'c': [3]}}
        """
        from layerflow._src.ops.structured import structured_pyval

        return structured_pyval.from_pyval(pyval, typespec, ())

    # --- properties -----------------------------------------------------------------------------

    @property
    def rank(self) -> int:
        return self._shape.rank

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def row_partitions(self) -> tuple:
        """One RowPartition per dimension after the first (empty when rank < 2)."""
        return self._partitions if self.rank >= 2 else ()

    _row_partitions = row_partitions

    @property
    def _type_spec(self) -> Any:
        from layerflow._src.ops.structured.structured_spec import StructuredTensorSpec

        return StructuredTensorSpec.from_value(self)

    def nrows(self) -> Tensor | None:
        """The length of the outer dimension (a scalar of the shape dtype); None for rank 0."""
        if self.rank == 0:
            return None
        return convert_to_tensor(np.asarray(self._nrows, self._dtype.np))

    def field_names(self) -> tuple[str, ...]:
        return tuple(self._fields.keys())

    def field_value(self, field_name: Any) -> Any:
        """The value of field `field_name`, or of a nested field given as a tuple path."""
        if isinstance(field_name, list | tuple):
            value: Any = self
            for f in field_name:
                if not isinstance(value, StructuredTensor):
                    raise KeyError(f"Field path {field_name} not found in {self}")
                value = value.field_value(f)
            return value
        return self._fields[field_name]

    def with_shape_dtype(self, dtype: Any) -> StructuredTensor:
        dt = dtypes.as_dtype(dtype)
        if dt == self._dtype:
            return self
        fields = {k: _with_shape_dtype(v, dt) for k, v in self._fields.items()}
        parts = tuple(p.with_dtype(dt) for p in self._partitions)
        return StructuredTensor(fields, self._shape, self._nrows, parts, dt)

    # --- updates and transforms -----------------------------------------------------------------

    def with_updates(self, updates: dict, validate: bool = False) -> StructuredTensor:
        """A copy with fields replaced (a value), transformed (a callable) or removed (None);
        a tuple key names a nested field."""
        from layerflow._src.ops.structured import structured_transforms

        return structured_transforms.with_updates(self, updates, validate)

    def promote(self, source_path: Any, new_name: Any) -> StructuredTensor:
        """Promote a nested field to its grandparent, merging the dimensions in between."""
        from layerflow._src.ops.structured import structured_transforms

        return structured_transforms.promote(self, source_path, new_name)

    def partition_outer_dimension(self, row_partition: Any) -> StructuredTensor:
        """Split the outer dimension into two (possibly ragged) by `row_partition`."""
        from layerflow._src.ops.structured import structured_transforms

        if not isinstance(row_partition, RowPartition):
            raise TypeError("row_partition must be a RowPartition.")
        if self.rank == 0:
            raise ValueError(f"Shape {self.shape} must have rank at least 1")
        return structured_transforms.partition_outer_dimension(self, row_partition)

    def merge_dims(self, outer_axis: int, inner_axis: int) -> StructuredTensor:
        """Merge dimensions `outer_axis..inner_axis` into one, in row-major order."""
        from layerflow._src.ops.structured import structured_transforms

        return structured_transforms.merge_dims(self, outer_axis, inner_axis)

    # --- indexing -------------------------------------------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        from layerflow._src.ops.structured import structured_transforms

        if isinstance(key, list):
            key = tuple(key)
        elif not isinstance(key, tuple):
            key = (key,)
        if not key:
            return self
        return structured_transforms.getitem(self, key)

    # --- conversion -----------------------------------------------------------------------------

    def to_pyval(self) -> Any:
        """The structures as nested Python dicts (rank 0) or lists of dicts.

        >>> import layerflow as tf
        >>> tf.experimental.StructuredTensor.from_fields({"a": [1, 2, 3]}, [3]).to_pyval()
        [{'a': 1}, {'a': 2}, {'a': 3}]
        """
        result = {}
        for key, value in self._fields.items():
            if isinstance(value, TensorLike):
                value = value.numpy()
            if isinstance(value, np.ndarray):
                # a scalar stays a NumPy scalar (bytes for strings), as TF's numpy() gives
                value = value[()] if value.ndim == 0 else value.tolist()
            elif isinstance(value, RaggedTensor):
                value = value.to_list()
            elif isinstance(value, StructuredTensor):
                value = value.to_pyval()
            result[key] = value
        if self.rank > 0:
            if not result:
                return _empty_dicts(self.row_partitions, self._nrows)
            return _field_major_to_node_major(list(result), list(result.values()), self.rank)
        return result

    def __repr__(self) -> str:
        items = sorted(self._fields.items())
        shown = ((k, _field_str(v).replace("\n", "\n            ")) for k, v in items)
        body = ",\n        ".join(f'"{k}": {v}' for k, v in shown)
        return f"<StructuredTensor(\n    fields={{\n        {body}}},\n    shape={self._shape})>"

    __str__ = __repr__

    def __len__(self) -> int:
        if self.rank == 0:
            raise TypeError("len() of a scalar StructuredTensor (rank 0) is not defined.")
        return self._nrows

    # --- nest's composite protocol (TF's component order) ---------------------------------------

    def _nest_components(self) -> tuple[Any, ...]:
        """Fields by sorted name (a RaggedTensor as flat_values then its row splits, a nested
        StructuredTensor recursively), then the shape: its inner shape and the row splits."""
        out: list[Any] = []
        for _, v in sorted(self._fields.items()):
            if isinstance(v, RaggedTensor):
                out += [v.flat_values, *v.nested_row_splits]
            elif isinstance(v, StructuredTensor):
                out += list(v._nest_components())
            elif isinstance(v, ExtensionType):
                out += nest.flatten(v, expand_composites=True)
            else:
                out.append(v)
        out.append(self._inner_shape())
        out += [p.row_splits() for p in self.row_partitions]
        return tuple(out)

    def _nest_rebuild(self, components: Any) -> StructuredTensor:
        it = iter(components)
        return self._rebuild_from(it)

    def _rebuild_from(self, it: Any) -> StructuredTensor:
        fields = {}
        for k, v in sorted(self._fields.items()):
            if isinstance(v, RaggedTensor):
                flat = next(it)
                splits = [next(it) for _ in v.nested_row_splits]
                uniforms = []
                level: Any = v
                while isinstance(level, RaggedTensor):
                    uniforms.append(level._uniform)
                    level = level.values
                for s, u in zip(reversed(splits), reversed(uniforms), strict=True):
                    flat = RaggedTensor(flat, s, internal=True, uniform_row_length=u)
                fields[k] = flat
            elif isinstance(v, StructuredTensor):
                fields[k] = v._rebuild_from(it)
            elif isinstance(v, ExtensionType):
                n = len(nest.flatten(v, expand_composites=True))
                fields[k] = nest.pack_sequence_as(
                    v, [next(it) for _ in range(n)], expand_composites=True
                )
            else:
                fields[k] = next(it)
        fields = {k: fields[k] for k in self._fields}
        next(it)  # the inner shape: static here
        parts = tuple(RowPartition(next(it), p._uniform) for p in self.row_partitions)
        return StructuredTensor(fields, self._shape, self._nrows, parts, self._dtype)

    def _inner_shape(self) -> Tensor:
        if self.rank == 0:
            return convert_to_tensor(np.zeros(0, self._dtype.np))
        n = self._nrows if self.rank == 1 else int(_host(self._partitions[-1].row_splits())[-1])
        return convert_to_tensor(np.asarray([n], self._dtype.np))

    def __reduce__(self) -> Any:
        return (StructuredTensor, (self._fields, self._shape, self._nrows, self._partitions,
                                   self._dtype))  # fmt: skip


def _field_str(v: Any) -> str:
    if isinstance(v, RaggedTensor) and not isinstance(v.flat_values, TensorLike):
        # a structure rebuilt around stand-ins (tf.function's signature walk): no values
        return f"<tf.RaggedTensor ragged_rank={v.ragged_rank} flat_values={v.flat_values!r}>"
    return str(v)


# --- helpers shared by the factories and the transforms ------------------------------------------


def _convert_field(value: Any) -> Any:
    if isinstance(value, TensorLike | RaggedTensor | StructuredTensor | ExtensionType):
        if isinstance(value, TensorLike) and type(value) is not Tensor:
            return convert_to_tensor(value)  # a Variable: its value
        return value
    try:
        return convert_to_tensor(value)
    except (ValueError, TypeError) as err:
        raise TypeError(f"Unexpected type for value in `fields`: {value!r}") from err


def _field_shape_dtype(v: Any) -> Any:
    if isinstance(v, RaggedTensor):
        return v.row_splits_dtype
    if isinstance(v, StructuredTensor):
        return v._dtype
    return None


def _find_shape_dtype(fields: dict, nrows: Any, row_partitions: Any) -> Any:
    found = [_field_shape_dtype(v) for v in fields.values()]
    if isinstance(nrows, TensorLike):
        found.append(nrows.dtype)
    found += [rp.dtype for rp in row_partitions or ()]
    if dtypes.int64 in found:
        return dtypes.int64
    if dtypes.int32 in found:
        return dtypes.int32
    return dtypes.int64


def _with_shape_dtype(v: Any, dtype: Any) -> Any:
    if isinstance(v, RaggedTensor) and v.row_splits_dtype != dtype:
        return v.with_row_splits_dtype(dtype)
    if isinstance(v, StructuredTensor):
        return v.with_shape_dtype(dtype)
    return v


def _field_partitions(key: str, v: Any, rank: int, dtype: Any) -> tuple[int, list]:
    """(nrows, [(splits array, uniform length or None)] * (rank - 1)) of a field's outer dims."""
    if not hasattr(v, "shape"):
        raise ValueError(
            f"Error in shape of {key}: a field of a StructuredTensor of rank {rank} must have "
            f"a shape whose first {rank} dimensions are the structure's; a "
            f"{type(v).__name__} has none. Give it a `shape` or use it in a scalar "
            "StructuredTensor."
        )
    if v.shape.rank is not None and v.shape.rank < rank:
        raise ValueError(f"Error in shape of {key}")
    if isinstance(v, StructuredTensor):
        nrows = v._nrows
        parts = [(_host(p.row_splits()), p._uniform) for p in v._partitions[: rank - 1]]
        return nrows, parts
    parts = []
    level: Any = v
    nrows = level.nrows_int() if isinstance(level, RaggedTensor) else int(level.shape[0])
    while isinstance(level, RaggedTensor) and len(parts) < rank - 1:
        parts.append((_host(level.row_splits), level._uniform))
        level = level.values
    if len(parts) < rank - 1:  # the rest are dense dimensions of a Tensor
        dims = list(level.shape)
        count = int(dims[0])
        for d in dims[1 : rank - len(parts)]:
            parts.append((np.arange(count + 1, dtype=dtype.np) * int(d), int(d)))
            count *= int(d)
    return nrows, parts


def _build(fields: dict, shape: TensorShape, nrows: int | None, row_partitions: Any,
           dtype: Any) -> StructuredTensor:  # fmt: skip
    """Check that the fields agree on their outer `shape.rank` dims and build the value."""
    rank = shape.rank
    if rank == 0:
        return StructuredTensor(fields, TensorShape([]), None, (), dtype)
    dims = list(shape)
    if dims[0] is not None:
        nrows = dims[0] if nrows is None else nrows
        if nrows != dims[0]:
            raise ValueError(f"nrows ({nrows}) does not match shape[0] ({dims[0]}).")
    parts: list | None = None
    if row_partitions:
        parts = [(_host(p.row_splits()), p._uniform) for p in row_partitions]
    for key, v in fields.items():
        f_nrows, f_parts = _field_partitions(key, v, rank, dtype)
        if nrows is not None and f_nrows != nrows:
            raise ValueError("fields have incompatible nrows")
        nrows = f_nrows
        if parts is None:
            parts = f_parts
            continue
        for i, ((a, ua), (b, ub)) in enumerate(zip(parts, f_parts, strict=True)):
            if a.shape != b.shape or not np.array_equal(a, b):
                raise ValueError(
                    f"Error in shape of {key}: its row partition {i} ({b.tolist()}) differs from "
                    f"the other fields' ({a.tolist()})."
                )
            parts[i] = (a, ua if ua is not None else ub)
    if parts is None and rank >= 2 and shape.is_fully_defined():
        parts, count = [], dims[0]
        for d in dims[1:]:
            parts.append((np.arange(count + 1, dtype=np.int64) * d, d))
            count *= d
    if nrows is None:
        if rank == 1:
            raise ValueError(
                "Must specify `nrows`, a fully specified `shape`, or have `fields` if `rank=1`"
            )
        raise ValueError(
            "Must specify row_partitions, a fully specified shape, or have fields if rank > 1"
        )
    if rank >= 2 and parts is None:
        raise ValueError(
            "Must specify row_partitions, a fully specified shape, or have fields if rank > 1"
        )
    partitions = tuple(
        RowPartition(convert_to_tensor(np.asarray(s, dtype.np)), u) for s, u in (parts or ())
    )
    if rank >= 2 and int(partitions[0].static_nrows) != nrows:
        raise ValueError("fields have incompatible nrows")
    static = [nrows] + [p._uniform for p in partitions]
    for i, (want, got) in enumerate(zip(dims, static, strict=True)):
        if want is not None and got is not None and want != got:
            raise ValueError(
                f"StructuredTensor: the fields give dimension {i} the size {got}, but the shape "
                f"{shape} says {want}."
            )
        if got is None:
            static[i] = want
    return StructuredTensor(fields, TensorShape(static), nrows, partitions, dtype)


def _field_major_to_node_major(keys: list, values: list, depth: int) -> Any:
    if depth == 0:
        return dict(zip(keys, values, strict=True))
    return [_field_major_to_node_major(keys, list(s), depth - 1) for s in zip(*values, strict=True)]


def _empty_dicts(row_partitions: tuple, nrows: int) -> list:
    if not row_partitions:
        return [{} for _ in range(nrows)]
    splits = _host(row_partitions[0].row_splits()).tolist()
    values = _empty_dicts(row_partitions[1:], splits[-1])
    return [values[splits[i] : splits[i + 1]] for i in range(len(splits) - 1)]
