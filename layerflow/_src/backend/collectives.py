"""Device collectives: NCCL all-reduce across whole GPUs, through CuPy's bindings.

`distribute/` decides when a collective runs (its strategies and fallbacks); this module is
the only place that knows how one runs on a device, so nothing above `backend/` touches CuPy's
NCCL or CUDA streams.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from layerflow._src.backend.devices import Device

_NCCL_KINDS = ("float16", "float32", "float64", "int32", "int64")


def nccl_available(devices: Sequence[Device]) -> bool:
    """Whether the array module of `devices` has working NCCL bindings (CuPy with NCCL)."""
    try:
        return bool(devices[0].xp.cuda.nccl.available)
    except AttributeError:
        return False


class NcclAllReduce:
    """Sum one array per GPU across those GPUs with NCCL; communicators are made once per
    set of devices and reused."""

    def __init__(self) -> None:
        self._comms: dict[tuple[int, ...], Any] = {}

    def all_reduce_sum(self, arrays: Sequence[Any], devices: Sequence[Device]) -> list[Any]:
        """One summed array per device, each on its device (`arrays[i]` lives on `devices[i]`)."""
        xp = devices[0].xp
        nccl = xp.cuda.nccl
        name = arrays[0].dtype.name
        if name not in _NCCL_KINDS:
            raise TypeError(
                f"NCCL all-reduce: dtype {name} is not supported; use one of {_NCCL_KINDS}."
            )
        key = tuple(d.physical_index for d in devices)
        comms = self._comms.get(key)
        if comms is None:
            comms = self._comms[key] = nccl.NcclCommunicator.initAll(list(key))
        kind = getattr(nccl, "NCCL_" + name.upper())
        outs = []
        nccl.groupStart()
        for comm, arr, dev in zip(comms, arrays, devices):
            with xp.cuda.Device(dev.physical_index):
                src = xp.ascontiguousarray(arr)
                out = xp.empty_like(src)
                comm.allReduce(
                    src.data.ptr,
                    out.data.ptr,
                    src.size,
                    kind,
                    nccl.NCCL_SUM,
                    xp.cuda.get_current_stream().ptr,
                )
                outs.append(out)
        nccl.groupEnd()
        return outs
