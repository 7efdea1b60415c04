"""What `fit`/`evaluate`/`predict` iterate: batches from arrays, tensors, datasets or iterables.

Arrays (NumPy, tensors, and lists/tuples/dicts of them) are sliced into batches here, shuffled
each epoch with a fresh permutation; anything else iterable (a `tf.data.Dataset`, a generator, a
list of batches) is iterated as it is, each element being `x`, `(x,)`, `(x, y)` or
`(x, y, sample_weight)`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from layerflow._src.data import arrays
from layerflow._src.data.sparse_elements import SparseRowSource
from layerflow._src.framework.sparse_tensor import SparseTensor
from layerflow._src.framework.tensor import TensorLike
from layerflow._src.keras.utils.sequence import Sequence, ordered_map
from layerflow._src.ops import random_ops
from layerflow._src.ops.ragged.ragged_getitem import gather_rows
from layerflow._src.ops.ragged.ragged_tensor import RaggedTensor
from layerflow._src.utils import nest


def unpack_x_y_sample_weight(data: Any) -> tuple[Any, Any, Any]:
    """`(x, y, sample_weight)` from a batch as Keras accepts it.

    >>> unpack_x_y_sample_weight((1, 2))
    (1, 2, None)
    """
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data[0], data[1], data[2]
    raise ValueError(
        "Data is expected to be in format `x`, `(x,)`, `(x, y)`, or `(x, y, sample_weight)`, "
        f"found a tuple of {len(data)} elements."
    )


def pack_x_y_sample_weight(x: Any, y: Any = None, sample_weight: Any = None) -> Any:
    if y is None:
        return (x,)
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


def _is_array_like(x: Any) -> bool:
    if x is None:
        return True
    if isinstance(x, np.ndarray | TensorLike | RaggedTensor | SparseTensor | int | float):
        return True
    if isinstance(x, list) and x and all(isinstance(v, tuple) for v in x):
        return False  # a list of (x, y) batches, not a multi-input list of arrays
    if isinstance(x, list | tuple | dict):
        flat = nest.flatten(x)
        if all(isinstance(v, np.ndarray | TensorLike | RaggedTensor | SparseTensor)
               for v in flat) and flat:  # fmt: skip
            return True
        # A plain nested list of numbers is an array too.
        return not any(hasattr(v, "__iter__") and not isinstance(v, str) for v in flat)
    return False


def _as_array(x: Any) -> Any:
    """The array batches are sliced from (`data.arrays.source_array`)."""
    if isinstance(x, RaggedTensor):  # batches are its rows (a RaggedTensor each)
        return x
    if isinstance(x, SparseTensor):  # batches are SparseTensors of its rows
        return SparseRowSource(x)
    return arrays.source_array(x)


def _rng() -> np.random.Generator:
    seed = random_ops.get_global_seed()
    if seed is None:
        return np.random.default_rng(np.random.randint(0, 2**31 - 1))
    return np.random.default_rng(seed)


class ArrayData:
    """Batches sliced from in-memory arrays."""

    def __init__(
        self,
        x: Any,
        y: Any = None,
        sample_weight: Any = None,
        batch_size: int | None = None,
        shuffle: Any = False,
        steps: int | None = None,
        class_weight: dict | None = None,
    ) -> None:
        self.structure = (x, y, sample_weight)
        flat = [_as_array(v) for v in nest.flatten((x, y, sample_weight)) if v is not None]
        if not flat:
            raise ValueError("No data: pass `x` (and `y` for training).")
        sizes = {int(a.shape[0]) if a.ndim else 1 for a in flat}
        if len(sizes) > 1:
            shapes = [tuple(a.shape) for a in flat]
            raise ValueError(
                f"Data cardinality is ambiguous: x, y and sample_weight must have the same "
                f"number of samples, got arrays of shapes {shapes}."
            )
        self.n = sizes.pop()
        self.x, self.y, self.sw = (
            nest.map_structure(_as_array, v) if v is not None else None
            for v in (x, y, sample_weight)
        )
        if class_weight is not None and self.y is not None:
            self.sw = _class_weights(self.y, self.sw, class_weight)
        if batch_size is None:
            batch_size = 32
        if not isinstance(batch_size, int | np.integer) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.steps = steps or math.ceil(self.n / self.batch_size)
        self._rng = _rng() if shuffle else None
        self._device = arrays.feed_device()
        # The common case, host arrays of numbers fed to the CPU: each batch is one gather per
        # array, packed by a builder made once (no structure walk per batch; `_batch` below).
        self._fast = None
        if self._device.kind == "CPU":
            parts = [nest.flatten(v) if v is not None else None for v in (self.x, self.y, self.sw)]
            leaves = [a for p in parts if p is not None for a in p]
            if all(_plain_host(a) for a in leaves):
                self._fast = (leaves, _packer(self.x, self.y, self.sw))

    def __len__(self) -> int:
        return self.steps

    def _take(self, a: Any, idx: Any) -> Any:
        if isinstance(a, RaggedTensor):
            return a[idx] if isinstance(idx, slice) else gather_rows(a, idx)
        if isinstance(a, SparseRowSource):
            return a.take(idx)
        return arrays.rows(a, idx, self._device)

    def _batch(self, idx: Any) -> Any:
        if self._fast is not None:
            leaves, pack = self._fast
            device = self._device
            return pack([arrays.host_rows(a, idx, device) for a in leaves])

        def take(v: Any) -> Any:
            return None if v is None else nest.map_structure(lambda a: self._take(a, idx), v)

        return pack_x_y_sample_weight(take(self.x), take(self.y), take(self.sw))

    def epoch(self) -> Iterator[Any]:
        """One epoch of batches packed as Keras does: `(x,)`, `(x, y)` or `(x, y, sw)`."""
        n, bs = self.n, self.batch_size
        order = None
        if self.shuffle == "batch":
            starts = self._rng.permutation(math.ceil(n / bs)) * bs
            order = np.concatenate([np.arange(s, min(s + bs, n)) for s in starts])
        elif self.shuffle:
            order = self._rng.permutation(n)
        step = 0
        start = 0
        while step < self.steps:
            if start >= n:
                start = 0  # steps_per_epoch beyond one pass: wrap around
            stop = min(start + bs, n)
            idx: Any = slice(start, stop) if order is None else order[start:stop]
            yield self._batch(idx)
            start = stop
            step += 1


def _plain_host(a: Any) -> bool:
    """A host NumPy array of numbers (of rank >= 1): batches are its rows, gathered as they are."""
    return type(a) is np.ndarray and a.ndim >= 1 and a.dtype.kind not in "SOUV"


def _packer(x: Any, y: Any, sw: Any) -> Any:
    """`values -> pack_x_y_sample_weight(x, y, sw)` with each of x, y, sw rebuilt from its
    leaves (in `nest.flatten` order), the structures walked once here."""
    counts = [0 if v is None else len(nest.flatten(v)) for v in (x, y, sw)]
    plain = [v is not None and not nest.is_nested(v) for v in (x, y, sw)]

    def part(v: Any, i: int, values: list[Any], at: int) -> Any:
        if v is None:
            return None
        if plain[i]:
            return values[at]
        return nest.pack_sequence_as(v, values[at : at + counts[i]])

    if all(plain[:2]) and sw is None:
        return lambda values: (values[0], values[1])
    if plain[0] and y is None and sw is None:
        return lambda values: (values[0],)

    def pack(values: list[Any]) -> Any:
        px = part(x, 0, values, 0)
        py = part(y, 1, values, counts[0])
        psw = part(sw, 2, values, counts[0] + counts[1])
        return pack_x_y_sample_weight(px, py, psw)

    return pack


def _class_weights(y: Any, sw: Any, class_weight: dict) -> Any:
    if nest.is_nested(y):
        raise ValueError("class_weight is only supported for models with a single output.")
    labels = arrays.host(y)
    if labels.ndim == 2 and labels.shape[1] > 1:
        labels = labels.argmax(axis=1)
    labels = labels.reshape(labels.shape[0], -1)[:, 0].astype(np.int64)
    table = np.ones(int(max(max(class_weight), labels.max(initial=0))) + 1, dtype=np.float32)
    for k, w in class_weight.items():
        table[int(k)] = w
    weights = table[labels]
    if sw is not None:
        weights = weights * arrays.host(sw).reshape(weights.shape[0], -1)[:, 0]
    return weights.astype(np.float32)


def _to_tensor(a: Any) -> Any:
    if isinstance(a, RaggedTensor | SparseTensor):  # composite batches reach the model as they are
        return a
    return arrays.to_tensor(a)


def _to_tensors(v: Any) -> Any:
    return None if v is None else nest.map_structure(_to_tensor, v)


class IterableData:
    """Batches from a dataset, a generator, or any iterable of batches."""

    def __init__(
        self, data: Any, steps: int | None = None, class_weight: dict | None = None
    ) -> None:
        self.data = data
        self.class_weight = class_weight
        self.steps = steps
        if steps is None:
            self.steps = _known_length(data)
        self._iterator: Iterator[Any] | None = None
        self._yielded = 0
        # Set when an iterator consumed across epochs (steps_per_epoch) ran out of data: fit
        # then ends training after this epoch, as Keras does, instead of restarting it.
        self.exhausted = False

    def __len__(self) -> int:
        return self.steps or 0

    def epoch(self) -> Iterator[Any]:
        # Without steps, every epoch is one full pass. With steps_per_epoch, one iterator is
        # consumed across epochs (as Keras does); when it runs out, `exhausted` is set.
        if self.steps is None or _known_length(self.data) == self.steps:
            it: Iterator[Any] = iter(self.data)
        else:
            if self._iterator is None:
                self._iterator = iter(self.data)
            it = self._iterator
        count = 0
        while self.steps is None or count < self.steps:
            try:
                element = next(it)
            except StopIteration:
                if self._yielded == 0 and self.steps is not None:
                    raise ValueError(
                        "The input data is empty or exhausted: a generator can be iterated only "
                        "once. Use a tf.data.Dataset (re-iterable), or .repeat() it and pass "
                        "steps_per_epoch."
                    ) from None
                if self.steps is not None:
                    self.exhausted = True
                return
            x, y, sw = unpack_x_y_sample_weight(element)
            if self.class_weight is not None and y is not None:
                sw = _class_weights(
                    _to_tensors(y),
                    None if sw is None else _to_tensors(sw),
                    self.class_weight,
                )
            yield pack_x_y_sample_weight(_to_tensors(x), _to_tensors(y), _to_tensors(sw))
            count += 1
            self._yielded += 1


class _SequenceBatches:
    """A `Sequence` read as an iterable: one pass per `iter()` (endless when `fit` asks for a
    different number of steps), batches reordered when shuffling, read by `workers` threads,
    and `on_epoch_end()` called once each pass's batches have all been read."""

    def __init__(self, seq: Sequence, shuffle: Any, endless: bool) -> None:
        self.seq, self.shuffle, self.endless = seq, bool(shuffle), endless
        self.workers, self.max_queue_size = 1, 10
        self._rng = _rng() if shuffle else None

    def __len__(self) -> int:
        return len(self.seq)

    def _one_pass(self) -> Iterator[Any]:
        order = list(range(len(self.seq)))
        if self._rng is not None:
            order = [int(i) for i in self._rng.permutation(len(order))]
        last = len(order) - 1
        for k, item in enumerate(ordered_map(self.seq.__getitem__, order, self.workers,
                                             self.max_queue_size)):  # fmt: skip
            if k == last:
                self.seq.on_epoch_end()  # before the last yield: a consumer may stop there
            yield item

    def __iter__(self) -> Iterator[Any]:
        while True:
            yield from self._one_pass()
            if not self.endless or len(self.seq) == 0:
                return


def _sequence_data(x: Sequence, steps: int | None, shuffle: Any,
                   class_weight: dict | None) -> IterableData:  # fmt: skip
    endless = steps is not None and steps != len(x)
    return IterableData(_SequenceBatches(x, shuffle, endless), steps, class_weight)


def set_workers(data: Any, workers: int = 1, use_multiprocessing: bool = False,
                max_queue_size: int = 10) -> None:  # fmt: skip
    """`fit`/`evaluate`/`predict`'s `workers=`: threads reading a `Sequence` (multiprocessing
    is accepted and uses threads too)."""
    source = getattr(data, "data", None)
    if isinstance(source, _SequenceBatches):
        source.workers, source.max_queue_size = int(workers or 1), int(max_queue_size or 10)


def _known_length(data: Any) -> int | None:
    card = getattr(data, "cardinality", None)
    if card is not None:
        try:
            n = int(card() if callable(card) else card)
        except (TypeError, ValueError):
            n = -2
        return n if n >= 0 else None
    try:
        return len(data)
    except TypeError:
        return None


def adapt(
    x: Any,
    y: Any = None,
    sample_weight: Any = None,
    batch_size: int | None = None,
    shuffle: Any = False,
    steps: int | None = None,
    class_weight: dict | None = None,
    what: str = "fit",
) -> ArrayData | IterableData:
    """The right adapter for `x` (and `y`, `sample_weight`)."""
    if getattr(x, "_lf_dataset_creator", False):  # utils.experimental.DatasetCreator
        x = x.make_dataset(what, steps)
    if isinstance(x, Sequence) and y is None and sample_weight is None:
        return _sequence_data(x, steps, shuffle, class_weight)
    if _is_array_like(x):
        if x is None:
            raise ValueError(f"{what}: `x` is required.")
        return ArrayData(x, y, sample_weight, batch_size, shuffle, steps, class_weight)
    if y is not None:
        raise ValueError(
            f"{what}: `y` must not be given when `x` is a dataset, generator or iterable of "
            f"batches (got x of type {type(x).__name__}); the batches should yield (x, y) pairs."
        )
    if sample_weight is not None:
        raise ValueError(
            f"{what}: `sample_weight` must not be given when `x` is a dataset; yield "
            "(x, y, sample_weight) from it instead."
        )
    if batch_size is not None and hasattr(x, "cardinality"):
        raise ValueError(
            f"{what}: do not pass `batch_size` with a tf.data.Dataset; the dataset is already "
            "batched (use dataset.batch(n))."
        )
    if not hasattr(x, "__iter__"):
        raise TypeError(
            f"{what}: unsupported input of type {type(x).__name__}. Pass NumPy arrays, tensors, a "
            "tf.data.Dataset, or an iterable of (x, y) batches."
        )
    return IterableData(x, steps, class_weight)


def train_validation_split(
    arrays: tuple[Any, Any, Any], validation_split: float
) -> tuple[tuple[Any, Any, Any], tuple[Any, Any, Any]]:
    """Split arrays into (train, validation), the validation part taken from the end."""
    if not 0.0 < validation_split < 1.0:
        raise ValueError(f"validation_split must be in (0, 1), got {validation_split}.")
    flat = [v for v in nest.flatten(arrays) if v is not None]
    n = int(np.shape(flat[0])[0]) if not isinstance(flat[0], TensorLike) else flat[0].shape[0]
    if isinstance(flat[0], SparseTensor):
        n = flat[0].host_shape()[0]
    split_at = int(math.floor(n * (1.0 - validation_split)))
    if split_at == 0 or split_at == n:
        raise ValueError(
            f"validation_split={validation_split} leaves an empty set with {n} samples: "
            f"{split_at} for training, {n - split_at} for validation."
        )

    def part(v: Any, sl: slice) -> Any:
        if v is None:
            return None
        return nest.map_structure(lambda a: _as_array(a)[sl], v)

    train = tuple(part(v, slice(0, split_at)) for v in arrays)
    val = tuple(part(v, slice(split_at, None)) for v in arrays)
    return train, val  # type: ignore[return-value]
