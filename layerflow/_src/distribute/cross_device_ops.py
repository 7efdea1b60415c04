"""How replicas combine values: reduce to one device, NCCL all-reduce, hierarchical copy.

All three give the same numbers (up to summation order). NCCL runs only when every device is a
whole GPU (not a logical split of one) and CuPy's NCCL bindings are present; otherwise it falls
back to reducing on one device, with TF's warning. This module decides; the NCCL call itself is
`backend.collectives` (nothing here knows CuPy).

Import cycle: TF's public `CrossDeviceOps.reduce` is `distribute_lib.reduce_to`, which needs the
distributed value types that `distribute_lib` builds on this module, so `reduce` imports it when
called.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any

from layerflow._src import backend
from layerflow._src.backend import collectives
from layerflow._src.framework.tensor import Tensor

_log = logging.getLogger("layerflow")


def _finish(reduce_op: str, total: Any, count: int) -> Any:
    """The sum of `count` values, divided by `count` for a MEAN reduction."""
    return total / count if reduce_op == "MEAN" else total


def _reduce_arrays(reduce_op: str, arrays: Sequence[Any], device: backend.Device) -> Any:
    moved = [backend.to_device(a, device) for a in arrays]
    return _finish(reduce_op, functools.reduce(device.xp.add, moved), len(moved))


def _broadcast(array: Any, source: backend.Device, destinations: Sequence[backend.Device]) -> list:
    out = []
    for d in destinations:
        moved = backend.to_device(array, d)
        # Every destination gets its own buffer, also when logical devices share the host.
        out.append(moved.copy() if (moved is array and d is not source) else moved)
    return out


class CrossDeviceOps:
    """Base of the ways to reduce per-replica tensors and broadcast the result."""

    def reduce_arrays(
        self,
        reduce_op: str,
        arrays: Sequence[Any],
        sources: Sequence[backend.Device],
        destinations: Sequence[backend.Device],
    ) -> list[Any]:
        """Reduce `arrays` (one per source device) and return one result per destination."""
        raise NotImplementedError

    def reduce(
        self, reduce_op: Any, per_replica_value: Any, destinations: Any, options: Any = None
    ) -> Any:
        """`tf.distribute.CrossDeviceOps.reduce`: reduce a PerReplica onto `destinations`."""
        from layerflow._src.distribute.reduction import reduce_to

        return reduce_to(self, reduce_op, per_replica_value, destinations)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ReductionToOneDevice(CrossDeviceOps):
    """Copy every value to one device, reduce there, copy the result back out.

    >>> ReductionToOneDevice()
    ReductionToOneDevice()
    """

    def __init__(self, reduce_to_device: str | None = None, accumulation_fn: Any = None) -> None:
        self.reduce_to_device = reduce_to_device
        self.accumulation_fn = accumulation_fn

    def reduce_arrays(
        self,
        reduce_op: str,
        arrays: Sequence[Any],
        sources: Sequence[backend.Device],
        destinations: Sequence[backend.Device],
    ) -> list[Any]:
        target = backend.parse_device(self.reduce_to_device) or destinations[0]
        if self.accumulation_fn is not None:
            moved = [Tensor(backend.to_device(a, target), target) for a in arrays]
            total = _finish(reduce_op, self.accumulation_fn(moved)._data, len(arrays))
        else:
            total = _reduce_arrays(reduce_op, arrays, target)
        return _broadcast(total, target, destinations)


class AllReduceCrossDeviceOps(CrossDeviceOps):
    """Base of the all-reduce algorithms (TF's name): values split into `num_packs` packs."""

    def __init__(self, num_packs: int = 1) -> None:
        if num_packs < 0:
            raise ValueError(f"{type(self).__name__}: num_packs must be >= 0, got {num_packs}.")
        self.num_packs = num_packs


class HierarchicalCopyAllReduce(AllReduceCrossDeviceOps):
    """Sum in a tree (pairs, then pairs of pairs), then broadcast: TF's DGX-1 style all-reduce."""

    def reduce_arrays(
        self,
        reduce_op: str,
        arrays: Sequence[Any],
        sources: Sequence[backend.Device],
        destinations: Sequence[backend.Device],
    ) -> list[Any]:
        level = list(zip(arrays, sources))
        while len(level) > 1:
            nxt = []
            for k in range(0, len(level) - 1, 2):
                (a, da), (b, _) = level[k], level[k + 1]
                nxt.append((da.xp.add(a, backend.to_device(b, da)), da))
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        total, where = level[0]
        return _broadcast(_finish(reduce_op, total, len(arrays)), where, destinations)


class NcclAllReduce(AllReduceCrossDeviceOps):
    """All-reduce with NVIDIA NCCL across whole GPUs; elsewhere, reduction to one device."""

    def __init__(self, num_packs: int = 1) -> None:
        super().__init__(num_packs)
        self._fallback = ReductionToOneDevice()
        self._all_reduce = collectives.NcclAllReduce()
        self._warned = False

    def reduce_arrays(
        self,
        reduce_op: str,
        arrays: Sequence[Any],
        sources: Sequence[backend.Device],
        destinations: Sequence[backend.Device],
    ) -> list[Any]:
        if not _nccl_usable(sources) or list(sources) != list(destinations):
            if not self._warned and len(sources) > 1:
                self._warned = True
                # Also when NCCL could run but the destinations differ from the sources.
                _log.warning(_nccl_refusal(sources) or _NO_NCCL_WARNING)
            return self._fallback.reduce_arrays(reduce_op, arrays, sources, destinations)
        return self._nccl(reduce_op, arrays, sources)

    def _nccl(
        self, reduce_op: str, arrays: Sequence[Any], devices: Sequence[backend.Device]
    ) -> list:
        outs = self._all_reduce.all_reduce_sum(arrays, devices)
        return [_finish(reduce_op, o, len(arrays)) for o in outs]


_NON_GPU_WARNING = (
    "There are non-GPU devices in `tf.distribute.Strategy`, not using nccl allreduce."
)
_NO_NCCL_WARNING = "Nccl kernel is not found, not using nccl allreduce."
VIRTUAL_GPU_WARNING = (
    "NCCL is not supported when using virtual GPUs, fallingback to reduction to one device"
)


def _nccl_refusal(devices: Sequence[backend.Device]) -> str | None:
    """Why NCCL cannot all-reduce across `devices` (TF's warning text), or None when it can."""
    if any(d.kind != "GPU" for d in devices):
        return _NON_GPU_WARNING
    physical = [d.physical_index for d in devices]
    if len(set(physical)) != len(physical):
        return VIRTUAL_GPU_WARNING
    return None if collectives.nccl_available(devices) else _NO_NCCL_WARNING


def _nccl_usable(devices: Sequence[backend.Device]) -> bool:
    return len(devices) >= 2 and _nccl_refusal(devices) is None


def select_cross_device_ops(devices: Sequence[backend.Device]) -> CrossDeviceOps:
    """TF's choice for `MirroredStrategy(cross_device_ops=None)`: NCCL when it can run."""
    if any(d.kind == "GPU" for d in devices):
        logical = backend.list_logical_devices("GPU")
        physical = backend.list_physical_devices("GPU")
        if len(logical) != len(physical):
            _log.warning(VIRTUAL_GPU_WARNING)
            return ReductionToOneDevice()
    if len(devices) < 2:
        return ReductionToOneDevice()
    refusal = _nccl_refusal(devices)
    if refusal is not None:
        _log.warning(refusal)
        return ReductionToOneDevice()
    return NcclAllReduce()
