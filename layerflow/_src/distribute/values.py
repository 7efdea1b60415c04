"""Values that live on several replicas: `PerReplica`, `Mirrored`, and `MirroredVariable`."""

from __future__ import annotations

import copy as _copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.distribute import context
from layerflow._src.framework.convert import to_array
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.variables import Variable, VariableAggregation
from layerflow._src.utils import nest


class DistributedValues:
    """One value per replica, in replica order (`tf.distribute.DistributedValues`)."""

    __slots__ = ("_values",)

    def __init__(self, values: Sequence[Any]) -> None:
        self._values = tuple(values)

    @property
    def values(self) -> tuple[Any, ...]:
        return self._values

    def _local(self, index: int) -> Any:
        return self._values[index]

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        body = ",\n".join(f"  {i}: {v!r}" for i, v in enumerate(self._values))
        return f"{type(self).__name__}:{{\n{body}\n}}"

    def __bool__(self) -> bool:
        raise TypeError(
            f"The truth value of a {type(self).__name__} is ambiguous: it holds one value per "
            "replica. Reduce it first with strategy.reduce(...), or look at "
            "strategy.experimental_local_results(value)."
        )


class PerReplica(DistributedValues):
    """Values that differ between replicas, such as each replica's slice of a batch.

    >>> PerReplica([1, 2]).values
    (1, 2)
    """

    __slots__ = ()


class Mirrored(DistributedValues):
    """Values known to be equal on every replica, such as the result of an all-reduce."""

    __slots__ = ()


def select_replica(index: int, structure: Any) -> Any:
    """`structure` as replica `index` sees it: distributed leaves replaced by their component."""

    def pick(x: Any) -> Any:
        return x._local(index) if isinstance(x, DistributedValues) else x

    if not nest.is_nested(structure):
        return pick(structure)
    return nest.map_structure(pick, structure)


def regroup(per_replica: Sequence[Any], wrap: type = PerReplica) -> Any:
    """Combine one structure per replica into one structure of distributed leaves.

    Leaves that are the same object on every replica (a shared variable, a Python constant)
    stay as they are; others become `wrap(values)`.
    """
    first = per_replica[0]
    if len(per_replica) == 1:
        return first
    if all(x is first for x in per_replica[1:]):
        return first
    if nest.is_nested(first):
        try:
            flats = [nest.flatten(x) for x in per_replica]
            for x in per_replica[1:]:
                nest.assert_same_structure(first, x)
        except (TypeError, ValueError):
            return wrap(per_replica)
        leaves = [regroup([f[i] for f in flats], wrap) for i in range(len(flats[0]))]
        return nest.pack_sequence_as(first, leaves)
    return wrap(per_replica)


def local_results(value: Any, n: int) -> tuple[Any, ...]:
    """`strategy.experimental_local_results`: one value per local replica."""
    if isinstance(value, MirroredVariable):
        return value.values
    if isinstance(value, DistributedValues):
        return value.values
    if nest.is_nested(value) and n > 1:
        return tuple(select_replica(i, value) for i in range(n))
    return (value,)


class MirroredVariable(Variable):
    """A variable with one copy on every replica device, kept equal (`MirroredVariable` in TF).

    Made by `MirroredStrategy.scope()`. Outside `strategy.run` it reads and reports its primary
    copy; inside, each replica sees its own copy, so ops run where the replica runs and tapes
    record the variable itself. `assign*` write every copy.
    """

    # Variable keeps `_data`/`_device` in slots; these properties shadow them so every read
    # resolves to the copy of the replica that is running.
    @property
    def _data(self) -> Any:  # type: ignore[override]
        i = context.local_replica(self._strategy)
        return self._copies[0 if i is None else i]

    @_data.setter
    def _data(self, array: Any) -> None:
        i = context.local_replica(self._strategy)
        if i is not None:
            self._copies[i] = array
            return
        self._copies[0] = array
        self._broadcast_from_primary()

    @property
    def _device(self) -> backend.Device:  # type: ignore[override]
        i = context.local_replica(self._strategy)
        return self._devices[0 if i is None else i]

    @classmethod
    def _mirror(
        cls, primary: Variable, devices: Sequence[backend.Device], strategy: Any
    ) -> MirroredVariable:
        """Wrap a freshly created variable and copy its value to every other device."""
        self = object.__new__(cls)
        self.__dict__.update(primary.__dict__)
        self._name = primary._name
        self._trainable = primary._trainable
        self.constraint = primary.constraint
        self.aggregation = primary.aggregation
        self.synchronization = primary.synchronization
        self._strategy = strategy
        self._devices = tuple(devices)
        data = backend.to_device(primary._data, devices[0])
        self._copies = [data] + [_private_copy(data, d) for d in devices[1:]]
        return self

    def _update(self, fn: Callable[..., Any], *args: Any) -> MirroredVariable:
        """`Variable._update` for every copy: `fn` updates the primary in place (where the
        arguments, such as all-reduced gradients, live), then each replica's copy is set
        equal to it. Only in cross-replica context: inside `strategy.run` each replica would
        hand in its own arguments, so there it raises instead of letting the copies drift."""
        if context.local_replica(self._strategy) is not None:
            raise ValueError(
                f"In-place update of MirroredVariable '{self._name}' inside strategy.run: each "
                "replica would apply its own update and the copies would drift apart. Apply "
                "it in cross-replica context: all-reduce the values first, then update inside "
                "tf.distribute.get_replica_context().merge_call(fn) (optimizer.apply_gradients "
                "does this for you)."
            )
        fn(self._copies[0], *args)
        self._broadcast_from_primary()
        return self

    def _broadcast_from_primary(self) -> None:
        """Make every copy equal to the primary (after something wrote the primary in place)."""
        primary = self._copies[0]
        for j in range(1, len(self._copies)):
            copy = self._copies[j]
            if copy is primary or copy.shape != primary.shape or copy.dtype != primary.dtype:
                self._copies[j] = _private_copy(primary, self._devices[j])
            else:
                copy[...] = backend.to_device(primary, self._devices[j])

    @property
    def values(self) -> tuple[Tensor, ...]:
        """Each replica's copy, as tensors (read copies, in replica order)."""
        return tuple(Tensor(c.copy(), d) for c, d in zip(self._copies, self._devices))

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(d.name for d in self._devices)

    @property
    def primary(self) -> Tensor:
        return Tensor(self._copies[0].copy(), self._devices[0])

    # --- writing: every copy, or (inside strategy.run) once per step through a merge ----------
    def _write_each(
        self,
        what: str,
        value: Any,
        write: Callable[[Any, Any], None],
        shape_of: Callable[[Any], tuple[int, ...]],
    ) -> MirroredVariable:
        if context.local_replica(self._strategy) is not None:
            # Inside strategy.run: the replicas' values are combined once, then written as below.
            self._merge_in_replica(
                what, value, lambda combined: self._write_each(what, combined, write, shape_of)
            )
            return self
        arr = self._value_array(value, shape_of(self._copies[0]), what)
        # Validated once, before any copy changes: a bad value leaves every copy untouched.
        for copy, device in zip(self._copies, self._devices):
            write(copy, backend.to_device(arr, device))
        return self

    def _merge_in_replica(self, what: str, value: Any, apply: Callable[[Any], Any]) -> None:
        if self.aggregation == VariableAggregation.NONE:
            raise ValueError(
                f"Cannot {what} {type(self).__name__} '{self._name}' inside strategy.run: each "
                "replica would write a different value. Create the variable with an aggregation "
                "(tf.Variable(..., aggregation=tf.VariableAggregation.MEAN or SUM or "
                "ONLY_FIRST_REPLICA)), or update it outside strategy.run, or all-reduce the "
                "update first and apply it in a merge_call."
            )
        ctx = context.top().replica_context
        aggregation = self.aggregation

        def merge(strategy: Any, merged: Any) -> None:
            parts = list(merged.values) if isinstance(merged, DistributedValues) else [merged]
            ext = strategy.extended
            # One value for all local replicas (regroup collapsed identical objects): expand.
            parts = [_as_tensor(p, self) for p in parts] * (len(ext._devices) // len(parts))
            if aggregation == VariableAggregation.ONLY_FIRST_REPLICA:
                combined = ext._first_replica_value(parts[0])
            else:
                op = "SUM" if aggregation == VariableAggregation.SUM else "MEAN"
                combined = ext._reduce_values(op, parts, self._devices[0])
            apply(combined)

        ctx.merge_call(merge, args=(value,))

    def assign(
        self, value: Any, use_locking: Any = None, name: Any = None, read_value: bool = True
    ) -> MirroredVariable:
        def write(copy: Any, v: Any) -> None:
            copy[...] = v

        return self._write_each("assign", value, write, lambda c: tuple(c.shape))

    def assign_add(
        self, delta: Any, use_locking: Any = None, name: Any = None, read_value: bool = True
    ) -> MirroredVariable:
        def write(copy: Any, v: Any) -> None:
            copy += v

        return self._write_each("assign_add", delta, write, lambda c: tuple(c.shape))

    def assign_sub(
        self, delta: Any, use_locking: Any = None, name: Any = None, read_value: bool = True
    ) -> MirroredVariable:
        def write(copy: Any, v: Any) -> None:
            copy -= v

        return self._write_each("assign_sub", delta, write, lambda c: tuple(c.shape))

    def _assign_slice(self, key: Any, value: Any) -> MirroredVariable:
        def write(copy: Any, v: Any) -> None:
            copy[key] = v

        return self._write_each("slice-assign", value, write, lambda c: tuple(c[key].shape))

    def scatter_nd_update(self, indices: Any, updates: Any) -> MirroredVariable:
        raw = indices._data if isinstance(indices, TensorLike) else indices
        idx = backend.to_host(raw) if not isinstance(raw, list) else raw
        key = tuple(np.moveaxis(np.asarray(idx), -1, 0))
        return self._assign_slice(key, updates)

    # --- copies, pickling, printing ---------------------------------------------------------
    def __deepcopy__(self, memo: dict) -> MirroredVariable:
        new = _copy.copy(self)
        new.__dict__ = {k: v for k, v in self.__dict__.items()}
        new._copies = [c.copy() for c in self._copies]
        memo[id(self)] = new
        return new

    def __repr__(self) -> str:
        parts = []
        for i, (c, d) in enumerate(zip(self._copies, self._devices)):
            v = Tensor(c, d)
            parts.append(
                f"  {i}: <tf.Variable '{self._name}' shape={v.shape} dtype={v.dtype.name}, "
                f"device={d.name}>"
            )
        return "MirroredVariable:{\n" + ",\n".join(parts) + "\n}"


def _private_copy(array: Any, device: backend.Device) -> Any:
    """`array` on `device`, never sharing memory with `array` (logical devices share a host)."""
    out = backend.to_device(array, device)
    return out.copy() if out is array else out


def _as_tensor(value: Any, like: Variable) -> Tensor:
    if isinstance(value, TensorLike):
        return value if type(value) is Tensor else Tensor(value._data.copy(), value._device)
    device = like._devices[0]
    return Tensor(to_array(value, like.dtype, device), device)
