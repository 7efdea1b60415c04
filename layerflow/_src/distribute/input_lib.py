"""Feeding replicas: split global batches (`experimental_distribute_dataset`) or give each
replica its own batches (`distribute_datasets_from_function`).

Any iterable of batches works (a `tf.data.Dataset`, a list, a generator function's result);
a batch is a nested structure of tensors or arrays whose first axis is the batch axis.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from layerflow._src import backend
from layerflow._src.distribute.values import PerReplica
from layerflow._src.framework import errors
from layerflow._src.framework.convert import to_array
from layerflow._src.framework.tensor import Tensor, TensorLike
from layerflow._src.framework.type_spec import TensorSpec, type_spec_from_value
from layerflow._src.ops.optional_ops import Optional
from layerflow._src.utils import nest


class InputContext:
    """What `dataset_fn` learns about the input pipeline (`tf.distribute.InputContext`)."""

    def __init__(
        self,
        num_input_pipelines: int = 1,
        input_pipeline_id: int = 0,
        num_replicas_in_sync: int = 1,
    ) -> None:
        self.num_input_pipelines = num_input_pipelines
        self.input_pipeline_id = input_pipeline_id
        self.num_replicas_in_sync = num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size: int) -> int:
        """`global_batch_size // num_replicas_in_sync`, which must divide evenly.

        >>> InputContext(num_replicas_in_sync=2).get_per_replica_batch_size(64)
        32
        """
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError(
                f"The `global_batch_size` {global_batch_size} is not divisible by "
                f"`num_replicas_in_sync` {self.num_replicas_in_sync}."
            )
        return global_batch_size // self.num_replicas_in_sync


class ValueContext:
    """What `experimental_distribute_values_from_function`'s `value_fn` learns."""

    def __init__(self, replica_id_in_sync_group: int = 0, num_replicas_in_sync: int = 1) -> None:
        self.replica_id_in_sync_group = replica_id_in_sync_group
        self.num_replicas_in_sync = num_replicas_in_sync


def _on_device(leaf: Any, device: backend.Device | None) -> Any:
    if device is None:
        return leaf
    if isinstance(leaf, TensorLike):
        data = leaf._data if leaf._device is device else backend.to_device(leaf._data, device)
        return Tensor(data, device)
    return Tensor(to_array(leaf, None, device), device)


def _split(leaf: Any, n: int, where: str) -> list[Any]:
    """`n` consecutive pieces along the first axis; earlier pieces get one more when uneven."""
    if isinstance(leaf, TensorLike):
        data, device = leaf._data, leaf._device
    else:
        data, device = np.asarray(leaf), None
    if data.ndim == 0:
        raise ValueError(
            f"experimental_distribute_dataset: {where} is a scalar, so it cannot be split into "
            f"{n} per-replica batches. Batch the dataset first (dataset.batch(global_batch_size))."
        )
    size = data.shape[0]
    # Like TF's rebatching: sizes differ by at most one, the larger pieces first.
    base, extra = divmod(size, n)
    bounds = [0]
    for i in range(n):
        bounds.append(bounds[-1] + base + (1 if i < extra else 0))
    pieces = [data[bounds[i] : bounds[i + 1]] for i in range(n)]
    return [Tensor(p, device) if device is not None else p for p in pieces]


_END = object()


class PerReplicaSpec:
    """The spec of one step's input across replicas: one spec per replica (TF's
    `PerReplicaSpec`, what `element_spec` holds for a leaf split over several replicas)."""

    __slots__ = ("_value_specs",)

    def __init__(self, *value_specs: Any) -> None:
        self._value_specs = tuple(value_specs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PerReplicaSpec) and self._value_specs == other._value_specs

    def __hash__(self) -> int:
        return hash(self._value_specs)

    def __repr__(self) -> str:
        return f"PerReplicaSpec({', '.join(repr(s) for s in self._value_specs)})"


def _unbatched(spec: Any) -> Any:
    """`spec` with an unknown first dimension (a replica's share of a global batch)."""
    if isinstance(spec, TensorSpec) and spec.shape.rank:
        return TensorSpec([None, *list(spec.shape)[1:]], spec.dtype, spec.name)
    return spec


def _spec_of(element: Any) -> Any:
    return nest.map_structure(type_spec_from_value, element)


class DistributedIterator:
    """An iterator over a distributed dataset (`tf.distribute.DistributedIterator`): each step
    gives one `PerReplica` per leaf (the batch itself with one replica).

    `get_next()` raises `tf.errors.OutOfRangeError` at the end, as TF does;
    `get_next_as_optional()` returns an empty `tf.experimental.Optional` instead.
    """

    def __init__(
        self,
        strategy: Any,
        iterator: Iterator[Any],
        take: Callable[[Iterator[Any]], Any],
        spec: Callable[[], Any] | None = None,
    ) -> None:
        self._strategy = strategy
        self._iterator = iterator
        self._take = take
        self._spec = spec
        self._step = 0
        self._done = False

    def __iter__(self) -> DistributedIterator:
        return self

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        try:
            batch = self._take(self._iterator)
        except StopIteration:
            batch = _END
        # Across processes every worker must take a step, or none: checked here, at the step
        # where they would diverge, instead of one worker waiting forever in the next collective.
        if not self._strategy.extended._next_step(batch is not _END, self._step):
            self._done = True
            raise StopIteration
        self._step += 1
        return batch

    def get_next(self) -> Any:
        """The next step's input; `tf.errors.OutOfRangeError` when the data is exhausted."""
        try:
            return next(self)
        except StopIteration:
            raise errors.OutOfRangeError(None, None, "End of sequence") from None

    def get_next_as_optional(self) -> Optional:
        """The next step's input as an Optional: empty (`has_value()` False) at the end."""
        try:
            value = next(self)
        except StopIteration:
            return Optional.empty(self.element_spec)
        return Optional(value, self._spec() if self._spec is not None else None)

    @property
    def element_spec(self) -> Any:
        """The spec of what `get_next` returns (a `PerReplicaSpec` per leaf with several
        replicas)."""
        if self._spec is None:
            raise ValueError("This distributed iterator does not know its element_spec.")
        return self._spec()


class DistributedDataset:
    """Each global batch of `dataset`, split along its first axis across the replicas
    (`tf.distribute.DistributedDataset`, what `experimental_distribute_dataset` returns).

    Iterate it (`for x in dist_dataset`, `iter(dist_dataset)`), read its `element_spec`, or fold
    it with `reduce(initial_state, reduce_fn)`; it takes no further transformations.
    """

    def __init__(self, strategy: Any, dataset: Any, options: Any = None) -> None:
        from layerflow._src.distribute.options import check_input_options

        try:
            iter(dataset)
        except TypeError:
            raise TypeError(
                "experimental_distribute_dataset expects an iterable of batches (a "
                f"tf.data.Dataset, a list, ...), got {type(dataset).__name__}."
            ) from None
        self._options = check_input_options(options, from_function=False)
        self._strategy = strategy
        self._dataset = dataset

    def __iter__(self) -> DistributedIterator:
        return DistributedIterator(
            self._strategy, iter(self._dataset), self._take, lambda: self.element_spec
        )

    def _devices(self) -> list[Any]:
        ext = self._strategy.extended
        devices = list(ext._devices) if ext._place else [None]
        if not self._options.experimental_fetch_to_device and devices[0] is not None:
            # The input stays on the host (TF: the input worker's CPU), one copy per replica.
            devices = [backend.cpu_device()] * len(devices)
        return devices

    def _take(self, iterator: Iterator[Any]) -> Any:
        batch = next(iterator)
        ext = self._strategy.extended
        devices = self._devices()
        total = self._strategy.num_replicas_in_sync
        if total == 1:
            if not nest.is_nested(batch):
                return _on_device(batch, devices[0])
            return nest.map_structure(lambda x: _on_device(x, devices[0]), batch)
        flat = nest.flatten(batch)
        first = ext._first_local_replica
        # Split for every replica in the sync group; keep this process's consecutive share.
        pieces = [
            _split(leaf, total, f"batch element #{k}")[first : first + len(devices)]
            for k, leaf in enumerate(flat)
        ]
        if len(devices) == 1:
            per_leaf = [_on_device(p[0], devices[0]) for p in pieces]
        else:
            per_leaf = [
                PerReplica([_on_device(p[i], devices[i]) for i in range(len(devices))])
                for p in pieces
            ]
        return nest.pack_sequence_as(batch, per_leaf) if nest.is_nested(batch) else per_leaf[0]

    @property
    def element_spec(self) -> Any:
        """The spec of one step's input: the dataset's spec with one replica; with several, a
        `PerReplicaSpec` per leaf whose batch dimension is unknown."""
        spec = getattr(self._dataset, "element_spec", None)
        if spec is None:
            for batch in self._dataset:
                spec = _spec_of(batch)
                break
            else:
                raise ValueError("The element_spec of an empty distributed dataset is unknown.")
        local = len(self._devices())
        if self._strategy.num_replicas_in_sync == 1:
            return spec
        if local == 1:
            return nest.map_structure(_unbatched, spec)
        return nest.map_structure(lambda s: PerReplicaSpec(*[_unbatched(s)] * local), spec)

    def reduce(self, initial_state: Any, reduce_fn: Callable[[Any, Any], Any]) -> Any:
        """`state = reduce_fn(state, step_input)` over every step, from `initial_state`.

        `reduce_fn` sees the per-replica input, as in a training loop; combine it with
        `strategy.reduce` or `strategy.run`.
        """
        state = initial_state
        for element in self:
            state = reduce_fn(state, element)
        return state

    def __len__(self) -> int:
        return len(self._dataset)


class DatasetsFromFunction(DistributedDataset):
    """Replica `i` of each step takes the next element of `dataset_fn(InputContext(...))`
    (one dataset per worker), or of its own dataset with `InputReplicationMode.PER_REPLICA`."""

    def __init__(
        self, strategy: Any, dataset_fn: Callable[[InputContext], Any], options: Any = None
    ) -> None:
        from layerflow._src.distribute.options import InputReplicationMode, check_input_options

        self._options = check_input_options(options, from_function=True)
        self._strategy = strategy
        mode = self._options.experimental_replication_mode
        if mode == InputReplicationMode.PER_REPLICA:
            n = strategy.num_replicas_in_sync
            first = strategy.extended._first_local_replica
            local = len(strategy.extended._devices)
            self._datasets: list[Any] | None = [
                dataset_fn(InputContext(n, first + i, n)) for i in range(local)
            ]
            self._dataset = self._datasets[0]
        else:
            self._datasets = None
            self._dataset = dataset_fn(strategy.extended._input_context())

    def __iter__(self) -> DistributedIterator:
        if self._datasets is None:
            source: Iterator[Any] = iter(self._dataset)
        else:
            source = _RoundRobin([iter(d) for d in self._datasets])
        return DistributedIterator(self._strategy, source, self._take, lambda: self.element_spec)

    @property
    def element_spec(self) -> Any:
        datasets = self._datasets or [self._dataset]
        specs = []
        for d in datasets:
            spec = getattr(d, "element_spec", None)
            if spec is None:
                spec = _spec_of(next(iter(d)))
            specs.append(spec)
        local = len(self._devices())
        if local == 1:
            return specs[0]
        specs = specs * local if len(specs) == 1 else specs
        return nest.map_structure(lambda *s: PerReplicaSpec(*s), *specs)

    def _take(self, iterator: Iterator[Any]) -> Any:
        devices = self._devices()
        elements = []
        for _ in devices:
            try:
                elements.append(next(iterator))
            except StopIteration:
                break
        if not elements:
            raise StopIteration
        # The data ran out mid-step: the remaining replicas get empty batches, nothing is lost.
        while len(elements) < len(devices):
            elements.append(
                nest.map_structure(_empty_like, elements[0])
                if nest.is_nested(elements[0])
                else _empty_like(elements[0])
            )
        placed = [
            nest.map_structure(lambda x, d=d: _on_device(x, d), e)
            if nest.is_nested(e)
            else _on_device(e, d)
            for e, d in zip(elements, devices)
        ]
        if len(devices) == 1:
            return placed[0]
        if not nest.is_nested(placed[0]):
            return PerReplica(placed)
        flats = [nest.flatten(p) for p in placed]
        leaves = [PerReplica([f[k] for f in flats]) for k in range(len(flats[0]))]
        return nest.pack_sequence_as(placed[0], leaves)

    def __len__(self) -> int:
        return len(self._dataset)


class _RoundRobin:
    """One element from each replica's iterator in turn (PER_REPLICA input); stops when the
    first replica's data runs out at the start of a step."""

    def __init__(self, iterators: list[Iterator[Any]]) -> None:
        self._iterators = iterators
        self._next = 0

    def __iter__(self) -> _RoundRobin:
        return self

    def __next__(self) -> Any:
        it = self._iterators[self._next]
        try:
            value = next(it)
        except StopIteration:
            self._next = 0  # the next step starts again at replica 0
            raise
        self._next = (self._next + 1) % len(self._iterators)
        return value


def _empty_like(leaf: Any) -> Any:
    if isinstance(leaf, TensorLike):
        return Tensor(leaf._data[:0], leaf._device)
    return np.asarray(leaf)[:0]
