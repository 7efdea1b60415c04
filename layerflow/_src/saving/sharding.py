"""Checkpoint sharding (`tf.train.experimental.ShardingCallback`, `ShardableTensor`,
`ShardByTaskPolicy`, `MaxShardSizePolicy`): how a checkpoint's tensors are split into data files.

`Checkpoint.save/write(..., options=tf.train.CheckpointOptions(experimental_sharding_callback=
policy))` groups the tensors by task (`/job:.../replica:.../task:...`), calls the policy once per
task with a list of `ShardableTensor`s, and writes each returned shard, a dict
`{checkpoint_key: {slice_spec: tensor}}`, to its own data file. A slice spec is TF's
`SaveSliceInfo.spec`: the full shape, then `offset,length` per dimension (`"4 6 0,2:0,6"` is
rows 0-1 of a 4x6 tensor); `""` is the whole tensor. The shards are validated as TF's
`validate_shards` documents (nothing removed, added, reshaped, retyped or moved to another task),
extended to slices: the slices of a tensor must tile it exactly.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
import math
import warnings
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from layerflow._src.framework import dtypes
from layerflow._src.framework.device_spec import DeviceSpec

Shard = dict  # {checkpoint key: {slice spec: tensor}}


# --- slice specs --------------------------------------------------------------------------------
def format_spec(full_shape: Sequence[int], offset: Sequence[int], shape: Sequence[int]) -> str:
    """TF's `SaveSliceInfo.spec`: `"4 6 1,2:0,6"` (full shape, then offset,length per dim)."""
    head = " ".join(str(int(d)) for d in full_shape)
    return f"{head} " + ":".join(f"{int(o)},{int(s)}" for o, s in zip(offset, shape))


def parse_spec(spec: str, full_shape: Sequence[int] | None = None) -> tuple[list, list, list]:
    """(full shape, offset, shape) of a slice spec; `""` is the whole `full_shape`.

    Raises ValueError unless the spec is well formed and its slice lies inside its full shape
    (and, given `full_shape`, its full shape is that one).
    """
    if not isinstance(spec, str):
        raise ValueError(f"a slice spec must be a str, got {type(spec).__name__}")
    spec = spec.strip()
    if not spec:
        if full_shape is None:
            raise ValueError("an empty slice spec needs the tensor's shape")
        return list(full_shape), [0] * len(full_shape), list(full_shape)
    try:
        head, body = spec.rsplit(" ", 1) if " " in spec else ("", spec)
        full = [int(d) for d in head.split()]
        offset, shape = [], []
        for i, dim in enumerate(body.split(":")):
            if dim == "-":  # TF's "whole dimension"
                offset.append(0)
                shape.append(full[i])
                continue
            o, s = dim.split(",")
            offset.append(int(o))
            shape.append(int(s))
    except (ValueError, IndexError):
        raise ValueError(
            f"slice spec {spec!r} is not TF's 'full shape offset,length:offset,length' form"
        ) from None
    if len(full) != len(offset) or any(
        o < 0 or s < 0 or d < 0 or o + s > d for d, o, s in zip(full, offset, shape)
    ):
        raise ValueError(f"slice spec {spec!r} does not lie inside its full shape {full}")
    if full_shape is not None and list(full_shape) != full:
        raise ValueError(f"slice spec {spec!r} is of a tensor of shape {full}, not {full_shape}")
    return full, offset, shape


def _overlap(a: tuple[list, list], b: tuple[list, list]) -> bool:
    return all(oa < ob + sb and ob < oa + sa for oa, sa, ob, sb in zip(a[0], a[1], b[0], b[1]))


def tiling_problem(region: tuple[list, list], parts: list[tuple[list, list]]) -> str:
    """'' if the boxes `parts` (offset, shape) tile `region` exactly, else what is wrong."""
    for off, shp in parts:
        if any(o < ro or o + s > ro + rs for o, s, ro, rs in zip(off, shp, *region)):
            return f"slice at offset {off} of shape {shp} lies outside {region}"
    need = math.prod(region[1])
    got = sum(math.prod(s) for _, s in parts)
    nonempty = sorted((p for p in parts if math.prod(p[1])), key=lambda p: p[0])
    for i, a in enumerate(nonempty):  # sorted by offset: stop at the first box past a's end
        for b in nonempty[i + 1 :]:
            if a[0] and b[0][0] >= a[0][0] + a[1][0]:
                break
            if _overlap(a, b):
                return f"slices at offsets {a[0]} and {b[0]} overlap"
    if got != need:
        return f"the slices cover {got} of the {need} elements"
    return ""


# --- the public API -----------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ShardableTensor:
    """One tensor a sharding callback places (`tf.train.experimental.ShardableTensor`).

    `tensor` is its value (a `tf.Tensor` on the host), `checkpoint_key` the key it is saved
    under (layerflow's structural path, e.g. `model/dense/kernel`), `slice_spec` `""` for a
    whole tensor, `device` the `tf.DeviceSpec` of the variable, `trackable` the variable (or
    the `PythonState`) it belongs to.
    """

    _tensor_save_spec: Any
    tensor: Any
    dtype: Any
    device: Any
    name: str
    shape: Any
    slice_spec: str
    checkpoint_key: str
    trackable: Any

    def __hash__(self) -> int:
        return hash((self.name, self.dtype, str(self.device), self.checkpoint_key))

    def __repr__(self) -> str:
        return (
            f"\n{self.__class__.__name__}:\n"
            f"  _tensor_save_spec={self._tensor_save_spec!r}\n"
            f"  tensor={self.tensor!r}\n"
            f"  dtype={self.dtype!r}\n"
            f"  device={self.device!r}\n"
            f"  name={self.name!r}\n"
            f"  shape={self.shape!r}\n"
            f"  slice_spec={self.slice_spec!r}\n"
            f"  checkpoint_key={self.checkpoint_key!r}\n"
            f"  trackable={self.trackable!r}"
        )


class ShardingCallback(abc.ABC):
    """How a checkpoint's tensors are split into shards (`tf.train.experimental.
    ShardingCallback`): subclass it with a `description` property and a `__call__` that takes
    a list of `ShardableTensor`s and returns a list of shards, each a dict
    `{checkpoint_key: {slice_spec: tensor}}`; every shard becomes one data file.

    Tensors must not be removed, added, reshaped, retyped or moved to another task; a tensor
    may be split into slices (`tf.slice` of it, keyed by its slice spec) that tile it exactly.

    >>> import layerflow as tf
    >>> class AllInOne(tf.train.experimental.ShardingCallback):
    ...     description = "all tensors in one shard"
    ...     def __call__(self, shardable_tensors):
    ...         shard = {}
    ...         for t in shardable_tensors:
    ...             shard.setdefault(t.checkpoint_key, {})[t.slice_spec] = t.tensor
    ...         return [shard]
    >>> options = tf.train.CheckpointOptions(experimental_sharding_callback=AllInOne())
    """

    @property
    @abc.abstractmethod
    def description(self) -> str:
        """A text description of the sharding policy."""

    @abc.abstractmethod
    def __call__(self, shardable_tensors: Sequence[ShardableTensor]) -> Sequence[Shard]:
        """The list of shards for the given shardable tensors."""

    def __hash__(self) -> int:
        hash_val = hash(self.description)
        for attr_name, attr_val in vars(self).items():
            if not (inspect.ismethod(attr_val) or inspect.isfunction(attr_val)):
                hash_val ^= hash(attr_name)
                if isinstance(attr_val, Hashable):
                    hash_val ^= hash(attr_val)
        return hash_val


class ShardByTaskPolicy(ShardingCallback):
    """One shard per task: the callback is called once per task, and puts all of that task's
    tensors into one shard (`tf.train.experimental.ShardByTaskPolicy`).

    >>> ShardByTaskPolicy().description
    'Split tensors into shards based on their device spec task.'
    """

    @property
    def description(self) -> str:
        return "Split tensors into shards based on their device spec task."

    def __call__(self, shardable_tensors: Sequence[ShardableTensor]) -> list[Shard]:
        shard: Shard = {}
        for t in shardable_tensors:
            shard.setdefault(t.checkpoint_key, {})[t.slice_spec] = t.tensor
        return [shard]


class MaxShardSizePolicy(ShardingCallback):
    """Shards of at most `max_shard_size` bytes of tensor data (`tf.train.experimental.
    MaxShardSizePolicy`): tensors are packed in order, and one that does not fit in the rest of
    a shard is split into slices (along the axis that fills the shard best, down to single
    elements). A shard exceeds the size only when one element does (a warning says so).

    >>> MaxShardSizePolicy(1024).max_shard_size
    1024
    """

    def __init__(self, max_shard_size: int) -> None:
        if isinstance(max_shard_size, bool) or not isinstance(max_shard_size, int | np.integer):
            raise TypeError(
                f"MaxShardSizePolicy: max_shard_size must be an int (bytes), got "
                f"{max_shard_size!r} of type {type(max_shard_size).__name__}."
            )
        if max_shard_size <= 0:
            raise ValueError(
                f"MaxShardSizePolicy: max_shard_size must be a positive number of bytes, got "
                f"{max_shard_size}."
            )
        self.max_shard_size = int(max_shard_size)

    @property
    def description(self) -> str:
        return "Split tensors into shards with a max shard size."

    def __call__(self, shardable_tensors: Sequence[ShardableTensor]) -> list[Shard]:
        return _Packer(self.max_shard_size).pack(shardable_tensors)


class _Packer:
    """Greedy packing of tensors (and slices of them) into shards of at most `limit` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.shards: list[Shard] = [{}]
        self.oversize: list[Shard] = []
        self.left = limit

    def pack(self, shardable_tensors: Sequence[ShardableTensor]) -> list[Shard]:
        for t in shardable_tensors:
            shape = [int(d) for d in t.shape]
            full, off, shp = parse_spec(t.slice_spec, shape if not t.slice_spec else None)
            item = int(np.dtype(t.dtype.as_numpy_dtype).itemsize)
            self._place(t, full, off, off, shp, item)
        return [s for s in self.shards if s] + self.oversize

    def _add(self, t: ShardableTensor, full: list, root: list, off: list, shp: list) -> Any:
        if off == root and shp == [int(d) for d in t.shape]:
            return t.slice_spec, t.tensor
        rel = tuple(slice(o - r, o - r + s) for o, r, s in zip(off, root, shp))
        return format_spec(full, off, shp), t.tensor[rel]

    def _place(
        self, t: ShardableTensor, full: list, root: list, off: list, shp: list, item: int
    ) -> None:
        key = t.checkpoint_key
        while True:
            size = math.prod(shp) * item
            if size <= self.left:
                spec, value = self._add(t, full, root, off, shp)
                self.shards[-1].setdefault(key, {})[spec] = value
                self.left -= size
                return
            # The largest block of whole rows (along some axis) that fits in what is left.
            best = None  # (bytes, -axis, rows)
            for axis, n in enumerate(shp):
                row = size // n
                rows = min(n, self.left // row) if row else n
                if rows and (best is None or rows * row > best[0]):
                    best = (rows * row, axis, rows)
            if best is None:
                if self.left < self.limit:  # maybe it fits in an empty shard
                    self.shards.append({})
                    self.left = self.limit
                    continue
                if all(d == 1 for d in shp):  # one element larger than a whole shard
                    spec, value = self._add(t, full, root, off, shp)
                    warnings.warn(
                        f"MaxShardSizePolicy: '{key}' has elements of {item} bytes, more than "
                        f"max_shard_size={self.limit}; it is written as a shard of its own "
                        "that exceeds the size.",
                        stacklevel=2,
                    )
                    self.oversize.append({key: {spec: value}})
                    return
                # Not even one row fits an empty shard: place it row by row along its
                # first axis longer than 1, each row split further.
                axis = next(i for i, d in enumerate(shp) if d > 1)
                for r in range(shp[axis]):
                    o = list(off)
                    o[axis] += r
                    s = list(shp)
                    s[axis] = 1
                    self._place(t, full, root, o, s, item)
                return
            _, axis, rows = best
            first = list(shp)
            first[axis] = rows
            spec, value = self._add(t, full, root, off, first)
            self.shards[-1].setdefault(key, {})[spec] = value
            self.left -= best[0]
            off = list(off)
            off[axis] += rows
            shp = list(shp)
            shp[axis] -= rows
            if self.left == 0:
                self.shards.append({})
                self.left = self.limit


# --- validation ---------------------------------------------------------------------------------
def task_of(device: Any) -> tuple:
    """(job, replica, task) of a device (a string or a DeviceSpec); TF groups shards by it."""
    spec = device if isinstance(device, DeviceSpec) else DeviceSpec.from_string(str(device or ""))
    return spec.job, spec.replica, spec.task


def _bad(what: str, description: str, key: Any, spec: Any, more: str = "") -> RuntimeError:
    return RuntimeError(
        f"After executing the checkpoint sharding callback, {what}:\n"
        f"  callback_description: {description}\n"
        f"  checkpoint_key: {key}\n"
        f"  slice_spec: {spec}\n{more}"
    )


def validate_shards(
    shards: Any, shardable_tensors: Sequence[ShardableTensor], description: str
) -> list[Shard]:
    """Check a callback's shards against its input (TF's `validate_shards`, with slices): every
    tensor is in the shards exactly once (as itself or as slices that tile it), none is added,
    reshaped, retyped or moved to another task, and a shard holds tensors of one task. Returns
    the shards as a list; raises RuntimeError (TypeError for a result of the wrong form)."""
    if isinstance(shards, dict) or not isinstance(shards, list | tuple):
        raise TypeError(
            f"The checkpoint sharding callback ({description}) must return a list of shards, "
            f"each a dict {{checkpoint_key: {{slice_spec: tensor}}}}; got "
            f"{type(shards).__name__}. Wrap a single shard in a list: `return [shard]`."
        )
    given = {t.checkpoint_key: t for t in shardable_tensors}
    seen: dict[str, dict[str, tuple[list, list]]] = {}  # key -> spec -> (offset, shape)
    for shard in shards:
        if not isinstance(shard, dict):
            raise TypeError(
                f"The checkpoint sharding callback ({description}) returned a shard of type "
                f"{type(shard).__name__}; each shard must be a dict "
                "{checkpoint_key: {slice_spec: tensor}}."
            )
        shard_task = None
        for key, slices in shard.items():
            if not isinstance(slices, dict):
                raise TypeError(
                    f"The checkpoint sharding callback ({description}) returned "
                    f"{type(slices).__name__} for '{key}'; it must be a dict "
                    "{slice_spec: tensor} ('' for the whole tensor)."
                )
            for spec, value in slices.items():
                spec = spec.strip() if isinstance(spec, str) else spec
                shard_task = _check_one(given, seen, description, key, spec, value, shard_task)
    missing = ""
    for key, t in given.items():
        full, off, shp = parse_spec(t.slice_spec, [int(d) for d in t.shape])
        parts = list(seen.get(key, {}).values())
        problem = tiling_problem((off, shp), parts)
        if problem.startswith("slices at"):
            raise _bad(
                "slices of one tensor overlap",
                description,
                key,
                t.slice_spec,
                f"  problem: {problem}\n",
            )
        if problem:
            missing += f"  tensor:\n    checkpoint_key: {key}\n    slice_spec: {t.slice_spec}\n"
            missing += f"    problem: {problem}\n"
    if missing:
        raise RuntimeError(
            "After executing the checkpoint sharding callback, tensors in the object graph "
            f"were not found in the checkpoint shards:\n  callback_description: {description}\n"
            + missing
        )
    return list(shards)


def _check_one(
    given: dict, seen: dict, description: str, key: Any, spec: Any, value: Any, shard_task: Any
) -> Any:
    t = given.get(key)
    if t is None:
        raise _bad(
            "a tensor not originally in the object graph was found in the checkpoint shards",
            description,
            key,
            spec,
        )
    shape = [int(d) for d in t.shape]
    if not isinstance(spec, str):
        raise _bad(
            f"a slice spec of type {type(spec).__name__} (not str) was found",
            description,
            key,
            spec,
        )
    try:
        full, off, shp = parse_spec(spec or t.slice_spec, None if spec or t.slice_spec else shape)
    except ValueError as e:
        raise _bad(f"an invalid slice spec was found ({e})", description, key, spec) from None
    if full != parse_spec(t.slice_spec, shape)[0]:
        raise _bad(
            "a slice of a tensor of another shape was found",
            description,
            key,
            spec,
            f"  original full shape: {shape}\n  slice's full shape: {full}\n",
        )
    if spec in seen.get(key, {}):
        raise _bad(
            "multiple tensors with the same checkpoint key and slice spec were found",
            description,
            key,
            spec,
        )
    got_shape = [int(d) for d in getattr(value, "shape", ())] if hasattr(value, "shape") else None
    if got_shape != shp:
        raise _bad(
            "a tensor was found with an altered shape",
            description,
            key,
            spec,
            f"  original tensor_shape: {shp}\n  new tensor_shape: {got_shape}\n",
        )
    try:
        got_dtype = dtypes.as_dtype(value.dtype)
    except (TypeError, ValueError, AttributeError):
        got_dtype = getattr(value, "dtype", None)
    if got_dtype != t.dtype:
        raise _bad(
            "a tensor was found with an altered dtype",
            description,
            key,
            spec,
            f"  original tensor_dtype: {t.dtype}\n  new tensor_dtype: {got_dtype}\n",
        )
    # As in TF, the task of the value is compared with the task of the tensor it came from.
    origin = getattr(t.tensor, "device", None)
    origin_task = task_of(origin if isinstance(origin, str) else t.device)
    device = getattr(value, "device", None)
    task = task_of(device) if isinstance(device, str) else origin_task
    if task[2] != origin_task[2]:
        raise _bad(
            "a tensor was found with an altered task",
            description,
            key,
            spec,
            f"  original tensor_task: {origin_task[2]}\n  new tensor_task: {task[2]}\n",
        )
    if (
        shard_task is not None
        and None not in (shard_task[0][2], task[2])
        and (shard_task[0][2] != task[2])
    ):
        raise RuntimeError(
            "After executing the checkpoint sharding callback, tensors with different tasks "
            f"were found in the same shard:\n  callback_description: {description}\n"
            f"  tensor #1:    checkpoint_key: {shard_task[1]}\n    task: {shard_task[0][2]}\n"
            f"  tensor #2:    checkpoint_key: {key}\n    slice_spec: {spec}\n"
            f"    task: {task[2]}\n"
        )
    seen.setdefault(key, {})[spec] = (off, shp)
    return shard_task or (task, key)
