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
from layerflow._src.framework.convert import to_array
from layerflow._src.framework.tensor import Tensor, TensorLike
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


class DistributedIterator:
    """Yields one step's input: a `PerReplica` per leaf (the batch itself with one replica)."""

    def __init__(
        self, strategy: Any, iterator: Iterator[Any], take: Callable[[Iterator[Any]], Any]
    ) -> None:
        self._strategy = strategy
        self._iterator = iterator
        self._take = take
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
        return next(self)


class DistributedDataset:
    """Each global batch of `dataset`, split along its first axis across the replicas."""

    def __init__(self, strategy: Any, dataset: Any) -> None:
        try:
            iter(dataset)
        except TypeError:
            raise TypeError(
                "experimental_distribute_dataset expects an iterable of batches (a "
                f"tf.data.Dataset, a list, ...), got {type(dataset).__name__}."
            ) from None
        self._strategy = strategy
        self._dataset = dataset

    def __iter__(self) -> DistributedIterator:
        return DistributedIterator(self._strategy, iter(self._dataset), self._take)

    def _take(self, iterator: Iterator[Any]) -> Any:
        batch = next(iterator)
        ext = self._strategy.extended
        devices = ext._devices if ext._place else [None]
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

    def __len__(self) -> int:
        return len(self._dataset)


class DatasetsFromFunction:
    """Replica `i` of each step takes the next element of `dataset_fn(InputContext(...))`."""

    def __init__(self, strategy: Any, dataset_fn: Callable[[InputContext], Any]) -> None:
        self._strategy = strategy
        self._dataset = dataset_fn(strategy.extended._input_context())

    def __iter__(self) -> DistributedIterator:
        return DistributedIterator(self._strategy, iter(self._dataset), self._take)

    def _take(self, iterator: Iterator[Any]) -> Any:
        ext = self._strategy.extended
        devices = ext._devices if ext._place else [None]
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


def _empty_like(leaf: Any) -> Any:
    if isinstance(leaf, TensorLike):
        return Tensor(leaf._data[:0], leaf._device)
    return np.asarray(leaf)[:0]
